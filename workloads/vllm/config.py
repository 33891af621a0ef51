"""The `vllm` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: vllm`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from stacks.model.config_model import (
    REPLICAS_MAX,
    CamelModel,
    HpaAutoscalingConfig,
    HpaTargetConfig,
    RolloutConfig,
    ServiceConfig,
    WorkloadConfig,
)
from workloads.vllm.metrics import VLLM_METRICS

# The metric names a vLLM HPA may use: the keys of its metric registry (workloads/vllm/metrics.py), written there once.
if TYPE_CHECKING:
    VllmMetricName = str
else:
    VllmMetricName = Literal[tuple(VLLM_METRICS)]


class VllmHpaMetricConfig(HpaTargetConfig):
    name: VllmMetricName = Field(
        description="vLLM server metric (of the serving pods: the leaders on a multi-host pool) or TPU HBM metric."
    )
    target: float = Field(
        gt=0,
        description="Value one replica should carry, in the metric's unit: requests for vllm:num_requests_*, a 0-1 "
        "fraction for vllm:kv_cache_usage_perc and tpu_memory_used_percentage, bytes for tpu_memory_used.",
    )


class VllmAutoscalingConfig(HpaAutoscalingConfig):
    max_replicas: int = Field(
        le=REPLICAS_MAX, description="At most what the pool holds (nodes, or slices for a multi-host pool)."
    )
    metrics: list[VllmHpaMetricConfig] = Field(  # type: ignore[assignment]
        min_length=1, description="Combined in one HPA: the largest proposal wins."
    )


VllmArg = str | int | float | bool | None

# The ranks vLLM accepts for --max-lora-rank (vllm 0.27.0 vllm/config/lora.py MaxLoRARanks).
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
if TYPE_CHECKING:
    LoraRank = int
else:
    LoraRank = Literal[LORA_RANKS]


class LoraConfig(CamelModel):
    """One LoRA adapter served beside the base model: clients name it in `model`."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$",
        description="The name clients put in `model` (vLLM --lora-modules name=path); unique behind the gateway.",
    )
    source: str = Field(
        description="gs://<bucket>/<prefix> of the adapter's files (adapter_config.json, adapter_model.safetensors), "
        "or a Hugging Face id at a revision, <org>/<name>@<revision>, staged into the stack bucket like the weights."
    )
    max_rank: LoraRank = Field(
        description="The adapter's LoRA rank r (its adapter_config.json); the largest sets --max-lora-rank."
    )


class ObjectiveConfig(CamelModel):
    """A priority class of the workload's requests (the router's InferenceObjective)."""

    name: str = Field(
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="The objective a client names in the x-llm-d-inference-objective header (a model's tier or a "
        "tenant); an InferenceObjective of this name in the workload's namespace.",
    )
    priority: int = Field(
        ge=-(2**31),
        le=2**31 - 1,
        description="Higher is served first while the pool is saturated; a request naming no objective has 0.",
    )


class SpeculativeConfig(CamelModel):
    """Speculative decoding (vLLM --speculative-config): a proposer drafts tokens the model verifies in one step."""

    method: Literal["ngram", "eagle3"] = Field(
        description="ngram: drafts from n-grams of the prompt (no draft model); eagle3: an EAGLE-3 draft head "
        "(`draftModel`). The methods tpu-inference v0.27.0's release support matrix passes on TPU."
    )
    draft_model: str | None = Field(
        None,
        description="eagle3 only: the draft head, gs://<bucket>/<prefix> or <org>/<name>@<revision> (staged like "
        "the weights), copied to the server's local disk before it starts.",
    )
    num_tokens: int = Field(ge=1, le=16, description="Tokens drafted per step (num_speculative_tokens).")
    prompt_lookup_max: int | None = Field(
        None, ge=1, le=64, description="ngram only: the longest n-gram matched in the prompt (prompt_lookup_max)."
    )


# tpu-inference's KV connectors for prefill/decode disaggregation (--kv-transfer-config kv_connector), each with
# its module (kv_connector_module_path): vllm-project/tpu-inference@v0.27.0 examples/disagg/run_disagg_single_host.sh
# and .buildkite/kubernetes/manifests/v7x/single_prefill.yaml; TPUConnectorHMA (hybrid-attention models) in
# tpu_inference.distributed.tpu_connector_hma (PyPI tpu-inference 0.32.0; llm-d/llm-d#2533).
KV_CONNECTORS = {
    "TPUConnector": "tpu_inference.distributed.tpu_connector",
    "TPUConnectorHMA": "tpu_inference.distributed.tpu_connector_hma",
}
if TYPE_CHECKING:
    KvConnector = str
else:
    KvConnector = Literal[tuple(KV_CONNECTORS)]


class DisaggregationRoleConfig(CamelModel):
    """One role of a disaggregated vLLM workload: its own Deployment on the workload's pool."""

    replicas: int = Field(1, ge=1, le=REPLICAS_MAX, description="Servers of this role (one node each).")


class DisaggregationConfig(CamelModel):
    """Prefill/decode disaggregation: prefill servers compute each prompt's KV cache, decode servers pull it over
    the TPU KV connector and generate; the gateway's endpoint picker chooses a decode server, then (when the prompt's
    uncached part is long enough) a prefill server, and the decode server's routing sidecar sends the prefill first."""

    connector: KvConnector = Field(
        "TPUConnector",
        description="tpu-inference's KV connector (--kv-transfer-config kv_connector): TPUConnector, or "
        "TPUConnectorHMA for hybrid-attention models (refused on vllm-tpu 0.27.0 to 0.29.0, where it fails at "
        "startup).",
    )
    prefill: DisaggregationRoleConfig = Field(description="The prefill servers (kv_role kv_producer).")
    decode: DisaggregationRoleConfig = Field(
        description="The decode servers (kv_role kv_consumer), each with the router's routing sidecar in front."
    )
    non_cached_tokens: int = Field(
        8,
        ge=1,
        le=2**31 - 1,
        description="The picker sends a prompt to a prefill server when at least this many of its tokens are not "
        "already cached on the chosen decode server (prefix-based-pd-decider nonCachedTokens); shorter ones are "
        "prefilled on the decode server.",
    )
    prompt_tokens: int = Field(
        0,
        ge=0,
        le=2**31 - 1,
        description="Prompts shorter than this are prefilled on the decode server whatever their cache state "
        "(prefix-based-pd-decider promptTokens); 0: no length gate.",
    )


class VllmCandidate(CamelModel):
    """The fields a vLLM release changes; every other key of the workload is the candidate's too."""

    image: str | None = Field(None, description="The candidate's engine image (else the workload's).")
    model: str | None = Field(None, description="The candidate's model (else the workload's).")
    revision: str | None = Field(
        None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", description="The candidate's model revision."
    )
    args: dict[str, VllmArg] | None = Field(
        None, description="The candidate's `vllm serve` flags, replacing the workload's `args` whole."
    )
    max_model_len: int | None = Field(None, ge=1, le=2**31 - 1, description="The candidate's --max-model-len.")
    params_billion: float | None = Field(None, gt=0, le=1_000_000, description="The candidate model's size.")
    replicas: int | None = Field(
        None, ge=1, le=REPLICAS_MAX, description="The candidate's replicas (else the workload's)."
    )
    pool: str | None = Field(None, description="The tpuPools entry the candidate runs on (else the workload's).")


class VllmRolloutConfig(RolloutConfig):
    candidate: VllmCandidate | None = Field(
        None,
        description="The release in progress: what differs from the current release. Unset: no candidate runs "
        "(only the current release's server set and pool).",
    )


class VllmWorkload(WorkloadConfig):
    """vLLM on TPU: a Deployment on a single-host pool, a LeaderWorkerSet + Ray (one slice per replica) on a
    multi-host pool. Parallelism, TPU requests and node selectors come from the pool."""

    type: Literal["vllm"]
    model: str = Field(
        description="A Hugging Face model id (org/name) or a gs:// path of safetensors weights (streamed, "
        "--load-format=runai_streamer)."
    )
    gated: bool | None = Field(
        None,
        description="Whether the Hugging Face model is gated (its page asks you to accept its terms before "
        "downloading): true needs tpu-serving:hfToken (refused without it); false says it is public, so it is staged "
        "without a token and without a warning (what lets a staging or prod stack pass `render --strict` with no "
        "token); unset: a warning when no token is set, since the stack cannot tell. Only for a model named by its "
        "Hugging Face id.",
    )
    revision: str = Field(
        "main",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
        description="Hugging Face revision (branch, tag or commit) of a model named by its id: staged once into the "
        "stack bucket under models/<id>/<revision>/ and never again for the same pair, so a commit id pins what "
        "replicas serve (a branch is staged as it was the first time).",
    )
    max_model_len: int | None = Field(
        None, ge=1, le=2**31 - 1, description="--max-model-len; unset: the model's own context length."
    )
    args: dict[str, VllmArg] = Field(
        default_factory=dict,
        description="Extra `vllm serve` flags by name (max-num-seqs: 128; - and _ alike). A named derived flag is "
        "replaced; true renders --flag, false --no-flag, null removes a derived one. model, max-model-len, host, "
        "port and download-dir are the stack's.",
    )
    replicas: int = Field(
        1, ge=1, le=REPLICAS_MAX, description="Replicas when autoscaling is off (slices, on a multi-host pool)."
    )
    autoscaling: VllmAutoscalingConfig | None = Field(None, description="An HPA on vLLM/TPU metrics.")
    image: str | None = Field(
        None, description="Override of the pinned vllm/vllm-tpu image (stacks/facts/versions.py)."
    )
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    grant_model_read: bool = Field(
        True,
        description="A gs:// model in a bucket other than the stack's: grant the workload objectViewer and "
        "legacyBucketReader on that whole bucket (no IAM condition: a bucket without uniform bucket-level access "
        "refuses conditions). false: grant nothing and give the workload's service account those roles yourself.",
    )
    xla_cache: bool = Field(
        True,
        description="Keep the XLA compilation cache (VLLM_XLA_CACHE_PATH) in the stack bucket under "
        "compile-cache/<workload>/<image tag>/<slice>/: copied to local disk before the server starts and written "
        "back by the serving pod, so restarts and new replicas skip compilation.",
    )
    params_billion: float | None = Field(
        None,
        gt=0,
        le=1_000_000,
        description="Model size for the HBM check when the name does not tell it (e.g. 70 for 70B).",
    )
    loras: list[LoraConfig] = Field(
        default_factory=list,
        description="LoRA adapters served with the base model (--enable-lora, --lora-modules, --max-loras, "
        "--max-lora-rank): each copied to the server's local disk before it starts; behind the gateway a request "
        "naming one reaches this workload's pool. Adding or removing one restarts the replicas (docs/workloads/vllm.md).",
    )
    speculative: SpeculativeConfig | None = Field(
        None, description="Speculative decoding (docs/workloads/vllm.md: what it buys and costs); unset: none."
    )
    disaggregation: DisaggregationConfig | None = Field(
        None,
        description="Prefill/decode disaggregation on a single-host pool behind the gateway (docs/workloads/vllm.md "
        '"Prefill/decode disaggregation": what it buys and costs); replaces `replicas`. Unset: every server prefills '
        "and decodes.",
    )
    routing: Literal["approximate-prefix", "precise-prefix", "predicted-latency"] = Field(
        "approximate-prefix",
        description="How the gateway's endpoint picker chooses a replica: approximate-prefix (queue, KV-cache use and "
        "a prefix index the picker builds from the requests it routes). precise-prefix (the engine's KV events) and "
        "predicted-latency (a trained latency model) are refused at the pinned router, saying why.",
    )
    objectives: list[ObjectiveConfig] = Field(
        default_factory=list,
        description="Request priorities behind the gateway (the router's InferenceObjectives, llm-d.ai/v1alpha2; "
        "the stack applies their CRD, which GKE does not install): a request with the header "
        "x-llm-d-inference-objective: <name> is queued at that priority.",
    )
    gateway: bool = Field(
        True,
        description="Served through the stack's Inference Gateway when tpu-serving:gateway is enabled (an "
        "InferencePool, endpoint picker and HTTPRoute of its own); false opts out.",
    )

    rollout: VllmRolloutConfig | None = Field(
        None,
        description="Releases as a gated train (canary or blue-green behind the gateway, `make promote`): "
        'docs/operations.md "Release train".',
    )

    def overrides_images(self) -> bool:
        """Its `image` replaces the pinned vllm/vllm-tpu one."""
        return self.image is not None
