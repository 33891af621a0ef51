"""Metrics plumbing shared by the add-ons and the workloads: PodMonitoring objects and the HPA metrics the stack
serves (each with its unit, defined once here). How each metrics adapter serves them: stacks/monitoring/adapters/.

How the HPA turns a metric into replicas (kubernetes pkg/controller/podautoscaler/replica_calculator.go):
- `Pods` metric, AverageValue target: ceil(mean of the per-pod values / target x ready pods);
- `External` metric, AverageValue target: ceil(SUM of every value the adapter returns / target).
So an External metric must return the load of ALL replicas (a sum), never an average: with `avg` the proposal
ignores how many replicas carry the load. Every adapter rule sums; tests/hpa_model.py checks that at N
ready replicas each carrying load L every metric proposes ceil(N*L/target).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

PODMONITORING_API = "monitoring.googleapis.com/v1"

# The TPU device plugin's metrics (HBM used/total, duty cycle), scraped from kube-system.
TPU_DEVICE_PLUGIN_SELECTOR = {"k8s-app": "tpu-device-plugin"}
TPU_DEVICE_PLUGIN_PORT = 2112
# Target labels Managed Prometheus attaches to the device plugin's series besides cluster/location/project_id/
# namespace/job/instance: `node` (the device plugin is a DaemonSet, so it is the TPU node) for per-node
# dashboards and per-replica HBM ratios; `pod` and `container` keep the CRD's defaults for the other keys.
TPU_DEVICE_PLUGIN_TARGET_LABELS = ["pod", "container", "node"]
# Target labels the model servers' PodMonitorings attach to their series (as ai-on-gke's jetstream PodMonitoring
# template); each type's own series and port: workloads/<type>/ (JetStream's workloads/jetstream/server.py).
SERVER_TARGET_LABELS = ["pod", "container", "node"]
# Labels Managed Prometheus puts on every scraped series (prometheus_target resource labels + job/instance).
GMP_TARGET_LABELS = frozenset({"project_id", "location", "cluster", "namespace", "job", "instance"})


# Labels each series the shared dashboard tiles and adapter rules read carries once Managed Prometheus stored it
# (a workload type's own series: its package's SERIES_LABELS): the target labels above plus the exporter's own. A metric label that collides with a target label is renamed
# `exported_<label>` (the device plugin's `namespace`, `pod` of the workload: ai-on-gke's rules filter on
# `exported_namespace`, modules/jetstream-maxtext-deployment/templates/prometheus-adapter/values.yaml.tftpl).
_DEVICE_PLUGIN_LABELS = (
    GMP_TARGET_LABELS | set(TPU_DEVICE_PLUGIN_TARGET_LABELS) | {"exported_namespace", "exported_pod", "accelerator_id"}
)
# GKE's managed kube-state-metrics package (cluster monitoring components DEPLOYMENT, HPA):
# https://cloud.google.com/kubernetes-engine/docs/how-to/kube-state-metrics
_KSM_LABELS = GMP_TARGET_LABELS
_EPP_REQUEST_LABELS = {"model_name", "target_model_name", "fairness_id", "priority"}
SERIES_LABELS: dict[str, frozenset[str]] = {
    **{name: frozenset(_DEVICE_PLUGIN_LABELS) for name in ("memory_used", "memory_total", "duty_cycle")},
    "kube_deployment_status_replicas_available": frozenset(_KSM_LABELS | {"deployment"}),
    # the replicas a Deployment, and a LeaderWorkerSet's leader StatefulSet, ask for
    # (kubernetes/kube-state-metrics docs/metrics/workload/deployment-metrics.md, statefulset-metrics.md)
    "kube_deployment_spec_replicas": frozenset(_KSM_LABELS | {"deployment"}),
    "kube_statefulset_replicas": frozenset(_KSM_LABELS | {"statefulset"}),
    # kube-state-metrics' own labels (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md,
    # horizontalpodautoscaler-metrics.md)
    "kube_pod_container_status_ready": frozenset(_KSM_LABELS | {"pod", "container", "uid"}),
    "kube_pod_status_phase": frozenset(_KSM_LABELS | {"pod", "phase", "uid"}),
    **{
        f"kube_horizontalpodautoscaler_{name}": frozenset(_KSM_LABELS | {"horizontalpodautoscaler"})
        for name in ("status_desired_replicas", "status_current_replicas", "spec_max_replicas")
    },
    # The endpoint picker's series, scraped by its chart's PodMonitoring (no target labels beyond GMP's): their own
    # labels (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go and metrics.go modelLabels,
    # poolLabels)
    **{
        f"llm_d_epp_{name}": frozenset(GMP_TARGET_LABELS | labels)
        for name, labels in (
            ("request_total", _EPP_REQUEST_LABELS),
            ("request_error_total", _EPP_REQUEST_LABELS | {"error_code"}),
            ("ready_endpoints", {"name"}),
            ("average_running_requests", {"name"}),
            ("flow_control_queue_size", _EPP_REQUEST_LABELS | {"inference_pool"}),
        )
    },
}


# ---- units and HPA metrics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """What one replica's value of a metric means; HPA targets are validated against it."""

    name: str
    meaning: str
    maximum: float | None = None  # the largest value one replica can report, when bounded

    def target_problem(self, target: float) -> str | None:
        sent = quantity(target)
        if sent in ("0", "0m"):
            # an HPA target's averageValue must be positive (kubernetes pkg/apis/autoscaling/validation/validation.go
            # validateMetricTarget: "must be positive"); what is sent is the quantity, in thousandths at the finest
            return (
                f"{target:g} is sent as the HPA target averageValue {sent!r} (Kubernetes quantities go down to "
                f"thousandths), which Kubernetes refuses: it must be positive; the smallest target is {1 / MILLI:g}"
            )
        if self.maximum is None or target <= self.maximum:
            return None
        hint = f"; for {target:g}% write {target / 100:g}" if self.maximum == 1 and target <= 100 else ""
        return f"{target:g} is above {self.maximum:g}: the unit is {self.name}, {self.meaning}{hint}"


FRACTION = Unit("fraction", "0 to 1 of one replica's capacity (0.5 = half)", maximum=1.0)
REQUESTS = Unit("requests", "requests queued per replica")
BYTES = Unit("bytes", "bytes of TPU HBM per replica, all of its chips together")


@dataclass(frozen=True)
class Fallback:
    """Another series an image may export instead of a metric's own, and how to turn it into the metric (a PromQL
    expression with `{}` for the series selector)."""

    series: str
    expression: str
    source: str


@dataclass(frozen=True)
class HpaMetric:
    """A metric an HPA can scale a workload on.

    origin "server": the model server's own series, one per pod, scraped by the workload's PodMonitoring;
    origin "tpu": the TPU device plugin's per-chip series (in kube-system; the workload's namespace is
    `exported_namespace`); `series / denominator` summed per node is then one replica's fraction;
    origin "gateway": the Inference Gateway's endpoint picker's series for the workload's InferencePool (in the
    workload's namespace), labelled with the pool's name in `pool_label`; `series * multiplier` is the pool's total
    when the series is an average over its endpoints.
    """

    name: str  # the key users write in autoscaling.metrics[].name
    series: str  # the Prometheus metric name at the source
    unit: Unit
    origin: Literal["server", "tpu", "gateway"]
    source: str  # where the series and its unit are defined upstream
    denominator: str | None = None
    adapter_name: str | None = None  # the external-metric name prometheus-adapter serves (default: name)
    fallback: Fallback | None = None  # read when the image exports it instead of `series`
    pool_label: str | None = None  # origin "gateway": the label naming the InferencePool
    multiplier: str | None = None  # origin "gateway": the series `series` is multiplied by for the pool's total
    # Whether the series counts requests while the workload has no replica: the one kind of signal that can
    # bring it back from zero (KEDA activates a trigger whose value is above 0); a per-endpoint series, or an
    # average over the pool's endpoints times their number, is 0 then.
    counts_at_zero: bool = False
    # origin "server": the labels its series carries once Managed Prometheus stored it (its exporter's and the
    # PodMonitoring's target labels): a KEDA query filters on the workload's selector keys among them.
    labels: frozenset[str] = frozenset()

    def read(self, matchers: str) -> str:
        """PromQL for the metric's per-pod samples selected by `matchers`: its series, or else its fallback's.
        `or` keeps every sample of the left side and those of the right whose label sets (the metric name aside)
        it lacks (prometheus.io/docs/prometheus/latest/querying/operators/#logical-set-binary-operators), so a pod
        that exports either series counts once."""
        own = f"{self.series}{{{matchers}}}"
        if self.fallback is None:
            return own
        return f"{own} or ({self.fallback.expression.format(f'{self.fallback.series}{{{matchers}}}')})"

    @property
    def all_series(self) -> tuple[str, ...]:
        """Every series it may be read from."""
        return (self.series, *((self.fallback.series,) if self.fallback else ()))


# The TPU device plugin's metrics every workload type's HPA may scale on; a type's own server metrics are its
# package's (workloads/jetstream/server.py, workloads/vllm/metrics.py), reached through its plan's hpa_metrics.
HPA_METRICS: dict[str, HpaMetric] = {
    m.name: m
    for m in (
        # GKE TPU device plugin, per chip (ai-on-gke modules/jetstream-maxtext-deployment README)
        HpaMetric(
            "tpu_memory_used",
            "memory_used",
            BYTES,
            "tpu",
            "ai-on-gke modules/jetstream-maxtext-deployment/README.md",
            adapter_name="memory_used",
        ),
        # memory_used / memory_total: a 0-1 ratio, as the ai-on-gke prometheus-adapter rule computes it
        # (ai-on-gke modules/jetstream-maxtext-deployment/templates/prometheus-adapter/values.yaml.tftpl)
        HpaMetric(
            "tpu_memory_used_percentage",
            "memory_used",
            FRACTION,
            "tpu",
            "ai-on-gke modules/jetstream-maxtext-deployment/templates/prometheus-adapter/values.yaml.tftpl",
            denominator="memory_total",
            adapter_name="memory_used_percentage",
        ),
    )
}


# The endpoint picker's series a workload served through the Inference Gateway can scale on
# (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go, subsystem `llm_d_epp`; docs/metrics.md):
# - flow_control_queue_size: "Current number of requests actively held in the Flow Control queue", labels
#   fairness_id, priority, inference_pool, model_name, target_model_name (IncFlowControlQueueSize with
#   req.InferencePoolName(), pkg/epp/flowcontrol/controller/controller.go). Requests wait there when the pool is
#   saturated, and also while it has no endpoint: the one signal that exists at zero replicas.
# - average_running_requests x ready_endpoints: the pool's requests in flight (each labelled `name`, the pool's
#   name: RecordInferencePoolAvgRunningRequests / RecordInferencePoolReadyPods(pool.Name, ...),
#   pkg/epp/datalayer/logger/logger.go refreshPrometheusMetrics). Both are pool-level gauges (pkg/epp/metrics/
#   metrics.go `poolLabels = []string{"name"}`): every picker replica exports the same pool's value, so the
#   pool's total is one replica's product (max over them), while each picker replica holds its own flow-control
#   queue (the pool's queue is the sum). At zero replicas the product is 0 (no ready endpoint): only the queue
#   counts the requests waiting for the first replica (counts_at_zero).
# The target is per replica, like every HPA metric here: the autoscaler proposes ceil(total / target).
_EPP_SOURCE = "llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/llm_d_router_metrics.go"
GATEWAY_QUEUED = Unit("requests", "requests waiting in the gateway's flow-control queue per replica")
GATEWAY_RUNNING = Unit("requests", "requests the gateway has in flight per replica")
GATEWAY_HPA_METRICS: dict[str, HpaMetric] = {
    m.name: m
    for m in (
        HpaMetric(
            "epp_flow_control_queue_size",
            "llm_d_epp_flow_control_queue_size",
            GATEWAY_QUEUED,
            "gateway",
            _EPP_SOURCE,
            pool_label="inference_pool",
            counts_at_zero=True,
        ),
        HpaMetric(
            "epp_running_requests",
            "llm_d_epp_average_running_requests",
            GATEWAY_RUNNING,
            "gateway",
            _EPP_SOURCE,
            pool_label="name",
            multiplier="llm_d_epp_ready_endpoints",
        ),
    )
}


# ---- PodMonitoring ---------------------------------------------------------------------------------------


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
        target_labels=TPU_DEVICE_PLUGIN_TARGET_LABELS,
        labels=dict(TPU_DEVICE_PLUGIN_SELECTOR),
    )


# ---- HPA metric specs -----------------------------------------------------------------------------------


MILLI = 1000  # the `m` suffix of a Kubernetes quantity: thousandths


def quantity(value: float) -> str:
    """A Kubernetes quantity for an HPA target: integers as is, fractions in milli-units."""
    return str(int(value)) if float(value).is_integer() else f"{round(value * MILLI)}m"
