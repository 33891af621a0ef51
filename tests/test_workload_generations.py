"""What a workload type calls a TPU generation lives in its own package, one table per type (issue 33): Pathways'
--instance_type (workloads/jetstream_pathways/plan.py INSTANCE_TYPES), Saxml's --platform_chip
(workloads/saxml/plan.py PLATFORM_CHIPS) and vLLM's support level (workloads/vllm/checks.py TPU_SUPPORT). Every
catalog generation, and one a test adds, is either mapped by each package or refused by it at the pool's key."""

from __future__ import annotations

import dataclasses

import pytest

from stacks.facts import catalog
from stacks.problems import ConfigError
from tests.conftest import make_config
from tooling.harness.offline import parse_config
from workloads.jetstream_pathways import plan as pathways
from workloads.jetstream_pathways.plan import INSTANCE_TYPES, instance_type
from workloads.saxml import plan as saxml
from workloads.saxml.plan import PLATFORM_CHIPS
from workloads.vllm import checks as vllm
from workloads.vllm.checks import TPU_SUPPORT

# (type, its table, a workloads entry on pool "p") per package
VLLM = {"type": "vllm", "name": "v", "pool": "p", "model": "google/gemma-2b"}
PATHWAYS = {
    "type": "jetstream-pathways",
    "name": "j",
    "pool": "p",
    "model": "llama3.1-405b",
    "checkpoint": "gs://b/llama/checkpoint",
}
SAXML = {
    "type": "saxml",
    "name": "sax",
    "pool": "p",
    "cell": "/sax/test",
    "models": [{"model": "lm", "modelPath": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test"}],
}
TABLES = {"vllm": TPU_SUPPORT, "jetstream-pathways": INSTANCE_TYPES, "saxml": PLATFORM_CHIPS}
ENTRIES = {"vllm": VLLM, "jetstream-pathways": PATHWAYS, "saxml": SAXML}


def _pool_problems(tpu: str, topology: str, zone: str, region: str, entry: dict) -> list[str]:
    pools = [{"name": "p", "tpu": tpu, "topology": topology, "zone": zone}]
    config = make_config(gcp__region=region, tpu_serving__tpuPools=pools, tpu_serving__workloads=[entry])
    try:
        parse_config(config, "dev")
    except ConfigError as err:
        return [p.message for p in err.problems if p.path == "tpu-serving:workloads[0].pool"]
    return []


V9X = dataclasses.replace(catalog.GENERATIONS["v6e"], name="v9x", accelerator="tpu-v9x-slice")


@pytest.mark.parametrize("kind", list(TABLES))
@pytest.mark.parametrize("generation", [*catalog.GENERATIONS, "v9x"])
def test_every_generation_is_mapped_or_refused_by_each_package(kind, generation, monkeypatch):
    monkeypatch.setitem(catalog.GENERATIONS, "v9x", V9X)
    if TABLES[kind].get(generation) is not None:
        return  # mapped: the package knows what to call it
    gen = catalog.GENERATIONS[generation]
    topology = "4x4" if generation in ("v6e", "v9x") else gen.multi_host_topologies[0]
    zone = "us-east5-b" if generation == "v9x" else gen.zones[0]
    refused = _pool_problems(generation, topology, zone, zone.rsplit("-", 1)[0], ENTRIES[kind])
    assert any(generation in message for message in refused), refused


@pytest.mark.parametrize(
    "kind,table,expected",
    [
        ("vllm", (vllm, "TPU_SUPPORT", "v6e"), "which vLLM's TPU backend does not list; allowed: v4, v5e, v5p, tpu7x"),
        (
            "jetstream-pathways",
            (pathways, "INSTANCE_TYPES", "v6e"),
            "which Pathways has no --instance_type for; allowed: v4, v5e, v5p, tpu7x",
        ),
        ("saxml", (saxml, "PLATFORM_CHIPS", "v5e"), "which Saxml has no --platform_chip for; allowed: v4"),
    ],
)
def test_a_generation_the_package_does_not_map_is_refused_even_when_its_images_serve_it(
    kind, table, expected, monkeypatch
):
    """Each package's own refusal, not the image records': a generation its images serve but its table lacks."""
    module, name, generation = table
    without = {g: v for g, v in getattr(module, name).items() if g != generation}
    for holder in {module, *(m for m in _readers(kind))}:
        if hasattr(holder, name):
            monkeypatch.setattr(holder, name, without)
    if kind == "saxml":
        refused = _pool_problems("v5e", "4x8", "us-west4-a", "us-west4", SAXML)
    else:
        refused = _pool_problems("v6e", "4x4", "us-east5-b", "us-east5", ENTRIES[kind])
    assert any(expected in message for message in refused), refused


def _readers(kind: str) -> list:
    from workloads.jetstream_pathways import checks as pathways_checks
    from workloads.saxml import checks as saxml_checks

    return {"vllm": [vllm], "jetstream-pathways": [pathways_checks], "saxml": [saxml_checks]}[kind]


@pytest.mark.parametrize(
    "tpu,topology,expected",
    [("v6e", "4x4", "tpuv6e:4x4"), ("v5e", "4x8", "tpuv5e:4x8"), ("v5p", "2x2x2", "tpuv5:2x2x2")],
)
def test_pathways_instance_type(tpu, topology, expected):
    """xpk's pathways_tpu_version (AI-Hypercomputer/xpk src/xpk/core/system_characteristics.py): v5p is tpuv5."""
    assert instance_type(catalog.slice_shape(tpu, topology)) == expected


@pytest.mark.parametrize("topology", ["2x2x2", "4x4x4"])
def test_tpu7x_pathways_instance_type(topology):
    assert instance_type(catalog.slice_shape("tpu7x", topology)) == f"tpu7x:{topology}"


def test_tpu7x_has_no_saxml_platform_chip():
    assert PLATFORM_CHIPS["tpu7x"] is None  # Saxml has no TPU7x platform (gke-tpu-facts.md S6: JAX only)
