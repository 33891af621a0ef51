"""The release gate's results on the stack's dashboard: Cloud Logging log-based metrics of the gate Job's summary
line, and the dashboard tiles charting them per workload, release and scenario. Pure.

The gate Job (stacks/serving/benchmark.py) prints one JSON line after its run: GKE's logging agent writes it as a
LogEntry of resource type k8s_container whose jsonPayload holds the line's fields (`event`, the LABELS, each of
MEASURES). Each charted measure becomes one log-based metric (logging v2 LogMetric, google-api-python-client
2.202.0 discovery document logging.v2.json, and google-beta v7.45.0 services/logging/resource_logging_metric.go):

- `filter`: the stack's cluster's container entries whose jsonPayload.event is the gate's (advanced logs filter,
  https://cloud.google.com/logging/docs/view/logging-query-language);
- `metricDescriptor`: DELTA and DISTRIBUTION ("To create a logs-based metric that records a distribution of log
  values, a DELTA metric kind with a DISTRIBUTION value type must be used along with a value_extractor"), one
  STRING label per LABELS entry ("Each label in the metric descriptor must have a matching label name as the key
  and an extractor expression as the value in the label_extractors map");
- `valueExtractor` / `labelExtractors`: `EXTRACT(jsonPayload.<key>)` ("Two functions are supported for value
  extraction: EXTRACT(field) or REGEXP_EXTRACT(field, regex)"); `bucketOptions`, required for a distribution.

Cloud Monitoring names such a metric `logging.googleapis.com/user/<name>`
(https://cloud.google.com/logging/docs/logs-based-metrics#user-defined_metrics). Each tile aligns a series with
ALIGN_SUM ("valid for GAUGE and DELTA metrics with numeric and distribution values": a distribution stays one) and
reduces with REDUCE_MEAN grouped by the labels ("valid for DELTA and GAUGE metrics with numeric or distribution
values. The value_type of the output is DOUBLE"; monitoring v1 discovery document, Aggregation enumDescriptions):
the mean of the values recorded, one per gate run, per workload, release and scenario.
"""

from __future__ import annotations

from typing import Any

from stacks.monitoring.dashboard import FilterPanel
from stacks.serving.benchmark import LABELS, MEASURES, SUMMARY_EVENT, Measure

PREFIX = "tpu-serving"
USER_METRIC = "logging.googleapis.com/user/"
ALIGNMENT = "3600s"  # a gate run's point per hour: runs are minutes long and an hour apart at the least
# Histogram buckets (the mean the tiles chart is exact whatever they are; they bound percentiles in Metrics
# Explorer): seconds from 1 ms and throughput from 1 token/s, each 64 buckets growing by 25%; goodput in 1% steps.
EXPONENTIAL = {"numFiniteBuckets": 64, "growthFactor": 1.25}
BUCKETS = {
    "s": {"exponentialBuckets": {**EXPONENTIAL, "scale": 0.001}},
    "1/s": {"exponentialBuckets": {**EXPONENTIAL, "scale": 1}},
    "1": {"linearBuckets": {"numFiniteBuckets": 100, "width": 0.01, "offset": 0}},
}


def charted() -> tuple[Measure, ...]:
    """The measures the dashboard charts (those with a title)."""
    return tuple(m for m in MEASURES if m.title)


def metric_name(cluster: str, measure: Measure) -> str:
    """The log-based metric's id: per cluster, so each stack of a project has its own."""
    return f"{PREFIX}/{cluster}/gate/{measure.key}"


def log_filter(cluster: str) -> str:
    """The gate Jobs' summary lines of this stack's cluster."""
    return (
        f'resource.type="k8s_container" AND resource.labels.cluster_name="{cluster}" '
        f'AND jsonPayload.event="{SUMMARY_EVENT}"'
    )


def log_metric(cluster: str, measure: Measure) -> dict[str, Any]:
    """One gcp.logging.Metric's inputs (camelCase, as the provider registers and the API reads them)."""
    return {
        "name": metric_name(cluster, measure),
        "description": f"Release gate {measure.title} per workload, release and scenario (tpu-serving, {cluster}).",
        "filter": log_filter(cluster),
        "metricDescriptor": {
            "metricKind": "DELTA",
            "valueType": "DISTRIBUTION",
            "unit": measure.unit,
            "displayName": f"Release gate {measure.title} ({cluster})",
            "labels": [
                {"key": label, "valueType": "STRING", "description": f"The gate run's {label}."} for label in LABELS
            ],
        },
        "valueExtractor": f"EXTRACT(jsonPayload.{measure.key})",
        "labelExtractors": {label: f"EXTRACT(jsonPayload.{label})" for label in LABELS},
        "bucketOptions": BUCKETS[measure.unit],
    }


def log_metrics(cluster: str) -> list[dict[str, Any]]:
    return [log_metric(cluster, m) for m in charted()]


def panels(cluster: str) -> list[FilterPanel]:
    """The dashboard's gate tiles: each charted measure per workload, release and scenario."""
    return [
        FilterPanel(
            f"Release gate: {m.title}",
            f'metric.type="{USER_METRIC}{metric_name(cluster, m)}" resource.type="k8s_container"',
            tuple(f"metric.label.{label}" for label in LABELS),
            {"s": "seconds", "1/s": "tokens/s", "1": "fraction of requests"}[m.unit],
            ALIGNMENT,
        )
        for m in charted()
    ]
