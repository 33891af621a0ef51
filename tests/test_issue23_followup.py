"""Review of issue 23's first fixes: strict mode a valid stack can pass (cost notes, acknowledged zones), the
catalog's zone lists with their single-tenant rows, a prod-name guard that is not fooled by case or digits, and a
YAML error that points at the line where the unclosed bracket opens."""

from __future__ import annotations

import pytest

from stacks.config import ConfigError
from stacks.facts import catalog
from stacks.pieces.environment import named_environment
from stacks.reports import cost
from tests.conftest import STACK_FILES, make_config, pool
from tooling.harness.offline import ROOT, StackFileError, load_stack_file, parse_stack_file, read_stack_yaml
from tooling.operations import example
from tooling.review import render
from tooling.scans import fuzz

SHIPPED = STACK_FILES  # regional stacks (a fleet stack has no zones: tests/test_fleet.py)


def parse(raw_config: dict, *, stack: str = "dev"):
    return fuzz.parse(raw_config, stack)


# ---- 3. the prod-name guard: any case, any separator, digits, prod at either end of a word --------------------


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("Prod", "prod"),
        ("PROD", "prod"),
        ("prod1", "prod"),
        ("eu2prod", "prod"),
        ("myprod", "prod"),
        ("prodeu", "prod"),
        ("acme prod", "prod"),
        ("acme+Production", "prod"),
        ("Staging2", "staging"),
        ("preprod", "staging"),
        ("stagingeu", "staging"),
        # not environment names: English words that start with "prod", and names that say nothing
        ("product", None),
        ("producer", None),
        ("product-demo", None),
        ("production-like-demo", "prod"),
        ("reproduce", None),
        ("llama", None),
        ("backstage", None),
    ],
)
def test_named_environment_reads_letters_in_any_case(name, named):
    assert named_environment(name) == named


@pytest.mark.parametrize("stack", ["Prod", "prod1", "myprod", "PROD-eu"])
def test_dev_under_a_prod_stack_name_in_any_spelling_is_refused(stack):
    with pytest.raises(ConfigError, match=rf"with stack '{stack}', which is named like prod"):
        parse(make_config(tpu_serving__environment="dev"), stack=stack)


@pytest.mark.parametrize("stack", ["product", "producer-demo"])
def test_words_that_merely_start_with_prod_are_not_prod(stack):
    assert parse(make_config(tpu_serving__environment="dev"), stack=stack).environment == "dev"


@pytest.mark.parametrize(("stack", "expected"), [("Prod", "prod"), ("prod1", "prod"), ("Staging", "staging")])
def test_make_example_follows_a_capitalised_or_numbered_stack_name(monkeypatch, tmp_path, capsys, stack, expected):
    monkeypatch.setattr(example, "ROOT", tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert example.main(["vllm-single-host", stack, "--project", "acme-ml-serving"]) == 0, capsys.readouterr()
    assert load_stack_file(tmp_path / f"Pulumi.{stack}.yaml")["tpu-serving:environment"] == expected


# ---- 4. a YAML error inside a bracket opened earlier names the line that opens it ----------------------------

UNCLOSED = "config:\n  gcp:project: a\n  tpu-serving:tpuPools: [a, b\n  gcp:region: x\n"


def test_an_unclosed_bracket_names_the_line_that_opens_it(tmp_path, capsys):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(UNCLOSED)
    with pytest.raises(StackFileError) as err:
        read_stack_yaml(path)
    message = str(err.value)
    # PyYAML: problem_mark line 4 column 13 (the ':' it stumbles on), context_mark line 3 column 25 (the '[')
    assert message.startswith(f"{path}:4:13: not valid YAML: ") and "(opened at line 3, column 25)" in message
    assert "    line 3:   tpu-serving:tpuPools: [a, b\n" in message, "the line holding the mistake is shown"
    assert "check the indentation and quoting on this line" not in message
    assert "a '[' is opened and not closed with ']': see line 3, where it opens" in message
    assert render.main([str(path), "--out", str(tmp_path / "build")]) == 1
    assert "(opened at line 3, column 25)" in capsys.readouterr().err


def test_an_error_opened_where_it_is_found_shows_one_line(tmp_path):
    path = tmp_path / "Pulumi.indent.yaml"
    path.write_text("config:\n  gcp:project: a\n   gcp:region: x\n")
    with pytest.raises(StackFileError) as err:
        read_stack_yaml(path)
    assert "opened at" not in str(err.value) and str(err.value).count("^") == 1


# ---- 1. strict mode a valid stack can pass: cost notes, acknowledged zones ----------------------------------

EU_PROD = (
    "config:\n  gcp:project: tpu-test-project\n  gcp:region: europe-west4\n  tpu-serving:environment: prod\n"
    "  tpu-serving:tpuPools:\n    - {name: p, tpu: v6e, topology: 4x4, zone: europe-west4-a}\n"
)


def test_a_region_without_list_prices_is_a_note_and_passes_strict(tmp_path, capsys):
    path = tmp_path / "Pulumi.eu.yaml"
    path.write_text(EU_PROD)
    assert render.main([str(path), "--out", str(tmp_path / "build"), "--strict"]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "eu: note: cost estimate: no list prices for region 'europe-west4'" in out and "eu: no warnings" in out
    summary = (tmp_path / "build" / "eu" / "summary.md").read_text()
    estimate = summary.split("\n## Estimated cost\n")[1].split("\n## ")[0]
    assert "- note: no list prices for region 'europe-west4'" in estimate
    assert "no list prices" not in summary.split("\n## Warnings\n")[1].split("\n## ")[0]
    est = cost.estimate(parse_stack_file(path))
    assert est.warnings == [] and cost.as_output(est)["notes"] == est.notes != []


UNLISTED = pool(tpu="v6e", topology="4x4", zone="us-west4-b")  # Google's page names no v6e zone in us-west4


def test_a_confirmed_zone_silences_that_one_warning_and_passes_strict(tmp_path, capsys):
    raw = make_config(gcp__region="us-west4", tpu_serving__tpuPools=[UNLISTED])
    warned = [w for w in parse(raw).warnings if ".zone:" in w]
    assert len(warned) == 1 and "then set zoneConfirmed: true on the pool" in warned[0]
    raw["tpu-serving:tpuPools"] = [{**UNLISTED, "zoneConfirmed": True}]
    assert [w for w in parse(raw).warnings if ".zone:" in w] == []
    path = tmp_path / "Pulumi.confirmed.yaml"
    path.write_text(
        "config:\n  gcp:project: tpu-test-project\n  gcp:region: us-west4\n  tpu-serving:environment: prod\n"
        "  tpu-serving:tpuPools:\n    - {name: p, tpu: v6e, topology: 4x4, zone: us-west4-b, zoneConfirmed: true}\n"
    )
    assert render.main([str(path), "--out", str(tmp_path / "build"), "--strict"]) == 0, capsys.readouterr()


def test_zone_confirmed_is_per_pool_and_a_bool():
    raw = make_config(
        gcp__region="us-west4",
        tpu_serving__tpuPools=[{**UNLISTED, "zoneConfirmed": True}, {**UNLISTED, "name": "q"}],
    )
    assert [w.split(":")[1] for w in parse(raw).warnings if ".zone:" in w] == ["tpuPools[1].zone"]
    raw["tpu-serving:tpuPools"] = [{**UNLISTED, "zoneConfirmed": "yes please"}]
    with pytest.raises(ConfigError, match=r"tpuPools\[0\]\.zoneConfirmed"):
        parse(raw)


# ---- 2. the catalog's zone lists, single-tenant zones, and shipped stacks that render without a zone warning ---

# https://cloud.google.com/tpu/docs/regions-zones (the edition that shows single-tenant rows: ?hl=de "Einzelmandant")
SINGLE_TENANT = [
    ("v5e", "2x4", "us-east5-a"),
    ("v5e", "2x4", "us-east5-c"),
    ("v5p", "2x2x1", "us-east5-b"),
    ("v5p", "2x2x1", "us-south1-a"),
    ("v6e", "2x4", "us-east4-a"),
    ("v6e", "2x4", "us-west1-c"),
]


@pytest.mark.parametrize(("tpu", "topology", "zone"), SINGLE_TENANT)
def test_a_single_tenant_zone_warns_unless_the_pool_consumes_a_reservation(tpu, topology, zone):
    region = zone.rsplit("-", 1)[0]
    cluster = {"minMasterVersion": "1.33.3-gke.1136000"}
    on_demand = make_config(
        gcp__region=region,
        tpu_serving__cluster=cluster,
        tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology, zone=zone)],
    )
    (warning,) = [w for w in parse(on_demand).warnings if ".zone:" in w]
    assert f"{tpu} in {zone} is single-tenant (reserved capacity) only per {catalog.ZONES_SOURCE}" in warning
    for capacity in ("reservation", ["reservation", "spot", "on-demand"]):
        reserved = pool(tpu=tpu, topology=topology, zone=zone, capacity=capacity, reservation="r1")
        raw = make_config(gcp__region=region, tpu_serving__cluster=cluster, tpu_serving__tpuPools=[reserved])
        assert [w for w in parse(raw).warnings if ".zone:" in w] == [], capacity
    # zoneConfirmed acknowledges an unlisted zone; it does not make a single-tenant zone serve on-demand capacity
    confirmed = [{**on_demand["tpu-serving:tpuPools"][0], "zoneConfirmed": True}]
    assert [w for w in parse({**on_demand, "tpu-serving:tpuPools": confirmed}).warnings if ".zone:" in w]


def test_v6e_us_west1_c_is_single_tenant_except_spot():
    assert catalog.zone_warning("v6e", "us-west1-c", ("spot",)) is None
    assert "except spot" in (catalog.zone_warning("v6e", "us-west1-c", ("on-demand",)) or "")


@pytest.mark.parametrize(
    ("tpu", "zone"),
    [
        ("v5e", "europe-west4-b"),
        ("v5p", "europe-west4-b"),
        ("v6e", "europe-west4-a"),
        ("v6e", "asia-northeast1-b"),
        ("v6e", "southamerica-east1-c"),
        ("v6e", "us-east5-b"),
        ("tpu7x", "us-central1-c"),
    ],
)
def test_zones_google_lists_outside_north_america_do_not_warn(tpu, zone):
    assert catalog.zone_warning(tpu, zone, ("on-demand",)) is None


def test_no_zone_is_both_listed_and_single_tenant():
    for gen in catalog.GENERATIONS.values():
        assert not set(gen.zones) & set(gen.single_tenant_zones), gen.name


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_stack_renders_without_a_zone_warning(path):
    """A new user's first `make render` (Pulumi.dev.yaml) and every example: each pool is in a zone Google lists for
    its generation (or single-tenant with a reservation), so nothing warns about zones."""
    assert [w for w in parse_stack_file(path).warnings if ".zone:" in w] == []
