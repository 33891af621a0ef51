"""The Cloud Monitoring dashboard of the serving stack: the workloads' own tiles (their plans' `dashboard_panels`:
vLLM's, JetStream's), TPU HBM and duty cycle, replicas.

PromQL over Managed Prometheus data, every query filtered to this cluster.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def _tile(title: str, query: str, y_label: str) -> dict[str, Any]:
    return {
        "title": title,
        "xyChart": {
            "chartOptions": {"mode": "COLOR"},
            "dataSets": [
                {
                    "plotType": "LINE",
                    "targetAxis": "Y1",
                    "timeSeriesQuery": {"prometheusQuery": query},
                }
            ],
            "yAxis": {"label": y_label, "scale": "LINEAR"},
        },
    }


Panel = tuple[str, str, str]  # (title, PromQL, y-axis label)


@dataclass(frozen=True)
class FilterPanel:
    """A tile of a Cloud Monitoring metric that PromQL does not chart as the tile means it (a log-based
    distribution's mean, stacks/serving/benchmark_metrics.py): a monitoring v1 TimeSeriesFilter, each series
    aligned with ALIGN_SUM over `alignment` and reduced with REDUCE_MEAN by `group_by`."""

    title: str
    filter: str
    group_by: tuple[str, ...]
    y_label: str
    alignment: str


def _filter_tile(panel: FilterPanel) -> dict[str, Any]:
    query = {
        "timeSeriesFilter": {
            "filter": panel.filter,
            "aggregation": {
                "alignmentPeriod": panel.alignment,
                "perSeriesAligner": "ALIGN_SUM",
                "crossSeriesReducer": "REDUCE_MEAN",
                "groupByFields": list(panel.group_by),
            },
        }
    }
    return {
        "title": panel.title,
        "xyChart": {
            "chartOptions": {"mode": "COLOR"},
            "dataSets": [{"plotType": "LINE", "targetAxis": "Y1", "timeSeriesQuery": query}],
            "yAxis": {"label": panel.y_label, "scale": "LINEAR"},
        },
    }


def panels(cluster: str, head: Sequence[Panel] = ()) -> list[Panel]:
    """(title, PromQL, y-axis label) of every tile; first the tiles the workloads ask for (`head`: their plans'
    `dashboard_panels`, e.g. vLLM's and JetStream's, each type's own), then the TPU and replica tiles.

    Grouping labels are ones the stack's PodMonitorings attach (stacks.monitoring.metrics.SERIES_LABELS; a test checks):
    device-plugin series by the workload's namespace (exported_namespace) and node. HBM used/total is drawn as a
    percentage.
    """
    c = f'cluster="{cluster}"'
    hbm = f"sum by (exported_namespace, node) (memory_used{{{c}}}) / sum by (exported_namespace, node) (memory_total{{{c}}})"
    return [
        *head,
        ("TPU HBM used", f"{hbm} * 100", "% of HBM"),
        ("TPU duty cycle", f"avg by (exported_namespace, node) (duty_cycle{{{c}}})", "% busy"),
        (
            "Serving replicas (Deployments)",
            f"sum by (namespace, deployment) (kube_deployment_status_replicas_available{{{c}}})",
            "replicas",
        ),
        (
            "HPA desired replicas",
            f"sum by (namespace, horizontalpodautoscaler) (kube_horizontalpodautoscaler_status_desired_replicas{{{c}}})",
            "replicas",
        ),
    ]


def gateway_panels(cluster: str) -> list[Panel]:
    """The Inference Gateway's endpoint pickers (their chart's PodMonitoring, in each served workload's namespace):
    requests held in the flow-control queue, and the ready endpoints each InferencePool (label `name`) has
    (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go)."""
    c = f'cluster="{cluster}"'
    return [
        (
            "Gateway flow-control queue",
            f"sum by (namespace) (llm_d_epp_flow_control_queue_size{{{c}}})",
            "requests",
        ),
        ("Gateway ready endpoints", f"sum by (namespace, name) (llm_d_epp_ready_endpoints{{{c}}})", "endpoints"),
    ]


def cost_panel(cluster: str, namespace: str, pods: str, replica_hour: float, replicas: str, tokens: str) -> Panel:
    """USD per million output tokens of one workload: the list price of its running replicas' chips
    (`replica_hour` per replica; replicas counted as the serving pods `replicas` is scraped from, one per replica,
    whatever its other labels)
    over the tokens generated in the last hour (`tokens`, a counter)."""
    sel = f'cluster="{cluster}", namespace="{namespace}", pod=~"{pods}"'
    return (
        f"Cost per million output tokens ({namespace})",
        f"{replica_hour:g} * count by (namespace) (count by (namespace, pod) ({replicas}{{{sel}}})) / "
        f"(sum by (namespace) (rate({tokens}_total{{{sel}}}[1h])) * 3600 / 1000000)",
        "USD per 1M tokens (list price)",
    )


def dashboard(
    cluster: str, display_name: str, head: Sequence[Panel] = (), tail: Sequence[FilterPanel] = ()
) -> dict[str, Any]:
    """The dashboard: `head` (PromQL tiles), the stack's own, then `tail` (the release gate's, when a workload
    rolls out)."""
    tiles = []
    widgets = [_tile(*p) for p in panels(cluster, head)] + [_filter_tile(p) for p in tail]
    for i, widget in enumerate(widgets):
        tile = {
            "xPos": (i % 2) * 24,
            "yPos": (i // 2) * 16,
            "width": 24,
            "height": 16,
            "widget": widget,
        }
        tiles.append(api_shape(tile))
    return {"displayName": display_name, "mosaicLayout": {"columns": 48, "tiles": tiles}}


def api_shape(value: Any) -> Any:
    """`value` as the Monitoring API returns it: without zero numbers and empty strings, which the API drops.

    The provider compares the JSON we send with what the API returns, so a dropped default (`xPos: 0`,
    `unitOverride: ""`) shows as a change on every preview (terraform-provider-google#16173).
    """
    if isinstance(value, dict):
        return {k: api_shape(v) for k, v in value.items() if v != "" and not (type(v) is int and v == 0)}
    if isinstance(value, list):
        return [api_shape(v) for v in value]
    return value


def dashboard_json(
    cluster: str, display_name: str, head: Sequence[Panel] = (), tail: Sequence[FilterPanel] = ()
) -> str:
    return json.dumps(dashboard(cluster, display_name, head, tail), sort_keys=True)


def dashboard_url(dashboard_id: str, project: str) -> str:
    """Console URL from the resource id `projects/<number>/dashboards/<id>`."""
    return f"https://console.cloud.google.com/monitoring/dashboards/builder/{dashboard_id.split('/')[-1]}?project={project}"
