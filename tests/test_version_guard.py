"""The version guard (stacks/serving/version_guard.py) over the engine release table (stacks/facts/releases.py).

Outside facts relied on, each recorded with its source in the table:
- CVE-2026-93592 (GHSA-25q3-v2hm-8vpf): vLLM before 0.28.0, high (CVSS 3.1 7.5, 4.0 8.7),
  https://github.com/vllm-project/vllm/security/advisories/GHSA-25q3-v2hm-8vpf;
- PYSEC-2026-4353: vLLM 0.20.0 before 0.30.0, high (CVSS 3.1 7.5), https://osv.dev/vulnerability/PYSEC-2026-4353;
- vllm-tpu 0.27.0 to 0.29.0 fail at startup with TPUConnectorHMA (https://github.com/llm-d/llm-d/pull/2533; the fix,
  vllm-project/tpu-inference#3566, is in PyPI tpu-inference 0.30.0's tpu_connector_hma.py and not in 0.29.0's);
- TPU KV connectors as --kv-transfer-config names them: tpu-inference@v0.27.0 examples/disagg/run_disagg_single_host.sh.
"""

from __future__ import annotations

import json

import pytest

from stacks.facts import releases, versions
from stacks.facts.releases import Advisory, EngineRelease
from stacks.model.config_model import AdvisoryAck
from stacks.problems import ConfigError, Problem
from stacks.serving import version_guard
from tests.conftest import STACK_FILES
from tooling.harness.offline import load_stack_file
from tooling.review import render
from tooling.scans import fuzz
from workloads.registry import WORKLOAD_TYPES

OLD_PIN = "docker.io/vllm/vllm-tpu:v0.27.0"
CVE = "CVE-2026-93592"
CVE_SOURCE = "https://github.com/vllm-project/vllm/security/advisories/GHSA-25q3-v2hm-8vpf"
PYSEC = "PYSEC-2026-4353"
BASE = {
    "gcp:project": "tpu-test-project",
    "gcp:region": "us-central1",
    "tpu-serving:tpuPools": [{"name": "p", "tpu": "v5e", "topology": "2x4", "zone": "us-central1-a"}],
}


def _parse(environment: str, **fields):
    workload = {"type": "vllm", "name": "q", "pool": "p", "model": "Qwen/Qwen3-8B", "gated": False, **fields}
    config = {**BASE, "tpu-serving:environment": environment, "tpu-serving:workloads": [workload]}
    return fuzz.parse(config, environment)


def _guard_warnings(config) -> list[str]:
    return [w for w in config.warnings if "advisor" in w or version_guard.ACK_KEY in w]


def test_prod_refuses_the_old_pin_naming_each_open_advisory_and_its_source():
    with pytest.raises(ConfigError) as err:
        _parse("prod", image=OLD_PIN)
    problems = [str(p) for p in err.value.problems]
    assert len(problems) == 2, problems
    first = next(p for p in problems if CVE in p)
    assert first.startswith("tpu-serving:workloads[0].image: ")
    for fragment in ("vllm-tpu 0.27.0", "open high advisory CVE-2026-93592", "fixed in vllm-tpu 0.28.0", CVE_SOURCE):
        assert fragment in first, fragment
    assert f"acknowledgeAdvisories: [{{id: {CVE}, reason: <why>}}]" in first
    second = next(p for p in problems if PYSEC in p)
    assert "fixed in vllm-tpu 0.30.0" in second and "https://osv.dev/vulnerability/PYSEC-2026-4353" in second


@pytest.mark.parametrize("fields", [{}, {"image": versions.IMAGES["vllmTpu"]}], ids=["pinned", "explicit"])
def test_prod_accepts_the_new_pin(fields):
    assert versions.IMAGES["vllmTpu"] == "docker.io/vllm/vllm-tpu:v0.32.0"
    config = _parse("prod", **fields)
    assert config.workloads and _guard_warnings(config) == []


def test_an_acknowledged_advisory_passes_prod_with_a_warning():
    acks = [
        {"id": CVE, "reason": "embeddings and pooling are not served (a generative model)"},
        {"id": PYSEC, "reason": "no disaggregated /inference/v1/generate endpoint is exposed"},
    ]
    config = _parse("prod", image=OLD_PIN, acknowledgeAdvisories=acks)
    warned = _guard_warnings(config)
    assert len(warned) == 2
    assert any(
        CVE in w and "acknowledged (embeddings and pooling are not served" in w and CVE_SOURCE in w for w in warned
    )
    assert all(w.startswith("tpu-serving:workloads[0].acknowledgeAdvisories: ") for w in warned)


def test_render_strict_accepts_acknowledged_advisories_and_fails_on_any_other_warning(capsys):
    """`render --strict` (staging and prod PR renders) fails on any warning, except an advisory the stack file
    acknowledges: that warning is a reviewed decision, printed but not blocking (else it could never land)."""
    acks = [{"id": CVE, "reason": "generative model only"}, {"id": PYSEC, "reason": "no disaggregated endpoint"}]
    warned = _guard_warnings(_parse("prod", image=OLD_PIN, acknowledgeAdvisories=acks))
    assert len(warned) == 2 and all(version_guard.is_acknowledged(w) for w in warned)
    assert render.report_warnings({"prod": (warned, True)}) is False
    assert "warning: " + warned[0] in capsys.readouterr().out
    unacknowledged = _guard_warnings(_parse("staging", image=OLD_PIN))
    assert unacknowledged and not any(version_guard.is_acknowledged(w) for w in unacknowledged)
    assert render.report_warnings({"staging": (unacknowledged, True)}) is True
    assert render.report_warnings({"prod": ([*warned, "another warning"], True)}) is True


def test_acknowledging_one_of_two_still_refuses_the_other():
    with pytest.raises(ConfigError) as err:
        _parse("prod", image=OLD_PIN, acknowledgeAdvisories=[{"id": CVE, "reason": "not an embedding model"}])
    assert [PYSEC in str(p) for p in err.value.problems] == [True]


@pytest.mark.parametrize("environment", ["dev", "staging"])
def test_outside_prod_an_open_advisory_is_a_warning(environment):
    config = _parse(environment, image=OLD_PIN)
    warned = _guard_warnings(config)
    assert {CVE, PYSEC} == {a for w in warned for a in (CVE, PYSEC) if a in w}
    assert all("prod refuses it unless acknowledged" in w for w in warned)


def test_an_acknowledgement_must_give_a_reason_and_a_known_id_form():
    for ack in ({"id": CVE, "reason": "   "}, {"id": CVE}, {"id": "not-an-id", "reason": "x"}):
        with pytest.raises(ConfigError, match=r"workloads\[0\]\.acknowledgeAdvisories\[0\]"):
            _parse("prod", acknowledgeAdvisories=[ack])


def test_every_recorded_advisory_id_can_be_acknowledged():
    for entry in releases.ENGINE_RELEASES:
        for advisory in entry.advisories:
            AdvisoryAck(id=advisory.id, reason="x")


def test_a_stale_acknowledgement_warns_and_a_duplicate_is_refused():
    config = _parse("dev", acknowledgeAdvisories=[{"id": CVE, "reason": "old"}])
    assert any("CVE-2026-93592 is not an open advisory" in w for w in config.warnings)
    with pytest.raises(ConfigError, match=r"acknowledgeAdvisories\[1\]\.id: 'CVE-2026-93592' is acknowledged twice"):
        _parse("prod", image=OLD_PIN, acknowledgeAdvisories=[{"id": CVE, "reason": "a"}, {"id": CVE, "reason": "b"}])


def _kv(connector: str, module: str) -> str:
    return json.dumps({"kv_connector": connector, "kv_connector_module_path": module, "kv_role": "kv_both"})


HMA = _kv("TPUConnectorHMA", "tpu_inference.distributed.tpu_connector_hma")
PLAIN = _kv("TPUConnector", "tpu_inference.distributed.tpu_connector")


@pytest.mark.parametrize("environment", ["dev", "staging", "prod"])
@pytest.mark.parametrize("version", ["0.27.0", "0.28.0", "0.29.0"])
def test_a_feature_is_refused_on_a_release_it_breaks_on_in_every_environment(environment, version):
    image = f"docker.io/vllm/vllm-tpu:v{version}"
    acks = [{"id": a.id, "reason": "test"} for a in releases.open_advisories("vllm-tpu", version)]
    with pytest.raises(ConfigError) as err:
        _parse(environment, image=image, args={"kv-transfer-config": HMA}, acknowledgeAdvisories=acks)
    (problem,) = [str(p) for p in err.value.problems]
    assert problem.startswith("tpu-serving:workloads[0].args.kv-transfer-config: pd-disaggregation-hma ")
    assert f"known to break on vllm-tpu {version}" in problem and "https://github.com/llm-d/llm-d/pull/2533" in problem
    assert "releases it is not known to break on: 0.30.0, 0.31.0, 0.32.0" in problem


@pytest.mark.parametrize(
    "image,kv", [(None, HMA), ("docker.io/vllm/vllm-tpu:v0.30.0", HMA), (OLD_PIN, PLAIN)], ids=["pin", "0.30", "plain"]
)
def test_a_feature_passes_where_nothing_breaks_it(image, kv):
    """The HMA connector on the pin and on 0.30.0 (the fix), the plain TPUConnector on 0.27.0 (unaffected)."""
    fields = {"args": {"kv-transfer-config": kv}, **({"image": image} if image else {})}
    assert _parse("dev", **fields).workloads


def test_features_in_use_are_read_from_the_config():
    from workloads.vllm.checks import features_in_use
    from workloads.vllm.config import VllmWorkload

    def of(args):
        return features_in_use(VllmWorkload(type="vllm", name="q", pool="p", model="a/b", args=args), None)

    assert of({}) == {"prefix-caching": "args"}
    assert "prefix-caching" not in of({"enable-prefix-caching": False})
    assert of({"speculative_config": '{"method": "ngram"}'})["speculative-decoding"] == "args.speculative_config"
    assert of({"enable-lora": True})["lora"] == "args.enable-lora"
    assert of({"kv-transfer-config": HMA})["pd-disaggregation"] == "args.kv-transfer-config"
    assert "pd-disaggregation-hma" not in of({"kv-transfer-config": PLAIN})
    assert "pd-disaggregation" not in of({"kv-transfer-config": "not json"})
    assert set(of({"kv-transfer-config": HMA})) <= set(releases.FEATURES)


def _example_workloads():
    """One parsed workload of each registered type, from the example stack files."""
    found = {}
    for path in STACK_FILES:
        config = fuzz.parse(load_stack_file(path), "s")
        for plan in getattr(config, "workloads", []):
            found.setdefault(plan.workload.type, plan.workload)
    return found


def test_every_workload_type_is_held_to_the_advisories_of_the_images_it_runs(monkeypatch):
    """Over every registry entry: the images a workload runs are found (its type's pinned TPU images, or its
    overrides), and an open high advisory recorded against any of them is refused in prod."""
    workloads = _example_workloads()
    assert set(workloads) == set(WORKLOAD_TYPES), "an example of each type (examples/)"
    for name, kind in WORKLOAD_TYPES.items():
        workload = workloads[name]
        images = version_guard.workload_images(workload, versions.IMAGES, kind.tpu_images)
        if not workload.overrides_images():
            assert {ref for _, ref in images} >= {versions.IMAGES[k] for k in kind.tpu_images}, name
        assert images, name
        advisory = Advisory("CVE-2099-0001", "critical", "99.0.0", "test", "https://example.invalid/a")
        fakes = tuple(
            EngineRelease(f"test-{i}", "1.0.0", ref.split("@")[0], "unknown", "test", (advisory,), ())
            for i, (_, ref) in enumerate(images)
        )
        monkeypatch.setattr(releases, "ENGINE_RELEASES", fakes)
        problems: list[Problem] = []
        warnings: list[str] = []
        version_guard.check_advisories("w", images, (), "prod", problems, warnings)
        assert len(problems) == len(images) and all("CVE-2099-0001" in p.message for p in problems), name
        version_guard.check_advisories("w", images, (), "dev", problems := [], warnings := [])
        assert problems == [] and len(warnings) == len(images), name


# ---- the guard cannot be bypassed by naming the same image another way (issue 37 review, finding 2) -----------
# Docker Hub's names (github.com/distribution/reference normalize.go: no host means docker.io, index.docker.io is
# its legacy name, a one-part name is in library/; registry-1.docker.io is the host it serves from,
# https://docs.docker.com/reference/cli/docker/image/tag/), and the vllm/vllm-tpu tags name PyPI's versions with a
# `v` (llm-d/llm-d@029c5a39 .../tpu-vllm/release/kustomization.yaml: v0.27.0).


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/vllm/vllm-tpu:v0.26.0",  # a release older than the table: judged by the advisories' ranges
        "index.docker.io/vllm/vllm-tpu:v0.27.0",
        "registry-1.docker.io/vllm/vllm-tpu:v0.27.0",
        "vllm/vllm-tpu:0.27.0",  # no `v`
        "vllm/vllm-tpu:v0.27.0@sha256:" + "0" * 64,
    ],
)
def test_prod_refuses_an_advisory_whatever_the_images_spelling(image):
    with pytest.raises(ConfigError) as err:
        _parse("prod", image=image)
    problems = [str(p) for p in err.value.problems]
    assert any(CVE in p and CVE_SOURCE in p for p in problems), problems
    assert all(p.startswith("tpu-serving:workloads[0].image: ") for p in problems), problems


@pytest.mark.parametrize(
    "image", ["vllm/vllm-tpu:nightly", "docker.io/vllm/vllm-tpu:latest", "vllm/vllm-tpu", "vllm/vllm-tpu:v0.40.1"]
)
def test_prod_refuses_an_engine_tag_the_table_cannot_judge_unless_acknowledged(image):
    with pytest.raises(ConfigError) as err:
        _parse("prod", image=image)
    (problem,) = [str(p) for p in err.value.problems]
    assert problem.startswith("tpu-serving:workloads[0].image: ") and "vllm-tpu at tag" in problem
    assert f"[{{id: {version_guard.UNKNOWN_RELEASE}, reason: <why>}}]" in problem
    ack = [{"id": version_guard.UNKNOWN_RELEASE, "reason": "the nightly carries the fix we need"}]
    config = _parse("prod", image=image, acknowledgeAdvisories=ack)
    (warning,) = _guard_warnings(config)
    assert version_guard.is_acknowledged(warning) and "the nightly carries the fix we need" in warning
    (dev_warning,) = _guard_warnings(_parse("dev", image=image))
    assert "prod refuses it" in dev_warning


def test_any_parseable_release_is_judged_by_the_recorded_ranges():
    """A release the table does not list gets each advisory whose range covers it (CVE-2026-93592: every vLLM
    before 0.28.0), and the breakage's range (0.27.0 until 0.30.0, llm-d/llm-d#2533, tpu-inference#3566)."""
    patch = releases.release_of_image("vllm/vllm-tpu:v0.28.1")
    assert patch is not None and not releases.is_listed(patch)
    assert CVE not in {a.id for a in patch.advisories} and PYSEC in {a.id for a in patch.advisories}
    assert "pd-disaggregation-hma" in releases.broken_features("vllm-tpu", "0.28.1")
    assert releases.broken_features("vllm-tpu", "0.26.0") == {} and releases.broken_features("vllm-tpu", "0.30.1") == {}
    old = releases.release_of_image("docker.io/vllm/vllm-tpu:v0.26.0")
    assert old is not None and CVE in {a.id for a in old.advisories}
    assert releases.image_name("ubuntu") == ("docker.io/library/ubuntu", "latest")
    assert releases.image_name("localhost:5000/vllm/vllm-tpu:v0.32.0") == ("localhost:5000/vllm/vllm-tpu", "v0.32.0")
    assert releases.release_of_image("localhost:5000/vllm/vllm-tpu:v0.27.0") is None  # another registry's image
