"""`make preflight` (scripts/preflight.py, tooling/operations/preflight.py) on recorded gcloud answers (tests/data/preflight/).

Sources of every field and name read:
- google-api-python-client 2.202.0 googleapiclient/discovery_cache/documents/ (revisions in
  tooling/data/api_schemas.json): compute.v1.json `Region.quotas[]` = `Quota` {metric, limit, usage} and its
  `metric` enum (TPU_PODSLICE_V4, TPU_LITE_PODSLICE_V5, their PREEMPTIBLE_ twins; CPUS_ALL_REGIONS and
  GPUS_ALL_REGIONS, no TPU counterpart); compute.v1.json `Reservation` {status, specificReservation {count,
  inUseCount, instanceProperties.machineType}}; container.v1.json `ServerConfig.channels[]` {channel,
  validVersions} (projects.locations.getServerConfig); serviceusage.v1.json `GoogleApiServiceusageV1Service`
  {config.name, state ENABLED}; cloudresourcemanager.v1.json `Policy.bindings[]` {role, members}; orgpolicy.v2.json
  `GoogleCloudOrgpolicyV2Policy` {spec.rules[] {allowAll, denyAll, values.allowedValues}}
  (projects.policies.getEffectivePolicy, what `gcloud org-policies describe --effective` prints).
- Cloud TPU quota types (https://cloud.google.com/tpu/docs/quota): on-demand and preemptible (Spot) quotas per TPU
  version; docs/deploying.md: Spot and flex-start draw on preemptible quota.
Each fixture is validated strictly (unknown fields, types, enums) against those schemas below.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from stacks.facts import capacity_words, catalog
from stacks.reports.cost import pool_nodes
from tests.conftest import EXAMPLES, recorded
from tooling.harness.offline import ROOT, load_stack_file, parse_stack_file, run_program
from tooling.operations import preflight
from tooling.oracles import api_schemas

sys.path.insert(0, str(ROOT / "scripts"))
import preflight as script  # noqa: E402

DATA = ROOT / "tests" / "data" / "preflight"
ALL_IN_ONE = ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml"
IRONWOOD = ROOT / "examples" / "ironwood" / "Pulumi.ironwood.yaml"
FALLBACK = ROOT / "examples" / "gemma-fallback" / "Pulumi.gemma-fallback.yaml"
# fixture file (its name up to the first "-" or ".") -> (discovery document, schema)
SHAPES = {
    "region": ("compute.v1", "Region"),
    "reservation": ("compute.v1", "Reservation"),
    "server": ("container.v1", "ServerConfig"),
    "services": ("serviceusage.v1", "GoogleApiServiceusageV1Service"),
    "iam": ("cloudresourcemanager.v1", "Policy"),
    "org": ("orgpolicy.v2", "GoogleCloudOrgpolicyV2Policy"),
}


def recorded_runner(scenario: str, calls: list[list[str]] | None = None) -> preflight.Runner:
    """gcloud as recorded: the scenario's file for the command, else the common one; a missing reservation is
    gcloud's not-found error."""

    def file_for(args: list[str]) -> str:
        if args[:3] == ["compute", "regions", "describe"]:
            return f"region-{args[3]}.json"
        if args[:3] == ["compute", "reservations", "describe"]:
            return f"reservation-{args[3]}.json"
        names = {
            "container": "server-config",
            "services": "services",
            "config": "account",
            "projects": "iam-policy",
            "org-policies": "org-policy",
        }
        return f"{names[args[0]]}.json"

    def run(args: list[str]) -> Any:
        if calls is not None:
            calls.append(args)
        name = file_for(args)
        for folder in (DATA / scenario, DATA / "common"):
            if (folder / name).exists():
                return json.loads((folder / name).read_text())
        raise preflight.GcloudError(f"ERROR: (gcloud) NOT_FOUND: {name.removesuffix('.json')} was not found")

    return run


def registered(path: Path) -> list[tuple[str, Any]]:
    """(type, inputs) of what the stack file registers under mocks (as scripts/preflight.py lists them)."""
    return [(r.type, r.inputs) for r in recorded(path, False).resources]


def rows_of(path: Path, scenario: str) -> list[preflight.Row]:
    return preflight.preflight(parse_stack_file(path), recorded_runner(scenario), registered(path))


def by(rows: list[preflight.Row], check: str) -> dict[str, preflight.Row]:
    return {row.subject: row for row in rows if row.check == check}


# ---- the recordings follow the APIs' schemas --------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(DATA.rglob("*.json")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_answers_follow_the_discovery_documents(path):
    kind = re.split(r"[-.]", path.name)[0]
    if kind == "account":  # `gcloud config get account --format=json`: the account as a JSON string
        assert isinstance(json.loads(path.read_text()), str)
        return
    document, name = SHAPES[kind]
    value = json.loads(path.read_text())
    errors: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        api_schemas.validate(document, {"$ref": name}, item, "", errors)
    assert errors == []


def test_schema_check_catches_a_misspelt_field():
    errors: list[str] = []
    bad = {"specificReservation": {"count": "2", "inUsedCount": "1"}, "status": "AVAILABLE"}
    api_schemas.validate("compute.v1", {"$ref": "Reservation"}, bad, "", errors)
    assert any("inUsedCount" in e for e in errors) and any("AVAILABLE" in e for e in errors), errors


def test_quota_metrics_are_the_compute_apis_own_for_every_generation():
    """Every catalog generation has an entry; each metric named is in compute v1 `Quota.metric`, and the enum has
    no other TPU chip quota (v5p, v6e and TPU7x have none there) and no project-wide TPU quota."""
    enum = set(api_schemas.schema("compute.v1", "Quota")["properties"]["metric"]["enum"])
    assert set(preflight.QUOTA_METRICS) == set(catalog.GENERATIONS)
    named = {m for pair in preflight.QUOTA_METRICS.values() if pair for m in pair}
    assert named <= enum
    tpu_slices = {m for m in enum if "TPU" in m and "DEVICE" not in m}  # *_DEVICE_*: Cloud TPU API devices
    assert tpu_slices == named
    assert {m for m in enum if m.endswith("_ALL_REGIONS")} == {"CPUS_ALL_REGIONS", "GPUS_ALL_REGIONS"}


# ---- what the operator sees ---------------------------------------------------------------------------------


def test_a_ready_project_passes(capsys):
    """all-in-one on a project with quota, the channel's versions, the APIs and the roles: exit 0; the v6e pools
    are WARN (no Compute Engine quota metric to read) with the console's quota page."""
    rows = rows_of(ALL_IN_ONE, "ready")
    quota = by(rows, "quota")
    assert quota["pool v5e-2x4 (v5e on-demand)"].status == preflight.PASS
    assert (
        "needs 8 chips at baseline, 32 at peak (8/96 with the other pools)"
        in quota["pool v5e-2x4 (v5e on-demand)"].detail
    )
    assert quota["pool v6e-4x4 (v6e on-demand)"].status == preflight.WARN
    assert (
        quota["pool v6e-4x4 (v6e on-demand)"].fix
        == "https://console.cloud.google.com/iam-admin/quotas?project=my-tpu-project"
    )
    assert {r.status for r in rows if r.check != "quota"} == {preflight.PASS}
    assert script.main([str(ALL_IN_ONE)], run=recorded_runner("ready")) == 0
    out = capsys.readouterr().out
    assert "PASS  api          container.googleapis.com: enabled" in out


def test_a_short_project_fails_with_the_fix_on_each_row():
    rows = rows_of(ALL_IN_ONE, "short")
    quota = by(rows, "quota")["pool v5e-4x8 (v5e on-demand)"]
    assert quota.status == preflight.FAIL and capacity_words.QUOTA_SHORT in quota.detail
    assert "limit 64, in use 8" in quota.detail and quota.fix.startswith("https://console.cloud.google.com/iam-admin")
    spot = by(rows, "quota")["pool v6e-2x4 (v6e spot)"]
    assert spot.status == preflight.WARN  # no metric to read for v6e
    versions = by(rows, "version")
    assert versions["pool 'v6e-4x4': the minimum GKE version for v6e"].status == preflight.FAIL
    assert versions["pool 'v5e-4x8': the minimum GKE version for v5e"].status == preflight.PASS
    api = by(rows, "api")["iamcredentials.googleapis.com"]
    assert (api.status, api.fix) == (
        preflight.FAIL,
        "gcloud services enable iamcredentials.googleapis.com --project=my-tpu-project",
    )
    role = by(rows, "role")["roles/storage.admin"]
    assert role.status == preflight.WARN
    assert role.fix == (
        "gcloud projects add-iam-policy-binding my-tpu-project --member=user:deployer@example.com "
        "--role=roles/storage.admin"
    )
    assert all(row.fix for row in rows if row.status != preflight.PASS)
    assert script.main([str(ALL_IN_ONE)], run=recorded_runner("short")) == 1


def test_reservation_rows():
    """The ironwood recordings are aggregate reservations (TPU7x: vmFamily and chips), the gemma-fallback ones
    specific (a machine type and VMs)."""
    ready = by(rows_of(IRONWOOD, "ready"), "reservation")["pool iw-2x2x2 (reservation ironwood-2x2x2)"]
    assert ready.status == preflight.PASS, ready
    assert ready.detail == (
        "VM_FAMILY_CLOUD_TPU_POD_SLICE_TPU7X: needs 8 chips at baseline, 8 at peak; 8 reserved, 0 in use"
    )
    short = by(rows_of(IRONWOOD, "short"), "reservation")["pool iw-2x2x2 (reservation ironwood-2x2x2)"]
    assert short.status == preflight.FAIL and capacity_words.RESERVATION_SHORT in short.detail
    assert "4 reserved, 4 in use" in short.detail
    assert short.fix.startswith("gcloud compute reservations list --project=my-tpu-project --filter=zone:us-central1-c")
    assert script.main([str(IRONWOOD)], run=recorded_runner("short")) == 1
    specific = by(rows_of(FALLBACK, "ready"), "reservation")["pool v5e-2x4 (reservation v5e-serving)"]
    assert specific.detail == "ct5lp-hightpu-8t: needs 0 hosts at baseline, 4 at peak; 4 reserved, 0 in use"


# ---- every shape of Reservation the API returns ------------------------------------------------------------

RESERVATION_ONEOF = api_schemas.ONEOFS[("compute.v1", "Reservation")]["type"]

# Machine family -> `AllocationAggregateReservation.vmFamily`: gcloud's map of TPU versions (google-cloud-sdk
# googlecloudsdk/command_lib/compute/future_reservations/util.py MakeAggregateReservationPropertiesMessage,
# tpu_version_to_vm_family: V5E CT5LP, V5P CT5P, V6E CT6E, TPU7X TPU7X); v4 (ct4p machines), which gcloud's map
# lacks, the enum's CT4P.
VM_FAMILIES = {
    "ct4p": "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT4P",
    "ct5lp": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP",
    "ct5p": "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P",
    "ct6e": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E",
    "tpu7x": "VM_FAMILY_CLOUD_TPU_POD_SLICE_TPU7X",
}


def schema_sample(document: str, node: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """A value for every field of a discovery-document schema, by its declared type (the first enum value, "1" for
    int64 strings, one item per array); a schema already on the path is left out (recursive types)."""
    if "$ref" in node:
        if node["$ref"] in seen:
            return None
        return schema_sample(document, api_schemas.schema(document, node["$ref"]), (*seen, node["$ref"]))
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        out = {k: schema_sample(document, v, seen) for k, v in props.items()}
        return {k: v for k, v in out.items() if v is not None}
    if kind == "array":
        item = schema_sample(document, node.get("items", {}), seen)
        return [] if item is None else [item]
    if kind == "string":
        if "enum" in node:
            return node["enum"][0]
        if node.get("format") in ("int64", "uint64"):
            return "1"
        return "3600s" if node.get("format") == "google-duration" else "x"
    return {"integer": 1, "number": 1.0, "boolean": False}.get(str(kind))


def put(value: dict[str, Any], path: str, new: Any) -> None:
    """Set `a.b[].c` (every item of a list) in a sample; a field the schema lacks raises KeyError."""
    head, _, rest = path.partition(".")
    key = head.removesuffix("[]")
    if key not in value:
        raise KeyError(f"{key} is not a field of the schema's sample")
    if not rest:
        value[key] = new
    elif head.endswith("[]"):
        for item in value[key]:
            put(item, rest, new)
    else:
        put(value[key], rest, new)


def reservation_of(kind: str, plan: Any, *, reserved: int, in_use: int, family_of: str | None = None) -> dict:
    """A compute v1 `Reservation` of one oneof member, every field of the discovery document set, READY, holding
    `reserved` and using `in_use` of the pool's unit (VMs of a specific reservation, chips of an aggregate one),
    of the pool's machine type (or `family_of`'s)."""
    machine = family_of or plan.shape.machine_type
    value = schema_sample("compute.v1", {"$ref": "Reservation"})
    for other in RESERVATION_ONEOF:
        if other != kind:
            del value[other]
    put(value, "status", "READY")
    if kind == "specificReservation":
        put(value, "specificReservation.count", str(reserved))
        put(value, "specificReservation.inUseCount", str(in_use))
        put(value, "specificReservation.instanceProperties.machineType", machine)
    else:
        put(value, "aggregateReservation.vmFamily", VM_FAMILIES[machine.split("-")[0]])
        put(value, "aggregateReservation.reservedResources[].accelerator.acceleratorCount", reserved)
        put(value, "aggregateReservation.reservedResources[].accelerator.acceleratorType", "x/acceleratorTypes/y")
        put(value, "aggregateReservation.inUseResources[].accelerator.acceleratorCount", in_use)
    errors: list[str] = []
    api_schemas.validate("compute.v1", {"$ref": "Reservation"}, value, "", errors)
    assert errors == [], errors
    return value


def test_every_member_of_the_reservation_oneof_has_a_reader():
    """compute v1 `Reservation`'s oneof `type` (api_schemas.ONEOFS, from the REST reference) names fields of the
    discovery document's Reservation, and preflight reads each of them (a new member without a reader fails)."""
    fields = api_schemas.schema("compute.v1", "Reservation")["properties"]
    assert set(RESERVATION_ONEOF) <= set(fields)
    assert set(preflight.RESERVATION_KINDS) == set(RESERVATION_ONEOF)


def test_every_catalog_machine_type_has_its_vm_family():
    """Every TPU machine type of the catalog maps to its `AllocationAggregateReservation.vmFamily` (gcloud's map),
    a value of the discovery document's enum."""
    enum = api_schemas.schema("compute.v1", "AllocationAggregateReservation")["properties"]["vmFamily"]["enum"]
    assert set(VM_FAMILIES.values()) <= set(enum)
    for gen in catalog.GENERATIONS.values():
        for machine in catalog.machine_types(gen):
            assert preflight.vm_family(machine) == VM_FAMILIES[machine.split("-")[0]], machine


def catalog_pools() -> list[Any]:
    """One reservation pool per catalog machine type (the smallest topology it runs), in a stack of its own."""
    from tooling.harness.offline import parse_config

    found = []
    for gen in catalog.GENERATIONS.values():
        for machine in catalog.machine_types(gen):
            topology = next(
                t for t in catalog.topologies(gen) for s in catalog.shapes(gen, t) if s.machine_type == machine
            )
            pool = {
                "name": "p",
                "tpu": gen.name,
                "topology": topology,
                "machineType": machine,
                "zone": "us-central1-a",
                "capacity": "reservation",
                "reservation": "r",
                "autoscaling": {"minNodes": 1, "maxNodes": 2},
            }
            config = {
                "gcp:project": "my-tpu-project",
                "gcp:region": "us-central1",
                "tpu-serving:environment": "dev",
                "tpu-serving:cluster": {"minMasterVersion": "1.34.0-gke.2201000"},  # tpu7x's minimum, the highest
                "tpu-serving:tpuPools": [pool],
            }
            found.append(parse_config(config, "dev"))
    return found


@pytest.mark.parametrize("kind", RESERVATION_ONEOF)
def test_preflight_reads_every_reservation_shape_of_every_catalog_machine_type(kind):
    """For each member of the oneof and each catalog machine type: a reservation with room PASSes, one whose room is
    partly in use WARNs, one short of the peak FAILs with the shortage, one of another machine type or TPU family FAILs naming both. The inputs are
    built from the discovery document's Reservation (every field set) and validated against it."""
    for cfg in catalog_pools():
        plan = cfg.pools[0]
        low, high = pool_nodes(plan)
        per = 1 if kind == "specificReservation" else plan.shape.chips_per_host
        unit = "hosts" if kind == "specificReservation" else "chips"
        fits = preflight.reservation_row(cfg, plan, reservation_of(kind, plan, reserved=high * per, in_use=0))
        assert fits.status == preflight.PASS, (plan.shape.machine_type, fits)
        assert f"needs {low * per} {unit} at baseline, {high * per} at peak" in fits.detail
        busy = preflight.reservation_row(cfg, plan, reservation_of(kind, plan, reserved=high * per, in_use=per))
        assert busy.status == preflight.WARN and f"{high * per} reserved, {per} in use" in busy.detail, busy
        short = reservation_of(kind, plan, reserved=high * per - 1, in_use=0)
        row = preflight.reservation_row(cfg, plan, short)
        assert row.status == preflight.FAIL and capacity_words.RESERVATION_SHORT in row.detail, row
        other = next(
            m
            for g in catalog.GENERATIONS.values()
            for m in catalog.machine_types(g)
            if (m != plan.shape.machine_type if per == 1 else m.split("-")[0] != plan.shape.machine_type.split("-")[0])
        )
        row = preflight.reservation_row(cfg, plan, reservation_of(kind, plan, reserved=99, in_use=0, family_of=other))
        assert row.status == preflight.FAIL and row.detail.startswith("reserves "), row


def test_a_capacity_list_falls_back_but_a_wrong_reservation_fails():
    """gemma-fallback [reservation, spot, on-demand, flex-start]: a short quota is a WARN (the ComputeClass tries
    the next capacity); a reservation of another machine type can never be consumed: FAIL."""
    rows = rows_of(FALLBACK, "short")
    reservation = by(rows, "reservation")["pool v5e-2x4 (reservation v5e-serving)"]
    assert reservation.status == preflight.FAIL
    assert reservation.detail == "reserves ct5lp-hightpu-4t, the pool runs ct5lp-hightpu-8t"
    quota = by(rows, "quota")
    assert quota["pool v5e-2x4 (v5e on-demand)"].status == preflight.WARN
    assert "falls back to its next capacity" in quota["pool v5e-2x4 (v5e on-demand)"].detail
    assert "PREEMPTIBLE_TPU_LITE_PODSLICE_V5" in quota["pool v5e-2x4 (v5e spot)"].detail
    assert "PREEMPTIBLE_TPU_LITE_PODSLICE_V5" in quota["pool v5e-2x4 (v5e flex-start)"].detail
    ready = by(rows_of(FALLBACK, "ready"), "reservation")["pool v5e-2x4 (reservation v5e-serving)"]
    assert ready.status == preflight.PASS


def test_a_missing_reservation_fails_with_the_listing_command():
    rows = preflight.preflight(parse_stack_file(IRONWOOD), recorded_runner("no-such-scenario"), registered(IRONWOOD))
    row = by(rows, "reservation")["pool iw-2x2x2 (reservation ironwood-2x2x2)"]
    assert row.status == preflight.FAIL and "NOT_FOUND" in row.detail
    assert row.fix == "gcloud compute reservations list --project=my-tpu-project --filter=zone:us-central1-c"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_pool_of_every_example_is_checked(path):
    """One quota row per pool and quota-drawing capacity, at the pool's own baseline and peak; one reservation
    row per pool that names a reservation; one version row per minimum."""
    cfg = parse_stack_file(path)
    calls: list[list[str]] = []
    rows = preflight.preflight(cfg, recorded_runner("ready", calls), registered(path))
    quota = [r for r in rows if r.check == "quota"]
    expected = [(p, c) for p in cfg.pools for c in p.capacities if c in preflight.QUOTA_CAPACITIES]
    assert len(quota) == len(expected)
    for row, (plan, capacity) in zip(quota, expected, strict=True):
        low, high = pool_nodes(plan)
        chips = plan.shape.chips_per_host
        assert row.subject == f"pool {plan.name} ({plan.shape.generation.name} {capacity})"
        assert f"needs {low * chips} chips at baseline, {high * chips} at peak" in row.detail
    reserved = [p for p in cfg.pools if "reservation" in p.capacities]
    assert len([r for r in rows if r.check == "reservation"]) == len(reserved)
    assert [c for c in calls if c[:2] == ["compute", "reservations"]] == [
        preflight.reservation_command(p, cfg.gcp_project) for p in reserved
    ]


def test_a_pool_added_to_a_stack_gets_its_rows(tmp_path):
    """A v4 Spot pool added to all-in-one draws on PREEMPTIBLE_TPU_PODSLICE_V4 (limit 0 in the recording): FAIL."""
    import yaml

    data = yaml.safe_load(ALL_IN_ONE.read_text())
    pools = data["config"]["tpu-serving:tpuPools"]
    pools.append(
        {
            "name": "v4-extra",
            "tpu": "v4",
            "topology": "2x2x1",
            "zone": "us-central1-b",
            "capacity": "spot",
            "autoscaling": {"minNodes": 1, "maxNodes": 2},
        }
    )
    path = tmp_path / "Pulumi.all-in-one.yaml"
    path.write_text(yaml.safe_dump(data))
    row = by(rows_of(path, "ready"), "quota")["pool v4-extra (v4 spot)"]
    assert row.status == preflight.FAIL and "PREEMPTIBLE_TPU_PODSLICE_V4" in row.detail


def test_the_stockout_word_is_the_shared_one():
    rows = rows_of(ALL_IN_ONE, "ready")
    assert all(capacity_words.STOCKOUT in r.detail for r in rows if r.check == "quota")
    assert capacity_words.STOCKOUT == "stockout"


# ---- one source for the APIs and roles the docs list --------------------------------------------------------


def test_the_deploying_page_lists_every_api_and_role_the_table_names():
    """docs/deploying.md "Prerequisites": the enable command names every API of tooling/oracles/gcp_requirements.py and the
    roles table every role, each with where it is granted."""
    from tooling.oracles import gcp_requirements

    text = (ROOT / "docs" / "deploying.md").read_text()
    prerequisites = text.split("## Prerequisites", 1)[1].split("\n## ", 1)[0]
    enable = re.search(r"gcloud services enable ([^`]*?)\n  ```", prerequisites, re.S)
    assert enable, "the Prerequisites' gcloud services enable command"
    every = gcp_requirements.everything()
    assert enable.group(1).replace("\\", " ").split() == list(every.apis)
    roles = re.findall(r"\| \[`(roles/[\w.]+)`\]\([^)]*\) \| ([\w ]+) \|", prerequisites)
    assert roles == [(role.name, role.scope) for role in every.roles]


# ---- the one runner ---------------------------------------------------------------------------------------------


def test_the_runner_asks_gcloud_for_json_and_reports_its_errors(tmp_path, monkeypatch):
    fake = tmp_path / "gcloud"
    fake.write_text(
        "#!/bin/sh\n"
        'echo "$@" > "$0.args"\n'
        'if [ "$1" = fail ]; then echo "ERROR: (gcloud) PERMISSION_DENIED" >&2; exit 1; fi\n'
        'echo \'{"name": "us-central1"}\'\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert script.gcloud(["compute", "regions", "describe", "us-central1"]) == {"name": "us-central1"}
    assert (tmp_path / "gcloud.args").read_text().split() == [
        "compute",
        "regions",
        "describe",
        "us-central1",
        "--format=json",
    ]
    with pytest.raises(preflight.GcloudError, match="PERMISSION_DENIED"):
        script.gcloud(["fail"])


def test_every_workflow_up_runs_the_preflight_first():
    """docs/deploying.md: the deploy workflow runs `make preflight` before `up`; so does every workflow that runs
    `pulumi up`."""
    import yaml

    ups = 0
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            steps = job.get("steps", [])
            for i, step in enumerate(steps):
                if step.get("with", {}).get("command") == "up":
                    ups += 1
                    stack = step["with"]["stack-name"]
                    assert steps[i - 1].get("run") == f"make preflight STACK={stack}", (path.name, stack)
    assert ups == 4


# ---- domain restricted sharing: every principal outside the project the stack grants ------------------------

KEYS = "projects/keys/locations/us-central1/keyRings/r/cryptoKeys/"  # all-in-one's region


def granted(resources: list[tuple[str, Any]]) -> set[str]:
    """Every principal a registered Google Cloud resource names in its `member` or `members` input."""
    found = set()
    for type_, inputs in resources:
        if type_.startswith("gcp:"):
            found |= {m for m in [inputs.get("member"), *(inputs.get("members") or [])] if isinstance(m, str) and m}
    return found


def own(member: str, project: str) -> bool:
    """The project's own principals: its service accounts and its Workload Identity pool's (GKE's two forms)."""
    pool = rf"{project}\.svc\.id\.goog"
    return bool(
        re.fullmatch(rf"serviceAccount:[a-z0-9-]+@{project}\.iam\.gserviceaccount\.com", member)
        or re.fullmatch(rf"serviceAccount:{pool}\[[^/\]]+/[^\]]+\]", member)
        or re.match(
            rf"principal(Set)?://iam\.googleapis\.com/projects/\d+/locations/global/workloadIdentityPools/{pool}/",
            member,
        )
    )


def _granting_files() -> dict[str, Path]:
    from tests.conftest import FLEET_FILES, STACK_FILES

    return {p.stem.removeprefix("Pulumi."): p for p in [*STACK_FILES, *FLEET_FILES]}


GRANTING = [*_granting_files(), "all-in-one-cmek"]


@functools.cache
def granting(name: str) -> tuple[str, list[tuple[str, Any]]]:
    """(project, what it registers) of a shipped stack or fleet stack, or all-in-one with both customer-managed
    keys (bucket.kmsKeyName, cluster.secretsEncryptionKey)."""
    if name != "all-in-one-cmek":
        path = _granting_files()[name]
        return load_stack_file(path)["gcp:project"], registered(path)
    config = load_stack_file(ALL_IN_ONE)
    config["tpu-serving:bucket"] = {**(config.get("tpu-serving:bucket") or {}), "kmsKeyName": KEYS + "bucket"}
    config["tpu-serving:cluster"] = {**(config.get("tpu-serving:cluster") or {}), "secretsEncryptionKey": KEYS + "s"}
    rec = run_program(config, stack="all-in-one")
    return config["gcp:project"], [(r.type, r.inputs) for r in rec.resources]


@pytest.mark.parametrize("name", GRANTING)
def test_every_principal_a_stack_grants_outside_its_project_is_checked_against_domain_restriction(name):
    """Over every shipped stack (fleet stacks and customer-managed keys included): each principal a registered
    resource grants that is not the project's own gets one org-policy row, FAIL with its fix where the recorded
    effective policy of iam.allowedPolicyMemberDomains allows only a customer id (short), PASS where it allows
    every domain (ready); the project's own principals get none."""
    project, resources = granting(name)
    outside = {m for m in granted(resources) if not own(m, project)}
    short = by(preflight.project_rows(project, recorded_runner("short"), resources), "org policy")
    ready = by(preflight.project_rows(project, recorded_runner("ready"), resources), "org policy")
    if not outside:
        assert list(short) == [preflight.DOMAIN_CONSTRAINT] and short[preflight.DOMAIN_CONSTRAINT].status == "PASS"
        return
    assert set(short) == outside and set(ready) == outside
    for member in outside:
        assert short[member].status == preflight.FAIL and short[member].fix, short[member]
        assert "allows only C03xxxx4x" in short[member].detail
        assert ready[member].status == preflight.PASS


def test_the_principals_outside_the_project_are_googles():
    """What the shipped stacks grant outside the project: Cloud Storage's access-log group on the log bucket, and
    with customer-managed keys or a fleet, Google's service agents (domain-restricted-sharing page: not part of
    your organization)."""
    outside = set()
    for name in GRANTING:
        project, resources = granting(name)
        outside |= {m for m in granted(resources) if not own(m, project)}
    assert outside == {
        "group:cloud-storage-analytics@google.com",
        "serviceAccount:service-123456789012@gs-project-accounts.iam.gserviceaccount.com",
        "serviceAccount:service-123456789012@container-engine-robot.iam.gserviceaccount.com",
        "serviceAccount:service-123456789012@gcp-sa-multiclusteringress.iam.gserviceaccount.com",
    }


def test_access_logs_off_grants_nothing_outside_and_the_fix_says_so():
    """The access-log writer's FAIL names the setting that drops it; with bucket.accessLogs false the stack grants
    no principal outside the project, and preflight does not ask for the org policy at all."""
    rows = by(rows_of(ALL_IN_ONE, "short"), "org policy")
    assert rows["group:cloud-storage-analytics@google.com"].fix.startswith("tpu-serving:bucket.accessLogs: false")
    config = load_stack_file(ALL_IN_ONE)
    config["tpu-serving:bucket"] = {**(config.get("tpu-serving:bucket") or {}), "accessLogs": False}
    resources = [(r.type, r.inputs) for r in run_program(config, stack="all-in-one").resources]
    calls: list[list[str]] = []
    rows = preflight.project_rows("my-tpu-project", recorded_runner("short", calls), resources)
    assert [(r.subject, r.status) for r in rows if r.check == "org policy"] == [
        (preflight.DOMAIN_CONSTRAINT, preflight.PASS)
    ]
    assert not [c for c in calls if c[0] == "org-policies"]


def test_an_unreadable_org_policy_is_a_warning_with_the_command():
    def run(args: list[str]) -> Any:
        if args[0] == "org-policies":
            raise preflight.GcloudError("ERROR: (gcloud.org-policies.describe) PERMISSION_DENIED")
        return recorded_runner("ready")(args)

    (row,) = [
        r for r in preflight.project_rows("my-tpu-project", run, registered(ALL_IN_ONE)) if r.check == "org policy"
    ]
    assert row.status == preflight.WARN and "PERMISSION_DENIED" in row.detail
    assert row.fix == "gcloud " + " ".join(preflight.org_policy_command("my-tpu-project"))
    assert row.fix.endswith("org-policies describe iam.allowedPolicyMemberDomains --effective --project=my-tpu-project")


def test_a_fleet_stack_gets_its_projects_checks(tmp_path, capsys):
    """`make preflight` of a fleet stack: its APIs, roles and the Multi Cluster Ingress agent's grant, from the
    regional stacks' outputs (recorded for the example; from `pulumi stack output` for a user's fleet file)."""
    fleet_file = ROOT / "examples" / "fleet" / "Pulumi.fleet.yaml"
    assert script.main([str(fleet_file)], run=recorded_runner("short")) == 1
    out = capsys.readouterr().out
    assert "FAIL  org policy   serviceAccount:service-123456789012@gcp-sa-multiclusteringress" in out
    copy = tmp_path / "Pulumi.fleet.yaml"
    copy.write_text(fleet_file.read_text())
    asked: list[str] = []

    def outputs_of(stack: str) -> dict[str, Any]:
        asked.append(stack)
        return json.loads((fleet_file.parent / "outputs" / f"{stack.rsplit('/', 1)[-1]}.json").read_text())

    assert script.main([str(copy)], run=recorded_runner("ready"), outputs_of=outputs_of) == 0
    assert asked == ["my-org/tpu-serving/fleet-us-east5", "my-org/tpu-serving/fleet-europe-west4"]
