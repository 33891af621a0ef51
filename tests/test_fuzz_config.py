"""The config fuzzer in the suite: every mutant of every shipped stack file is either refused with a clear
RunError (key path, bad value, what is allowed) or renders a stack whose Kubernetes objects and Google Cloud
resources an API would accept (tooling/scans/fuzz.py, tooling/oracles/api_rules.py).

The default run is a fixed sample (seed 11, 300 mutants, the first accepted ones rendered); `pytest -m slow
tests/test_fuzz_config.py` runs thousands and renders every accepted mutant.
"""

from __future__ import annotations

import pytest

from tooling.scans import fuzz

SEED = 11


def _report(summary: fuzz.Summary) -> str:
    lines = [f"--- {r.outcome} {r.source} {r.mutations}\n{r.detail[:1500]}" for r in summary.findings()[:10]]
    return "\n".join(lines)


def _check(summary: fuzz.Summary, cases: int) -> None:
    counts = summary.counts()
    assert len(summary.results) == cases
    assert not summary.findings(), f"{dict(counts)}\n{_report(summary)}"
    # the sample exercises both outcomes, over every shipped stack file
    assert counts["rejected"] > cases // 2 and counts["valid"] > 0 and summary.rendered > 0, dict(counts)
    assert {r.source for r in summary.results} == {str(p.relative_to(fuzz.ROOT)) for p in fuzz.stack_files()}, (
        "a shipped stack file was not fuzzed"
    )


def test_fuzzed_configs_fail_clearly_or_render_valid():
    _check(fuzz.run(300, SEED, render=4), 300)


@pytest.mark.slow
def test_fuzzed_configs_thousands():
    _check(fuzz.run(3000, SEED + 1, render=None), 3000)


def test_every_shipped_stack_file_is_a_fuzz_source():
    """Found at run time: an example added later is fuzzed without touching this test."""
    files = fuzz.stack_files()
    assert fuzz.ROOT / "Pulumi.dev.yaml" in files
    assert set(files) >= set((fuzz.ROOT / "examples").glob("*/Pulumi.*.yaml"))


def test_the_classifier_finds_what_it_must():
    """The oracle is not vacuous: a crash, an unclear message and an invalid render are each reported."""
    assert (
        fuzz.unclear_reason(
            "invalid stack configuration for stack 'x' (1 problem):\n  - tpu-serving:a: Input "
            "should be a valid dictionary or instance of X"
        )
        is not None
    )
    assert (
        fuzz.unclear_reason(
            "invalid stack configuration for stack 'x' (1 problem):\n  - tpu-serving:a.b.str: must be a string (got 1)"
        )
        is not None
    )
    assert fuzz.unclear_reason("boom") is not None
    assert (
        fuzz.unclear_reason(
            "invalid stack configuration for stack 'x' (1 problem):\n  - tpu-serving:a: 'b' is not allowed; allowed: c"
        )
        is None
    )
    config = fuzz.load_stack_file(fuzz.ROOT / "Pulumi.dev.yaml")
    assert fuzz.classify({**config, "tpu-serving:tpuPools": "x"}, "dev", render=False)[0] == "rejected"


# ---- the program and its JSON Schema agree (issue 34 item 19) -------------------------------------------------


@pytest.mark.parametrize(
    "key,value",
    [
        ("tpu-serving:paused", 1),
        ("tpu-serving:paused", 0.0),
        ("tpu-serving:paused", "on"),
        ("tpu-serving:cluster", {"privateNodes": "false"}),
        ("tpu-serving:cluster", {"privateNodes": 1}),
        ("tpu-serving:cluster", {"systemPool": {"minNodes": True}}),
        ("tpu-serving:cluster", {"systemPool": {"minNodes": "1"}}),
        ("tpu-serving:cluster", 0),
        ("tpu-serving:bucket", ""),
        ("tpu-serving:monitoring", {"dashboard": "yes"}),
    ],
)
def test_a_value_the_schema_refuses_is_refused_at_its_key(key, value):
    config = {**fuzz.load_stack_file(fuzz.ROOT / "Pulumi.dev.yaml"), key: value}
    assert fuzz.schema_errors(config), "the schema accepts it: not a case of this test"
    outcome, detail = fuzz.classify(config, "dev", render=False)
    assert outcome == "rejected", detail
    assert f"\n  - {key}" in detail, detail


@pytest.mark.parametrize(
    "key,value",
    [
        ("tpu-serving:paused", "true"),  # what `pulumi config set tpu-serving:paused true` writes
        ("tpu-serving:cluster", {"systemPool": {"minNodes": 1.0, "maxNodes": 3}}),  # JSON's integer 1
        ("tpu-serving:cluster", None),  # unset
    ],
)
def test_a_value_both_accept(key, value):
    config = {**fuzz.load_stack_file(fuzz.ROOT / "Pulumi.dev.yaml"), key: value}
    assert fuzz.schema_errors(config) == []
    assert fuzz.classify(config, "dev", render=False)[0] == "valid"


def test_the_fleet_stack_is_in_the_schema_and_its_other_keys_refused_by_both():
    path = next(fuzz.ROOT.glob("examples/fleet/Pulumi.fleet.yaml"))
    config = fuzz.load_stack_file(path)
    assert fuzz.schema_errors(config) == [] and fuzz.classify(config, "fleet", render=False)[0] == "valid"
    for extra in ({"tpu-serving:environment": "dev"}, {"gcp:project": 5}, {"tpu-serving:fleet": {"regions": []}}):
        mutant = {**config, **extra}
        assert fuzz.schema_errors(mutant)
        assert fuzz.classify(mutant, "fleet", render=False)[0] == "rejected", extra


def test_the_agreement_check_finds_both_directions():
    """The oracle is not vacuous: an accepted config the schema refuses, and a shape problem the schema accepts."""
    from stacks.problems import Problem

    config = fuzz.load_stack_file(fuzz.ROOT / "Pulumi.dev.yaml")
    assert "accepts what its JSON Schema refuses" in fuzz.disagreement({**config, "tpu-serving:paused": 1}, None)
    shape = Problem("tpu-serving:cluster.name", "must be a string (got 1)", shape=True)
    assert "refuses a value's type" in fuzz.disagreement(config, [shape])
    assert fuzz.disagreement(config, [Problem("tpu-serving:cluster.name", "a rule")]) is None
    # ECMA-262 reads `$` as the end of the text: a trailing newline does not match the schema's patterns
    assert fuzz.schema_errors({**config, "tpu-serving:bucket": {"location": "US"}}) == []
    revision = {"type": "vllm", "name": "v", "pool": "v5e-2x4", "model": "a/b", "revision": "main\n"}
    assert fuzz.schema_errors({**config, "tpu-serving:workloads": [revision]})


def test_a_repeated_pool_name_with_a_bad_generation_is_refused_not_a_crash():
    """Seed 12's crash: the zone and warm-slice warnings matched pools by name, so a second pool of a planned pool's
    name reached the catalog with its unknown generation (CatalogError)."""
    config = fuzz.load_stack_file(fuzz.ROOT / "Pulumi.dev.yaml")
    pools = config["tpu-serving:tpuPools"]
    config["tpu-serving:tpuPools"] = [*pools, {**pools[0], "tpu": "v5e$"}]
    outcome, detail = fuzz.classify(config, "dev", render=False)
    assert outcome == "rejected" and "is already the name of tpuPools[0]" in detail, detail
