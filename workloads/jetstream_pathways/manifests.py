"""The Kubernetes objects of a JetStream + Pathways workload, from its plan: the LeaderWorkerSet (the leader's
Pathways proxy, resource manager, jax-tpu and jetstream-http, one Pathways worker per TPU host), its Service and
PodMonitoring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.facts import catalog
from stacks.security import scan_exceptions
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption, maxtext
from stacks.serving.startup import startup_probe
from stacks.serving.workload_plan import (
    LWS_API,
    LWS_AVAILABLE,
    LWS_EXCLUSIVE,
    LWS_SUBGROUP_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    cpu_quantity,
    host_requests,
    memory_quantity,
)
from workloads.jetstream.server import (
    JETSTREAM_GRPC_PORT,
    JETSTREAM_HEALTH_PATH,
    METRICS_PORT,
    jetstream_http_probes,
    jetstream_pod_monitoring,
    jetstream_service,
)
from workloads.jetstream_pathways.plan import (
    ENGINE_IMAGE,
    HTTP_PORT,
    PERSISTENCE_ENV,
    PROXY_PORT,
    RM_PORT,
    WORKER_PORT,
    PathwaysPlan,
    instance_type,
)


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
        name: {
            "cpu": cpu_quantity(round(cpu * cpu_scale, 1)),
            "memory": memory_quantity(int(mem * mem_scale * 1000), "M"),
        }
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
            f"--instance_type={instance_type(plan.shape)}",
        ],
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": RM_PORT}],
    }
    jax: dict[str, Any] = {
        "name": "jax-tpu",
        "image": plan.image(ENGINE_IMAGE),
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
            {"containerPort": plan.workload.metrics_port, "name": METRICS_PORT},
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
        "metadata": plan.tpu_metadata(
            plan.name,
            plan.labels,
            {**annotations, **scan_exceptions.skip_annotations(scan_skips(plan))},
            wait_for=LWS_AVAILABLE,
        ),
        "spec": {
            "replicas": 0 if plan.paused else plan.workload.replicas,
            "rolloutStrategy": plan.lws_rollout_strategy(),
            "leaderWorkerTemplate": template,
        },
    }


@dataclass(frozen=True)
class ServedPathwaysPlan(PathwaysPlan):
    """The plan `check` returns: PathwaysPlan's values with the pod manifests this module makes of them (the plan's
    values sit below the manifests, so the objects built from them are added here, one layer up)."""

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [leader_worker_set(self)]


def service(plan: PathwaysPlan) -> dict[str, Any]:
    return jetstream_service(plan, plan.service_name, plan.labels)


def pod_monitoring(plan: PathwaysPlan) -> dict[str, Any]:
    """The leader's JetStream server metrics."""
    return jetstream_pod_monitoring(plan, plan.labels)
