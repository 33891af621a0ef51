"""A local run reads charts from their source folders; a chart whose Chart.yaml names a `file://` dependency
(llm-d-router-gateway: `router` from file://../routerlib) is refused by Helm there ("found in Chart.yaml, but missing
in charts/ directory": the first real `pulumi up` of every gateway example), so the local stack looks first in a
copy with each such dependency vendored, as the chart's registry package holds it (tooling/local/local_stack.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tooling.local import local_stack


def _chart(folder: Path, name: str, deps: list[dict] | None = None) -> None:
    folder.mkdir(parents=True)
    body = {"apiVersion": "v2", "name": name, "version": "0.0.0", **({"dependencies": deps} if deps else {})}
    (folder / "Chart.yaml").write_text(yaml.safe_dump(body))


def test_a_file_dependency_is_vendored_under_charts_by_its_chart_name(tmp_path: Path) -> None:
    src = tmp_path / "ref"
    base = src / "charts" / "router-v1" / "config" / "charts"
    _chart(base / "gateway", "gateway", [{"name": "router", "version": "0.0.0", "repository": "file://../lib",
                                          "alias": "router"}])  # fmt: skip
    _chart(base / "lib", "router")
    _chart(src / "charts" / "plain-1" / "chart", "plain")
    out = local_stack.vendor_chart_dependencies([src], tmp_path / "out")
    vendored = out / "charts" / "router-v1" / "config" / "charts" / "gateway"
    assert yaml.safe_load((vendored / "charts" / "router" / "Chart.yaml").read_text())["name"] == "router"
    assert not (out / "charts" / "plain-1").exists()  # a chart without file:// dependencies is read where it is
    assert not (src / "charts" / "router-v1" / "config" / "charts" / "gateway" / "charts").exists()  # source untouched


def test_the_reference_gateway_chart_is_vendored_with_its_router() -> None:
    reference = local_stack.reference_dir()
    chart = reference / "charts" / "llm-d-router-v0.10.0" / "config" / "charts" / "llm-d-router-gateway"
    if not chart.is_dir():
        pytest.skip(f"no llm-d-router-gateway source in {reference} (../shared/reference)")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = local_stack.vendor_chart_dependencies([reference], Path(tmp) / "out")
        copy = out / chart.relative_to(reference)
        deps = yaml.safe_load((copy / "Chart.yaml").read_text())["dependencies"]
        assert {d["name"] for d in deps} <= {p.name for p in (copy / "charts").iterdir()}
