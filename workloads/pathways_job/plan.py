"""The plan of a PathwaysJob (google/pathways-job): batch or interactive Pathways on a multi-host TPU pool.

The PathwaysJob controller builds a JobSet from a short spec: a `pathways-head` job (Pathways resource manager
and proxy, plus the user's program in batch mode) and a `worker` job per slice with one Pathways worker per TPU
host. Every value the spec needs comes from the pool: `workers[0].type` (machine type), `topology`, `numSlices`;
the scratch directory `pathwaysDir` is a prefix of the stack bucket. What the controller derives from them
(node selectors, worker count, chips per worker, ports, requests) is mirrored from its source at the pinned
release, google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go, so the stack can check a pool
before anything is applied (checks.py) and size the node the head pod needs (here). This module holds the plan's
values only: the rules are in checks.py, the objects in manifests.py, the commands printed in commands.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import cpu_machines
from stacks.facts.versions import IMAGES
from stacks.security.bucket_access import OBJECT_USER, Grant
from stacks.serving import disruption
from stacks.serving.startup import StartupPath
from stacks.serving.workload_plan import WorkloadPlan
from workloads.pathways_job.config import PathwaysJobWorkload

# ---- what the controller (v0.1.4) does, from pathwaysjob_controller.go ----------------------------------------
PROXY_PORT = 29000  # PathwaysProxyPort; JAX clients connect to grpc://<head>:29000
RM_PORT = 29001  # PathwaysRMPort
HEAD_JOB = "pathways-head"  # PathwaysHeadJobName
WORKER_JOB = "worker"
MAIN_CONTAINER = "main"  # ControllerSpec.MainContainerName default
PROXY_CONTAINER = "pathways-proxy"  # MakeProxyContainer
RM_CONTAINER = "pathways-rm"  # MakeResourceManagerContainer
# The head's containers carry limits only (so requests = limits): pathways-rm 8 CPU / 32e9 bytes,
# pathways-proxy 16 CPU / 100e9 bytes (MakeResourceManagerContainer, MakeProxyContainer).
HEAD_CPU = 8 + 16
HEAD_MEMORY_BYTES = 32_000_000_000 + 100_000_000_000
# Pod labels JobSet sets on every pod of the job (the controller's own affinity rules select on the first).
JOBSET_NAME_LABEL = disruption.JOBSET_NAME_LABEL
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"

HEAD_POOL_ROLE = "pathways-head"
# A Kubernetes taint effect as GKE's node pool API spells it (container.v1 NodeTaint.effect: NO_SCHEDULE,
# PREFER_NO_SCHEDULE, NO_EXECUTE), which GKE puts on the nodes as the Kubernetes one.
GKE_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE", "NoExecute": "NO_EXECUTE"}


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
        return [Grant("prefix-objectuser", self.bucket, OBJECT_USER, self.prefix, legacy_outside=True)]

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

    def disruption_units(self) -> list[disruption.Unit]:
        """The JobSet the controller makes, named after the job (its pods carry JOBSET_NAME_LABEL, as `commands`
        select them): one head pod and `hosts` workers per slice (its pods, for the alerts and dashboard)."""
        pods = 1 + self.shape.hosts * self.pool.slices
        return [disruption.Unit("JobSet", self.name, {JOBSET_NAME_LABEL: self.name}, self.labels, pods)]

    def disruption_budgets(self) -> list[dict[str, Any]]:
        """None. The job cannot lose a pod and go on (v0.1.4 without elastic slices): a head eviction fails the job,
        restarted whole by maxRestarts; an evicted worker's Job recreates only that pod, which waits for a node while
        the job has lost a host. A budget (an integer minAvailable: Jobs have no scale) would not keep the job alive,
        only refuse every further eviction once a pod is gone and pending, holding the drain of the slice's other
        nodes until GKE stops waiting (docs/workloads/pathways-job.md)."""
        return []

    @property
    def head_taint(self) -> dict[str, str] | None:
        """The taint of a batch job's own head pool, which only its head tolerates (`_template`), so no other pod
        (another job's head: an interactive head has no selector) takes the node its head needs; None for an
        interactive job, whose head the controller builds without tolerations (MakePathwaysHeadPodSpec, headless
        mode), and in colocated mode (no head pool)."""
        if not self.head_on_cpu or self.interactive:
            return None
        return {"key": naming.WORKLOAD_LABEL, "value": self.name, "effect": "NoSchedule"}

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


def head_pool_name(name: str) -> str:
    """GKE node pool of the head (default mode), `<name>-head`."""
    return naming.fit(f"{name}-head", naming.NODE_POOL_NAME_MAX)
