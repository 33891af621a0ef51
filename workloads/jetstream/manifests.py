"""The Kubernetes objects of a single-host JetStream workload, from its plan: the Deployment (engine and
jetstream-http), its Service, PodMonitoring and autoscaler.

The engine container is not privileged (the reference's is): GKE 1.28 and later give TPU devices to
unprivileged containers that request `google.com/tpu`, and the stack's TPU generations need newer versions
than that. A cluster pinned below 1.28 gets `privileged: true`, as those versions require.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.security import scan_exceptions
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption, maxtext
from stacks.serving.startup import startup_probe
from stacks.serving.workload_plan import autoscaler_manifest, tpu_resources
from workloads.jetstream.plan import COLD_START_S, ENGINE_CONTAINER, GRPC_PORT, HEALTH_PATH, HTTP_PORT, JetStreamPlan
from workloads.jetstream.server import (
    JETSTREAM_METRICS,
    METRICS_PORT,
    jetstream_http_probes,
    jetstream_pod_monitoring,
    jetstream_service,
)


def _http_probe(**timing: int) -> dict[str, Any]:
    return {"httpGet": {"path": HEALTH_PATH, "port": HTTP_PORT, "scheme": "HTTP"}, **timing}


# The maxengine-server and jetstream-http images' users and writable paths are not published (their Dockerfiles
# are not in the tutorials' sources): they keep the image's user and a writable root filesystem; everything
# else is restricted. The engine is privileged only below GKE 1.28 (see the module docstring).
ENGINE_SECURITY = IMAGE_DEFAULTS
HTTP_SECURITY = IMAGE_DEFAULTS
PRIVILEGED_ENGINE_SECURITY = ContainerSecurity(
    non_root=False, read_only_root=False, writable=(), privileged=True, why="TPU device access on GKE < 1.28"
)


def deployment(plan: JetStreamPlan) -> dict[str, Any]:
    engine_security = PRIVILEGED_ENGINE_SECURITY if plan.privileged else ENGINE_SECURITY
    engine: dict[str, Any] = {
        "name": ENGINE_CONTAINER,
        "image": plan.image("server"),
        "imagePullPolicy": "IfNotPresent",
        "args": maxtext.render(None, plan.maxtext_pairs()),
        "ports": [{"containerPort": GRPC_PORT}, {"containerPort": plan.workload.prometheus_port, "name": METRICS_PORT}],
        "resources": tpu_resources(plan.shape),
        # Probed from the start for as long as a cold start takes (COLD_START_S), then liveness takes over.
        "startupProbe": startup_probe(_http_probe(), COLD_START_S),
        "livenessProbe": _http_probe(periodSeconds=60, failureThreshold=10),
        "readinessProbe": _http_probe(periodSeconds=10, failureThreshold=3),
    }
    http = {
        "name": "jetstream-http",
        "image": plan.image("http"),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": HTTP_PORT}],
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
        **jetstream_http_probes(),
    }
    spec: dict[str, Any] = {
        "selector": {"matchLabels": plan.labels},
        "strategy": plan.deployment_strategy(),
        "template": {
            "metadata": {"labels": plan.labels},
            "spec": disruption.drained(
                secure_pod(
                    {
                        "serviceAccountName": plan.service_account,
                        **plan.tpu_placement(),
                        "containers": [engine, http],
                    },
                    {
                        ENGINE_CONTAINER: engine_security,
                        "jetstream-http": HTTP_SECURITY,
                    },
                )
            ),
        },
    }
    spec = {**plan.replicas(plan.workload.replicas), **spec}
    skips = [
        *scan_exceptions.TAG_PINNED,
        scan_exceptions.CPU_LIMIT,
        scan_exceptions.HOST_MEMORY_LIMIT,
        *scan_exceptions.security(engine_security),
        *scan_exceptions.security(HTTP_SECURITY),
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.tpu_metadata(
            plan.name, plan.labels, {**scan_exceptions.skip_annotations(skips), **plan.replicas_annotations()}
        ),
        "spec": spec,
    }


def service(plan: JetStreamPlan) -> dict[str, Any]:
    grpc = {"protocol": "TCP", "name": "jetstream-grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT}
    return jetstream_service(plan, plan.service_name, plan.labels, [grpc])


def hpa(plan: JetStreamPlan) -> dict[str, Any] | None:
    """What scales the Deployment (stacks.serving.workload_plan.autoscaler_manifest): its HPA, or its KEDA ScaledObject,
    kept paused at 0 replicas while the stack is paused; None when nothing scales it."""
    auto = plan.workload.autoscaling
    if auto is None or not (plan.autoscaled or (plan.paused and plan.keda)):
        return None
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name}
    return autoscaler_manifest(plan, plan.labels, target, JETSTREAM_METRICS)


def pod_monitoring(plan: JetStreamPlan) -> dict[str, Any]:
    return jetstream_pod_monitoring(plan, plan.labels)


@dataclass(frozen=True)
class ServedJetStreamPlan(JetStreamPlan):
    """The plan `check` returns: JetStreamPlan's values with the pod manifests this module makes of them (the plan's
    values sit below the manifests, so the objects built from them are added here, one layer up)."""

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [deployment(self)]
