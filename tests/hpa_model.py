"""A small model of what the HPA controller computes from the metrics the stack's adapters serve.

The controller (kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go, e.g. at
https://github.com/kubernetes/kubernetes/blob/master/pkg/controller/podautoscaler/replica_calculator.go):
- Pods metric, AverageValue (GetMetricReplicas -> calcPlainMetricReplicas): usageRatio = mean(per-pod values) /
  target; within tolerance (0.1) keep the current count, else ceil(usageRatio x ready pods);
- External metric, AverageValue (GetExternalPerPodMetricReplicas): utilization = SUM of every value the adapter
  returns; usageRatio = utilization / (target x current replicas); within tolerance keep the count, else
  ceil(utilization / target).

The adapters are modelled from their sources:
- prometheus-adapter (kubernetes-sigs/prometheus-adapter@v0.12.0): the rule's metricsQuery with <<.Series>> the
  series name and <<.LabelMatchers>> `<label mapped to namespace>="<HPA namespace>"` (pkg/naming/metrics_query.go
  BuildExternal), one external value per sample of the result (pkg/external-provider/metric_converter.go);
  the query is evaluated by the tiny PromQL subset below (selectors, sum/avg/max [by], `/`, `*`, `-`, `or`).
- custom-metrics-stackdriver: a Pods metric returns each pod's series; an External metric returns every time
  series matching the selector (GoogleCloudPlatform/k8s-stackdriver custom-metrics-stackdriver-adapter
  pkg/adapter/translator), no reduction unless a `reducer` is asked for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance default

Series = tuple[dict[str, str], float]


@dataclass
class World:
    """N ready replicas of one workload in `namespace` on cluster `cluster`, plus noise the queries must ignore."""

    series: list[Series] = field(default_factory=list)

    def add(self, name: str, value: float, /, **labels: str) -> None:
        self.series.append(({"__name__": name, **labels}, value))


# ---- a tiny PromQL evaluator ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r'\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<id>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<str>"[^"]*")|(?P<op>=~|!=|[(){},=/*-]))'
)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot parse {text[pos:]!r}")
        out.append(m.group(m.lastgroup or "op"))
        pos = m.end()
    return out


Vector = list[Series]


class _Parser:
    def __init__(self, text: str, world: World):
        self.toks, self.i, self.world = _tokens(text), 0, world

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.toks[self.i]
        if expected is not None and tok != expected:
            raise ValueError(f"expected {expected!r}, got {tok!r}")
        self.i += 1
        return tok

    def parse(self) -> Vector | float:
        value = self.expr()
        if self.peek() is not None:
            raise ValueError(f"trailing {self.toks[self.i :]}")
        return value

    def expr(self) -> Vector | float:
        left = self.difference()
        while self.peek() == "or":
            self.take("or")
            right = self.difference()
            assert isinstance(left, list) and isinstance(right, list)
            left = _or(left, right)
        return left

    def difference(self) -> Vector | float:
        left = self.product()
        while self.peek() == "-":
            self.take("-")
            left = _binary("-", left, self.product())
        return left

    def product(self) -> Vector | float:
        left = self.term()
        while self.peek() in ("/", "*"):
            op = self.take()
            left = _binary(op, left, self.term())
        return left

    def term(self) -> Vector | float:
        tok = self.peek()
        if tok == "(":
            self.take("(")
            value = self.expr()
            self.take(")")
            return value
        if tok is not None and re.fullmatch(r"\d+(\.\d+)?", tok):
            return float(self.take())
        name = self.take()
        if name in ("sum", "avg", "max"):
            by: list[str] | None = None
            if self.peek() == "by":
                self.take("by")
                self.take("(")
                by = []
                while self.peek() != ")":
                    by.append(self.take())
                    if self.peek() == ",":
                        self.take(",")
                self.take(")")
            self.take("(")
            inner = self.expr()
            self.take(")")
            assert isinstance(inner, list)
            return _aggregate(name, inner, by or [])
        return self.selector(name)

    def selector(self, name: str) -> Vector:
        matchers = []
        if self.peek() == "{":
            self.take("{")
            while self.peek() != "}":
                label, op, value = self.take(), self.take(), self.take()[1:-1]
                matchers.append((label, op, value))
                if self.peek() == ",":
                    self.take(",")
            self.take("}")

        def ok(labels: dict[str, str]) -> bool:
            for label, op, value in matchers:
                have = labels.get(label, "")
                if op == "=" and have != value:
                    return False
                if op == "!=" and have == value:
                    return False
                if op == "=~" and not re.fullmatch(value, have):
                    return False
            return True

        return [(labels, v) for labels, v in self.world.series if labels["__name__"] == name and ok(labels)]


def _aggregate(op: str, vector: Vector, by: list[str]) -> Vector:
    groups: dict[tuple[str, ...], list[float]] = {}
    for labels, value in vector:
        groups.setdefault(tuple(labels.get(b, "") for b in by), []).append(value)
    out = []
    for key, values in groups.items():
        total = sum(values)
        value = max(values) if op == "max" else total if op == "sum" else total / len(values)
        out.append((dict(zip(by, key, strict=True)), value))
    return out


def _strip(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _binary(op: str, left: Vector | float, right: Vector | float) -> Vector | float:
    def apply(a: float, b: float) -> float:
        return a / b if op == "/" else a * b if op == "*" else a - b

    if isinstance(left, float) and isinstance(right, float):
        return apply(left, right)
    if isinstance(right, float):
        assert isinstance(left, list)
        return [({k: v for k, v in labels.items() if k != "__name__"}, apply(v, right)) for labels, v in left]
    if isinstance(left, float):
        return [({k: v for k, v in labels.items() if k != "__name__"}, apply(left, v)) for labels, v in right]
    rights = {_strip(labels): v for labels, v in right}  # one-to-one matching on identical label sets
    return [(dict(_strip(labels)), apply(v, rights[_strip(labels)])) for labels, v in left if _strip(labels) in rights]


def _or(left: Vector, right: Vector) -> Vector:
    """`left or right`: every sample of left, and those of right whose label set (the name aside) left lacks."""
    have = {_strip(labels) for labels, _ in left}
    return [*left, *((labels, v) for labels, v in right if _strip(labels) not in have)]


def promql(query: str, world: World) -> list[float]:
    result = _Parser(query, world).parse()
    return [result] if isinstance(result, float) else [v for _, v in result]


# ---- the adapters and the controller ---------------------------------------------------------------------


def prometheus_adapter_values(rule: dict[str, Any], namespace: str, world: World) -> list[float]:
    resources = rule["resources"]
    if "overrides" in resources:
        (label,) = [k for k, v in resources["overrides"].items() if v == {"resource": "namespace"}]
    else:
        assert resources == {"template": "<<.Resource>>"}
        label = "namespace"
    query = rule["metricsQuery"]
    if "<<.Series>>" in query:
        series = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", rule["seriesQuery"])
        assert series
        query = query.replace("<<.Series>>", series.group(0))
    query = query.replace("<<.LabelMatchers>>", f'{label}="{namespace}"')
    return promql(query, world)


def _stackdriver_match(labels: dict[str, str], selector: dict[str, str]) -> bool:
    for key, value in selector.items():
        label = key.split(".", 2)[-1]
        if labels.get(label) != value:
            return False
    return True


def stackdriver_values(metric: dict[str, Any], world: World) -> list[float]:
    """The values custom-metrics-stackdriver returns for an HPA metric spec (Prometheus series in Cloud
    Monitoring: `resource.labels.*` are the prometheus_target labels, `metric.labels.*` the others)."""
    kind = metric["type"]
    spec = metric["pods"] if kind == "Pods" else metric["external"]
    name = spec["metric"]["name"].split("|")[1]
    selector = spec["metric"].get("selector", {}).get("matchLabels", {})
    return [v for labels, v in world.series if labels["__name__"] == name and _stackdriver_match(labels, selector)]


def quantity_value(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def proposal(metric: dict[str, Any], values: list[float], current: int, ready: int) -> int:
    """The replica count the HPA controller proposes for one metric spec given the adapter's values."""
    spec = metric["pods"] if metric["type"] == "Pods" else metric["external"]
    assert spec["target"]["type"] == "AverageValue"
    target = quantity_value(spec["target"]["averageValue"])
    if metric["type"] == "Pods":
        ratio = (sum(values) / len(values)) / target
        return current if abs(1 - ratio) <= TOLERANCE else math.ceil(ratio * ready)
    total = sum(values)
    ratio = total / (target * current)
    return current if abs(1 - ratio) <= TOLERANCE else math.ceil(total / target)


def expected(replicas: int, load: float, target: float) -> int:
    """What a correct HPA proposes: ceil(N*L/target), or N within the controller's tolerance."""
    ratio = load / target
    return replicas if abs(1 - ratio) <= TOLERANCE else math.ceil(replicas * load / target)


# ---- KEDA: the HPA a ScaledObject makes, and what its metrics server returns ------------------------------------
#
# kedacore/keda@v2.20.2:
# - controllers/keda/hpa.go newHPAForScaledObject: the HPA `keda-hpa-<ScaledObject>` (getHPAName) on the
#   ScaledObject's scaleTargetRef, minReplicas = minReplicaCount when above 0, else 1
#   (apis/keda/v1alpha1/scaledobject_types.go GetHPAMinReplicas: KEDA itself scales 0 <-> 1), maxReplicas =
#   maxReplicaCount; one metric per trigger (getScaledObjectMetricSpecs) with the selector
#   `scaledobject.keda.sh/name: <ScaledObject>`;
# - pkg/scalers/prometheus_scaler.go GetMetricSpecForScaling: External `s<index>-prometheus`
#   (pkg/scalers/scaler.go GenerateMetricNameWithIndex), target AverageValue = threshold (GetMetricTargetMili;
#   AverageValue by default, GetMetricTargetType); ExecutePromQuery returns the query's ONE sample (more is an
#   error, none is 0 with ignoreNullValues' default true), which the metrics server hands the HPA as the value.


def keda_hpa(scaled_object: dict[str, Any]) -> dict[str, Any]:
    spec = scaled_object["spec"]
    name = scaled_object["metadata"]["name"]
    metrics = [
        {
            "type": "External",
            "external": {
                "metric": {
                    "name": f"s{i}-{trigger['type']}",
                    "selector": {"matchLabels": {"scaledobject.keda.sh/name": name}},
                },
                "target": {"type": "AverageValue", "averageValue": trigger["metadata"]["threshold"]},
            },
        }
        for i, trigger in enumerate(spec["triggers"])
    ]
    minimum = spec.get("minReplicaCount", 0)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": f"keda-hpa-{name}", "namespace": scaled_object["metadata"]["namespace"]},
        "spec": {
            "scaleTargetRef": spec["scaleTargetRef"],
            "minReplicas": minimum if minimum > 0 else 1,
            "maxReplicas": spec.get("maxReplicaCount", 100),
            "metrics": metrics,
        },
    }


def keda_values(trigger: dict[str, Any], world: World) -> list[float]:
    """What KEDA's metrics server returns for a prometheus trigger: the query's one sample (0 for none)."""
    assert trigger["type"] == "prometheus"
    samples = promql(trigger["metadata"]["query"], world)
    if len(samples) > 1:
        raise ValueError(f"KEDA refuses a query returning {len(samples)} samples: {trigger['metadata']['query']}")
    return samples or [0.0]
