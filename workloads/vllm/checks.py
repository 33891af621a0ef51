"""vLLM's own rules: the model, image and `vllm serve` flags, the tensor-parallel size, the replicas against the
pool, the HBM metrics; `check` returns the plan when none is broken."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.facts.versions import IMAGES, Serves, image_gaps, image_record
from stacks.problems import Problem
from stacks.serving import version_guard
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import (
    check_autoscaling,
)
from stacks.serving.workload_type import WorkloadContext
from workloads.vllm import flags as serve_flags
from workloads.vllm import lora, optimisations
from workloads.vllm.config import KV_CONNECTORS, VllmWorkload
from workloads.vllm.manifests import ServedVllmPlan
from workloads.vllm.metrics import VLLM_METRICS
from workloads.vllm.plan import DEFAULT_IMAGE, HTTP_PORT, VllmPlan, is_gcs, normalize_flag, params_billion

# How vLLM's TPU backend calls each catalog generation (PyPI tpu-inference 0.32.0 README, as at v0.27.0: "Recommended: v7x,
# v5e, v6e; Experimental: v3, v4, v5p"; v7x is the catalog's tpu7x). A generation not here is refused: the backend
# does not list it.
TPU_SUPPORT: dict[str, str] = {
    "v4": "experimental",
    "v5e": "recommended",
    "v5p": "experimental",
    "v6e": "recommended",
    "tpu7x": "recommended",
}
HF_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
GS_PATH_RE = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]/[^\s]+")
FLAG_NAME_RE = re.compile(r"-{0,2}[a-z0-9][a-z0-9_-]*")  # a `vllm serve` flag, with or without dashes
# Flags the stack owns: (why, where to set it instead)
RESERVED_ARGS = {
    "model": "set `model`",
    "max-model-len": "set `maxModelLen`",
    "host": "the server listens on all addresses of its pod",
    "port": f"the container listens on {HTTP_PORT}; set `service.port` for the Service",
    "download-dir": "weights stream from gs:// (a Hugging Face id is staged into the stack bucket first)",
}
# Attention heads of well-known models (their config.json num_attention_heads): vLLM needs them divisible by the
# tensor-parallel size.
KNOWN_HEADS = {
    "meta-llama/Llama-3.1-8B": 32,
    "meta-llama/Llama-3.1-8B-Instruct": 32,
    "meta-llama/Llama-3.1-70B": 64,
    "meta-llama/Llama-3.1-70B-Instruct": 64,
    "meta-llama/Llama-3.3-70B-Instruct": 64,
    "meta-llama/Llama-3.1-405B": 128,
    "meta-llama/Llama-3.1-405B-Instruct": 128,
}


def check(
    path: str,
    workload: VllmWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> VllmPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    _check_model(path, workload, ctx.hf_token, problems, warnings)
    _check_image_and_args(path, workload, problems)
    image_key, ref = ("image", workload.image) if workload.image else ("type", IMAGES[DEFAULT_IMAGE])
    version_guard.check_features(path, image_key, ref, features_in_use(workload, pool), problems)
    auto = workload.autoscaling
    if auto is not None:
        check_autoscaling(
            path,
            auto,
            ctx.adapter,
            VLLM_METRICS,
            problems,
            environment=ctx.environment,
            gateway=ctx.gateway_enabled and workload.gateway,
        )
    if pool is not None:
        _check_tensor_parallel(path, workload, pool.name, pool.shape, problems)
        image = workload.image or IMAGES[DEFAULT_IMAGE]
        problems.extend(lora.problems(path, workload.loras, pool.shape.generation.name, image))
        problems.extend(
            optimisations.problems(
                path, workload, pool.shape.generation.name, image, ctx.gateway_enabled, pool.shape.multi_host
            )
        )
    if pool is None or problems:
        return None

    plan = ServedVllmPlan.on(
        workload, pool, namespace, ctx, adapter=ctx.adapter, hf_token=ctx.hf_token, cluster=ctx.cluster_name
    )
    needs = plan.needs()
    # The pinned image's TPU generations are every type's check (stacks/workload_checks.py); an override's, its own.
    tpus = Serves(tpus=needs.tpus if workload.overrides_images() else None)
    problems.extend(Problem(f"{path}.image", gap) for gap in image_gaps(plan.image, replace(needs, tpus=None)))
    problems.extend(Problem(f"{path}.pool", gap) for gap in image_gaps(plan.image, tpus))
    if image_record(plan.image) is None:
        warnings.append(
            f"{path}.image: {plan.image} is not in the version matrix; the stack cannot check that it serves vLLM's "
            "API, metrics and this TPU generation"
        )
    if problems:
        return None
    gen = pool.shape.generation
    support = TPU_SUPPORT.get(gen.name)
    if support is None:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is {gen.name}, which vLLM's TPU backend does not list; allowed: {', '.join(TPU_SUPPORT)}",
            )
        )
        return None
    if support != "recommended":
        warnings.append(f"{path}.pool: vLLM's TPU backend calls {gen.name} {support}")
    _multi_host_warning(path, pool.shape, warnings)
    _check_replicas_fit(path, workload, pool, ctx.lws_enabled, problems)
    if auto is not None:
        _check_hbm_metrics(path, auto, pool.shape, problems)
    _serving_warnings(path, plan, warnings)
    return plan


def _check_model(path: str, workload: VllmWorkload, hf_token: bool, problems: list[Problem], warnings: list) -> None:
    """A gs:// folder of weights, or a Hugging Face id: a gated one (`gated: true`) needs the token; without one, a
    model not said to be public (`gated: false`) is warned about (the stack cannot tell whether it is gated)."""
    model, gated = workload.model, workload.gated
    if is_gcs(model):
        if not GS_PATH_RE.fullmatch(model):
            problems.append(
                Problem(
                    f"{path}.model",
                    f"{model!r} is not a gs:// path of a folder of weights, e.g. gs://my-bucket/llama-70b",
                )
            )
        if gated is not None:
            problems.append(Problem(f"{path}.gated", "only for a model named by its Hugging Face id, not a gs:// path"))
    elif not HF_ID_RE.fullmatch(model):
        problems.append(
            Problem(
                f"{path}.model",
                f"{model!r} is neither a Hugging Face model id (org/name, e.g. meta-llama/Llama-3.1-70B) nor a "
                "gs:// path of weights",
            )
        )
    elif gated and not hf_token:
        problems.append(
            Problem(
                f"{path}.gated",
                f"{model!r} is gated: set the token first, pulumi config set --secret tpu-serving:hfToken <token>",
            )
        )
    elif gated is None and not hf_token:
        warnings.append(
            f"{path}.model: {model!r} is staged from Hugging Face without a token; a gated model (e.g. "
            "meta-llama/*) needs one: pulumi config set --secret tpu-serving:hfToken <token>; for a public one set "
            "`gated: false` on this workload"
        )


def _check_image_and_args(path: str, workload: VllmWorkload, problems: list[Problem]) -> None:
    """An image a kubelet can pull; `args` are `vllm serve` flags of the pinned vLLM (workloads/vllm/flags.py), each
    with a value it takes, and none the stack derives."""
    if workload.image is not None:
        why = naming.image_reference_problem(workload.image)
        if why:
            problems.append(Problem(f"{path}.image", why))
    checked: dict[str, Any] = {}
    for key, value in workload.args.items():
        why = RESERVED_ARGS.get(normalize_flag(key))
        if why:
            problems.append(Problem(f"{path}.args.{key}", f"derived by the stack: {why}"))
        elif not FLAG_NAME_RE.fullmatch(key):
            problems.append(Problem(f"{path}.args.{key}", "is not a `vllm serve` flag name (e.g. max-num-seqs)"))
        else:
            checked[key] = value
    if workload.image is None:  # the pinned image's flags; an image of another version has its own
        problems.extend(serve_flags.problems(path, checked, normalize_flag))


# The KV connectors (workloads/vllm/config.py KV_CONNECTORS) whose use is the release table's pd-disaggregation-hma
# feature (stacks/facts/releases.py: TPUConnectorHMA breaks on vllm-tpu 0.27.0 to 0.29.0); the others, pd-disaggregation.
HMA_CONNECTORS = ("TPUConnectorHMA",)


def features_in_use(workload: VllmWorkload, pool: PoolPlan | None) -> dict[str, str]:
    """The features of stacks/facts/releases.py FEATURES a vLLM workload turns on, each with the key (under the
    workload's path) that turns it on: the version guard refuses one its engine release is known to break on."""
    args = {normalize_flag(k): (k, v) for k, v in workload.args.items()}
    found: dict[str, str] = {}
    if pool is not None and pool.shape.multi_host:
        found["multi-host"] = "pool"
    on = {name: f"args.{key}" for name, (key, value) in args.items() if value not in (None, False)}
    if "speculative-config" in on:
        found["speculative-decoding"] = on["speculative-config"]
    if "enable-lora" in on:
        found["lora"] = on["enable-lora"]
    # vLLM caches prefixes unless told not to (vllm 0.32.0 vllm/config/cache.py: enable_prefix_caching = True)
    key, value = args.get("enable-prefix-caching", ("", True))
    if value is not False:
        found["prefix-caching"] = f"args.{key}" if key else "args"
    if "kv-transfer-config" in on:
        config = _json_object(args["kv-transfer-config"][1])
        names = {config.get("kv_connector"), config.get("kv_connector_module_path")}
        for connector, module in KV_CONNECTORS.items():
            if names & {connector, module}:
                found["pd-disaggregation"] = on["kv-transfer-config"]
                if connector in HMA_CONNECTORS:
                    found["pd-disaggregation-hma"] = on["kv-transfer-config"]
    if workload.disaggregation is not None:
        found["pd-disaggregation"] = "disaggregation"
        if workload.disaggregation.connector in HMA_CONNECTORS:
            found["pd-disaggregation-hma"] = "disaggregation.connector"
    return found


def _json_object(value: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _tensor_parallel_value(value: Any) -> int | None:
    """A `tensor-parallel-size` argument as a whole number, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _check_tensor_parallel(
    path: str, workload: VllmWorkload, pool: str, shape: catalog.SliceShape, problems: list[Problem]
) -> None:
    """A `tensor-parallel-size` in `args` shards the model over that many JAX devices of one replica (one slice):
    a whole number from 1 to the slice's devices (tpu-inference 0.32.0, the pinned engine, and v0.27.0:
    tpu_inference/worker/tpu_worker.py takes
    jax.devices()[:total_devices]; more than there are leaves the mesh short). null removes the flag (vLLM's
    default, 1)."""
    for key, value in workload.args.items():
        if normalize_flag(key) != "tensor-parallel-size" or value is None:
            continue
        size = _tensor_parallel_value(value)
        if size is None or not 1 <= size <= shape.devices:
            gen = shape.generation
            problems.append(
                Problem(
                    f"{path}.args.{key}",
                    f"{value!r} is not a tensor-parallel size pool {pool!r} can have; allowed: a whole number from 1 "
                    f"to {shape.devices} (the JAX devices of one {gen.name} {shape.topology} slice: {shape.chips} "
                    f"chips x {gen.devices_per_chip} per chip)",
                )
            )


def _multi_host_warning(path: str, shape: catalog.SliceShape, warnings: list[str]) -> None:
    """vLLM multi-host on a generation whose support matrix does not pass row `multi-host` (v6e: Untested)."""
    if shape.multi_host:
        status = lora.TPU_FEATURES.get(shape.generation.name, {}).get("multi-host")
        if status != "Passing":
            # warned, not refused: the 405B fast path (issue 38 #5) is this case on v6e; a deploy confirms it
            recorded = (
                f"{lora.SUPPORT_MATRIX.format(dir=lora.MATRIX_DIRS[shape.generation.name])} records row 'multi-host' as {status}"
                if status
                else f"its release support matrices ({lora.SUPPORT_MATRIX.format(dir='<v6e|v7x>')}) cover "
                f"{', '.join(sorted(lora.MATRIX_DIRS))} only"
            )
            warnings.append(
                f"{path}.pool: vLLM multi-host on {shape.generation.name} is not tested upstream: {recorded} (passing "
                "on: "
                + ", ".join(sorted(g for g, rows in lora.TPU_FEATURES.items() if rows.get("multi-host") == "Passing"))
                + "); only a real deploy confirms this workload serves"
            )


def _check_replicas_fit(
    path: str, workload: VllmWorkload, pool: PoolPlan, lws_enabled: bool, problems: list[Problem]
) -> None:
    """The most replicas fit the pool: a whole slice each (multi-host, on a LeaderWorkerSet) or their chips."""
    shape, gen = pool.shape, pool.shape.generation
    auto = workload.autoscaling
    most = auto.max_replicas if auto is not None else workload.replicas
    key = f"{path}.autoscaling.maxReplicas" if auto is not None else f"{path}.replicas"
    if workload.disaggregation is not None:
        most = workload.disaggregation.prefill.replicas + workload.disaggregation.decode.replicas
        key = f"{path}.disaggregation"
    if shape.multi_host:
        if not lws_enabled:
            problems.append(
                Problem(
                    f"{path}.pool",
                    f"pool {pool.name!r} is multi-host: vLLM runs as a LeaderWorkerSet, so enable "
                    "tpu-serving:addons.lws",
                )
            )
        if most > pool.slices:
            problems.append(
                Problem(
                    key,
                    f"{most} replicas need {most} slices of {gen.name} {shape.topology} (one per replica), but pool "
                    f"{pool.name!r} has {pool.slices}; raise the pool's slices or lower the replicas",
                )
            )
        return
    capacity = pool.max_nodes_per_node_pool * shape.chips_per_host
    if most * shape.tpu_request > capacity:
        problems.append(
            Problem(
                key,
                f"{most} replicas x {shape.tpu_request} chips = {most * shape.tpu_request} chips, but pool "
                f"{pool.name!r} holds at most {capacity} chips ({pool.max_nodes_per_node_pool} nodes x "
                f"{shape.chips_per_host}); raise the pool's autoscaling.maxNodes or lower the replicas",
            )
        )


def _check_hbm_metrics(path: str, auto: Any, shape: catalog.SliceShape, problems: list[Problem]) -> None:
    """HBM metrics an HPA can act on for one replica of this slice shape."""
    gen = shape.generation
    for i, metric in enumerate(auto.metrics):
        if metric.name == "tpu_memory_used_percentage" and shape.multi_host:
            problems.append(
                Problem(
                    f"{path}.autoscaling.metrics[{i}].name",
                    f"tpu_memory_used_percentage adds up used/total per node, and one replica here spans "
                    f"{shape.hosts} nodes: it would count each replica {shape.hosts} times; use tpu_memory_used "
                    "(bytes per replica) or a vLLM metric",
                )
            )
        if metric.name == "tpu_memory_used" and metric.target > shape.hbm_bytes:
            problems.append(
                Problem(
                    f"{path}.autoscaling.metrics[{i}].target",
                    f"{metric.target:g} bytes is more HBM than one replica has ({shape.hbm_bytes} bytes on "
                    f"{gen.name} {shape.topology}); the HPA would never scale up",
                )
            )


def _serving_warnings(path: str, plan: VllmPlan, warnings: list) -> None:
    """What vLLM would refuse or fail at start: a tensor-parallel size that does not divide the model's attention
    heads, weights larger than one replica's HBM."""
    model = plan.workload.model
    tp = plan.serve_args()
    tp_value = next((a.split("=", 1)[1] for a in tp if a.startswith("--tensor-parallel-size=")), None)
    heads = KNOWN_HEADS.get(model)
    if heads and tp_value and tp_value.isdigit() and heads % int(tp_value):
        warnings.append(
            f"{path}: tensor-parallel size {tp_value} does not divide {model}'s {heads} attention heads; vLLM will "
            "refuse to start"
        )
    size = params_billion(plan.workload)
    if size:
        warning = catalog.sizing_warning(size, 16, plan.shape, path)
        if warning:
            warnings.append(warning)
