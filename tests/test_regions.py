"""Issue 34 finding 14: a region, zone or location of the right shape but misspelt (`us-centrl1`, `us-est5`) was
accepted, and the bucket location rendered `US-CENTRL1`. Every key the program accepts that takes one (a region, a
zone, a location, a resource path naming a region) is checked against the one region list,
stacks/facts/storage_locations.py (Google's Cloud Storage locations page, https://cloud.google.com/storage/docs/locations),
and refused with the key path, the value and its close matches.

The keys come from a machine-readable source: the program's own config models, as the stack's JSON Schema
(tooling/generate/json_schema.py) and the fleet's model (stacks/fleets/fleet.py FleetConfig) describe them. Every string key whose
name or description speaks of a region, zone, location or path is either checked here with a misspelt value or named
in NOT_LOCATIONS with the reason it holds none; a key added to the models that mentions one fails until it is one or
the other.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from pydantic import TypeAdapter

from stacks.config import ConfigError
from stacks.facts import storage_locations
from stacks.fleets import fleet
from stacks.model import pulumi_path
from tooling.generate.json_schema import stack_config_schema
from tooling.harness.offline import ROOT, load_stack_file, parse_config, recorded_outputs
from workloads.registry import WORKLOAD_TYPES

ALL_IN_ONE = ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml"  # gcp:region us-central1
FLEET = ROOT / "examples" / "fleet" / "Pulumi.fleet.yaml"
MENTIONS = re.compile(r"region|zone|location|path", re.I)
TYPO, RIGHT = "us-centrl1", "us-central1"

# key (as the schema walks it; [] for any item) -> a value that misspells us-central1 in it
MISSPELT: dict[str, str] = {
    "gcp:region": TYPO,
    "tpu-serving:cluster.location": TYPO,
    "tpu-serving:bucket.location": TYPO,
    "tpu-serving:tpuPools[].zone": f"{TYPO}-a",
    "tpu-serving:cluster.network.subnetwork": f"projects/my-tpu-project/regions/{TYPO}/subnetworks/s",
    "tpu-serving:gateway.cloudArmorPolicy": f"projects/my-tpu-project/regions/{TYPO}/securityPolicies/p",
    # a key must be in the location of what it encrypts: held equal to the bucket's and the cluster's, themselves listed
    "tpu-serving:bucket.kmsKeyName": f"projects/k/locations/{TYPO}/keyRings/r/cryptoKeys/k",
    "tpu-serving:cluster.secretsEncryptionKey": f"projects/k/locations/{TYPO}/keyRings/r/cryptoKeys/k",
    "tpu-serving:fleet.homeRegion": TYPO,
    "tpu-serving:fleet.regions[].existingProxySubnet": f"projects/my-tpu-project/regions/{TYPO}/subnetworks/s",
}
NOT_LOCATIONS: dict[str, str] = {
    "tpu-serving:local.kubeconfig": "a file path on this machine (local mode): no cloud location",
    "tpu-serving:alerts.channels[].address": "an e-mail address, a Pub/Sub topic path or a webhook URL: no region",
    "tpu-serving:cluster.network.network": "a VPC is global: its path names no region (projects/<p>/global/networks)",
    "tpu-serving:gateway.exposure": "internal or external (an enum)",
    "tpu-serving:gateway.proxySubnet": "create or existing (an enum)",
    "tpu-serving:workloads[].checkpoint": "a gs:// path: a bucket names no region",
    "tpu-serving:workloads[].models[].checkpoint": "a gs:// path: a bucket names no region",
    "tpu-serving:workloads[].models[].modelPath": "a path inside the Saxml model server",
    "tpu-serving:workloads[].model": "a Hugging Face repository or gs:// path",
    "tpu-serving:workloads[].loras[].name": "the adapter's model name clients send (its description names vLLM's path)",
    "tpu-serving:workloads[].images.proxy": "an image reference; a registry host it names is the pull's to resolve",
    "tpu-serving:workloads[].images.server": "an image reference; a registry host it names is the pull's to resolve",
    "tpu-serving:workloads[].images.worker": "an image reference; a registry host it names is the pull's to resolve",
    "tpu-serving:workloads[].pathwaysVersion": "a Pathways image tag",
    "tpu-serving:fleet.configCluster": "a regional stack's name",
    "tpu-serving:fleet.regions[].stack": "a regional stack's name",
    "tpu-serving:fleet.regions[].proxySubnetCidr": "a CIDR",
}


def location_keys() -> set[str]:
    """Every string key of the stack config and the fleet config whose name or description mentions a region, zone,
    location or path."""
    found: set[str] = set()

    def walk(node: dict[str, Any], path: str, defs: dict[str, Any]) -> None:
        if "$ref" in node:
            walk(defs[node["$ref"].split("/")[-1]], path, defs)
            return
        for sub in [*node.get("anyOf", []), *node.get("oneOf", []), *node.get("allOf", [])]:
            walk(sub, path, defs)
        for branch in ("if", "then", "else"):  # the schema's regional and fleet branches
            if isinstance(node.get(branch), dict):
                walk(node[branch], path, defs)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]", defs)
        for key, sub in (node.get("properties") or {}).items():
            here = f"{path}.{key}" if path else key
            # a number's text as `pulumi config set --path` writes it is no string key (stacks/model/pulumi_path.py)
            own = [alt for alt in sub.get("anyOf", []) if alt.get("$comment") != pulumi_path.PATH_COMMENT]
            kinds = {sub.get("type"), *(alt.get("type") for alt in own)}
            if "string" in kinds and MENTIONS.search(f"{key} {sub.get('description', '')}"):
                found.add(here.removeprefix("config."))
            walk(sub, here, defs)

    stack = stack_config_schema()
    walk(stack, "", stack.get("$defs", {}))
    fleet_schema = TypeAdapter(fleet.FleetConfig).json_schema(by_alias=True)
    walk({"properties": {fleet.PATH: fleet_schema}}, "", fleet_schema.get("$defs", {}))
    return found


def test_every_key_that_may_name_a_region_is_checked_or_said_to_name_none():
    assert location_keys() == set(MISSPELT) | set(NOT_LOCATIONS)
    assert not set(MISSPELT) & set(NOT_LOCATIONS)


def put(config: dict[str, Any], key: str, value: str) -> str:
    """Set a dotted key (`gcp:region`, `tpu-serving:cluster.network.subnetwork`) in a stack file's config."""
    top, *rest = key.split(".")
    if not rest:
        config[top] = value
        return key
    node = config.setdefault(top, {})
    for part in rest[:-1]:
        node = node.setdefault(part, {})
    node[rest[-1]] = value
    return key


def stack_problems(key: str, value: str) -> tuple[str, list[str]]:
    config = copy.deepcopy(load_stack_file(ALL_IN_ONE))
    if key == "tpu-serving:cluster.network.subnetwork":  # a subnet by path: an existing network's
        config["tpu-serving:cluster"]["network"] = {"create": False, "network": "vpc", "nat": True}
    if key.startswith("tpu-serving:tpuPools[]"):
        config["tpu-serving:tpuPools"][0]["zone"] = value
        where = "tpu-serving:tpuPools[0].zone"
    else:
        where = put(config, key, value)
    try:
        parse_config(config, "all-in-one")
    except ConfigError as err:
        return where, [str(p) for p in err.problems]
    return where, []


def fleet_problems(key: str, value: str) -> tuple[str, list[str]]:
    raw = copy.deepcopy(load_stack_file(FLEET)[fleet.PATH])
    if key == "tpu-serving:fleet.homeRegion":
        raw["homeRegion"], where = value, f"{fleet.PATH}.homeRegion"
    else:
        region = raw["regions"][0]
        region.pop("proxySubnetCidr")
        region["existingProxySubnet"], where = value, f"{fleet.PATH}.regions[0].existingProxySubnet"
    cfg = fleet.FleetConfig.model_validate(raw)
    outputs = recorded_outputs(FLEET)  # by stack name: each regional stack's outputs
    members, found = fleet.members(cfg, {r.stack: outputs[r.stack.rsplit("/", 1)[-1]]["fleet"] for r in cfg.regions})
    found += fleet.problems(cfg, members, "my-tpu-project", WORKLOAD_TYPES.gateway_types)
    return where, [str(p) for p in found]


@pytest.mark.parametrize("key", sorted(MISSPELT))
@pytest.mark.parametrize("typo", [TYPO, "us-est5"])
def test_a_misspelt_region_is_refused_at_its_key_with_the_value_and_close_matches(key, typo):
    """Each key, with us-central1 misspelt in it (and us-east5 as us-est5): a problem at that key path naming the
    misspelt value and the region meant."""
    value = MISSPELT[key].replace(TYPO, typo)
    # a key's location is held to the one of the data it encrypts: the stack's, us-central1
    right = RIGHT if typo == TYPO or key.endswith(("kmsKeyName", "EncryptionKey")) else "us-east5"
    where, found = (fleet_problems if key.startswith(fleet.PATH) else stack_problems)(key, value)
    mine = [p for p in found if p.startswith(f"{where}: ")]
    assert mine, (where, found)
    assert any(f"'{typo}" in p and right in p for p in mine), mine


def test_the_bucket_location_renders_only_listed_codes():
    """The defect as reported: bucket.location us-centrl1 rendered US-CENTRL1; now refused before anything is
    registered, and every listed region is accepted (upper-cased as the API reports it)."""
    where, found = stack_problems("tpu-serving:bucket.location", TYPO)
    assert any(
        p.startswith(f"{where}: 'us-centrl1' is not a Cloud Storage location; did you mean us-central1?") for p in found
    )
    assert storage_locations.region_problem(RIGHT) is None and storage_locations.is_location(RIGHT.upper())


def test_every_zone_the_catalog_and_the_shipped_stacks_name_is_in_a_listed_region():
    """The list is not behind the catalog: each TPU zone of every generation (stacks/facts/catalog.py) and each region and
    zone a shipped stack names are in listed regions."""
    from stacks.facts import catalog
    from tests.conftest import ALL_EXAMPLES

    regions = {z.rsplit("-", 1)[0] for g in catalog.GENERATIONS.values() for z in g.zones}
    for path in [ROOT / "Pulumi.dev.yaml", *ALL_EXAMPLES]:
        config = load_stack_file(path)
        if "gcp:region" in config:
            regions.add(config["gcp:region"])
        regions |= {p["zone"].rsplit("-", 1)[0] for p in config.get("tpu-serving:tpuPools") or []}
    assert {r for r in regions if storage_locations.region_problem(r)} == set()


def test_a_listed_region_of_the_right_shape_stays_accepted_and_an_unlisted_one_names_its_list():
    assert storage_locations.region_problem("europe-west4") is None
    why = storage_locations.region_problem("mars-north1")
    assert why == (
        f"'mars-north1' is not a Google Cloud region (the {len(storage_locations.REGIONS)} regions of "
        "https://cloud.google.com/storage/docs/locations, and us-central2 of https://cloud.google.com/tpu/docs/"
        "regions-zones)"
    )


def test_a_tpu_only_region_is_a_region_whose_bucket_needs_a_location():
    """us-central2 (TPU v4's zone us-central2-b, Google's TPU regions page) is a region a stack may name, not a Cloud
    Storage location: its bucket, which defaults to gcp:region, must be given one."""
    config = copy.deepcopy(load_stack_file(ALL_IN_ONE))
    config["gcp:region"] = "us-central2"
    config["tpu-serving:tpuPools"] = [
        {"name": "v4", "tpu": "v4", "topology": "2x2x1", "zone": "us-central2-b", "capacity": "on-demand"}
    ]
    config["tpu-serving:workloads"] = []
    config["tpu-serving:cluster"].pop("location", None)
    try:
        parse_config(config, "all-in-one")
        found: list[str] = []
    except ConfigError as err:
        found = [str(p) for p in err.problems]
    assert not [p for p in found if p.startswith(("gcp:region", "tpu-serving:tpuPools"))], found
    assert any(
        p.startswith("tpu-serving:bucket.location: unset, so gcp:region 'us-central2', where Cloud Storage has no")
        and "e.g. us-central1" in p
        for p in found
    ), found
