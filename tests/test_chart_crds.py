"""Issue 34 #1: every chart the stack installs with its CRDs off gets every CRD the chart ships.

What a chart ships is read from the chart itself at its tag: the pinned Helm renders its source
(../shared/reference/charts, charts-staged) with the chart's own defaults and `--include-crds`, which puts out the
CRDs of its crds/ folder and those its templates render (KEDA's, kedacore/charts@v2.20.2:keda/templates/crds/, gated on
`crds.install`, default true). Each must reach the cluster: installed by Helm with the stack's values and skipCrds
(the record of that render, tooling/data/chart_objects.json), or applied by the stack from the chart's pinned CRD
files (stacks/facts/versions.py ChartCrds). A controller starts an informer per kind it reconciles and controller-runtime's
manager exits when one cannot sync: KEDA's operator starts six (kedacore/keda@v2.20.2:cmd/operator/main.go), so with
three of its CRDs it exited while `pulumi up` reported success.
"""

from __future__ import annotations

import dataclasses
import subprocess

import pytest

from stacks.facts import versions
from tests.conftest import STACK_FILES, recorded
from tests.helm_charts import render
from tooling.oracles import chart_objects

CRD = "CustomResourceDefinition"


def shipped(chart: versions.ChartVersion) -> set[str]:
    """metadata.name of every CRD the chart ships at its tag: its defaults, --include-crds (a chart whose release is
    named per workload, the router's, under a placeholder name). A chart that renders nothing without values of its
    own (the router's `router.modelServers.matchLabels is required`) is rendered with a shipped stack's values."""
    named = dataclasses.replace(chart, release_name=chart.release_name or "r", namespace=chart.namespace or "r")
    try:
        objects = render(named, {}, crds=True)
    except subprocess.CalledProcessError:
        objects = render(named, _stack_values(chart), crds=True)
    return {o["metadata"]["name"] for o in objects if o["kind"] == CRD}


def _stack_values(chart: versions.ChartVersion) -> dict:
    for path in STACK_FILES:
        for release in chart_objects.releases_of(recorded(path, False)):
            if (release.chart, release.version) == (chart.chart, chart.version):
                return release.values
    raise AssertionError(f"no shipped stack installs {chart.chart}@{chart.version}")


def reaches_the_cluster(chart: versions.ChartVersion) -> set[str]:
    """The CRDs of a chart release the stack installs: what Helm installs with the stack's values (the record) and
    what the stack applies itself."""
    record = chart_objects.load().get(chart_objects.key(chart.chart, chart.version))
    assert record is not None, f"{chart.chart}@{chart.version} is not recorded: run `make chart-objects`"
    by_helm = {o["name"] for o in record["objects"] if o["kind"] == CRD}
    return by_helm | set(chart.crds.names if chart.crds else ())


@pytest.mark.parametrize("key", sorted(chart_objects.pinned_charts()))
def test_every_crd_a_chart_ships_reaches_the_cluster(key: str):
    chart = chart_objects.pinned_charts()[key]
    ships = shipped(chart)
    missing = ships - reaches_the_cluster(chart)
    assert not missing, (
        f"{key} ships {sorted(missing)}, which neither Helm (with the stack's values) nor the stack applies"
    )


def test_kedas_six_crds_are_applied_by_the_stack_from_kedas_tag():
    """KEDA's chart is installed with `crds.install: false`: the stack applies all six from kedacore/keda@v2.20.2
    config/crd/bases (the chart's templates/crds/ are the same six), and validation reads the same files."""
    chart = versions.CHARTS["keda"]["2.20.2"]
    assert chart.crds is not None and not chart.crds.templated
    assert set(chart.crds.names) == shipped(chart)
    assert {f.file_name for f in versions.CRDS["keda"]["2.20.2"]} == {p.rsplit("/", 1)[1] for p in chart.crds.paths}
