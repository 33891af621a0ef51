"""Every HealthCheckPolicy the router chart installs passes GKE's HealthCheckPolicy CRD (the chart rendered at its tag by
the pinned Helm with the release's values and post-renderer). The fleet stack's own policy is validated against the
documented multi-cluster schema instead (tests/test_fleet.py), which has no portSpecification.

GKE's CRD (GoogleCloudPlatform/gke-gateway-api@fc40d606 config/crd/networking.gke.io_healthcheckpolicies.yaml, in
../shared/reference/gke-crds/) validates `httpHealthCheck` with three CEL rules (x-kubernetes-validations), each
reading `self.portSpecification`, which is an evaluation error ("no such key") when it is absent. The router chart
(llm-d/llm-d-router@v0.10.0 config/charts/llm-d-router-gateway/templates/gke.yaml) writes `port` without it: the
first real `pulumi up` of a gateway example (make e2e, vllm-single-host-keda) failed there and Helm rolled the
release back. The release runs scripts/helm_postrender_health_check_port.py, which adds USE_FIXED_PORT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.facts import versions
from stacks.serving import gateway
from tests.conftest import EXAMPLES, recorded
from tests.helm_charts import assert_standalone_script, post_renderer
from tooling.review.render import stack_name

ROOT = Path(__file__).resolve().parent.parent
CRD = ROOT.parent / "shared" / "reference" / "gke-crds" / "networking.gke.io_healthcheckpolicies.yaml"
RELEASE = "kubernetes:helm.sh/v3:Release"
# The CRD's rules on httpHealthCheck, as it writes them, and what each asks (modelled in `violations`).
RULES = (
    "self.portSpecification == 'USE_FIXED_PORT' ? has(self.port) && !has(self.portName) : true",
    "self.portSpecification == 'USE_NAMED_PORT' ? !has(self.port) && has(self.portName) : true",
    "self.portSpecification == 'USE_SERVING_PORT' || !has(self.portSpecification) ? !has(self.port) && "
    "!has(self.portName) : true",
)


def violations(check: dict[str, Any]) -> list[str]:
    """The rules an httpHealthCheck breaks; reading an absent portSpecification is an error, as in CEL."""
    spec = check.get("portSpecification")
    if spec is None:
        return ["no such key: portSpecification"]
    port, name = "port" in check, "portName" in check
    out = []
    if spec == "USE_FIXED_PORT" and not (port and not name):
        out.append(RULES[0])
    if spec == "USE_NAMED_PORT" and not (not port and name):
        out.append(RULES[1])
    if spec == "USE_SERVING_PORT" and (port or name):
        out.append(RULES[2])
    return out


def test_the_modelled_rules_are_the_crds() -> None:
    if not CRD.exists():
        pytest.skip(f"no {CRD.name} in ../shared/reference/gke-crds")
    crd = yaml.safe_load(CRD.read_text())
    for version in crd["spec"]["versions"]:
        config = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["default"]["properties"]
        http = config["config"]["properties"]["httpHealthCheck"]
        assert [" ".join(r["rule"].split()) for r in http["x-kubernetes-validations"]] == list(RULES)


def _post_render(text: str) -> str:
    return str(post_renderer(ROOT / gateway.FIX_HEALTH_CHECK_PORT).post_render(text))


def test_the_post_renderer_runs_with_the_deployers_python3():
    # Helm executes it with the deployer's python3, not the project's virtualenv
    assert_standalone_script(ROOT / gateway.FIX_HEALTH_CHECK_PORT)


def _http_checks(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        o["spec"]["default"]["config"]["httpHealthCheck"]
        for o in objects
        if o.get("kind") == "HealthCheckPolicy" and "httpHealthCheck" in o["spec"]["default"].get("config", {})
    ]


GATEWAY_EXAMPLES = [
    p
    for p in EXAMPLES
    if any(r.inputs.get("chart") == versions.LLM_D_ROUTER.chart for r in recorded(p, False).of_type(RELEASE))
]


@pytest.mark.parametrize("path", GATEWAY_EXAMPLES, ids=stack_name)
def test_the_router_charts_health_check_passes_gkes_crd(path: Path) -> None:
    from tests.helm_charts import render_release

    for release in recorded(path, False).of_type(RELEASE):
        if release.inputs.get("chart") != versions.LLM_D_ROUTER.chart:
            continue
        assert release.inputs["postrender"] == gateway.FIX_HEALTH_CHECK_PORT
        checks = _http_checks(render_release(release))
        assert checks, "the chart renders an HTTP HealthCheckPolicy for a vLLM pool"
        for check in checks:
            assert violations(check) == [], check
            assert check["port"] == int(check["port"])


def test_the_post_renderer_is_what_makes_the_charts_check_valid() -> None:
    chart_output = """---
kind: HealthCheckPolicy
apiVersion: networking.gke.io/v1
spec:
  default:
    timeoutSec: 2
    config:
      type: HTTP
      httpHealthCheck:
        requestPath: /health
        port: 8000
"""
    (before,) = _http_checks(list(yaml.safe_load_all(chart_output)))
    assert violations(before)  # what the chart writes
    (after,) = _http_checks(list(yaml.safe_load_all(_post_render(chart_output))))
    assert after == {"requestPath": "/health", "portSpecification": "USE_FIXED_PORT", "port": 8000}
    assert violations(after) == []
    assert _post_render(_post_render(chart_output)) == _post_render(chart_output)
