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
    # Filtering by namespace (not container) does not depend on which container the plugin attributes chips to.
    tpu_filter = f'cluster="{cluster}",exported_namespace=~"{ns}"'
    series = f"memory_used{{{tpu_filter}}}"
    rules.append(
        {
            "seriesQuery": series,
            "resources": {"template": "<<.Resource>>"},
            "name": {"matches": "", "as": "memory_used_percentage"},
            "metricsQuery": f"avg(memory_used{{{tpu_filter}}}) / avg(memory_total{{{tpu_filter}}}) * 100",
        }
    )
    rules.append(
        {
            "seriesQuery": series,
            "resources": {"template": "<<.Resource>>"},
            "name": {"matches": "", "as": "memory_used"},
            "metricsQuery": f"avg(memory_used{{{tpu_filter}}})",
        }
    )
    return rules


# ---- HPA metrics ----------------------------------------------------------------------------------------

# Which HPA metric names each adapter can serve (config name -> available).
ADAPTER_METRICS = {
    "custom-metrics-stackdriver": {
        "jetstream_prefill_backlog_size",
        "jetstream_slots_used_percentage",
        "tpu_memory_used",
    },
    "prometheus-adapter": {
        "jetstream_prefill_backlog_size",
        "jetstream_slots_used_percentage",
        "tpu_memory_used",
        "tpu_memory_used_percentage",
    },
    "none": set(),
}
_PROMETHEUS_ADAPTER_NAMES = {"tpu_memory_used": "memory_used", "tpu_memory_used_percentage": "memory_used_percentage"}


def quantity(value: float) -> str:
    """A Kubernetes quantity for an HPA target: integers as is, fractions in milli-units."""
    return str(int(value)) if float(value).is_integer() else f"{round(value * 1000)}m"


def hpa_metric(adapter: str, name: str, target: float, namespace: str) -> dict[str, Any]:
    """An autoscaling/v2 metric spec for `name`, named the way `adapter` serves it."""
    goal = {"type": "AverageValue", "averageValue": quantity(target)}
    if adapter == "custom-metrics-stackdriver":
        if name.startswith("jetstream_"):
            # per-pod server metrics from Managed Prometheus
            return {
                "type": "Pods",
                "pods": {"metric": {"name": f"prometheus.googleapis.com|{name}|gauge"}, "target": goal},
            }
        if name == "tpu_memory_used":
            return {
                "type": "External",
                "external": {
                    "metric": {
                        "name": "prometheus.googleapis.com|memory_used|gauge",
                        "selector": {"matchLabels": {"metric.labels.exported_namespace": namespace}},
                    },
                    "target": goal,
                },
            }
    if adapter == "prometheus-adapter" and name in ADAPTER_METRICS[adapter]:
        return {
            "type": "External",
            "external": {"metric": {"name": _PROMETHEUS_ADAPTER_NAMES.get(name, name)}, "target": goal},
        }
    raise ValueError(f"adapter {adapter!r} does not serve {name!r}")
