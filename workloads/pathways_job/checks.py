"""PathwaysJob's own rules: the Pathways version, the batch job's image and environment, and a multi-host pool
whose machine type, topology and worker layout the PathwaysJob controller (v0.1.4) accepts as the stack provisions
it; `check` returns the plan when none is broken."""

from __future__ import annotations

import re

from stacks import naming
from stacks.facts import catalog
from stacks.problems import Problem
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_type import WorkloadContext
from workloads.pathways_job.config import PathwaysJobWorkload
from workloads.pathways_job.manifests import ServedPathwaysJobPlan
from workloads.pathways_job.plan import default_pathways_version

IMAGE_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
# Environment the controller appends to the main container (injectJAXBackendTargetIntoMainContainer): a user
# value of the same name would be overridden.
CONTROLLER_ENV = ("PATHWAYS_HEAD", "JAX_PLATFORMS", "XCLOUD_ENVIRONMENT", "JAX_BACKEND_TARGET")

# ---- what the controller (v0.1.4) accepts, from pathwaysjob_controller.go ------------------------------------
# The MachineType enum and ValidTpuTopologiesMap, for the machine types the TPU catalog provisions multi-host.
_V5P_TOPOLOGIES = (
    "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x4x12 4x8x8 4x4x20 4x8x12 4x4x28 8x8x8 4x12x12 4x8x20 4x4x44 8x8x12 "
    "4x4x52 4x8x28 4x12x20 8x8x16 4x4x68 8x12x12 4x4x76 8x8x20 4x12x28 4x8x44 4x4x92 8x12x16 4x20x20 4x8x52 "
    "12x12x12 8x8x28 4x4x116 8x12x20 4x4x124 8x16x16 4x12x44 4x8x68 4x20x28 12x12x16 4x4x148 4x8x76 4x12x52 "
    "8x16x20 4x4x164 8x12x28 4x4x172 8x8x44 12x12x20 4x8x92 4x4x188 12x16x16 4x28x28 8x20x20 4x12x68 8x8x52 "
    "4x4x212 12x12x24 4x20x44 8x16x28 4x12x76 4x8x116 4x4x236 12x16x20 4x4x244 4x8x124 12x12x28 16x16x16 "
    "4x20x52 8x12x44 8x8x68 4x12x92 8x20x28 12x16x24 4x8x148 12x20x20 8x8x76 4x28x44 8x12x52 16x16x20 "
    "12x12x36 4x8x164 12x16x28 4x20x68 4x8x172 4x12x116 8x16x44 12x20x24 4x28x52 8x8x92 4x12x124 4x8x188 "
    "4x20x76 16x16x24 12x24x24 16x20x28"
).split()
CONTROLLER_TOPOLOGIES: dict[str, tuple[str, ...]] = {
    "ct6e-standard-4t": ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    "ct6e-standard-8t": ("2x4",),
    "ct5p-hightpu-4t": tuple(_V5P_TOPOLOGIES),
    "ct5lp-hightpu-4t": ("2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
    "ct5lp-hightpu-8t": ("2x4",),
    "ct4p-hightpu-4t": tuple(
        "2x2x1 2x2x2 2x2x4 2x4x4 4x4x4 4x4x8 4x8x8 4x4x16 8x8x8 8x8x12 8x8x16 4x16x16 8x16x16".split()
    ),
}
_EIGHT_CHIP_MACHINES = ("ct6e-standard-8t", "ct5lp-hightpu-8t")


def controller_workers(machine_type: str, topology: str) -> tuple[int, int]:
    """(workers per slice, chips per worker) as the controller computes them (calculateVMsFromMachineTypeAndTopology):
    chips of the topology over 4 (8 for the 8-chip machine types)."""
    chips = catalog.topology_chips(topology)
    per_vm = 8 if machine_type in _EIGHT_CHIP_MACHINES else 4
    return (chips // per_vm if chips >= per_vm else 1), per_vm


def check(
    path: str,
    workload: PathwaysJobWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> ServedPathwaysJobPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    version = workload.pathways_version
    if version is not None and not IMAGE_TAG_RE.fullmatch(version):
        problems.append(
            Problem(f"{path}.pathwaysVersion", f"{version!r} is not an image tag, e.g. {default_pathways_version()}")
        )
    # `images.*` are checked for every workload type by stacks/workload_checks.py `_check_images` (naming.image_reference_problem)
    _check_job(path, workload, problems, warnings)
    if pool is None:
        return None
    shape = pool.shape
    if not shape.multi_host:
        problems.append(
            Problem(
                f"{path}.pool",
                f"a PathwaysJob needs a multi-host pool; {pool.name!r} is single-host "
                f"({shape.generation.name} {shape.topology} on {shape.machine_type})",
            )
        )
        return None
    _check_controller_accepts(path, pool, problems)
    return None if problems else ServedPathwaysJobPlan.on(workload, pool, namespace, ctx)


def _check_job(path: str, workload: PathwaysJobWorkload, problems: list[Problem], warnings: list[str]) -> None:
    """The batch job's image and environment (the controller sets the variables that point JAX at the proxy); an
    interactive job in colocated mode is warned about."""
    job = workload.job
    if job is not None:
        why = naming.image_reference_problem(job.image)
        if why:
            problems.append(Problem(f"{path}.job.image", why))
        for name in job.env:
            if name in CONTROLLER_ENV:
                problems.append(
                    Problem(
                        f"{path}.job.env.{name}",
                        "set by the PathwaysJob controller (it points JAX at the proxy); remove it",
                    )
                )
            elif not ENV_NAME_RE.fullmatch(name):
                problems.append(Problem(f"{path}.job.env.{name}", "not a valid environment variable name"))
    elif workload.deployment_mode == "colocate_head_with_workers":
        warnings.append(
            f"{path}: an interactive PathwaysJob in colocate_head_with_workers mode: the controller (v0.1.4) gives "
            "the head pod no toleration for the TPU nodes' google.com/tpu taint; use deploymentMode default, or a job"
        )


def _check_controller_accepts(path: str, pool: PoolPlan, problems: list[Problem]) -> None:
    """The controller knows the pool's machine type and topology, and computes the pool's own worker layout."""
    shape = pool.shape
    allowed = CONTROLLER_TOPOLOGIES.get(shape.machine_type)
    if allowed is None:
        problems.append(
            Problem(
                f"{path}.pool",
                f"the PathwaysJob controller does not support machine type {shape.machine_type} of pool "
                f"{pool.name!r}; supported: {', '.join(CONTROLLER_TOPOLOGIES)}",
            )
        )
    elif shape.topology not in allowed:
        problems.append(
            Problem(
                f"{path}.pool",
                f"the PathwaysJob controller does not accept topology {shape.topology} on {shape.machine_type} "
                f"(pool {pool.name!r})",
            )
        )
    elif controller_workers(shape.machine_type, shape.topology) != (shape.hosts, shape.chips_per_host):
        workers, chips = controller_workers(shape.machine_type, shape.topology)
        problems.append(
            Problem(
                f"{path}.pool",
                f"the PathwaysJob controller would run {workers} workers of {chips} chips per slice, but pool "
                f"{pool.name!r} has {shape.hosts} hosts of {shape.chips_per_host} chips",
            )
        )
