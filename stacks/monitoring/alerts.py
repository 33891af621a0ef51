"""The stack's alerts and SLOs as plain data: what each Cloud Monitoring alert policy queries, how long it waits,
how bad it is, and the command an operator runs when it fires. The alerts piece (stacks/pieces/alerts.py) picks
them per workload; components/alerts.py registers them.

Every PromQL query reads only series the stack's scraping produces, with labels they carry
(stacks.monitoring.metrics.SERIES_LABELS; a test checks each query). Sources of the series:
- kube-state-metrics, as GKE's managed package (cluster monitoring components POD, DEPLOYMENT, HPA; metric names
  identical to the open-source ones, https://cloud.google.com/kubernetes-engine/docs/how-to/kube-state-metrics):
  kube_pod_container_status_ready, kube_pod_status_phase, kube_horizontalpodautoscaler_spec_max_replicas and
  kube_horizontalpodautoscaler_status_current_replicas (kubernetes/kube-state-metrics docs/metrics/workload/);
- the TPU device plugin (memory_used, memory_total) through the stack's PodMonitoring in kube-system;
- the model servers' own series (stacks.serving.workload_plan.ServingSignals);
- the endpoint picker's series (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go), scraped by
  its chart's PodMonitoring (stacks/serving/gateway.py router_values).

Log-match alert policies see what no scraped series shows: the cluster autoscaler's failed scale-ups (a TPU stockout),
Compute Engine preemptions and host errors of the nodes, and upcoming host maintenance notices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

PAGE = "CRITICAL"  # paging channels receive these (AlertsConfig.paging)
TICKET = "WARNING"
# How long an autoscaled workload may sit at its HPA's maximum before an alert.
AT_MAX_MINUTES = 30
# How long a workload may have no ready serving container, or its gateway see no ready endpoint.
NO_READY_MINUTES = 5
# The server-error ratio and the flow-control queue over this many minutes.
GATEWAY_MINUTES = 5
# The endpoint picker's error_code values of a server-side failure (llm-d/llm-d-router@v0.10.0
# pkg/common/error/error.go: ModelServerError is any non-200 answer of the model server, recorded in
# pkg/epp/handlers/server.go; Internal and ServiceUnavailable become 500 and 503 in BuildErrResponse; Unknown is the
# code of any error that is not the picker's own Error, answered as a gRPC error, not an HTTP status). Not counted:
# the client's errors (BadRequest, Unauthorized, Forbidden, NotFound, PreconditionFailed) and ResourceExhausted (429,
# flow control shedding load: the queue alert sees saturation).
GATEWAY_SERVER_ERRORS = ("ModelServerError", "Internal", "ServiceUnavailable", "Unknown")
# Compute Engine system events that take a VM (a node) away: preempted (Spot), a host error, a termination for host
# maintenance (https://cloud.google.com/compute/docs/instances/host-maintenance-overview: a VM whose
# onHostMaintenance is TERMINATE, as TPU VMs are, is stopped for maintenance).
INTERRUPTION_METHODS = (
    "compute.instances.preempted",
    "compute.instances.hostError",
    "compute.instances.terminateOnHostMaintenance",
)


@dataclass(frozen=True)
class Rule:
    """One PromQL alert policy (AlertPolicy conditionPrometheusQueryLanguage)."""

    key: str
    """Unique per stack: the policy's resource name suffix."""
    title: str
    query: str
    minutes: int
    """How long the query must hold before the policy fires (the condition's `duration`)."""
    severity: str
    threshold: str
    """The threshold in words, for the docs and the policy's documentation."""
    command: str
    """What to run when it fires."""


@dataclass(frozen=True)
class LogSignal:
    """A log-match alert policy (conditionMatchedLog): it fires on any log entry `filter` matches."""

    key: str
    filter: str
    title: str
    minutes: int
    """At most one notification per this many minutes (the policy's notificationRateLimit)."""
    severity: str
    threshold: str
    command: str


@dataclass(frozen=True)
class Objective:
    """A Cloud Monitoring SLO of one workload, with its SLI as Monitoring filters."""

    key: str
    title: str
    goal: float
    days: int
    metric_filter: str
    """distribution cut: the histogram's filter; good/total ratio: the total's filter."""
    max_seconds: float | None = None
    """distribution cut: the range [0, max] of good values; None: a good/total ratio."""
    good_filter: str = ""


@dataclass(frozen=True)
class BurnWindow:
    """A multi-window burn-rate alert (Google SRE workbook, "Alerting on SLOs", multiwindow multi-burn-rate):
    fires when both the long and the short lookback burn the error budget faster than `rate`."""

    name: str
    long: str
    short: str
    rate: float
    severity: str


BURN_WINDOWS = (
    BurnWindow("fast", "3600s", "300s", 14.4, PAGE),  # 2% of a 30-day budget in an hour
    BurnWindow("slow", "21600s", "1800s", 6.0, TICKET),  # 5% of a 30-day budget in six hours
)


def selector(**matchers: str) -> str:
    """A PromQL label selector body; a value starting with `~` is a regular expression."""
    return ", ".join(f'{k}=~"{v[1:]}"' if v.startswith("~") else f'{k}="{v}"' for k, v in matchers.items())


# The names of the pods each controller kind makes, after the controller's name (RE2, matched whole by PromQL):
# - Deployment: its ReplicaSet `<deployment>-<pod-template-hash>`, whose pods add a 5-character random suffix
#   (kubernetes/kubernetes pkg/controller/deployment/sync.go, k8s.io/apiserver pkg/storage/names/generate.go
#   randomLength 5);
# - LeaderWorkerSet: the leader StatefulSet `<lws>` makes `<lws>-<group>`, each group's workers are
#   `<leader pod>-<worker>` (kubernetes-sigs/lws@v0.7.0 pkg/controllers/leaderworkerset_controller.go
#   `fmt.Sprintf("%s-%d", lws.Name, idx)`, pkg/utils/accelerators/tpu.go worker hostnames `<leader>-<i>`);
# - JobSet: its Jobs are `<jobset>-<replicated job>-<job index>` (kubernetes-sigs/jobset@v0.10.1
#   pkg/util/placement/placement.go GenJobName), Indexed Jobs whose pods are `<job>-<completion index>-<random>`.
# None of them matches the endpoint picker's pods (`<name>-epp-<hash>-<random>`) nor a Job's (`<job>-<random>`).
POD_NAMES = {
    "Deployment": "{}-[a-z0-9]+-[a-z0-9]{{5}}",
    "LeaderWorkerSet": "{}-[0-9]+(-[0-9]+)?",
    "JobSet": "{}-[a-z0-9-]+-[0-9]+-[0-9]+-[a-z0-9]{{5}}",
}


class PodSet(Protocol):
    """A set of pods one controller owns (stacks.serving.disruption.Unit)."""

    @property
    def kind(self) -> str: ...

    @property
    def name(self) -> str: ...


def pods_of(units: Sequence[PodSet]) -> str:
    """The regular expression of exactly a workload's serving pods, from the kind and name of each set of pods one of
    its controllers owns (its disruption units, stacks/serving/disruption.py Unit): not the endpoint picker in its namespace,
    not a staging Job. A test checks it over every registry type."""
    return "~" + "|".join(f"({POD_NAMES[u.kind].format(u.name)})" for u in units)


def monitoring_filter(metric_type: str, cluster: str, namespace: str, **labels: str) -> str:
    """A Cloud Monitoring filter over one Managed Prometheus metric of the cluster and namespace: Managed Prometheus
    writes every series as prometheus.googleapis.com/<name>/<kind> on the prometheus_target resource, whose labels
    include cluster and namespace (https://cloud.google.com/stackdriver/docs/managed-prometheus/query;
    https://cloud.google.com/stackdriver/docs/solutions/slo-monitoring/sli-metrics/prometheus)."""
    parts = [
        f'metric.type="prometheus.googleapis.com/{metric_type}"',
        'resource.type="prometheus_target"',
        f'resource.labels.cluster="{cluster}"',
        f'resource.labels.namespace="{namespace}"',
        *(f"metric.labels.{k}={v}" for k, v in labels.items()),
    ]
    return " ".join(parts)


def burn_rate_filter(slo_name: str, lookback: str) -> str:
    """The time series of an SLO's burn rate over `lookback` (Cloud Monitoring's select_slo_burn_rate,
    https://cloud.google.com/stackdriver/docs/solutions/slo-monitoring/alerting-on-budget-burn-rate)."""
    return f'select_slo_burn_rate("{slo_name}", "{lookback}")'
