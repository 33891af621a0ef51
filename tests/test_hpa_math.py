"""HPA math: at N ready replicas each carrying load L, every metric the stack serves makes the HPA propose
ceil(N*L/target), through either adapter (the model and its sources are in tests/hpa_model.py)."""

from __future__ import annotations

import pytest

from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics
from stacks.monitoring.adapters import keda
from stacks.monitoring.adapters.prometheus_adapter import rule as prometheus_adapter_rule
from tests import hpa_model
from tests.hpa_model import World
from workloads.jetstream.server import JETSTREAM_METRICS
from workloads.vllm.metrics import VLLM_METRICS

CLUSTER, NS = "tpu-serving-dev", "gemma"
POOL = NS  # the workload's InferencePool is named after it
CHIPS, HBM_PER_CHIP = 8, 16e9
# (load per replica, target) per unit: loads below, near and above the target
CASES = {
    "fraction": [(0.2, 0.5), (0.6, 0.5), (0.9, 0.5), (1.0, 0.7)],
    "requests": [(3, 10), (12, 10), (40, 10)],
    "bytes": [(60e9, 100e9), (120e9, 100e9), (30e9, 100e9)],
}


# Two endpoint-picker replicas scraped apart (their own `instance`), with their share of the requests queued.
PICKERS = (("10.0.0.1:9090", 0.4), ("10.0.0.2:9090", 0.6))


def _gateway(w: World, metric: metrics.HpaMetric, cluster: str, ns: str, pool: str, count: int, value: float) -> None:
    """The series two endpoint-picker replicas export for a pool of `count` endpoints each carrying `value`
    (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics): each picker's own flow-control queue (its share of the pool's,
    split over two fairness ids), and the pool-level gauges `average_running_requests` and `ready_endpoints`
    (metrics.go poolLabels: labelled with the pool's name only), which every picker reports alike."""
    assert metric.pool_label is not None
    for instance, picker_share in PICKERS:
        target = dict(cluster=cluster, namespace=ns, job=f"{pool}-epp", instance=instance)
        if metric.multiplier is None:
            for fairness, share in (("default", 0.25), ("tenant-a", 0.75)):
                labels = {
                    **target,
                    metric.pool_label: pool,
                    "fairness_id": fairness,
                    "priority": "0",
                    "model_name": "m",
                }
                w.add(metric.series, count * value * share * picker_share, **labels)
            continue
        w.add(metric.series, value if count else 0.0, **target, **{metric.pool_label: pool})
        w.add(metric.multiplier, float(count), **target, **{metric.pool_label: pool})


def world(metric: metrics.HpaMetric, replicas: int, load: float) -> World:
    """`replicas` pods of the workload each carrying `load`, plus the same series from another cluster's
    namespace of the same name and from another namespace of this cluster, which must not count (for a gateway
    metric, also another pool of the same namespace)."""
    w = World()
    places = [(CLUSTER, NS, replicas, load), ("other-cluster", NS, 3, 5 * load), (CLUSTER, "other", 2, 7 * load)]
    if metric.origin == "gateway":
        for cluster, ns, count, value in [*places, (CLUSTER, NS, 4, 3 * load)]:
            _gateway(w, metric, cluster, ns, POOL if count != 4 else "another-pool", count, value)
        return w
    for cluster, ns, count, value in places:
        for i in range(count):
            if metric.origin == "server":
                w.add(
                    metric.series,
                    value,
                    cluster=cluster,
                    namespace=ns,
                    pod=f"{ns}-{i}",
                    node=f"n{i}",
                    id=f"{i}",
                    app=ns,
                )
                continue
            for chip in range(CHIPS):  # device-plugin series: one per chip, in kube-system
                labels = dict(
                    cluster=cluster,
                    namespace="kube-system",
                    exported_namespace=ns,
                    node=f"{cluster}-{ns}-n{i}",
                    accelerator_id=str(chip),
                )
                used = value / CHIPS if metric.unit is metrics.BYTES else value * HBM_PER_CHIP
                w.add(metric.series, used, **labels)
                if metric.denominator:
                    w.add(metric.denominator, HBM_PER_CHIP, **labels)
    return w


def values(adapter: str, spec: dict, metric: metrics.HpaMetric, w: World) -> list[float]:
    if adapter == "prometheus-adapter":
        return hpa_model.prometheus_adapter_values(prometheus_adapter_rule(metric, CLUSTER, [NS]), NS, w)
    if spec["type"] == "Pods":  # the adapter reads this cluster's pods of the HPA's namespace
        w = World([s for s in w.series if s[0].get("cluster") == CLUSTER and s[0].get("namespace") == NS])
    return hpa_model.stackdriver_values(spec, w)


SERVED = [
    (a, n)
    for a in ("custom-metrics-stackdriver", "prometheus-adapter")
    for n in metrics_adapters.served_metrics(a, JETSTREAM_METRICS)
]


@pytest.mark.parametrize("adapter,name", SERVED)
def test_hpa_proposes_ceil_of_total_load_over_target(adapter, name):
    metric = JETSTREAM_METRICS[name]
    for load, target in CASES[metric.unit.name]:
        spec = metrics_adapters.hpa_metric(adapter, name, target, NS, CLUSTER, registry=JETSTREAM_METRICS)
        for replicas in (1, 2, 3, 5):
            got = hpa_model.proposal(
                spec, values(adapter, spec, metric, world(metric, replicas, load)), replicas, replicas
            )
            assert got == hpa_model.expected(replicas, load, target), (adapter, name, replicas, load, target)


KEDA_SERVED = [
    name
    for name in {**JETSTREAM_METRICS, **VLLM_METRICS}
    if metrics_adapters.adapter_serves("keda", name, {**JETSTREAM_METRICS, **VLLM_METRICS})
]


@pytest.mark.parametrize("name", KEDA_SERVED)
def test_keda_hpa_proposes_ceil_of_total_load_over_target(name):
    """Through KEDA: the ScaledObject's trigger for the metric, the HPA KEDA makes of it (tests/hpa_model.py
    keda_hpa: `keda-hpa-<name>`, External `s0-prometheus`, AverageValue = threshold) and the one sample the query
    returns, over the same worlds as the adapters above (plus, for a gateway metric, another pool's series)."""
    registry = {**JETSTREAM_METRICS, **VLLM_METRICS}
    metric = registry[name]
    scope = keda.Scope("p", CLUSTER, NS, {"app": NS}, POOL)
    for load, target in CASES[metric.unit.name]:
        trigger = keda.trigger(metric, target, scope)
        scaled = {"metadata": {"name": NS, "namespace": NS}, "spec": {"scaleTargetRef": {}, "triggers": [trigger]}}
        hpa = hpa_model.keda_hpa(scaled)
        assert hpa["metadata"]["name"] == f"keda-hpa-{NS}" and hpa["spec"]["minReplicas"] == 1
        (spec,) = hpa["spec"]["metrics"]
        assert spec["external"]["metric"]["name"] == "s0-prometheus"
        for replicas in (1, 2, 3, 5):
            got = hpa_model.proposal(
                spec, hpa_model.keda_values(trigger, world(metric, replicas, load)), replicas, replicas
            )
            assert got == hpa_model.expected(replicas, load, target), (name, replicas, load, target)


def test_the_keda_model_catches_a_query_without_the_pool_or_cluster_filter():
    metric = metrics.GATEWAY_HPA_METRICS["epp_flow_control_queue_size"]
    trigger = keda.trigger(metric, 4, keda.Scope("p", CLUSTER, NS, {}, POOL))
    for label in (f',inference_pool="{POOL}"', f'cluster="{CLUSTER}",'):
        loose = {
            **trigger,
            "metadata": {**trigger["metadata"], "query": trigger["metadata"]["query"].replace(label, "")},
        }
        (spec,) = hpa_model.keda_hpa(
            {"metadata": {"name": NS, "namespace": NS}, "spec": {"triggers": [loose], "scaleTargetRef": {}}}
        )["spec"]["metrics"]
        got = hpa_model.proposal(spec, hpa_model.keda_values(loose, world(metric, 2, 12)), 2, 2)
        assert got != hpa_model.expected(2, 12, 4), label


FALLBACKS = [name for name, m in JETSTREAM_METRICS.items() if m.fallback is not None]


@pytest.mark.parametrize("name", FALLBACKS)
@pytest.mark.parametrize("exports", ["own", "fallback", "both"])
def test_a_metric_with_a_fallback_scales_the_same_whichever_series_the_image_exports(name, exports):
    """prometheus-adapter's rule reads the metric's series or else its fallback (JetStream 0.2.2's
    jetstream_slots_available_percentage = free/max slots, so used = 1 - available), each pod once: the HPA
    proposes ceil(N*L/target) for an image exporting either series, or both."""
    metric = JETSTREAM_METRICS[name]
    fallback = metric.fallback
    assert fallback is not None and fallback.expression == "1 - {}"
    assert "jetstream_slots_used_percentage" in FALLBACKS
    for load, target in CASES[metric.unit.name]:
        spec = metrics_adapters.hpa_metric("prometheus-adapter", name, target, NS, CLUSTER, registry=JETSTREAM_METRICS)
        for replicas in (1, 3):
            own = world(metric, replicas, load)
            w = World([s for s in own.series if exports != "fallback"])
            if exports != "own":
                for labels, value in own.series:
                    w.add(fallback.series, 1 - value, **{k: v for k, v in labels.items() if k != "__name__"})
            rule = prometheus_adapter_rule(metric, CLUSTER, [NS])
            assert fallback.series in rule["seriesQuery"] and metric.series in rule["seriesQuery"]
            got = hpa_model.proposal(spec, hpa_model.prometheus_adapter_values(rule, NS, w), replicas, replicas)
            assert got == hpa_model.expected(replicas, load, target), (exports, replicas, load, target)


def test_the_model_catches_an_averaging_rule():
    """The rule the tutorial and this stack used to render (avg) proposes ceil(L/target) whatever N is."""
    metric = JETSTREAM_METRICS["jetstream_prefill_backlog_size"]
    rule = prometheus_adapter_rule(metric, CLUSTER, [NS])
    averaging = {**rule, "metricsQuery": rule["metricsQuery"].replace("sum(", "avg(", 1)}
    spec = metrics_adapters.hpa_metric("prometheus-adapter", metric.name, 10, NS, CLUSTER, registry=JETSTREAM_METRICS)
    got = hpa_model.proposal(spec, hpa_model.prometheus_adapter_values(averaging, NS, world(metric, 3, 20)), 3, 3)
    assert got == 2 != hpa_model.expected(3, 20, 10) == 6


def test_the_model_catches_a_missing_cluster_filter():
    metric = JETSTREAM_METRICS["tpu_memory_used"]
    spec = metrics_adapters.hpa_metric("custom-metrics-stackdriver", metric.name, 100e9, NS, CLUSTER)
    del spec["external"]["metric"]["selector"]["matchLabels"]["resource.labels.cluster"]
    got = hpa_model.proposal(spec, values("custom-metrics-stackdriver", spec, metric, world(metric, 2, 60e9)), 2, 2)
    assert got != hpa_model.expected(2, 60e9, 100e9)


def test_every_metric_has_a_unit_and_a_source():
    for metric in JETSTREAM_METRICS.values():
        assert metric.unit.name in CASES and metric.source
    # JetStream sets jetstream_slots_used_percentage to 1 - free/max slots: a fraction
    # (AI-Hypercomputer/JetStream@v0.3:jetstream/core/orchestrator.py)
    assert JETSTREAM_METRICS["jetstream_slots_used_percentage"].unit is metrics.FRACTION
    # the tutorial's memory_used_percentage is avg(memory_used)/avg(memory_total), no *100
    # (ai-on-gke modules/jetstream-maxtext-deployment/templates/prometheus-adapter/values.yaml.tftpl)
    assert JETSTREAM_METRICS["tpu_memory_used_percentage"].unit is metrics.FRACTION


@pytest.mark.parametrize(
    "name,target,problem",
    [
        (
            "jetstream_slots_used_percentage",
            50,
            "50 is above 1: the unit is fraction, 0 to 1 of one replica's capacity",
        ),
        ("tpu_memory_used_percentage", 80, "for 80% write 0.8"),
        ("jetstream_slots_used_percentage", 0.5, None),
        ("tpu_memory_used_percentage", 1, None),
        ("jetstream_prefill_backlog_size", 50, None),
        ("tpu_memory_used", 1e11, None),
    ],
)
def test_targets_are_checked_against_the_unit(name, target, problem):
    found = JETSTREAM_METRICS[name].unit.target_problem(target)
    assert (found is None) if problem is None else (problem in (found or ""))
