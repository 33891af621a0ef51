"""JetStream + Pathways' own rules: the model inputs, Pathways persistence, the ports, the pool's slices for the
mode, the HTTP image, the MaxText mesh; `check` returns the plan when none is broken."""

from __future__ import annotations

from stacks.facts import catalog
from stacks.facts.versions import image_gaps
from stacks.problems import Problem
from stacks.serving import maxtext
from stacks.serving.maxtext import CACHE_ARG, CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import check_model_inputs, check_ports
from stacks.serving.workload_type import WorkloadContext
from workloads.jetstream.server import JETSTREAM_HTTP_SERVES
from workloads.jetstream_pathways.config import JetStreamPathwaysWorkload
from workloads.jetstream_pathways.manifests import ServedPathwaysPlan
from workloads.jetstream_pathways.plan import INSTANCE_TYPES, LEADER_PORTS, PERSISTENCE_ARGS, PathwaysPlan
from workloads.jetstream_pathways.presets import PRESETS, mode_spec

RESERVED_MAXTEXT = {
    CHECKPOINT_ARG: "set `checkpoint` instead",
    METRICS_ARG: "set `metricsPort` instead",
    CACHE_ARG: "pathwaysutils turns JAX's compile cache off under Pathways, so a cache directory would never be read",
}


def check(
    path: str,
    workload: JetStreamPathwaysWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> PathwaysPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    reserved = {
        **RESERVED_MAXTEXT,
        **(dict.fromkeys(PERSISTENCE_ARGS, "set by pathwaysPersistence") if workload.pathways_persistence else {}),
    }
    check_model_inputs(path, workload, PRESETS, reserved, "gs://my-bucket/llama/checkpoint", problems)
    if workload.pathways_persistence and not workload.checkpoint_without_ocdbt:
        problems.append(
            Problem(
                f"{path}.pathwaysPersistence",
                "true needs checkpointWithoutOcdbt: true: Pathways persistence refuses OCDBT checkpoints (MaxText "
                "writes OCDBT by default); convert the checkpoint with checkpoint_storage_use_ocdbt=false "
                "checkpoint_storage_use_zarr3=false and say so, or set false",
            )
        )
    check_ports(f"{path}.metricsPort", workload.metrics_port, LEADER_PORTS, problems)
    if pool is not None and pool.shape.generation.name not in INSTANCE_TYPES:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is {pool.shape.generation.name}, which Pathways has no --instance_type for; "
                f"allowed: {', '.join(INSTANCE_TYPES)}",
            )
        )
    if pool is None or problems:
        return None

    preset = PRESETS[workload.model]
    spec = mode_spec(preset, workload.mode)
    slices = pool.slices
    if workload.mode == "disaggregated" and slices != 2:
        problems.append(
            Problem(
                f"{path}.pool",
                f"disaggregated serving needs a pool with 2 slices (prefill and decode); pool {pool.name!r} has {slices}",
            )
        )
    elif workload.mode == "interleaved" and spec.slices is not None and slices != spec.slices:
        problems.append(
            Problem(
                f"{path}.pool",
                f"preset {workload.model!r} serves interleaved on {spec.slices} slice(s); pool {pool.name!r} has {slices}",
            )
        )
    plan = ServedPathwaysPlan.on(workload, pool, namespace, ctx)
    # the jax-tpu probes ask jetstream-http for /healthcheck (stacks/facts/versions.py records which tags serve it)
    for gap in image_gaps(plan.image("http"), JETSTREAM_HTTP_SERVES):
        problems.append(Problem(f"{path}.images.http", f"{gap}: pin an image that does"))
    plan_pairs = plan.maxtext_pairs()
    mesh_problem = maxtext.parallelism_problem(plan_pairs, pool.shape.chips)
    if mesh_problem:
        problems.append(
            Problem(f"{path}.maxtext", f"{mesh_problem} ({pool.shape.generation.name} {pool.shape.topology})")
        )
    warning = catalog.sizing_warning(preset.params_billion, maxtext.weight_bits(plan_pairs), pool.shape, path)
    if warning:
        warnings.append(warning)
    return plan
