"""The fleet stack kind (issue 29; docs/fleet.md): regional stacks export their InferencePools, a fleet stack serves
them through GKE's multi-cluster Inference Gateway (Preview). Sources: stacks/fleet.py F1-F5, which these tests
cite:
- F1 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/setup-multicluster-inference-gateway
- F2 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/customize-backend-multicluster-inference-gateway
- F4 https://cloud.google.com/compute/docs/reference/rest/beta/backendServices (Backend.capacityScaler)
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pulumi
import pytest

from stacks import fleet
from stacks.problems import ConfigError
from tests import test_smoke
from tests.conftest import make_config, recorded
from tooling import fleet_render, render
from tooling.documented_schemas import SCHEMAS
from tooling.k8s_objects import kubernetes_objects
from tooling.offline import ROOT, Recording, load_stack_file, parse_config, run_program
from tooling.schemas import strict, validate_custom, validate_objects

fake_kubectl = test_smoke.fake_kubectl  # the stand-in kubectl on PATH (tests/fixtures/kubectl/fake_kubectl.py)
EXAMPLE = ROOT / "examples" / "fleet"
FLEET_FILE = EXAMPLE / "Pulumi.fleet.yaml"
REGIONAL_FILES = fleet_render.regional_files(EXAMPLE)
OUTPUTS = {p.stem: json.loads(p.read_text()) for p in sorted((EXAMPLE / "outputs").glob("*.json"))}


def _objects(rec: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in kubernetes_objects(rec) if o.get("kind") == kind]


def _run_fleet(outputs: dict[str, Any], recording: Recording | None = None, **fleet_changes: Any) -> Recording:
    config = load_stack_file(FLEET_FILE)
    config["tpu-serving:fleet"] = {**config["tpu-serving:fleet"], **fleet_changes}
    return run_program(config, stack="fleet", preview=True, stack_outputs=outputs, recording=recording)


# ---- the example fleet, offline ----------------------------------------------------------------------------


def test_the_recorded_outputs_are_what_the_regional_stacks_export():
    """The fleet example reads recordings, not hand-written fixtures: each equals what its regional stack file's
    program exports after a first `up` (python -m tooling.fleet_render examples/fleet re-records them)."""
    assert len(REGIONAL_FILES) == 2
    for path in REGIONAL_FILES:
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        assert fleet_render.record(path) == OUTPUTS[stack], (
            f"re-record: .venv/bin/python -m tooling.fleet_render {EXAMPLE}"
        )


def test_the_fleet_stack_owns_memberships_ingress_and_global_proxy_subnets():
    rec = recorded(FLEET_FILE, True)
    outputs = {stack: out["fleet"] for stack, out in OUTPUTS.items()}
    memberships = rec.of_type("gcp:gkehub/membership:Membership")
    # F1: `gcloud container fleet memberships register <cluster> --gke-cluster <location>/<cluster> --location=global`
    assert {(m.inputs["membershipId"], m.inputs["location"]) for m in memberships} == {
        (o["clusterName"], "global") for o in outputs.values()
    }
    assert {m.inputs["endpoint"]["gkeCluster"]["resourceLink"] for m in memberships} == {
        f"//container.googleapis.com/{o['clusterId']}" for o in outputs.values()
    }
    feature = rec.one("gcp:gkehub/feature:Feature")
    assert (feature.inputs["name"], feature.inputs["location"]) == ("multiclusteringress", "global")
    config_membership = rec.one("gcp:gkehub/membership:Membership", "fleet-membership-us-east5")
    assert config_membership.urn in feature.dependencies  # configMembership is that membership's id
    subnets = rec.of_type("gcp:compute/subnetwork:Subnetwork")
    # F1 "Create proxy-only subnets": one per region, GLOBAL_MANAGED_PROXY, ACTIVE, in the shared VPC
    assert sorted((s.inputs["region"], s.inputs["purpose"], s.inputs["role"]) for s in subnets) == [
        ("europe-west4", "GLOBAL_MANAGED_PROXY", "ACTIVE"),
        ("us-east5", "GLOBAL_MANAGED_PROXY", "ACTIVE"),
    ]
    assert {s.inputs["network"] for s in subnets} == {"projects/my-tpu-project/global/networks/serving-vpc"}


def test_the_config_cluster_routes_to_the_imported_pool_with_home_region_and_spillover():
    rec = recorded(FLEET_FILE, True)
    (gateway,) = _objects(rec, "Gateway")
    # F1 mcig.yaml: the cross-regional internal multi-cluster class, an ephemeral address in every region
    assert gateway["spec"]["gatewayClassName"] == "gke-l7-cross-regional-internal-managed-mc"
    assert gateway["spec"]["addresses"] == [
        {"type": f"networking.gke.io/ephemeral-ipv4-address/{r}", "value": r} for r in ("us-east5", "europe-west4")
    ]
    import_ref = {"group": "networking.gke.io", "kind": "GCPInferencePoolImport", "name": "llama8b"}
    (route,) = _objects(rec, "HTTPRoute")
    assert route["spec"]["rules"][0]["backendRefs"] == [import_ref]
    (health,) = _objects(rec, "HealthCheckPolicy")
    assert health["spec"]["targetRef"] == import_ref
    assert health["spec"]["default"]["config"]["httpHealthCheck"] == {"requestPath": "/health", "port": 8000}
    (policy,) = _objects(rec, "GCPBackendPolicy")
    default = policy["spec"]["default"]
    assert policy["spec"]["targetRef"] == import_ref
    assert (default["balancingMode"], default["trafficDuration"]) == ("CUSTOM_METRICS", "LONG")
    assert default["customMetrics"] == [
        {"name": "gke.named_metrics.kv-cache", "dryRun": False, "maxUtilizationPercent": 60}
    ]
    # F2: the home region's scope first (the first matching scope wins), PREFERRED; the other DEFAULT
    assert [(s["selector"], s["backendPreference"]) for s in default["scopes"]] == [
        ({"gke.io/region": "us-east5"}, "PREFERRED"),
        ({"gke.io/region": "europe-west4"}, "DEFAULT"),
    ]
    # F2: a backend-level field set in `default` and in a scope gets the policy rejected
    for scope in default["scopes"]:
        assert not (set(scope) - {"selector"}) & set(default)
    # every object of the config cluster goes through the config cluster's provider
    provider = rec.one("pulumi:providers:kubernetes", "fleet-config-cluster")
    assert all(
        r.provider.startswith(provider.urn) for r in rec.resources if r.type.startswith("kubernetes:") and r.custom
    )


def test_every_multi_cluster_object_validates_against_its_schema():
    """The Gateway and HTTPRoute against the Gateway API CRDs (../shared/reference/crds, or the `make crds` cache),
    the GKE policies against the documented schemas (no published CRD has their multi-cluster fields)."""
    from tooling.crds import crd_source

    if crd_source()[0] is None:
        pytest.skip(crd_source()[1])
    objects = kubernetes_objects(recorded(FLEET_FILE, True))
    report = validate_objects(objects, "1.34")
    assert report.errors == [] and report.unchecked == []
    assert report.checked == len(objects) == 4


def test_the_render_shows_the_fleet_and_which_regional_pools_it_routes_to(tmp_path):
    assert render.main([str(FLEET_FILE), "--out", str(tmp_path), "--check"]) == 0
    summary = (tmp_path / "fleet" / "summary.md").read_text()
    assert "Preview" in summary
    for region, stack, preference in (
        ("us-east5", "my-org/tpu-serving/fleet-us-east5", "PREFERRED"),
        ("europe-west4", "my-org/tpu-serving/fleet-europe-west4", "DEFAULT"),
    ):
        assert f"| `llama8b/llama8b` | `meta-llama/Llama-3.1-8B-Instruct` | {region} | `{stack}` |" in summary
        assert f"{preference} | 100 |" in summary
    assert (tmp_path / "fleet" / "k8s" / "llama8b" / "GCPBackendPolicy-llama8b-fleet.yaml").exists()


# ---- the regional side: the export switch ---------------------------------------------------------------


def test_an_exporting_stack_exports_every_gateway_served_workload_and_builds_no_gateway_of_its_own():
    for path in REGIONAL_FILES:
        rec = recorded(path, True)
        cfg = parse_config(load_stack_file(path), path.stem)
        served = cfg.gateway_workloads
        assert served
        patches = rec.of_type("kubernetes:inference.networking.k8s.io/v1:InferencePoolPatch")
        # F1: every exported pool carries networking.gke.io/export: "True"
        assert {(p.inputs["metadata"]["namespace"], p.inputs["metadata"]["name"]) for p in patches} == {
            (w.namespace, w.name) for w in served
        }
        assert all(p.inputs["metadata"]["annotations"] == {"networking.gke.io/export": "True"} for p in patches)
        metrics = _objects(rec, "AutoscalingMetric")
        assert {m["metadata"]["name"] for m in metrics} == {f"{w.name}-kv-cache" for w in served}
        assert all(
            m["spec"]["metrics"] == [{"name": "vllm:kv_cache_usage_perc", "exportName": "kv-cache"}] for m in metrics
        )
        assert not _objects(rec, "Gateway") and not _objects(rec, "HTTPRoute")
        purposes = {s.inputs.get("purpose") for s in rec.of_type("gcp:compute/subnetwork:Subnetwork")}
        assert "REGIONAL_MANAGED_PROXY" not in purposes and not rec.of_type("gcp:compute/network:Network")


def test_every_kv_cache_metric_belongs_to_a_registered_workload_type():
    from workloads.registry import WORKLOAD_TYPES

    assert set(fleet.KV_CACHE_METRICS) <= set(WORKLOAD_TYPES)


def test_a_regional_stack_unfit_to_join_a_fleet_is_refused_with_every_reason():
    config = make_config(
        tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.1626000"},  # enough for the gateway, not a fleet
        tpu_serving__gateway={
            "enabled": True,
            "fleetExport": True,
            "proxySubnet": "create",
            "exposure": "external",
            "sourceRanges": ["203.0.113.0/24"],
        },
        tpu_serving__workloads=[{"type": "vllm", "name": "m", "pool": "v6e-4x4", "model": "google/gemma-2b"}],
    )  # and cluster.network.create defaults to true: the stack's own VPC
    with pytest.raises(ConfigError) as err:
        parse_config(config, "dev")
    problems = {p.path: p.message for p in err.value.problems}
    assert "own VPC" in problems["tpu-serving:cluster.network.create"]
    assert "GLOBAL_MANAGED_PROXY" in problems["tpu-serving:gateway.proxySubnet"]
    assert "internal" in problems["tpu-serving:gateway.exposure"]
    assert fleet.MIN_GKE_VERSION in problems["tpu-serving:cluster.minMasterVersion"]


def test_the_export_switch_needs_the_gateway():
    config = make_config(tpu_serving__gateway={"fleetExport": True})
    with pytest.raises(ConfigError) as err:
        parse_config(config, "dev")
    assert any(p.path == "tpu-serving:gateway.fleetExport" for p in err.value.problems)


# ---- the fleet's checks, before anything is registered ----------------------------------------------------


def _bad_outputs() -> dict[str, Any]:
    outputs = copy.deepcopy(OUTPUTS)
    eu = outputs["fleet-europe-west4"]["fleet"]
    eu.update(network="projects/my-tpu-project/global/networks/other", minMasterVersion="1.33.5-gke.1000000")
    eu.update(networkCreated=True, regionalProxySubnet="create")
    eu["exports"][0].update(
        model="google/gemma-2b", servedName="gemma", hostsPerReplica=2, ports=list(range(8000, 8009))
    )
    return outputs


def test_a_fleet_of_unfit_regions_is_refused_with_every_reason_before_anything_is_registered():
    recording = Recording()
    with pytest.raises(pulumi.RunError) as err:
        _run_fleet(_bad_outputs(), recording=recording)
    text = str(err.value)
    for reason in (
        "own VPC",  # networkCreated
        "share one VPC",  # another network than the first region's
        "GLOBAL_MANAGED_PROXY",  # a regional proxy subnet
        f"below {fleet.MIN_GKE_VERSION}",
        "different models",
        "different served names",
        "also matches workers",  # multi-host without a leader-only selector
    ):
        assert reason in text, (reason, text)
    assert recording.resources == []  # the StackReferences are reads; nothing else registered


def test_the_neg_limit_counts_ports_times_zones_times_clusters():
    """F1: a regional cluster (3 zones) with an 8-port pool uses 24 NEGs; 50 per backend service: two clusters fit,
    a third does not."""
    outputs = copy.deepcopy(OUTPUTS)
    for out in outputs.values():
        out["fleet"]["exports"][0]["ports"] = list(range(8000, 8008))
    _run_fleet(outputs)  # 2 x 8 x 3 = 48
    outputs["fleet-asia"] = copy.deepcopy(outputs["fleet-us-east5"])
    outputs["fleet-asia"]["fleet"].update(region="asia-northeast1", clusterName="asia")
    regions = [
        *load_stack_file(FLEET_FILE)["tpu-serving:fleet"]["regions"],
        {"stack": "my-org/tpu-serving/fleet-asia", "proxySubnetCidr": "10.32.0.0/23"},
    ]
    with pytest.raises(pulumi.RunError, match="= 72 NEGs, above the 50"):
        _run_fleet(outputs, regions=regions)


def test_a_region_that_does_not_export_is_named():
    outputs = copy.deepcopy(OUTPUTS)
    del outputs["fleet-europe-west4"]["fleet"]
    with pytest.raises(
        pulumi.RunError, match=r"regions\[1\]\.stack: 'my-org/tpu-serving/fleet-europe-west4' exports no"
    ):
        _run_fleet(outputs)


def test_capacity_percent_is_zero_or_ten_to_a_hundred_and_one_region_serves():
    """F4: a capacity scaler is 0 or 0.1-1.0; a backend service's backends cannot all be drained."""
    regions = copy.deepcopy(load_stack_file(FLEET_FILE)["tpu-serving:fleet"]["regions"])
    regions[0]["capacityPercent"] = 5
    with pytest.raises(pulumi.RunError, match=r"regions\[0\]\.capacityPercent: 5 is not 0"):
        _run_fleet(OUTPUTS, regions=regions)
    for region in regions:
        region["capacityPercent"] = 0
    with pytest.raises(pulumi.RunError, match="nothing would serve"):
        _run_fleet(OUTPUTS, regions=regions)


# ---- schemas --------------------------------------------------------------------------------------------


def test_crd_value_validations_stay_open_while_the_structure_stays_closed():
    """Gateway API `addresses` items (gateway-api v1.6.1 standard CRD, as here): oneOf {type IPAddress, value an IP}
    / {type not IPAddress}. Closing the branch that names only `type` refused every named address with a value
    (GKE's per-region addresses, F1); fails on the old strict()."""
    item = {
        "type": "object",
        "properties": {"type": {"type": "string"}, "value": {"type": "string"}},
        "oneOf": [
            {"properties": {"type": {"enum": ["IPAddress"]}, "value": {"anyOf": [{"format": "ipv4"}]}}},
            {"properties": {"type": {"not": {"enum": ["IPAddress"]}}}},
        ],
    }
    schema = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "spec": {"type": "object", "properties": {"a": {"type": "array", "items": item}}},
        },
    }
    named = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"a": [{"type": "example.com/r", "value": "r"}]},
    }
    assert validate_custom(named, strict(schema)) == []
    unknown = copy.deepcopy(named)
    unknown["spec"]["a"][0]["typo"] = 1
    assert validate_custom(unknown, strict(schema))  # the structure stays closed


def test_the_documented_policy_schemas_refuse_a_misspelt_field():
    (policy,) = _objects(recorded(FLEET_FILE, True), "GCPBackendPolicy")
    assert validate_custom(policy, SCHEMAS[("networking.gke.io/v1", "GCPBackendPolicy")]) == []
    policy["spec"]["default"]["balanceMode"] = policy["spec"]["default"].pop("balancingMode")
    assert validate_custom(policy, SCHEMAS[("networking.gke.io/v1", "GCPBackendPolicy")])


# ---- the smoke check of a fleet stack -------------------------------------------------------------------------


def test_the_smoke_check_confirms_the_import_and_the_programmed_gateway(fake_kubectl, capsys):
    """scripts/smoke.py on a fleet stack file, against recorded kubectl answers (tests/fixtures/kubectl/fleet-*):
    Gateway status.conditions[type=Programmed] (Gateway API v1 GatewayConditionType), the GCPInferencePoolImport
    GKE creates in the config cluster from the exports (F1)."""
    import smoke

    fake_kubectl("fleet-healthy")
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 0
    out = capsys.readouterr().out
    assert "| import | llama8b/llama8b | ok |" in out and "| gateway | llama8b/fleet-gateway | ok | Programmed |" in out
    fake_kubectl("fleet-broken")
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 1
    out = capsys.readouterr().out
    assert "| import | llama8b/llama8b | FAIL |" in out and "not Programmed: Pending" in out
    assert "gcloud container fleet ingress describe" in out


def test_every_fleet_resource_is_inside_the_fleet_component_and_named_after_it():
    rec = recorded(FLEET_FILE, True)
    (component,) = [r for r in rec.resources if not r.custom]
    assert component.type == "tpu-serving:fleet:Fleet"
    for r in rec.resources:
        if r is not component:
            assert r.parent == component.urn and r.name.startswith(f"{component.name}-"), (r.type, r.name)
