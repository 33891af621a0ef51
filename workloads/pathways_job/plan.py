"""A PathwaysJob (google/pathways-job): batch or interactive Pathways on a multi-host TPU pool.

The PathwaysJob controller builds a JobSet from a short spec: a `pathways-head` job (Pathways resource manager
and proxy, plus the user's program in batch mode) and a `worker` job per slice with one Pathways worker per TPU
host. Every value the spec needs comes from the pool: `workers[0].type` (machine type), `topology`, `numSlices`;
the scratch directory `pathwaysDir` is a prefix of the stack bucket. What the controller derives from them
(node selectors, worker count, chips per worker, ports, requests) is mirrored here from its source at the pinned
release, google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go, so the stack can check a pool
before anything is applied and size the node the head pod needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import catalog, cpu_machines
from stacks.facts.versions import IMAGES
from stacks.problems import Problem
from stacks.security import scan_exceptions
from stacks.security.bucket_access import OBJECT_USER, Grant
from stacks.security.pod_security import IMAGE_DEFAULTS, secure_pod
from stacks.serving import disruption
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.startup import StartupPath
from stacks.serving.workload_plan import TPU_TOLERATION, WorkloadPlan
from stacks.serving.workload_type import WorkloadContext
from workloads.pathways_job.config import PathwaysJobWorkload

API_VERSION = "pathways-job.pathways.domain/v1"
KIND = "PathwaysJob"

# ---- what the controller (v0.1.4) does, from pathwaysjob_controller.go ----------------------------------------
PROXY_PORT = 29000  # PathwaysProxyPort; JAX clients connect to grpc://<head>:29000
RM_PORT = 29001  # PathwaysRMPort
HEAD_JOB = "pathways-head"  # PathwaysHeadJobName
WORKER_JOB = "worker"
MAIN_CONTAINER = "main"  # ControllerSpec.MainContainerName default
PROXY_CONTAINER = "pathways-proxy"  # MakeProxyContainer
RM_CONTAINER = "pathways-rm"  # MakeResourceManagerContainer
# The user's JAX client program requests this much, so its pod is never BestEffort (first evicted): the client
# drives the Pathways workers over the network and needs little CPU (what a given program needs, only a run shows).
MAIN_REQUESTS = {"cpu": "500m", "memory": "1Gi"}
# The head's containers carry limits only (so requests = limits): pathways-rm 8 CPU / 32e9 bytes,
# pathways-proxy 16 CPU / 100e9 bytes (MakeResourceManagerContainer, MakeProxyContainer).
HEAD_CPU = 8 + 16
HEAD_MEMORY_BYTES = 32_000_000_000 + 100_000_000_000
# Environment the controller appends to the main container (injectJAXBackendTargetIntoMainContainer): a user
# value of the same name would be overridden.
CONTROLLER_ENV = ("PATHWAYS_HEAD", "JAX_PLATFORMS", "XCLOUD_ENVIRONMENT", "JAX_BACKEND_TARGET")
# Pod labels JobSet sets on every pod of the job (the controller's own affinity rules select on the first).
JOBSET_NAME_LABEL = disruption.JOBSET_NAME_LABEL
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
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


# ---- plan ------------------------------------------------------------------------------------------------------

IMAGE_TAG_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
ENV_NAME_RE = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
HEAD_POOL_ROLE = "pathways-head"
COMPONENTS = {"server": "pathways_server", "proxy": "proxy_server", "worker": "worker"}


# The version-matrix images (stacks/facts/versions.py IMAGES) whose pinned tag is the default `pathwaysVersion`: the
# controller runs its Pathways server and proxy at that tag unless `images.*` names others.
TPU_IMAGES = ("pathwaysServer", "pathwaysProxy")


def default_pathways_version() -> str:
    """The tag the version matrix pins for the Pathways server and proxy images (the controller's default is
    `latest`, which would float)."""
    return IMAGES[TPU_IMAGES[0]].rsplit(":", 1)[1]


@dataclass(frozen=True)
class PathwaysJobPlan(WorkloadPlan):
    workload: PathwaysJobWorkload

    @property
    def prefix(self) -> str:
        """The workload's prefix of the stack bucket: the only objects its identity may touch."""
        return f"{naming.PATHWAYS_SCRATCH_PREFIX}{self.name}/"

    def grants(self) -> list[Grant]:
        """The Pathways components write their scratch (`pathwaysDir`, under `prefix`), the user's job its own files
        there: objectUser on the prefix, for the node identity every pod of the job runs as."""
        return [Grant("prefix-objectuser", self.bucket, OBJECT_USER, self.prefix)]

    @property
    def worker_image(self) -> str:
        """The image the controller runs on the TPU hosts: `images.worker`, else the Pathways server image at
        `pathwaysVersion`."""
        return self.workload.images.worker or f"{IMAGES[TPU_IMAGES[0]].rsplit(':', 1)[0]}:{self.pathways_version}"

    @property
    def startup(self) -> StartupPath:
        """A batch job: its TPU hosts run the Pathways worker; the user's program (on the head) loads what it loads
        and compiles as it does (the stack sets no cache for it; the Pathways server documents no cache flag); no
        server to probe."""
        return StartupPath(images=(self.worker_image,), weights="job", compile_cache="none")

    @property
    def pathways_dir(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}tmp"

    @property
    def pathways_version(self) -> str:
        return self.workload.pathways_version or default_pathways_version()

    @property
    def interactive(self) -> bool:
        return self.workload.job is None

    @property
    def head_on_cpu(self) -> bool:
        return self.workload.deployment_mode == "default"

    @property
    def head_machine(self) -> cpu_machines.CpuMachine | None:
        """The CPU machine type of the head's node pool (default mode): the cheapest that holds the head pod."""
        if not self.head_on_cpu:
            return None
        return cpu_machines.smallest_fitting(HEAD_CPU, HEAD_MEMORY_BYTES)

    @property
    def head_pool_name(self) -> str:
        return head_pool_name(self.name)

    @property
    def head_selector(self) -> dict[str, str]:
        return {naming.ROLE_LABEL: HEAD_POOL_ROLE, naming.WORKLOAD_LABEL: self.name}

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        """An interactive job's `portForward` forwards the proxy."""
        return (PROXY_PORT,) if self.interactive else ()

    def pod_manifests(self) -> list[dict[str, Any]]:
        """The pods of this workload, for its namespace's Pod Security level: the ones the controller makes."""
        return controller_pods(self)

    def disruption_units(self) -> list[disruption.Unit]:
        """The JobSet the controller makes, named after the job (its pods carry JOBSET_NAME_LABEL, as `commands`
        select them): one head pod and `hosts` workers per slice."""
        pods = 1 + self.shape.hosts * self.pool.slices
        return [disruption.Unit("JobSet", self.name, {JOBSET_NAME_LABEL: self.name}, self.labels, pods)]

    @property
    def serves_requests(self) -> bool:
        """Interactive: a head that clients connect to; otherwise a batch job that ends."""
        return self.interactive

    def serving_containers(self) -> tuple[str, ...]:
        """The proxy clients connect to (`portForward`). No container the controller makes has a readiness probe
        (google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go MakeProxyContainer,
        MakeResourceManagerContainer, MakeWorkerJob; in headless mode the resource manager and the proxy are the head
        pod's containers, MakePathwaysHeadPodSpec): the proxy's readiness is that it runs."""
        return (PROXY_CONTAINER,)

    @property
    def chips_at_peak(self) -> int:
        """The job's workers hold every slice of the pool."""
        return self.pool.total_chips


# ---- validation ------------------------------------------------------------------------------------------------


def check(
    path: str,
    workload: PathwaysJobWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> PathwaysJobPlan | None:
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
    return None if problems else PathwaysJobPlan.on(workload, pool, namespace, ctx)


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


# ---- manifests -------------------------------------------------------------------------------------------------


def _template(plan: PathwaysJobPlan) -> dict[str, Any]:
    """The head pod template of a batch job: the user's program as the `main` container. The controller adds the
    resource manager and proxy as sidecars, host networking and the JAX environment."""
    job = plan.workload.job
    assert job is not None
    container: dict[str, Any] = {
        "name": MAIN_CONTAINER,
        "image": job.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": dict(MAIN_REQUESTS)},
    }
    if job.command is not None:
        container["command"] = list(job.command)
    if job.args is not None:
        container["args"] = list(job.args)
    if job.env:
        container["env"] = [{"name": k, "value": v} for k, v in job.env.items()]
    spec: dict[str, Any] = {"containers": [container]}
    if plan.head_on_cpu:
        spec["nodeSelector"] = plan.head_selector
    else:
        # beside a worker on a TPU host (the controller sets the TPU node selector); TPU nodes are tainted
        spec["tolerations"] = [dict(TPU_TOLERATION)]
    # The user's image: its user and writable paths are unknown, so it keeps them (stacks/security/pod_security.py).
    return {"metadata": {"labels": dict(plan.labels)}, "spec": secure_pod(spec, IMAGE_DEFAULTS)}


# The checkov findings a PathwaysJob accepts in its user template (stacks/security/scan_exceptions.py). The `main` container is
# the user's batch program: it requests MAIN_REQUESTS, but its memory peak is the program's own (no limit), and it
# serves nothing to probe; a failure ends the job (maxRestarts).
USER_PROGRAM = "the user's batch program (job.image): its memory peak is its own, so it requests but sets no limit"
SKIPS: tuple[scan_exceptions.Skip, ...] = (
    ("CKV_K8S_43", "job.image is the user's reference, used as given"),
    scan_exceptions.PULL_POLICY,
    scan_exceptions.CPU_LIMIT,
    *scan_exceptions.security(IMAGE_DEFAULTS),
    ("CKV_K8S_13", USER_PROGRAM),
    *scan_exceptions.probes("a batch job serves nothing to probe; a failure ends the job (maxRestarts)"),
)


def pathways_job(plan: PathwaysJobPlan) -> dict[str, Any]:
    shape = plan.shape
    controller: dict[str, Any] = {"deploymentMode": plan.workload.deployment_mode, "mainContainerName": MAIN_CONTAINER}
    if not plan.interactive:
        controller["template"] = _template(plan)
    spec: dict[str, Any] = {
        "maxRestarts": plan.workload.max_restarts,
        "pathwaysDir": plan.pathways_dir,
        "pathwaysVersion": plan.pathways_version,
        "workers": [
            {
                "type": shape.machine_type,
                "topology": shape.topology,
                "numSlices": plan.pool.slices,
                # the controller adds the TPU selectors to these (CTRL makeTPUNodeSelector): its pods select the
                # job's own pool, not any pool of the same slice shape
                "nodeSelector": dict(plan.pool.pool_selector),
            }
        ],
        "controller": controller,
    }
    custom = [
        {"componentType": component, "image": getattr(plan.workload.images, key)}
        for key, component in COMPONENTS.items()
        if getattr(plan.workload.images, key)
    ]
    if custom:
        spec["customComponents"] = custom
    meta = plan.metadata(plan.name, plan.labels)
    if not plan.interactive:
        meta["annotations"] = scan_exceptions.skip_annotations(SKIPS)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def controller_pods(plan: PathwaysJobPlan) -> list[dict[str, Any]]:
    """The security-relevant part of the pod specs the controller builds from the PathwaysJob (CTRL
    MakePathwaysHeadPodSpec, MakeWorkerJob): every pod on the host network, the workers with a hostPath /tmp. They
    pass only the `privileged` Pod Security level, so the workload's namespace must allow it."""
    head_containers: list[dict[str, Any]] = [{"name": RM_CONTAINER}, {"name": PROXY_CONTAINER}]
    if not plan.interactive:
        head_containers = [*_template(plan)["spec"]["containers"], *head_containers]
    head: dict[str, Any] = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "containers": head_containers}
    # makeTPUNodeSelector: workers[0].nodeSelector plus the accelerator and topology, for the workers and a
    # colocated head
    tpu_selector = {**pathways_job(plan)["spec"]["workers"][0]["nodeSelector"], **plan.shape.node_selector}
    if not plan.head_on_cpu:
        head["nodeSelector"] = tpu_selector
    worker = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "nodeSelector": tpu_selector,
        "containers": [{"name": "pathways-worker", "volumeMounts": [{"name": "shared-tmp", "mountPath": "/tmp"}]}],
        "volumes": [{"name": "shared-tmp", "hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}}],
    }
    return [{"kind": "Pod", "spec": head}, {"kind": "Pod", "spec": worker}]


def commands(plan: PathwaysJobPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    """How to follow the job: its status, its pods, the head's and the workers' logs; interactive: how to connect."""
    ns, name = plan.namespace, plan.name
    head = f"{JOBSET_NAME_LABEL}={name},{REPLICATED_JOB_LABEL}={HEAD_JOB}"
    workers = plan.shape.hosts * plan.pool.slices
    out = {
        "status": f"kubectl -n {ns} get pathwaysjob {name} --watch",
        "pods": f"kubectl -n {ns} get pods -l {JOBSET_NAME_LABEL}={name} -o wide --watch",
        "headLogs": f"kubectl -n {ns} logs -f -l {head} -c {PROXY_CONTAINER if plan.interactive else MAIN_CONTAINER}",
        "workerLogs": (
            f"kubectl -n {ns} logs -f -l {JOBSET_NAME_LABEL}={name},{REPLICATED_JOB_LABEL}={WORKER_JOB} "
            f"--prefix --max-log-requests={workers}"
        ),
    }
    if plan.interactive:
        local = local_ports.get(PROXY_PORT, PROXY_PORT)
        out["portForward"] = (
            f"kubectl -n {ns} port-forward $(kubectl -n {ns} get pods -l {head} -o name) {local}:{PROXY_PORT}"
        )
        out["connect"] = (
            f"JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://localhost:{local} python -c "
            "'import pathwaysutils, jax; pathwaysutils.initialize(); print(jax.devices())'"
        )
    return out


def head_pool_name(name: str) -> str:
    """GKE node pool of the head (default mode), `<name>-head`."""
    return naming.fit(f"{name}-head", naming.NODE_POOL_NAME_MAX)
