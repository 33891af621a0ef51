"""Issue 34 #3: every object an alert or a dashboard tile names exists among what the stack renders.

A query names an object through a label whose value is that object's name; a label matcher (`=`) on a name no
rendered object has selects nothing, and the alert never fires (under KEDA "autoscaler at max" and "requests
waiting" read the HPA `<workload>`, while KEDA names the HPA it makes `keda-hpa-<ScaledObject>`). Likewise an
alert's command (`kubectl -n <ns> describe hpa <name>`) must name what is there.

The labels that name objects, by source:
- `horizontalpodautoscaler` (with `namespace`): the HPA of a kube_horizontalpodautoscaler_* series;
  `deployment`, `statefulset`, `daemonset`, `job_name` likewise (kubernetes/kube-state-metrics docs/metrics/workload/,
  e.g. horizontalpodautoscaler-metrics.md);
- `name` (with `namespace`) on the endpoint picker's `llm_d_epp_*` pool series: the InferencePool
  (llm-d/llm-d-router@v0.10.0 pkg/epp/metrics/metrics.go poolLabels = ["name"]);
- `namespace`, `exported_namespace`: a Namespace; `cluster`: the GKE cluster (Managed Prometheus's target label,
  https://cloud.google.com/stackdriver/docs/managed-prometheus/query).

Rendered objects: every Kubernetes object the stack registers, what each Helm release installs (the record,
tooling/data/chart_objects.json), and what a controller makes from one by a rule its source states: KEDA's HPA for
each ScaledObject (kedacore/keda@v2.20.2:controllers/keda/hpa.go getHPAName: `advanced.horizontalPodAutoscalerConfig
.name`, else `keda-hpa-<ScaledObject name>`). Namespaces GKE itself runs (stacks/workload_checks.py
FORBIDDEN_NAMESPACES) exist in every cluster. LWS makes a LeaderWorkerSet's leader StatefulSet, named after it
(kubernetes-sigs/lws@v0.7.0 pkg/controllers/leaderworkerset_controller.go constructLeaderStatefulSetApplyConfiguration).
Checked over every shipped stack, with its alerts on.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from stacks.workload_checks import FORBIDDEN_NAMESPACES
from tests import promql
from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import plain
from tooling.harness.offline import Recording, load_stack_file, parse_config
from tooling.oracles import chart_objects
from tooling.review.render import stack_name

Obj = tuple[str, str, str]  # (kind, namespace or "", name)
CLUSTER = "gcp:container/cluster:Cluster"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
# kube-state-metrics' object labels (docs/metrics/workload/*.md), namespaced
KSM_LABELS = {
    "horizontalpodautoscaler": "HorizontalPodAutoscaler",
    "deployment": "Deployment",
    "statefulset": "StatefulSet",
    "daemonset": "DaemonSet",
    "job_name": "Job",
}
# kubectl's short names (`kubectl api-resources`) of the kinds an alert's command names
KUBECTL_KINDS = {
    "hpa": "HorizontalPodAutoscaler",
    "horizontalpodautoscaler": "HorizontalPodAutoscaler",
    "deploy": "Deployment",
    "deployment": "Deployment",
    "inferencepool": "InferencePool",
    "statefulset": "StatefulSet",
    "sts": "StatefulSet",
    "leaderworkerset": "LeaderWorkerSet",
    "lws": "LeaderWorkerSet",
    "jobset": "JobSet",
}
REGIONAL = [p for p in STACK_FILES if "tpu-serving:fleet" not in load_stack_file(p)]


def rendered(rec: Recording) -> set[Obj]:
    """Every object the stack's run puts in the cluster (module docstring)."""
    found: set[Obj] = set()
    for reg in rec.resources:
        if not reg.custom or not reg.type.startswith("kubernetes:"):
            continue
        inputs = plain(reg.inputs)
        if reg.type == "kubernetes:helm.sh/v3:Release":
            objects = chart_objects.installed(inputs["chart"], inputs["version"], inputs["name"], inputs["namespace"])
            assert objects is not None, f"{inputs['chart']}@{inputs['version']} unrecorded: `make chart-objects`"
            found |= {(o["kind"], o["namespace"] or "", o["name"]) for o in objects}
            continue
        meta = inputs.get("metadata")
        if isinstance(meta, dict) and meta.get("name"):
            kind = inputs.get("kind") or reg.type.rsplit(":", 1)[1]
            found.add((kind, meta.get("namespace") or "", meta["name"]))
    for so in rec.of_type(SCALED_OBJECT):
        meta, spec = so.inputs["metadata"], so.inputs["spec"]
        config = (spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}
        found.add(("HorizontalPodAutoscaler", meta["namespace"], config.get("name") or f"keda-hpa-{meta['name']}"))
    # LWS's leader StatefulSet, named after its LeaderWorkerSet (kubernetes-sigs/lws@v0.7.0
    # pkg/controllers/leaderworkerset_controller.go constructLeaderStatefulSetApplyConfiguration)
    found |= {("StatefulSet", ns, name) for kind, ns, name in found if kind == "LeaderWorkerSet"}
    found |= {("Namespace", "", ns) for ns in FORBIDDEN_NAMESPACES}
    found |= {("Cluster", "", reg.inputs["name"]) for reg in rec.of_type(CLUSTER)}
    return found


def named_by_query(query: str) -> Iterator[Obj]:
    for selector in promql.parse(query):
        labels = {label: value for label, op, value in selector.matchers if op == "="}
        ns = labels.get("namespace", "")
        for label, kind in KSM_LABELS.items():
            if label in labels:
                yield (kind, ns, labels[label])
        if selector.metric.startswith("llm_d_epp_") and "name" in labels:
            yield ("InferencePool", ns, labels["name"])
        for label in ("namespace", "exported_namespace"):
            if label in labels:
                yield ("Namespace", "", labels[label])
        if "cluster" in labels:
            yield ("Cluster", "", labels["cluster"])


def named_by_command(command: str) -> Iterator[Obj]:
    """`kubectl -n <ns> <verb> <kind> <name>` and `<kind>/<name>` in an alert's command."""
    for part in command.split(";"):
        words = shlex.split(part, comments=True)
        if not words or words[0] != "kubectl" or "-n" not in words:
            continue
        ns = words[words.index("-n") + 1]
        args = [w for w in words[words.index("-n") + 2 :] if not w.startswith("-")]
        for i, word in enumerate(args[1:], 1):
            kind, _, name = word.partition("/")
            if name and kind in KUBECTL_KINDS:
                yield (KUBECTL_KINDS[kind], ns, name)
            elif word in KUBECTL_KINDS and i + 1 < len(args) and args[0] in ("get", "describe"):
                yield (KUBECTL_KINDS[word], ns, args[i + 1])


def references(path: Path) -> list[tuple[str, Obj]]:
    """(where, object) of everything the stack's alerts (on) and dashboard name."""
    raw = load_stack_file(path)
    raw["tpu-serving:alerts"] = {**(raw.get("tpu-serving:alerts") or {}), "enabled": True}
    plan = parse_config(raw, stack_name(path)).alerts_plan
    out = [
        (f"alert {rule.key}", obj)
        for w in plan.workloads
        for rule in w.rules
        for obj in [*named_by_query(rule.query), *named_by_command(rule.command)]
    ]
    for board in recorded(path, False).of_type(DASHBOARD):
        for tile in json.loads(plain(board.inputs)["dashboardJson"])["mosaicLayout"]["tiles"]:
            widget = tile["widget"]
            for data in (widget.get("xyChart") or {}).get("dataSets", []):
                query = (data.get("timeSeriesQuery") or {}).get("prometheusQuery")
                if query is None:  # a Monitoring filter tile (the release gate's log-based metrics, which
                    continue  # tests/test_gate_results.py holds to the registered metrics): no Kubernetes object
                out += [(f"tile {widget.get('title')!r}", obj) for obj in named_by_query(query)]
    return out


@pytest.mark.parametrize("path", REGIONAL, ids=lambda p: p.name)
def test_every_object_an_alert_or_tile_names_is_rendered(path: Path):
    objects = rendered(recorded(path, False))
    refs = references(path)
    missing = sorted({f"{where}: {obj}" for where, obj in refs if obj not in objects})
    assert not missing, "\n".join(missing)


def test_the_keda_example_names_the_hpa_keda_makes():
    """The alerts of a KEDA-scaled workload read `keda-hpa-<workload>`, the HPA KEDA makes for its ScaledObject."""
    path = Path(__file__).resolve().parents[1] / "examples/vllm-single-host/Pulumi.vllm-single-host-keda.yaml"
    named = {obj for where, obj in references(path) if where.startswith("alert llama70b-")}
    hpas = {obj for obj in named if obj[0] == "HorizontalPodAutoscaler"}
    assert hpas == {("HorizontalPodAutoscaler", "llama70b", "keda-hpa-llama70b")}
    assert hpas <= rendered(recorded(path, False))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('max(kube_horizontalpodautoscaler_spec_max_replicas{namespace="a", horizontalpodautoscaler="b"})', "b"),
        ('sum(llm_d_epp_ready_endpoints{namespace="a", name="p"})', "p"),
    ],
)
def test_the_reader_sees_the_names_a_query_holds(text: str, expected: str):
    assert expected in {name for _, _, name in named_by_query(text)}


def test_the_reader_sees_the_names_a_command_holds():
    found = set(named_by_command("kubectl -n a describe hpa keda-hpa-w; kubectl -n a logs deploy/w-epp"))
    assert found == {("HorizontalPodAutoscaler", "a", "keda-hpa-w"), ("Deployment", "a", "w-epp")}
    assert not set(named_by_command("kubectl -n a get pods -o wide  # tile"))
