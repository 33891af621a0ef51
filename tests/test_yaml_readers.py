"""Issue 34 #21: every reader of YAML in the project's tests and tooling parses it, and every chart the version
matrix pins is read from its source at its tag like the others: found, rendered by the pinned Helm, scanned and
recorded.

A pattern over a manifest or a chart template (`^metadata:\\s*\\n(?:[ \\t]+.*\\n)*?[ \\t]+name:`) backtracks without bound
on a chart whose templates it does not expect (KEDA's kedacore/charts@v2.20.2 keda/templates/manager/service.yaml and
three more held the suite 120 s each); YAML parsed (PyYAML's libyaml loader over Helm's render) is linear in its
text. KEDA's chart is staged in ../shared/reference/charts-staged/keda-2.20.2/keda until it moves to charts/
(SOURCES.md): both folders are looked in (tooling/oracles/chart_objects.py CHART_FOLDERS).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from stacks.facts.versions import BODY_BASED_ROUTER
from tests.conftest import reference_dir
from tooling.oracles import chart_objects

ROOT = Path(__file__).resolve().parents[1]
# What reads YAML as text rather than parsing it: a pattern (a `re` call) or a plain-string search (str.split,
# partition, find, index) whose literal names a Kubernetes object's keys, a document separator, or a key whose value
# it captures.
YAML_SHAPE = re.compile(r"(?<![A-Za-z0-9_])(?:apiVersion|kind|metadata|spec|name)\s*:|^\^?---|\w: \(")
RE_CALLS = {"search", "match", "fullmatch", "findall", "finditer", "split", "sub", "subn", "compile"}
STR_CALLS = {"split", "rsplit", "partition", "rpartition", "index", "rindex", "find", "rfind"}


def _literal(node: ast.AST) -> str | None:
    """The text of a string literal, or of an f-string's literal parts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def text_readers_of_yaml(source: str) -> list[tuple[int, str, str]]:
    """(line, call, literal) of every call in `source` that reads YAML structure as text (YAML_SHAPE)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        func = node.func
        pattern = isinstance(func.value, ast.Name) and func.value.id == "re" and func.attr in RE_CALLS
        literal = _literal(node.args[0])
        if (pattern or func.attr in STR_CALLS) and literal is not None and YAML_SHAPE.search(literal):
            found.append((node.lineno, func.attr, literal))
    return found


def _modules() -> list[Path]:
    return sorted(p for folder in ("tests", "tooling", "scripts") for p in (ROOT / folder).rglob("*.py"))


def test_no_test_or_tool_reads_yaml_with_a_pattern():
    """Every module of tests/, tooling/ and scripts/: YAML is parsed (yaml.load_all over a manifest or Helm's
    render), never searched or split as text."""
    found = [
        f"{path.relative_to(ROOT)}:{line}: {call}({literal!r})"
        for path in _modules()
        for line, call, literal in text_readers_of_yaml(path.read_text())
    ]
    assert not found, "parse the YAML (yaml.load_all, or tests/helm_charts.py render_release for a chart):\n" + (
        "\n".join(found)
    )


@pytest.mark.parametrize(
    "source",
    [
        # the reader issue 34 #21 found (tests/test_gke_managed.py before), and the two that read a chart template
        'name = re.search(r"^metadata:\\s*\\n(?:[ \\t]+.*\\n)*?[ \\t]+name:\\s*(\\S+)\\s*$", doc, flags=re.M)',
        'docs = re.split(r"^---\\s*$", text, flags=re.MULTILINE)',
        'blocks = re.split(r"^kind: ", text, flags=re.M)',
        'seconds = re.findall(r"timeoutSec: (\\d+)\\s", template.split("kind: GCPBackendPolicy", 1)[1])',
        'pattern = re.compile(rf"^kind: {kind}$", re.M)',
    ],
)
def test_the_check_finds_a_pattern_over_yaml(source: str):
    assert text_readers_of_yaml(source)


def test_the_check_leaves_patterns_over_other_text_alone():
    for source in (
        're.findall(r"CKV2?_K8S_\\d+", row)',
        're.fullmatch(r"\\d+s", ttl)',
        'text.split("&&")',
        'message.startswith("tpu-serving:workloads llama70b:")',
    ):
        assert not text_readers_of_yaml(source), source


# ---- every chart the matrix pins is read like the others ---------------------------------------------------------


def _charts_at_hand(*, from_reference: bool = True) -> tuple[Path, ...]:
    """The chart roots; skipped when the reference folder's are absent (a chart the reference holds is looked for
    there: the Go module proxy's cache, `make bbr-chart`, holds only the body-based router's)."""
    found = chart_objects.charts_root()
    roots = (found,) if isinstance(found, Path) else tuple(found)
    reference_roots = [root for root in roots if root != chart_objects.CHART_CACHE]
    if from_reference and not any(root.is_dir() for root in reference_roots):
        pytest.skip(f"no chart sources under {reference_dir()} (../shared/reference or $TPU_SERVING_REFERENCE)")
    return roots


@pytest.mark.parametrize("key", sorted(chart_objects.pinned_charts()))
def test_every_pinned_chart_release_is_found_at_its_tag(key: str):
    """Each chart release of the version matrix (stacks/facts/versions.py CHARTS, the router) has its source in charts/ or
    charts-staged/ (KEDA's: charts-staged/keda-2.20.2/keda, kedacore/charts@v2.20.2)."""
    chart = chart_objects.pinned_charts()[key]
    roots = _charts_at_hand(from_reference=chart is not BODY_BASED_ROUTER)
    folder = chart_objects.chart_dir(roots if len(roots) > 1 else roots[0], chart.chart, chart.version)
    if chart is BODY_BASED_ROUTER and not (folder / "Chart.yaml").is_file():
        # pinned from kubernetes-sigs/gateway-api-inference-extension@v1.5.0 (removed at v1.6.0), which the reference
        # folder does not hold: `make bbr-chart` fetches that release's module zip from the Go module proxy
        pytest.skip(f"{key}: no source at {folder} (`make bbr-chart` fetches it from the Go module proxy)")
    assert (folder / "Chart.yaml").is_file(), f"{key}: no source at {folder}"
    # the folder is the chart's (the repositories' Chart.yaml versions are rewritten on publishing: lws's reads 0.1.0)
    assert yaml.safe_load((folder / "Chart.yaml").read_text())["name"] == chart_objects.chart_name(chart.chart), key


def test_kedas_chart_is_scanned_rendered_and_recorded():
    """`make scan` renders the KEDA release of the KEDA example with its values (not "NOT scanned"), and the record
    (`make chart-objects`) is made from that chart (its Deployments, the operator's and the metrics server's)."""
    from tests.conftest import recorded
    from tooling.scans import scan

    _charts_at_hand()
    unscanned: set[str] = set()
    render, note = scan.chart_renderer(unscanned)
    if render is None:
        pytest.skip(note)
    path = ROOT / "examples" / "vllm-single-host" / "Pulumi.vllm-single-host-keda.yaml"
    releases = [r for r in chart_objects.releases_of(recorded(path, False)) if r.chart == "keda"]
    assert len(releases) == 1
    objects = render(releases[0])
    assert not unscanned
    deployments = {o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"}
    assert deployments == {"keda-operator", "keda-operator-metrics-apiserver"}
    record = chart_objects.load()[releases[0].key]
    assert record["source"] == "kedacore/charts@v2.20.2:keda"
    assert {o["name"] for o in record["objects"] if o["kind"] == "Deployment"} == deployments
