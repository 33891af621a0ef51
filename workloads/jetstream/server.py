"""What a JetStream server is to the stack, for both JetStream types (`jetstream`, and `jetstream-pathways`, which
imports it): its ports and health paths, jetstream-http's probes and Service, the series its engine exports, the
labels they carry, the metrics an HPA may scale on, the signals the alerts read, its PodMonitoring and its dashboard
tiles. Shared code reaches them through the plans (JetStreamPlan.hpa_metrics, .signals, .dashboard_panels), as
vLLM's (workloads/vllm/metrics.py)."""

from __future__ import annotations

import json
from typing import Any

from stacks.facts.versions import Serves, may_export
from stacks.monitoring import metrics
from stacks.monitoring.metrics import FRACTION, GMP_TARGET_LABELS, HPA_METRICS, REQUESTS, Fallback, HpaMetric
from stacks.security.pod_security import pod_specs
from stacks.serving.workload_plan import INTERNAL_LB_ANNOTATION, ServingSignals, WorkloadPlan
from stacks.serving.workload_type import SmokeProbe

GENERATE_BODY = {"prompt": "What are the top 5 programming languages", "max_tokens": 200}


def generate_curl(port: int) -> str:
    """The tutorials' `/generate` request against a port-forwarded JetStream HTTP server."""
    return f"curl -s -X POST localhost:{port}/generate -H 'Content-Type: application/json' -d '{json.dumps(GENERATE_BODY)}'"


def generate_probe(namespace: str, service: str, port: int) -> SmokeProbe:
    """`make smoke`'s request to a JetStream HTTP server: POST /generate answers {"response": ...} (ai-on-gke
    tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/README.md)."""
    return SmokeProbe(namespace, service, port, "POST", "generate", {**GENERATE_BODY, "max_tokens": 16}, "response")


def generate_load(port: int, requests: int = 200, concurrency: int = 16) -> str:
    """A load that runs as given (bash, curl, xargs) against a port-forwarded /generate: `requests` requests,
    `concurrency` at a time, then a count of the HTTP status codes; enough to move an HPA on JetStream metrics."""
    body = json.dumps(GENERATE_BODY)
    return (
        f"seq {requests} | xargs -P {concurrency} -I{{}} curl -s -o /dev/null -w '%{{http_code}}\\n' "
        f"-X POST localhost:{port}/generate -H 'Content-Type: application/json' -d '{body}' | sort | uniq -c"
    )


# ---- JetStream objects both JetStream workload types expose ---------------------------------------------

JETSTREAM_HTTP_PORT = 8000  # jetstream-http's server
JETSTREAM_GRPC_PORT = 9000  # the JetStream engine's gRPC server (MaxEngine, and jax-tpu under Pathways)
JETSTREAM_HEALTH_PATH = "/healthcheck"  # jetstream-http's health endpoint, which the probes call
# jetstream-http's own root: a static JSON reply from the HTTP server itself, without calling the engine, in every
# revision of the server (GoogleCloudPlatform/ai-on-gke@707c3e38, the /healthcheck revision the v0.2.3 probes rely on:
# tutorials-and-examples/inference-servers/jetstream/http-server/http_server.py `@app.get("/") def root()`; likewise
# at 4660bd06 through f73039dc), while its `/healthcheck` asks the engine over gRPC (Orchestrator.HealthCheck on
# 127.0.0.1:9000). Hence jetstream-http's own liveness and readiness probe `/`.
JETSTREAM_HTTP_ROOT = "/"
# What both JetStream types ask of their jetstream-http image (stacks/facts/versions.py records which tags serve it).
JETSTREAM_HTTP_SERVES = Serves(endpoints=frozenset({JETSTREAM_HEALTH_PATH, "/generate", JETSTREAM_HTTP_ROOT}))


def jetstream_http_probes(*, liveness: bool = True) -> dict[str, Any]:
    """jetstream-http's own readiness, and liveness where a restart costs only that container: its root path on its
    port, so in a Deployment's pod a hung HTTP server restarts jetstream-http, not the TPU engine (whose probes call
    /healthcheck, which asks the engine).

    Not in a LeaderWorkerSet's leader (`liveness=False`): there any container's restart recreates the whole group,
    every slice host included (kubernetes-sigs/lws@v0.7.0 pkg/controllers/pod_controller.go handleRestartPolicy under
    RestartPolicy RecreateGroupOnPodRestart deletes the leader when pkg/utils/pod/pod_utils.go ContainerRestarted
    finds any container or init container with restartCount > 0), a cold start of the slice for a restart of a CPU
    sidecar. The engine's own liveness probe asks jetstream-http for /healthcheck, so a hung jetstream-http still
    fails it, at the tolerance chosen for a group restart, and its readiness takes the replica out of service."""
    probe = {
        "httpGet": {"path": JETSTREAM_HTTP_ROOT, "port": JETSTREAM_HTTP_PORT, "scheme": "HTTP"},
        "timeoutSeconds": 5,
    }
    probes = {"readinessProbe": {**probe, "periodSeconds": 10, "failureThreshold": 3}}
    if liveness:
        probes = {"livenessProbe": {**probe, "periodSeconds": 20, "failureThreshold": 3}, **probes}
    return probes


def jetstream_service(
    plan: WorkloadPlan, name: str, labels: dict[str, str], extra_ports: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The Service in front of jetstream-http (`service.type` LoadBalancer is always internal), plus `extra_ports`."""
    service = plan.workload.service
    metadata = plan.metadata(name, labels)
    if service.type == "LoadBalancer":
        metadata["annotations"] = dict(INTERNAL_LB_ANNOTATION)
    ports = [{"protocol": "TCP", "name": "jetstream-http", "port": service.port, "targetPort": JETSTREAM_HTTP_PORT}]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {"type": service.type, "selector": labels, "ports": [*ports, *(extra_ports or [])]},
    }


def jetstream_pod_monitoring(plan: WorkloadPlan, labels: dict[str, str]) -> dict[str, Any]:
    """Scrapes the JetStream server's Prometheus port, named `metrics` on its container."""
    return metrics.pod_monitoring(
        f"{plan.name}-jetstream",
        plan.namespace,
        labels,
        METRICS_PORT,
        interval=plan.scrape_interval,
        path="/",
        target_labels=list(metrics.SERVER_TARGET_LABELS),
    )


# ---- its metrics --------------------------------------------------------------------------------------------

# The container port a JetStream PodMonitoring scrapes (jetstream_pod_monitoring): the engine's, by this name.
METRICS_PORT = "metrics"
# Labels each JetStream series carries once Managed Prometheus stored it: the target labels plus the exporter's own
# (AI-Hypercomputer/JetStream@v0.3:jetstream/core/metrics/prometheus.py: id, idx).
LABELS = GMP_TARGET_LABELS | set(metrics.SERVER_TARGET_LABELS) | {"id", "idx"}
SERIES_LABELS: dict[str, frozenset[str]] = {
    name: frozenset(LABELS)
    for name in (
        "jetstream_prefill_backlog_size",
        "jetstream_slots_used_percentage",
        "jetstream_slots_available_percentage",
        "jetstream_generate_backlog_size",
        "jetstream_transfer_backlog_size",
    )
}

JETSTREAM_HPA_METRICS: dict[str, HpaMetric] = {
    m.name: m
    for m in (
        # JetStream orchestrator: the prefill queue's size (AI-Hypercomputer/JetStream@v0.3:jetstream/core/metrics/prometheus.py)
        HpaMetric(
            "jetstream_prefill_backlog_size",
            "jetstream_prefill_backlog_size",
            REQUESTS,
            "server",
            "AI-Hypercomputer/JetStream@v0.3:jetstream/core/metrics/prometheus.py",
            labels=SERIES_LABELS["jetstream_prefill_backlog_size"],
        ),
        # set to 1 - free_slots/max_concurrent_decodes: a 0-1 fraction despite its name
        # (AI-Hypercomputer/JetStream@v0.3:jetstream/core/orchestrator.py, _generate_thread). Before its rename
        # (JetStream 26872c3) JetStream exported free_slots/max_concurrent_decodes as
        # jetstream_slots_available_percentage (AI-Hypercomputer/JetStream@v0.2.2:jetstream/core/orchestrator.py,
        # _generate_thread; jetstream/core/metrics/prometheus.py): used = 1 - available.
        HpaMetric(
            "jetstream_slots_used_percentage",
            "jetstream_slots_used_percentage",
            FRACTION,
            "server",
            "AI-Hypercomputer/JetStream@v0.3:jetstream/core/orchestrator.py",
            fallback=Fallback(
                "jetstream_slots_available_percentage",
                "1 - {}",
                "AI-Hypercomputer/JetStream@v0.2.2:jetstream/core/orchestrator.py",
            ),
            labels=SERIES_LABELS["jetstream_slots_used_percentage"],
        ),
    )
}
# Everything a JetStream workload's HPA may name: its server's metrics, then the TPU ones every type shares.
JETSTREAM_METRICS: dict[str, HpaMetric] = {**JETSTREAM_HPA_METRICS, **HPA_METRICS}

# What the alerts and SLOs read: the orchestrator's prefill queue (AI-Hypercomputer/JetStream@v0.3:
# jetstream/core/metrics/prometheus.py).
JETSTREAM_SIGNALS = ServingSignals(queue=JETSTREAM_HPA_METRICS["jetstream_prefill_backlog_size"].series)


def exporters(plan: WorkloadPlan) -> list[str]:
    """The images of the workload's containers its JetStream PodMonitoring scrapes: those with the port it names
    (METRICS_PORT)."""
    return sorted(
        {
            container["image"]
            for manifest in plan.pod_manifests()
            for spec in pod_specs(manifest)
            for container in spec["containers"]
            if any(port.get("name") == METRICS_PORT for port in container.get("ports", []))
        }
    )


Panel = tuple[str, str, str]  # stacks.monitoring.dashboard.Panel: (title, PromQL, y-axis label)


def all_panels(cluster: str) -> list[tuple[Panel, tuple[str, ...]]]:
    """The JetStream tiles, each with the series it reads (any one of them suffices). Grouped by namespace and pod
    (labels its PodMonitoring attaches, SERIES_LABELS); the slots' fraction drawn as a percentage."""
    c = f'cluster="{cluster}"'
    slots = JETSTREAM_HPA_METRICS["jetstream_slots_used_percentage"]

    def backlog(title: str, series: str) -> tuple[Panel, tuple[str, ...]]:
        return (title, f"sum by (namespace, pod) ({series}{{{c}}})", "requests"), (series,)

    return [
        backlog("JetStream prefill backlog", "jetstream_prefill_backlog_size"),
        # the series the engine exports, or else 1 - the older jetstream_slots_available_percentage
        (
            ("JetStream slots used", f"avg by (namespace, pod) ({slots.read(c)}) * 100", "% of decode slots"),
            slots.all_series,
        ),
        backlog("JetStream generate backlog", "jetstream_generate_backlog_size"),
        backlog("JetStream transfer backlog (disaggregated)", "jetstream_transfer_backlog_size"),
    ]


def panels(plan: WorkloadPlan, cluster: str) -> list[Panel]:
    """The workload's JetStream tiles (its plan's dashboard_panels): a tile is dropped when every image its
    PodMonitoring scrapes provably lacks every series it reads (its record in stacks/facts/versions.py, e.g. JetStream
    0.2.2's engine has no generate or transfer backlog); without such an image every tile stays."""
    images = exporters(plan)
    return [
        panel
        for panel, series in all_panels(cluster)
        if not images or any(may_export(ref, name) for ref in images for name in series)
    ]
