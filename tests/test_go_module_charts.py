"""Chart sources from the Go module proxy (tooling/oracles/go_module_charts.py, `make bbr-chart`): the zip is
verified against the version matrix's sha256 and go.sum hash before anything is extracted.

Sources: the proxy protocol (https://go.dev/ref/mod#goproxy-protocol: $GOPROXY/<module>/@v/<version>.zip; a module
zip's files are named <module>@<version>/<path>, https://go.dev/ref/mod#zip-files); the go.sum hash h1
(golang.org/x/mod/sumdb/dirhash Hash1: sha256 of the sorted "<sha256 hex>  <name>\\n" lines, base64)."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from stacks.facts import versions
from tooling.oracles import chart_objects, go_module_charts

PIN = versions.BODY_BASED_ROUTER_MODULE


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(f"{PIN.module}@{PIN.version}/{name}", data)
    return buf.getvalue()


def test_the_pin_is_the_bbr_charts_release_on_the_proxy():
    assert PIN.url == "https://proxy.golang.org/sigs.k8s.io/gateway-api-inference-extension/@v/v1.5.0.zip"
    assert PIN.version == versions.BODY_BASED_ROUTER.version and PIN.h1.startswith("h1:")


def test_dirhash_h1_is_the_go_sum_hash():
    # golang.org/x/mod/sumdb/dirhash Hash1 of one file "<module>@<version>/x" holding "hi\n", computed by its definition
    data = _zip({"x": b"hi\n"})
    digest = hashlib.sha256(b"hi\n").hexdigest()
    line = f"{digest}  {PIN.module}@{PIN.version}/x\n"
    want = "h1:" + base64.b64encode(hashlib.sha256(line.encode()).digest()).decode()
    assert go_module_charts.dirhash_h1(zipfile.ZipFile(io.BytesIO(data))) == want


def test_a_zip_whose_hashes_differ_from_the_matrix_is_refused():
    data = _zip({"config/charts/body-based-routing/Chart.yaml": b"name: body-based-routing\n"})
    with pytest.raises(ValueError, match="sha256 .* the version matrix records"):
        go_module_charts.verified(data, PIN)
    fake = versions.GoModuleZip(PIN.module, PIN.version, hashlib.sha256(data).hexdigest(), "h1:other")
    with pytest.raises(ValueError, match="go.sum hash .* the version matrix records h1:other"):
        go_module_charts.verified(data, fake)


def test_the_chart_is_extracted_where_the_chart_lookup_finds_it(tmp_path: Path):
    data = _zip(
        {
            "config/charts/body-based-routing/Chart.yaml": b"name: body-based-routing\n",
            "config/charts/body-based-routing/templates/bbr.yaml": b"kind: Deployment\n",
            "README.md": b"not the chart\n",
        }
    )
    pin = versions.GoModuleZip(PIN.module, PIN.version, hashlib.sha256(data).hexdigest(), "")
    archive = zipfile.ZipFile(io.BytesIO(data))
    pin = versions.GoModuleZip(pin.module, pin.version, pin.sha256, go_module_charts.dirhash_h1(archive))
    target = go_module_charts.extract_chart(go_module_charts.verified(data, pin), pin, "body-based-routing", tmp_path)
    found = chart_objects.chart_dir(tmp_path, versions.BODY_BASED_ROUTER.chart, PIN.version)
    assert found == target and (found / "templates" / "bbr.yaml").read_bytes() == b"kind: Deployment\n"
    assert not (tmp_path / "README.md").exists()
    assert chart_objects.CHART_CACHE in chart_objects.charts_root()
