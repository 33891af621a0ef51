"""The gate's load generator can send every scenario (issue 37 review, finding 1). inference-perf builds its data
generator before any load (kubernetes-sigs/inference-perf v0.7.0, PyPI inference_perf-0.7.0-py3-none-any.whl
inference_perf/main.py: `elif config.data.type == DataGenType.Random: datagen = RandomDataGenerator(...)`), and the
generator's constructor raises "Unsupported API type" for an API outside its get_supported_apis (datagen/base.py
BaseGenerator.__init__); RandomDataGenerator supports only Completion (datagen/synthetic/random_datagen.py). A chat
turn's shape comes from data.use_chat_template (config/datagen/config.py: only with type random).

The wheel is read (never imported: its dependencies are not the project's) from .cache/inference-perf/ (`make
inference-perf` downloads it with pip) or an installed inference_perf; without either, the recorded table
(benchmark.DATAGEN_APIS) is still checked against every scenario and the wheel test skips saying why."""

from __future__ import annotations

import ast
import importlib.util
import zipfile
from pathlib import Path

import pytest

from stacks.facts.versions import IMAGES
from stacks.serving import benchmark

ROOT = Path(__file__).resolve().parents[1]
# the pinned image's release (quay.io/inference-perf/inference-perf:v<version>), the Makefile's download
VERSION = IMAGES[benchmark.IMAGE_KEY].rsplit(":v", 1)[1]
WHEEL = ROOT / f".cache/inference-perf/inference_perf-{VERSION}-py3-none-any.whl"


def test_the_downloaded_wheel_is_the_pinned_images_release():
    makefile = (ROOT / "Makefile").read_text()
    assert f"INFERENCE_PERF_VERSION = {VERSION}\n" in makefile


def wheel_source(path: str) -> str | None:
    """A module of inference-perf 0.7.0 (`path` inside the package), from the cached wheel or an installed copy."""
    if WHEEL.exists():
        with zipfile.ZipFile(WHEEL) as whl:
            return whl.read(f"inference_perf/{path}").decode()
    spec = importlib.util.find_spec("inference_perf")
    if spec is not None and spec.origin:
        return (Path(spec.origin).parent / path).read_text()
    return None


def enum_values(source: str, name: str) -> dict[str, str]:
    (cls,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name]
    return {
        t.id: stmt.value.value
        for stmt in cls.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
        for t in stmt.targets
        if isinstance(t, ast.Name)
    }


def supported_apis(source: str, cls_name: str) -> list[str]:
    """The APIType members a generator class's get_supported_apis returns."""
    (cls,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == cls_name]
    (method,) = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "get_supported_apis"]
    (ret,) = [n for n in ast.walk(method) if isinstance(n, ast.Return)]
    assert isinstance(ret.value, ast.List)
    return [e.attr for e in ret.value.elts if isinstance(e, ast.Attribute)]


def test_every_scenario_uses_an_api_its_generator_supports():
    """The recorded table (benchmark.DATAGEN_APIS, from the wheel above) over EVERY scenario: the old `chat`
    scenario (api chat with data.type random) made the gate Job exit before sending load."""
    target = benchmark.Target("http://c.ns.svc:8000", "/health", "vllm", "org/m", "org/m", None)
    assert benchmark.SCENARIOS
    for scenario in benchmark.SCENARIOS.values():
        cfg = benchmark.config(scenario, target, bucket="b", path="p", ttft_s=1.0, tpot_s=0.1)
        assert cfg["data"]["type"] == benchmark.DATAGEN, scenario.name
        assert cfg["api"]["type"] in benchmark.DATAGEN_APIS, scenario.name
    chat = benchmark.config(benchmark.SCENARIOS["chat"], target, bucket="b", path="p", ttft_s=None, tpot_s=None)
    assert chat["data"]["use_chat_template"] is True


def test_the_recorded_table_is_the_wheels():
    """benchmark.DATAGEN_APIS equals what the 0.7.0 wheel's generator for data.type `random` supports, and
    use_chat_template is a DataConfig field it accepts with that type."""
    base, main, random_gen = (
        wheel_source(p) for p in ("datagen/base.py", "main.py", "datagen/synthetic/random_datagen.py")
    )
    if base is None or main is None or random_gen is None:
        pytest.skip("no inference-perf 0.7.0 wheel in .cache/inference-perf (`make inference-perf`) nor installed")
    apis = enum_values(wheel_source("config/apis/config.py") or "", "APIType")
    datagen_types = enum_values(wheel_source("config/datagen/config.py") or "", "DataGenType")
    # main.py builds RandomDataGenerator for data.type random, and the base class refuses other APIs
    assert datagen_types["Random"] == benchmark.DATAGEN
    assert "datagen = RandomDataGenerator(" in main.split("DataGenType.Random:", 1)[1].split("elif", 1)[0]
    assert "not in self.get_supported_apis()" in base and "Unsupported API type" in base
    assert tuple(apis[m] for m in supported_apis(random_gen, "RandomDataGenerator")) == benchmark.DATAGEN_APIS
    assert "use_chat_template: bool" in (wheel_source("config/datagen/config.py") or "")


def test_the_wheels_gcs_client_skips_an_existing_report():
    """Why each gate attempt has its own report path (stacks/serving/benchmark.py job_name): the 0.7.0 GCS client
    does not overwrite."""
    gcs = wheel_source("client/filestorage/gcs.py")
    if gcs is None:
        pytest.skip("no inference-perf 0.7.0 wheel in .cache/inference-perf (`make inference-perf`) nor installed")
    save = gcs.split("def save_report", 1)[1]
    assert "if blob.exists():" in save and "Skipping upload" in save
