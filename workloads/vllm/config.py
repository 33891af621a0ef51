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
