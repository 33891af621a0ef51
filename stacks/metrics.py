"""Metrics plumbing shared by the add-ons and the workloads: PodMonitoring objects and metrics-adapter rules.

Prometheus-adapter and the GMP frontend query the whole Cloud Monitoring project, so every rule is filtered
by this cluster's name and the workload namespaces (otherwise an HPA would scale on another cluster's data).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

PODMONITORING_API = "monitoring.googleapis.com/v1"

# The TPU device plugin's metrics (HBM used/total, duty cycle), scraped from kube-system.
TPU_DEVICE_PLUGIN_SELECTOR = {"k8s-app": "tpu-device-plugin"}
TPU_DEVICE_PLUGIN_PORT = 2112

# JetStream server metrics the adapters expose to HPAs.
JETSTREAM_METRICS = ("jetstream_prefill_backlog_size", "jetstream_slots_used_percentage")
# The container whose TPU metrics stand for a JetStream replica (as in ai-on-gke's HPA templates).
JETSTREAM_HTTP_CONTAINER = "jetstream-http"


def pod_monitoring(
    name: str,
    namespace: str,
    selector: dict[str, str],
    port: int | str,
    *,
    interval: str = "15s",
    path: str | None = None,
    target_labels: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A PodMonitoring object (camelCase, as the API server takes it)."""
    endpoint: dict[str, Any] = {"port": port, "interval": interval}
    if path:
        endpoint["path"] = path
    spec: dict[str, Any] = {"selector": {"matchLabels": dict(selector)}, "endpoints": [endpoint]}
    if target_labels is not None:
        spec["targetLabels"] = {"metadata": list(target_labels)}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": PODMONITORING_API, "kind": "PodMonitoring", "metadata": metadata, "spec": spec}


def tpu_device_plugin_monitoring(interval: str) -> dict[str, Any]:
    return pod_monitoring(
        "tpu-device-plugin",
        "kube-system",
        TPU_DEVICE_PLUGIN_SELECTOR,
        TPU_DEVICE_PLUGIN_PORT,
        interval=interval,
        labels=dict(TPU_DEVICE_PLUGIN_SELECTOR),
    )


def _regex(values: Iterable[str]) -> str:
    return "|".join(sorted(set(values)))


def prometheus_adapter_rules(cluster: str, namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """External-metrics rules for prometheus-adapter, each filtered by cluster and workload namespaces.

    With no namespaces (no autoscaled workload yet) the rules match nothing rather than everything.
    """
    ns = _regex(namespaces)
    rules: list[dict[str, Any]] = [
        {
            "seriesQuery": f'{metric}{{cluster="{cluster}",namespace=~"{ns}"}}',
            "resources": {"template": "<<.Resource>>"},
            "name": {"matches": "", "as": metric},
            "metricsQuery": f'avg(<<.Series>>{{<<.LabelMatchers>>,cluster="{cluster}",namespace=~"{ns}"}})',
        }
        for metric in JETSTREAM_METRICS
    ]
    # TPU metrics come from the device plugin in kube-system; the workload's namespace is `exported_namespace`.
    tpu_filter = f'cluster="{cluster}",exported_namespace=~"{ns}",container="{JETSTREAM_HTTP_CONTAINER}"'
    rules.append(
        {
            "seriesQuery": f'memory_used{{cluster="{cluster}",exported_namespace=~"{ns}"}}',
            "resources": {"template": "<<.Resource>>"},
            "name": {"matches": "", "as": "memory_used_percentage"},
            "metricsQuery": f"avg(memory_used{{{tpu_filter}}}) / avg(memory_total{{{tpu_filter}}}) * 100",
        }
    )
    return rules
