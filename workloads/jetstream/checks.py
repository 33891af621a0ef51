"""Single-host JetStream's own rules: the model inputs, the MaxText keys, the ports, autoscaling, a single-host pool
that holds the replicas, and what the images serve; `check` returns the plan when none is broken."""

from __future__ import annotations

from stacks.facts import catalog
from stacks.facts.versions import Serves, image_doubts, image_gaps, image_record
from stacks.monitoring import adapters as metrics_adapters
from stacks.problems import Problem
from stacks.serving import maxtext
from stacks.serving.maxtext import CACHE_ARG, CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import check_autoscaling, check_model_inputs, check_ports
from stacks.serving.workload_type import WorkloadContext
from workloads.jetstream.config import JetStreamWorkload
from workloads.jetstream.manifests import ServedJetStreamPlan
from workloads.jetstream.maxtext_keys import maxtext_key_problems
from workloads.jetstream.plan import GRPC_PORT, POD_PORTS, JetStreamPlan
from workloads.jetstream.presets import PRESETS
from workloads.jetstream.server import JETSTREAM_METRICS

RESERVED_MAXTEXT = {
    CHECKPOINT_ARG: "set `checkpoint` instead",
    METRICS_ARG: "set `prometheusPort` instead",
    CACHE_ARG: "the stack keeps the compile cache under compile-cache/<workload>/ in its bucket",
}


def check(
    path: str,
    workload: JetStreamWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> JetStreamPlan | None:
    adapter = ctx.adapter
    check_model_inputs(path, workload, PRESETS, RESERVED_MAXTEXT, "gs://my-bucket/gemma-7b/items", problems)
    if workload.images.server is None:  # the pinned server's MaxText; another image has its own keys
        problems.extend(maxtext_key_problems(path, workload.maxtext))
    check_ports(f"{path}.prometheusPort", workload.prometheus_port, POD_PORTS, problems)
    check_ports(f"{path}.service.port", workload.service.port, {GRPC_PORT: "Service's jetstream-grpc"}, problems)
    auto = workload.autoscaling
    if auto is not None:
        check_autoscaling(path, auto, adapter, JETSTREAM_METRICS, problems, environment=ctx.environment)
    if pool is None or problems:
        return None
    shape = pool.shape
    if shape.multi_host:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is multi-host ({shape.generation.name} {shape.topology}, {shape.hosts} hosts); "
                "single-host JetStream needs a single-host pool (e.g. v5e 2x4 on ct5lp-hightpu-8t)",
            )
        )
        return None
    capacity = pool.max_nodes_per_node_pool * shape.chips_per_host
    most = auto.max_replicas if auto is not None else workload.replicas
    key = "autoscaling.maxReplicas" if auto is not None else "replicas"
    if most * shape.tpu_request > capacity:
        problems.append(
            Problem(
                f"{path}.{key}",
                f"{most} replicas x {shape.tpu_request} chips = {most * shape.tpu_request} chips, but pool {pool.name!r} "
                f"holds at most {capacity} chips ({pool.max_nodes_per_node_pool} nodes x {shape.chips_per_host}); "
                "raise the pool's autoscaling.maxNodes or lower the replicas",
            )
        )
    plan = ServedJetStreamPlan.on(
        workload,
        pool,
        namespace,
        ctx,
        adapter=adapter,
        min_master_version=ctx.min_master_version,
        cluster=ctx.cluster_name,
    )
    for key, needs in plan.needs().items():
        ref = plan.image(key)
        for gap in image_gaps(ref, needs):
            problems.append(Problem(f"{path}.images.{key}", f"{gap}: pin an image that does, or do not ask for it"))
        for series, doubt in image_doubts(ref, needs).items():
            warnings.append(f"{path}.images.{key}: {doubt}; {_reading(adapter, series)}")
        if image_record(ref) is None:
            warnings.append(
                f"{path}.images.{key}: {ref} is not in the version matrix; the stack cannot check that it serves "
                f"{_describe(needs)}"
            )
    mesh_problem = maxtext.parallelism_problem(plan.maxtext_pairs(), shape.chips)
    if mesh_problem:
        problems.append(Problem(f"{path}.maxtext", f"{mesh_problem} ({shape.generation.name} {shape.topology})"))
    warning = catalog.sizing_warning(plan.preset.params_billion, maxtext.weight_bits(plan.maxtext_pairs()), shape, path)
    if warning:
        warnings.append(warning)
    return plan


def _reading(adapter: str, series: str) -> str:
    """How the configured adapter and the dashboard read a metric whose series the image's sources dispute."""
    metric = next(m for m in JETSTREAM_METRICS.values() if m.series == series)
    entry = metrics_adapters.get(adapter)
    if metric.fallback is None:
        return "only a deploy can tell"
    either = f"{metric.series} or else {metric.fallback.expression.format(metric.fallback.series)}"
    if entry is not None and entry.fallbacks:
        return f"{adapter} and the dashboard read {either}, so the HPA works either way"
    return (
        f"the dashboard reads {either}, but {adapter} reads {metric.series} only: if the image exports "
        f"{metric.fallback.series}, this HPA metric has no value (prometheus-adapter reads either)"
    )


def _describe(needs: Serves) -> str:
    parts = [
        f"{what} {', '.join(sorted(have))}"
        for what, have in (("endpoints", needs.endpoints), ("metrics", needs.metrics), ("TPU", needs.tpus))
        if have
    ]
    return "; ".join(parts)
