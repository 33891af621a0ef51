"""The metrics adapter registry (Stackdriver adapter, Prometheus adapter, KEDA). May import: stacks.facts, stacks.security, stacks.monitoring.metrics, stacks.naming, stacks.problems.

One line per adapter, each entry (`MetricsAdapter`) carrying everything
about it. Adding an adapter = one module here + one line below; the config's allowed values, the JSON Schema enum,
the workloads' autoscaling checks, the HPA metric specs, the Monitoring component and the README table follow.

`none` (no adapter, no HPA) is a config value, not an entry: an entry describes something the stack builds and
serves, and a `None` lookup makes every reader (typed `MetricsAdapter | None`) handle "nothing serves metrics"
explicitly instead of an entry whose every field is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stacks.monitoring.adapters import keda, prometheus_adapter, stackdriver
from stacks.monitoring.adapters.entry import (
    ADAPTER_NAMESPACE,
    API_OF_METRIC_TYPE,
    METRICS_APIS,
    AdapterBuild,
    AdapterContext,
    Chart,
    Grant,
    MetricsAdapter,
    Part,
)
from stacks.monitoring.metrics import HPA_METRICS, HpaMetric, quantity

__all__ = [
    "ADAPTERS",
    "ADAPTER_NAMESPACE",
    "API_OF_METRIC_TYPE",
    "DEFAULT",
    "METRICS_APIS",
    "NONE",
    "AdapterBuild",
    "AdapterContext",
    "Chart",
    "Grant",
    "MetricsAdapter",
    "Part",
    "adapter_serves",
    "choices",
    "get",
    "hpa_metric",
    "one_of",
    "served_metrics",
]

ADAPTERS: dict[str, MetricsAdapter] = {
    a.name: a
    for a in (
        stackdriver.ADAPTER,
        prometheus_adapter.ADAPTER,
        keda.ADAPTER,
    )
}
NONE = "none"  # tpu-serving:monitoring.adapter when nothing serves metrics to HPAs
DEFAULT = stackdriver.NAME


def choices() -> tuple[str, ...]:
    """The values tpu-serving:monitoring.adapter allows, in registry order, then `none`."""
    return (*ADAPTERS, NONE)


def one_of() -> str:
    """The adapters, as a sentence names them: "a, b or c"."""
    names = list(ADAPTERS)
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]


def get(name: str) -> MetricsAdapter | None:
    """The entry of a configured adapter; None for `none` (config validation admits no other name)."""
    return None if name == NONE else ADAPTERS[name]


def adapter_serves(adapter: str, name: str, registry: Mapping[str, HpaMetric] | None = None) -> bool:
    metric = (HPA_METRICS if registry is None else registry).get(name)
    entry = ADAPTERS.get(adapter)
    return metric is not None and entry is not None and entry.serves(metric)


def served_metrics(adapter: str, registry: Mapping[str, HpaMetric] | None = None) -> list[str]:
    registry = HPA_METRICS if registry is None else registry
    return [name for name in registry if adapter_serves(adapter, name, registry)]


def hpa_metric(
    adapter: str,
    name: str,
    target: float,
    namespace: str,
    cluster: str,
    *,
    registry: Mapping[str, HpaMetric] | None = None,
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An autoscaling/v2 metric spec for `name` (from `registry`, default HPA_METRICS), named the way `adapter`
    serves it, with an AverageValue target per replica in the metric's unit. `selector` narrows a server metric to
    one workload's pods (labels its PodMonitoring attaches) where the adapter selects by it."""
    registry = HPA_METRICS if registry is None else registry
    if not adapter_serves(adapter, name, registry):
        raise ValueError(f"adapter {adapter!r} does not serve {name!r}")
    goal = {"type": "AverageValue", "averageValue": quantity(target)}
    return ADAPTERS[adapter].metric_spec(registry[name], goal, namespace, cluster, selector)
