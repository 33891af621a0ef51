"""JetStream + MaxText + Pathways on a LeaderWorkerSet: validation and manifests.

One LWS group per replica: a leader pod (Pathways proxy and resource manager, the JetStream server `jax-tpu`,
and `jetstream-http`) plus one Pathways worker per TPU host of every slice of the pool. Every value the
reference tutorial substitutes by hand comes from the pool: node selectors, `google.com/tpu` per worker,
`size`, `--instance_count`, `--instance_type`, the sub-group size, and the scratch path on the stack bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.facts.versions import IMAGES, image_gaps
from stacks.problems import Problem
from stacks.security import network_policy, scan_exceptions
from stacks.security.bucket_access import OBJECT_USER, Grant, read_grant
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption, maxtext
from stacks.serving.maxtext import CACHE_ARG, CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.startup import StartupPath, startup_probe
from stacks.serving.workload_plan import (
    JETSTREAM_GRPC_PORT,
    JETSTREAM_HEALTH_PATH,
    JETSTREAM_HTTP_PORT,
    JETSTREAM_HTTP_SERVES,
    LWS_API,
    LWS_EXCLUSIVE,
    LWS_SUBGROUP_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    WorkloadPlan,
    check_model_inputs,
    check_ports,
    cpu_quantity,
    generate_curl,
    host_requests,
    jetstream_http_probes,
    jetstream_pod_monitoring,
    jetstream_service,
)
from stacks.serving.workload_type import WorkloadContext
from workloads.jetstream_pathways.config import JetStreamPathwaysWorkload
from workloads.jetstream_pathways.presets import PRESETS, ModeSpec, PathwaysPreset, mode_spec

RM_PORT = 38677  # Pathways resource manager
WORKER_PORT = 38679
PROXY_PORT = 38681
HTTP_PORT = JETSTREAM_HTTP_PORT
# images.<key> -> the version-matrix image it defaults to (stacks/facts/versions.py IMAGES)
DEFAULT_IMAGES = {
    "proxy": "pathwaysProxy",
    "server": "pathwaysServer",
    "jetstream": "jetstreamPathways",
    "http": "jetstreamHttpPathways",
}
# The default images that run on the TPUs: the type serves the generations they all serve.
TPU_IMAGES = tuple(DEFAULT_IMAGES[k] for k in ("server", "proxy", "jetstream"))
# pathwaysutils sets jax_enable_compilation_cache False on the Pathways backend "because Pathways handles its own
# compilation cache" (AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py initialize; from v0.0.8 in
# pathwaysutils/__init__.py); JetStream's engine imports it (AI-Hypercomputer/JetStream@v0.3
# jetstream/engine/__init__.py). So the stack sets no jax_cache_dir and grants no compile-cache prefix here: a cache
# JAX never reads would only cost a grant. No source documents a Pathways compile cache that outlives a replica.
PATHWAYS_CACHE_OFF = (
    "pathwaysutils turns JAX's persistent compile cache off under Pathways (AI-Hypercomputer/pathways-utils "
    "_initialize.py), so the stack sets none; no source documents a Pathways compile cache that survives a new replica"
)
# Pathways persistence: with ENABLE_PATHWAYS_PERSISTENCE=1 on the JAX client, pathwaysutils registers its Orbax
# handlers (`_is_persistence_enabled`, `orbax_handler.register_pathways_handlers`), with which the Pathways workers
# read and write the arrays' shards themselves; the handler raises "OCDBT not supported for Pathways." for an OCDBT
# checkpoint and writes use_ocdbt=False, use_zarr3=False (AI-Hypercomputer/pathways-utils@v0.1.9
# pathwaysutils/_initialize.py, pathwaysutils/persistence/orbax_handler.py). MaxText restores load_parameters_path
# with checkpoint_storage_use_ocdbt / checkpoint_storage_use_zarr3 (both True in its configs/base.yml; passed to
# checkpointing.load_params_from_path by maxtext_utils.setup_decode_state, AI-Hypercomputer/maxtext).
PERSISTENCE_ENV = "ENABLE_PATHWAYS_PERSISTENCE"
PERSISTENCE_ARGS = {"checkpoint_storage_use_ocdbt": False, "checkpoint_storage_use_zarr3": False}
# Ports of the leader pod's containers (proxy, resource manager, JetStream, HTTP): the metrics port is not one.
LEADER_PORTS = {
    PROXY_PORT: "Pathways proxy",
    RM_PORT: "Pathways resource manager",
    JETSTREAM_GRPC_PORT: "JetStream gRPC",
    HTTP_PORT: "jetstream-http",
}
RESERVED_MAXTEXT = {
    CHECKPOINT_ARG: "set `checkpoint` instead",
    METRICS_ARG: "set `metricsPort` instead",
    CACHE_ARG: "pathwaysutils turns JAX's compile cache off under Pathways, so a cache directory would never be read",
}
# The cold case jax-tpu's startup probe allows: what the reference's probe allowed, its mode's initial delay
# (presets.Probes.startup_initial_delay) plus failureThreshold 10000 x periodSeconds 1
# (kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml), now probed from the start.
REFERENCE_STARTUP_WINDOW_S = 10000


@dataclass(frozen=True)
class PathwaysPlan(WorkloadPlan):
    workload: JetStreamPathwaysWorkload

    @property
    def preset(self) -> PathwaysPreset:
        return PRESETS[self.workload.model]

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (self.workload.service.port,)

    @property
    def mode(self) -> ModeSpec:
        return mode_spec(self.preset, self.workload.mode)

    @property
    def size(self) -> int:
        """Pods per LWS group: one Pathways worker per host of every slice, plus the leader."""
        return self.pool.slices * self.shape.hosts + 1

    @property
    def hosts_needed(self) -> int:
        """Each replica (LeaderWorkerSet group) takes every slice of the pool."""
        return self.workload.replicas * self.pool.slices * self.shape.hosts

    @property
    def rollout_hosts(self) -> int:
        """A surge group takes as many slices as any group."""
        return self.pool.slices * self.shape.hosts

    @property
    def prefix(self) -> str:
        """The workload's prefix of the stack bucket, holding its Pathways scratch (expired by the bucket)."""
        return f"{naming.PATHWAYS_SCRATCH_PREFIX}{self.name}/"

    @property
    def chips_at_peak(self) -> int:
        return self.workload.replicas * self.pool.total_chips

    @property
    def scratch(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}tmp"

    def read_paths(self) -> list[tuple[str, str]]:
        return [("checkpoint", self.workload.checkpoint)]

    def grants(self) -> list[Grant]:
        """The Pathways server and proxy write their scratch (--gcs_scratch_location, under `prefix`); the engine
        reads the checkpoint (MaxText load_parameters_path). No compile-cache prefix (PATHWAYS_CACHE_OFF)."""
        read = self.workload.grant_checkpoint_read
        checkpoint = read_grant(
            "checkpoint", self.workload.checkpoint, self.bucket, read, other_key="checkpoint-reader"
        )
        return [Grant("scratch", self.bucket, OBJECT_USER, self.prefix), *([checkpoint] if checkpoint else [])]

    @property
    def service_name(self) -> str:
        return f"{self.name}-svc"

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    @property
    def persistence(self) -> bool:
        """Pathways persistence restores the checkpoint (each worker its own shards)."""
        return self.workload.pathways_persistence

    @property
    def cold_start_s(self) -> int:
        return self.mode.probes.startup_initial_delay + REFERENCE_STARTUP_WINDOW_S

    @property
    def startup(self) -> StartupPath:
        """No compile cache (PATHWAYS_CACHE_OFF: compilation counted cold). The checkpoint is restored by the JAX
        client, or with pathwaysPersistence by the Pathways workers, each reading its own shards (distributed)."""
        return StartupPath(
            images=tuple(dict.fromkeys(self.image(k) for k in ("server", "proxy", "jetstream", "http"))),
            weights="checkpoint-gcs",
            distributed_load=self.persistence,
            compile_cache="none",
            compile_cache_doubt=PATHWAYS_CACHE_OFF,
            startup_initial_delay_s=0,
            startup_period_s=startup_probe({}, self.cold_start_s)["periodSeconds"],
            cold_start_s=self.cold_start_s,
        )

    @property
    def weights_bytes(self) -> int:
        """The preset's parameters at the served weight width (MaxText `quantization`), as the HBM check counts them."""
        return catalog.weight_bytes(self.preset.params_billion, maxtext.weight_bits(self.maxtext_pairs()))

    def maxtext_pairs(self) -> list[tuple[str, str]]:
        preset_pairs = maxtext.merge(self.preset.args, {CHECKPOINT_ARG: self.workload.checkpoint})
        with_mode = maxtext.merge(preset_pairs, dict(self.mode.extra_args))
        derived: dict[str, maxtext.Scalar] = {METRICS_ARG: self.workload.metrics_port}
        if self.persistence:
            derived.update(PERSISTENCE_ARGS)
        return maxtext.merge(maxtext.merge(with_mode, derived), self.workload.maxtext)

    def image(self, key: str) -> str:
        return getattr(self.workload.images, key) or self.served(IMAGES[DEFAULT_IMAGES[key]])

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [leader_worker_set(self)]

    def ingress_allows(self) -> list[dict[str, Any]]:
        """The leader's HTTP server to clients, its JetStream metrics to Managed Prometheus."""
        return [
            network_policy.allow_clients(self.name, self.namespace, self.labels, [HTTP_PORT]),
            network_policy.allow_metrics(self.name, self.namespace, self.labels, self.workload.metrics_port),
        ]


# ---- validation ---------------------------------------------------------------------------------------


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
    plan = PathwaysPlan.on(workload, pool, namespace, ctx)
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


# ---- manifests ----------------------------------------------------------------------------------------


def _probe(plan: PathwaysPlan, *, startup: bool) -> dict[str, Any]:
    probes = plan.mode.probes
    probe: dict[str, Any] = {"httpGet": {"path": JETSTREAM_HEALTH_PATH, "port": HTTP_PORT, "scheme": "HTTP"}}
    if startup:
        # no fixed delay: probed from the start, for the reference's whole window (cold_start_s)
        probe = startup_probe(probe, plan.cold_start_s)
    else:
        probe.update(periodSeconds=60, failureThreshold=probes.failure_threshold)
    return probe


# The Pathways proxy/server, JetStream and jetstream-http images' users and writable paths are not published:
# every container keeps its image's user and a writable root filesystem; everything else is restricted.
def jax_security(plan: PathwaysPlan) -> ContainerSecurity:
    """The JetStream server: in disaggregated mode it gets the capabilities the reference adds.

    kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/jetstream-pathways-disagg-llama-2-70b-2-2x4.yaml
    adds SYS_PTRACE, NET_ADMIN and SYS_TIME to jax-tpu without saying why, and no upstream source says the
    server runs without them; they are kept (which makes the namespace `privileged`) until a real deploy shows
    otherwise.
    """
    if not plan.mode.capabilities:
        return IMAGE_DEFAULTS
    return ContainerSecurity(
        non_root=False,
        read_only_root=False,
        writable=(),
        add_capabilities=tuple(plan.mode.capabilities),
        why="disaggregated JetStream server, as the GKE reference manifest",
    )


def _pod_placement(plan: PathwaysPlan) -> dict[str, Any]:
    return {
        "serviceAccountName": plan.service_account,
        **plan.tpu_placement(),
    }


# What each leader container asks for, before scaling to the host (vCPUs, GB). The Pathways resource manager and
# proxy take the PathwaysJob controller's defaults (google/pathways-job@v0.1.4:internal/controller/
# pathwaysjob_controller.go: RM 8 CPU / 32 GB, proxy 16 CPU / 100 GB); JetStream and its HTTP front are ours
# (no upstream figure): the JetStream server only drives the proxy, the HTTP server relays requests.
LEADER_DEMAND: dict[str, tuple[float, float]] = {
    "pathways-proxy": (16, 100),
    "pathways-rm": (8, 32),
    "jax-tpu": (8, 32),
    "jetstream-http": (0.5, 0.5),
}
# The leader shares a TPU host with a Pathways worker: together its containers request at most this share of the
# host's vCPUs and memory (the rest, less GKE's reservations, stays with the worker).
LEADER_HOST_SHARE = 0.5


def leader_requests(shape: catalog.SliceShape) -> dict[str, dict[str, str]]:
    """CPU and memory requests of each leader container, scaled down (never up) so that together they fit the
    host share; without the host's figures in the catalog, the demands as they are."""
    cpu_total = sum(c for c, _ in LEADER_DEMAND.values())
    mem_total = sum(m for _, m in LEADER_DEMAND.values())
    host = shape.host_resources
    cpu_scale = min(1.0, LEADER_HOST_SHARE * host[0] / cpu_total) if host else 1.0
    mem_scale = min(1.0, LEADER_HOST_SHARE * host[1] / mem_total) if host else 1.0
    return {
        name: {"cpu": cpu_quantity(round(cpu * cpu_scale, 1)), "memory": f"{int(mem * mem_scale * 1000)}M"}
        for name, (cpu, mem) in LEADER_DEMAND.items()
    }


def leader_containers(plan: PathwaysPlan) -> list[dict[str, Any]]:
    requests = leader_requests(plan.shape)
    proxy: dict[str, Any] = {"name": "pathways-proxy", "image": plan.image("proxy")}
    # Always connected to the resource manager: the PathwaysJob controller passes these three to every proxy
    # (google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go, MakeProxyContainer); the
    # interleaved sample in kubernetes-engine-samples leaves `args:` empty.
    proxy["args"] = [
        f"--resource_manager_address=$(LWS_LEADER_ADDRESS):{RM_PORT}",
        f"--server_port={PROXY_PORT}",
        f"--gcs_scratch_location={plan.scratch}",
        *plan.mode.proxy_args,
    ]
    proxy.update(imagePullPolicy="IfNotPresent", ports=[{"containerPort": PROXY_PORT}])
    resource_manager = {
        "name": "pathways-rm",
        "env": [
            {"name": "HOST_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"},
            {"name": "TPU_SKIP_MDS_QUERY", "value": "true"},
        ],
        "image": plan.image("server"),
        "args": [
            f"--server_port={RM_PORT}",
            f"--gcs_scratch_location={plan.scratch}",
            "--node_type=resource_manager",
            f"--instance_count={plan.pool.slices}",
            f"--instance_type={plan.shape.pathways_instance_type}",
        ],
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": RM_PORT}],
    }
    jax: dict[str, Any] = {
        "name": "jax-tpu",
        "image": plan.image("jetstream"),
        "args": maxtext.render(plan.preset.config_file, plan.maxtext_pairs()),
        "env": [
            {"name": k, "value": v}
            for k, v in [*plan.preset.env, *([(PERSISTENCE_ENV, "1")] if plan.persistence else [])]
        ],
        "imagePullPolicy": "IfNotPresent",
    }
    jax.update(
        ports=[
            {"containerPort": JETSTREAM_GRPC_PORT},
            {"containerPort": plan.workload.metrics_port, "name": "metrics"},
        ],
        startupProbe=_probe(plan, startup=True),
        livenessProbe=_probe(plan, startup=False),
        readinessProbe=_probe(plan, startup=False),
    )
    http = {
        "name": "jetstream-http",
        "image": plan.image("http"),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": HTTP_PORT}],
        # readiness only: a restart of any leader container recreates the whole group (jetstream_http_probes)
        **jetstream_http_probes(liveness=False),
    }
    containers = [proxy, resource_manager, jax, http]
    for container in containers:
        container["resources"] = {"requests": requests[container["name"]]}
    return containers


def worker_container(plan: PathwaysPlan) -> dict[str, Any]:
    return {
        "name": "worker",
        "args": [
            f"--server_port={WORKER_PORT}",
            f"--resource_manager_address=$(LWS_LEADER_ADDRESS):{RM_PORT}",
            f"--gcs_scratch_location={plan.scratch}",
        ],
        "image": plan.image("server"),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": WORKER_PORT}],
        # the reference's TPU limit (a string, as there), and a share of the host's CPU and memory
        "resources": {
            "requests": host_requests(plan.shape),
            "limits": {catalog.TPU_RESOURCE: str(plan.shape.tpu_request)},
        },
    }


# The Pathways proxy, resource manager and workers serve gRPC only and no source documents a health endpoint of
# theirs (the images are not open source; the GKE reference manifests probe only jax-tpu, kubernetes-engine-samples
# ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml). jetstream-http has a readiness probe of its own (its root path)
# and no liveness probe: the group restarts as one when any of its containers restarts, not only when a pod fails
# (restartPolicy's default RecreateGroupOnPodRestart: kubernetes-sigs/lws@v0.7.0
# config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml; pkg/controllers/pod_controller.go
# handleRestartPolicy, pkg/utils/pod/pod_utils.go ContainerRestarted).
NO_PROBE = "Pathways proxy, resource manager and workers serve gRPC with no documented health endpoint (upstream probes none); the group restarts as one"


def scan_skips(plan: PathwaysPlan) -> tuple[scan_exceptions.Skip, ...]:
    """The checkov findings both pod templates of the LeaderWorkerSet accept (stacks/security/scan_exceptions.py), with their
    reasons; the leader's own (jax-tpu's security) are on its template (leader_skips)."""
    return (
        *scan_exceptions.TAG_PINNED,
        scan_exceptions.CPU_LIMIT,
        scan_exceptions.HOST_MEMORY_LIMIT,
        *scan_exceptions.security(IMAGE_DEFAULTS),
        *scan_exceptions.probes(NO_PROBE),
    )


def leader_skips(plan: PathwaysPlan) -> dict[str, str]:
    """The leader template's own skip annotations: jax-tpu's security findings the workers do not have."""
    return scan_exceptions.template_skip_annotations(scan_skips(plan), scan_exceptions.security(jax_security(plan)))


def leader_worker_set(plan: PathwaysPlan) -> dict[str, Any]:
    template: dict[str, Any] = {}
    if plan.workload.mode == "disaggregated":
        annotations = {LWS_SUBGROUP_EXCLUSIVE: SLICE_TOPOLOGY_KEY}
        # one sub-group per slice: the hosts of a slice share a node pool
        template["subGroupPolicy"] = {"subGroupSize": plan.shape.hosts}
    else:
        annotations = {LWS_EXCLUSIVE: SLICE_TOPOLOGY_KEY}
    template.update(
        leaderTemplate={
            "metadata": {"labels": plan.labels, **({"annotations": own} if (own := leader_skips(plan)) else {})},
            "spec": disruption.drained(
                secure_pod(
                    {**_pod_placement(plan), "containers": leader_containers(plan)},
                    {
                        "pathways-proxy": IMAGE_DEFAULTS,
                        "pathways-rm": IMAGE_DEFAULTS,
                        "jax-tpu": jax_security(plan),
                        "jetstream-http": IMAGE_DEFAULTS,
                    },
                )
            ),
        },
        size=plan.size,
        workerTemplate={
            "spec": disruption.drained(
                secure_pod({**_pod_placement(plan), "containers": [worker_container(plan)]}, IMAGE_DEFAULTS)
            )
        },
    )
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": plan.metadata(
            plan.name, plan.labels, annotations={**annotations, **scan_exceptions.skip_annotations(scan_skips(plan))}
        ),
        "spec": {
            "replicas": 0 if plan.paused else plan.workload.replicas,
            "rolloutStrategy": plan.lws_rollout_strategy(),
            "leaderWorkerTemplate": template,
        },
    }


def service(plan: PathwaysPlan) -> dict[str, Any]:
    return jetstream_service(plan, plan.service_name, plan.labels)


def pod_monitoring(plan: PathwaysPlan) -> dict[str, Any]:
    """The leader's JetStream server metrics."""
    return jetstream_pod_monitoring(plan, plan.labels)


def commands(plan: PathwaysPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    port = plan.workload.service.port
    local = local_ports.get(port, port)
    return {
        "portForward": f"kubectl -n {plan.namespace} port-forward svc/{plan.service_name} {local}:{port}",
        "curl": generate_curl(local),
    }
