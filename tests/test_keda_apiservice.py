"""Issue 34 #8: switching `monitoring.adapter` to or from KEDA is one clean `up`, because the APIService
`v1beta1.external.metrics.k8s.io` has one owner in every mode: the stack (stacks/monitoring/adapters/entry.py).

KEDA's chart renders it whatever its values; its release runs a post-renderer that drops it
(scripts/helm_postrender_drop_apiservices.py, Helm's --post-renderer), the stack registers the same APIService under
the resource every adapter uses, and the operator is told not to patch a CA into it (the stack's, as the other
adapters', skips TLS verification, which the API server refuses beside a caBundle). tests/test_transitions.py runs the
switches with every release expanded into what it installs.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from stacks.monitoring.adapters import keda
from stacks.monitoring.adapters.entry import DROP_API_SERVICES, EXTERNAL_METRICS_API, Chart
from tests.helm_charts import render
from tests.test_metrics_adapters import context

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / DROP_API_SERVICES


def _keda_chart() -> Chart:
    (chart,) = [p.body for p in keda.build(context(keda.ADAPTER)).parts if isinstance(p.body, Chart)]
    return chart


def _post_render(text: str) -> str:
    """The post-renderer's function, loaded from the script (Helm runs the script itself in the test above)."""
    spec = importlib.util.spec_from_file_location("helm_postrender", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out: str = module.post_render(text)
    return out


def test_the_post_renderer_drops_exactly_the_apiservices_of_kedas_chart():
    """The pinned Helm renders KEDA's chart at its tag with the stack's values, once plain and once through the
    post-renderer: the same objects but the APIService."""
    chart = _keda_chart()
    assert chart.postrender == DROP_API_SERVICES
    plain = render(chart.chart, chart.values)
    post = render(chart.chart, chart.values, postrender=chart.postrender)
    assert [o for o in plain if o["kind"] == "APIService"]
    assert post == [o for o in plain if o["kind"] != "APIService"]


def test_the_post_renderer_reads_documents_not_nested_text():
    stream = (
        "---\n# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: |\n"
        "    kind: APIService\n"
        "---\n# Source: b.yaml\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: b\n"
        "--- \napiVersion: v1\nkind: 'APIService'\n"
        "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: c\n"
    )
    out = _post_render(stream)
    assert "name: a" in out and "    kind: APIService\n" in out and "name: c" in out
    assert "name: b" not in out and "'APIService'" not in out
    assert _post_render("") == ""


def test_the_post_renderer_is_an_executable_on_the_standard_library():
    """Helm executes it with the deployer's python3 (no virtualenv): executable, a python3 shebang, and imports of
    the standard library only."""
    assert os.access(SCRIPT, os.X_OK)
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env python3\n")
    imported = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_the_stacks_apiservice_is_the_charts_and_the_operator_leaves_it_alone():
    """The APIService the stack registers in KEDA mode is the one the chart renders (kedacore/charts@v2.20.2
    keda/templates/metrics-server/apiservice.yaml: service, namespace, port, group, version, priorities), skipping
    TLS verification as for the other adapters; the operator runs with --enable-apiservice-patching=false
    (values.yaml certificates.operator.apiServicePatching), so it writes no caBundle the API server would refuse
    beside insecureSkipTLSVerify."""
    chart = _keda_chart()
    plain = render(chart.chart, chart.values)
    (charts,) = [o for o in plain if o["kind"] == "APIService"]
    (ours,) = [
        p.body
        for p in keda.build(context(keda.ADAPTER)).parts
        if isinstance(p.body, dict) and p.body["kind"] == "APIService"
    ]
    assert ours["metadata"]["name"] == charts["metadata"]["name"] == f"v1beta1.{EXTERNAL_METRICS_API}"
    spec = dict(ours["spec"])
    assert spec.pop("insecureSkipTLSVerify") is True
    assert "caBundle" not in charts["spec"] and "insecureSkipTLSVerify" not in charts["spec"]
    service = {**spec.pop("service"), "port": 443}  # an APIService's service port defaults to 443
    assert {**spec, "service": service} == charts["spec"]
    (operator,) = [o for o in plain if o["kind"] == "Deployment" and o["metadata"]["name"] == "keda-operator"]
    args = operator["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--enable-apiservice-patching=false" in args
    assert "--enable-cert-rotation=true" in args  # the certificates the metrics server and the gRPC link use


@pytest.mark.parametrize("key", ["keda@2.20.2"])
def test_the_record_holds_no_apiservice_for_kedas_release(key: str):
    from tooling.oracles import chart_objects

    assert not [o for o in chart_objects.load()[key]["objects"] if o["kind"] == "APIService"]
