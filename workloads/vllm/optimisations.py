"""The typed serving optimisations of a vLLM workload beside LoRA (workloads/vllm/lora.py): speculative decoding and
the gateway picker's routing mode (issue 38 #4), their flags or picker config, and their rules.

Speculative decoding: vllm 0.27.0 --speculative-config takes JSON (vllm/engine/arg_utils.py: `--speculative-config`,
`-sc`, type json.loads) of SpeculativeConfig (vllm/config/speculative.py): `method` (SpeculativeMethod: ngram, eagle3,
...), `model` (the draft), `num_speculative_tokens` (> 0), `prompt_lookup_max` (>= 1, ngram). On TPU the methods
tpu-inference v0.27.0's release support matrices pass are "Speculative Decoding: Ngram" and "Speculative Decoding:
Eagle3" (v6e, v7x); DFlash is untested there.

Routing: the picker config the stack writes (stacks/serving/gateway.py epp_config) is the chart's default
(approximate prefix: `prefix-cache-scorer` over the picker's own index of the prompts it routed). The two other
modes of the pinned router are refused:
- precise-prefix: the `precise-prefix-cache-producer` needs a `token-producer`, which tokenizes each prompt through
  the chart's tokenizer sidecar (llm-d/llm-d-router@v0.10.0: pkg/epp/framework/plugins/requestcontrol/dataproducer/
  README.md; routerlib values.yaml `tokenizer`: `vllm launch render <modelName>` in vllm/vllm-openai-cpu, reading the
  model's tokenizer from the Hugging Face Hub with the llm-d-hf-token Secret), and subscribes to each server's ZMQ
  KV events; tpu-inference v0.27.0's support matrices have no row for KV events on TPU. Not built: the sidecar
  would call the Hub at run time (the stack's servers never do) and TPU KV events are untested.
- predicted-latency: routerlib values.yaml at v0.10.0 pins the latency predictor's training and prediction servers
  to `llm-d-latency-predictor-*-dev:latest` (tag `latest`, pullPolicy Always): nothing to pin in the version matrix.
"""

from __future__ import annotations

import json
from typing import Any

from stacks.problems import Problem
from workloads.vllm import lora

METHOD_FEATURES = {"ngram": "Speculative Decoding: Ngram", "eagle3": "Speculative Decoding: Eagle3"}
ROUTER_VALUES = "llm-d/llm-d-router@v0.10.0:config/charts/routerlib/values.yaml"
REFUSED_ROUTING = {
    "precise-prefix": "the pinned router (llm-d-router v0.10.0) builds the precise prefix index from a tokenizer "
    "sidecar that reads the model's tokenizer from the Hugging Face Hub at run time (routerlib values.yaml "
    "`tokenizer`) and from the servers' KV events, which tpu-inference v0.27.0's support matrices do not cover on TPU",
    "predicted-latency": f"the pinned router's latency predictor images are tagged `latest` ({ROUTER_VALUES} "
    "latencyPredictor.trainingServer/predictionServers.image.tag): there is no release to pin",
}


def speculative_config(spec: Any, draft_dir: str | None) -> str:
    """The --speculative-config JSON."""
    config: dict[str, Any] = {"method": spec.method, "num_speculative_tokens": spec.num_tokens}
    if draft_dir:
        config["model"] = draft_dir
    if spec.prompt_lookup_max is not None:
        config["prompt_lookup_max"] = spec.prompt_lookup_max
    return json.dumps(config, separators=(",", ":"))


PD_FEATURE = "DCN-based P/D disaggregation"  # its row in tpu-inference's support matrices (workloads/vllm/lora.py)


def disaggregation_problems(
    path: str, workload: Any, generation: str, multi_host: bool, image: str, gateway_enabled: bool
) -> list[Problem]:
    """What a disaggregated workload cannot combine with. The engine release is the version guard's
    (checks.features_in_use: pd-disaggregation, pd-disaggregation-hma)."""
    where = f"{path}.disaggregation"
    found: list[Problem] = []
    why = lora.tpu_support_problem(generation, PD_FEATURE, "prefill/decode disaggregation")
    if why:
        found.append(Problem(where, why))
    if multi_host:
        # llm-d/llm-d guides/pd-disaggregation README.tpu.md (v6e 2x4, v7x 2x2x1) and tpu-inference's own GKE
        # manifests (.buildkite/kubernetes/manifests/v7x/single_prefill.yaml) run each role as a single-host
        # Deployment; the stack's multi-host path (Ray on a LeaderWorkerSet) with a KV connector is untested.
        found.append(
            Problem(
                f"{path}.pool",
                "prefill/decode disaggregation runs each role as single-host servers (llm-d's TPU guide, "
                "tpu-inference's GKE manifests); allowed: a single-host pool",
            )
        )
    if not (gateway_enabled and workload.gateway):
        found.append(
            Problem(
                where,
                "the gateway's endpoint picker chooses the prefill and decode servers of each request: it needs "
                "tpu-serving:gateway.enabled and the workload's gateway: true",
            )
        )
    if workload.autoscaling is not None:
        found.append(
            Problem(f"{path}.autoscaling", "not with disaggregation: give disaggregation.prefill/decode.replicas")
        )
    if "replicas" in workload.model_fields_set:
        found.append(
            Problem(f"{path}.replicas", "not with disaggregation: give disaggregation.prefill/decode.replicas")
        )
    if workload.rollout is not None:
        found.append(
            Problem(f"{path}.rollout", "a release train of a disaggregated workload is not built: leave it out")
        )
    for key in workload.args:
        if key.lstrip("-").replace("_", "-") == "kv-transfer-config":
            found.append(Problem(f"{path}.args.{key}", "derived by the stack with `disaggregation` set"))
    return found


# Combinations no source covers: tpu-inference's release support matrices
# (vllm-project/tpu-inference@v0.27.0:support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv) test each
# feature alone, one row per feature ("LoRA_Torch", "DCN-based P/D disaggregation", "Speculative Decoding: Eagle3",
# ...), and have no row for any two together. Refused until a source covers them: (keys, what the combination is).
UNTESTED_TOGETHER = (
    "tpu-inference v0.27.0's release support matrices test each feature alone (one row each), none together"
)


def combination_problems(path: str, workload: Any) -> list[Problem]:
    """disaggregation with loras, disaggregation with speculative, loras with speculative eagle3: refused."""
    found: list[Problem] = []
    spec = workload.speculative
    pairs = []
    if workload.disaggregation is not None and workload.loras:
        pairs.append(("disaggregation", "loras"))
    if workload.disaggregation is not None and spec is not None:
        pairs.append(("disaggregation", "speculative"))
    if workload.loras and spec is not None and spec.method == "eagle3":
        pairs.append(("loras", "speculative"))
    for a, b in pairs:
        found.append(
            Problem(
                f"{path}.{b}",
                f"not with {path}.{a}: {UNTESTED_TOGETHER} ({SUPPORT_MATRIX_PATH}); allowed: {a} or {b}, not both"
                + (" (loras with speculative method ngram is allowed)" if (a, b) == ("loras", "speculative") else ""),
            )
        )
    return found


SUPPORT_MATRIX_PATH = (
    "vllm-project/tpu-inference@v0.27.0:support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv"
)


def problems(
    path: str,
    workload: Any,
    generation: str,
    image: str,
    gateway_enabled: bool = True,
    multi_host: bool = False,
) -> list[Problem]:
    found: list[Problem] = combination_problems(path, workload)
    if workload.disaggregation is not None:
        found += disaggregation_problems(path, workload, generation, multi_host, image, gateway_enabled)
    spec = workload.speculative
    if spec is not None:
        where = f"{path}.speculative"
        if spec.method == "eagle3" and spec.draft_model is None:
            found.append(
                Problem(
                    f"{where}.draftModel", "eagle3 needs its EAGLE-3 draft head: gs://... or <org>/<name>@<revision>"
                )
            )
        if spec.method == "ngram" and spec.draft_model is not None:
            found.append(
                Problem(
                    f"{where}.draftModel",
                    "ngram drafts from the prompt itself: leave draftModel out (eagle3 takes one)",
                )
            )
        if spec.method != "ngram" and spec.prompt_lookup_max is not None:
            found.append(Problem(f"{where}.promptLookupMax", f"only for method ngram, not {spec.method}"))
        if spec.draft_model is not None and lora.parse_source(spec.draft_model) is None:
            found.append(
                Problem(
                    f"{where}.draftModel",
                    f"{spec.draft_model!r} is neither gs://<bucket>/<prefix> nor <org>/<name>@<revision>",
                )
            )
        for why in (
            lora.tpu_support_problem(generation, METHOD_FEATURES[spec.method], f"speculative decoding ({spec.method})"),
            lora.release_problem(image, "speculative-decoding", "speculative decoding"),
        ):
            if why:
                found.append(Problem(f"{where}.method", why))
        if any(k.lstrip("-").replace("_", "-") in ("speculative-config", "sc") for k in workload.args):
            found.append(
                Problem(f"{path}.args", "speculative-config is the stack's with `speculative` set: give it there")
            )
    seen: dict[str, int] = {}
    for i, objective in enumerate(workload.objectives):
        if objective.name in seen:
            found.append(
                Problem(
                    f"{path}.objectives[{i}].name", f"{objective.name!r} is objectives[{seen[objective.name]}]'s too"
                )
            )
        seen.setdefault(objective.name, i)
    if workload.objectives and not (gateway_enabled and workload.gateway):
        found.append(
            Problem(
                f"{path}.objectives",
                "priorities are the gateway's endpoint picker's: they need tpu-serving:gateway.enabled and the "
                "workload's gateway: true",
            )
        )
    if workload.routing in REFUSED_ROUTING:
        found.append(
            Problem(
                f"{path}.routing",
                f"{workload.routing!r} is refused: {REFUSED_ROUTING[workload.routing]}; allowed: approximate-prefix",
            )
        )
    return found
