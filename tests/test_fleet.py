"""The fleet stack kind (issue 29; docs/fleet.md): regional stacks export their InferencePools, a fleet stack serves
them through GKE's multi-cluster Inference Gateway (Preview). Sources: stacks/fleets/fleet.py F1-F5, which these tests
cite:
- F1 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/setup-multicluster-inference-gateway
- F2 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/customize-backend-multicluster-inference-gateway
- F4 https://cloud.google.com/compute/docs/reference/rest/beta/backendServices (Backend.capacityScaler)
- G1, G2: GKE's pages on exporting a Pod's metric through an AutoscalingMetric (quoted in DOCUMENTED_EXPORT below)
"""

from __future__ import annotations

import copy
import json
import re
import sys
import typing
from typing import Any

import pulumi
import pytest

from stacks.facts import catalog
from stacks.fleets import fleet
from stacks.model.config_model import ClusterConfig
from stacks.problems import ConfigError
from tests import test_smoke
from tests.conftest import make_config, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT, Recording, load_stack_file, parse_config, run_program
from tooling.oracles.documented_schemas import SCHEMAS
from tooling.oracles.schemas import strict, validate_custom, validate_objects
from tooling.review import fleet_render, render

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
    program exports after a first `up` (python -m tooling.review.fleet_render examples/fleet re-records them)."""
    assert len(REGIONAL_FILES) == 2
    for path in REGIONAL_FILES:
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        assert fleet_render.record(path) == OUTPUTS[stack], (
            f"re-record: .venv/bin/python -m tooling.review.fleet_render {EXAMPLE}"
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
    from tooling.oracles.crds import crd_source

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


def test_the_kv_cache_metric_a_vllm_backend_exports_is_one_its_pinned_image_serves():
    """The gauge a fleet's spill-over balances on is the vLLM plan's own (workloads/vllm/metrics.py), and the
    pinned image's record (stacks/facts/versions.py IMAGE_RECORDS, vllm-project/vllm@v0.27.0 loggers.py) lists it."""
    from stacks.facts.versions import IMAGES, image_record

    cfg = parse_config(_multi_host_regional("vllm"), "fleet-us-east5")
    (workload,) = cfg.gateway_workloads
    backend = workload.gateway_backend()
    assert backend is not None and backend.kv_cache_metric == "vllm:kv_cache_usage_perc"
    record = image_record(IMAGES["vllmTpu"])
    assert record is not None and backend.kv_cache_metric in record.serves.metrics


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
    assert fleet.EXPORT_MIN_GKE_VERSION in problems["tpu-serving:cluster.minMasterVersion"]
    assert "RAPID" in problems["tpu-serving:cluster.releaseChannel"]  # the default channel, REGULAR


# Each page of GKE's that documents exporting a Pod's metric through an AutoscalingMetric, with its requirement for
# the cluster as the page words it (the sentence under "Requirements for the Pods"); F1, the multi-cluster gateway's
# own minimum, too.
DOCUMENTED_EXPORT = {
    "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-load-balancer": (
        "GKE 1.35.1-gke.1396000 or later."
    ),
    "https://cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics": (
        "GKE 1.34.1-gke.1127000 or later with clusters in the Rapid channel."
    ),
    "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling": (
        "GKE 1.35.1-gke.1396000 or later with clusters in the Rapid channel."
    ),
    "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/setup-multicluster-inference-gateway": (
        "GKE 1.34.1-gke.1127000 or later."
    ),
}
REQUIREMENT = re.compile(
    r"GKE (?P<version>\d+\.\d+\.\d+-gke\.\d+) or later(?: with clusters in the (?P<channel>\w+) channel)?\."
)


def documented(version: str, channel: str) -> bool:
    """A cluster at `version` ('' unset) on `channel` meets every page's requirement (the export is used only where
    all of GKE's statements about it hold)."""
    for sentence in DOCUMENTED_EXPORT.values():
        need = REQUIREMENT.fullmatch(sentence)
        assert need, sentence
        if not version or catalog.version_tuple(version) < catalog.version_tuple(need["version"]):
            return False
        if need["channel"] and channel != need["channel"].upper():
            return False
    return True


def _regional_admits(version: str, channel: str) -> bool:
    cluster = {
        "releaseChannel": channel,
        "hpaProfile": "PERFORMANCE",
        **({"minMasterVersion": version} if version else {}),
    }
    config = load_stack_file(REGIONAL_FILES[0])
    config["tpu-serving:cluster"] = {**config["tpu-serving:cluster"], **cluster}
    if not version:
        del config["tpu-serving:cluster"]["minMasterVersion"]
    try:
        parse_config(config, REGIONAL_FILES[0].name.removeprefix("Pulumi.").removesuffix(".yaml"))
    except ConfigError as err:
        paths = {p.path for p in err.problems}
        assert paths <= {"tpu-serving:cluster.minMasterVersion", "tpu-serving:cluster.releaseChannel"}, paths
        return False
    return True


def test_the_export_is_admitted_exactly_where_every_gke_page_documents_it():
    """Issue 34 finding 6's class: a regional stack may export, and a fleet may take a region, only on a cluster every
    one of GKE's pages on the export documents (a version and, where the page names one, a channel). Over every
    release channel the config accepts (ClusterConfig.releaseChannel) and the versions around each page's minimum;
    both sides: the regional stack's checks and the fleet's checks of its recorded output."""
    channels = typing.get_args(ClusterConfig.model_fields["release_channel"].annotation)
    assert set(channels) >= {"RAPID", "REGULAR", "STABLE"}
    versions = {""}
    for sentence in DOCUMENTED_EXPORT.values():
        need = REQUIREMENT.fullmatch(sentence)
        assert need, sentence
        major_minor, _, build = need["version"].rpartition(".")
        versions |= {need["version"], f"{major_minor}.{int(build) - 1}", f"{major_minor}.{int(build) + 1}"}
        versions.add(".".join(need["version"].split(".")[:2]))  # a minor alone is only a floor of that minor
    grid = [(version, channel) for version in sorted(versions) for channel in channels]
    admitted = {(version, channel) for version, channel in grid if documented(version, channel)}
    assert admitted and {c for _, c in admitted} == {"RAPID"}
    assert {(v, c) for v, c in grid if _regional_admits(v, c)} == admitted
    assert {(v, c) for v, c in grid if not fleet.export_problems(v, c)} == admitted
    # the fleet reads the channel and version from each region's output
    outputs = copy.deepcopy(OUTPUTS)
    outputs["fleet-europe-west4"]["fleet"].update(releaseChannel="REGULAR", minMasterVersion="1.34.1-gke.1127000")
    with pytest.raises(
        pulumi.RunError, match=r"below 1\.35\.1-gke\.1396000[\s\S]*releaseChannel 'REGULAR' is not RAPID"
    ):
        _run_fleet(outputs)
    _run_fleet(copy.deepcopy(OUTPUTS))  # the example's regions, recorded: admitted


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
    eu.update(networkCreated=True, regionalProxySubnet="create", releaseChannel="STABLE")
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
        f"below {fleet.EXPORT_MIN_GKE_VERSION}",
        "releaseChannel 'STABLE' is not RAPID",
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


FAKE_PULUMI = """import json, os, sys
args = sys.argv[1:]
name, stack = args[2], args[args.index("--stack") + 1]
answers = json.loads(open(os.environ["FAKE_PULUMI_ANSWERS"]).read())
if f"{stack} {name}" not in answers:
    sys.exit(f"error: no stack output {name!r} in {stack}")
print(answers[f"{stack} {name}"])
"""


@pytest.fixture
def fake_pulumi(tmp_path, monkeypatch):
    """A stand-in `pulumi` on PATH answering `pulumi stack output <name> ... --stack <stack>` from a dict."""

    def use(answers: dict[str, str]) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        (tmp_path / "fake_pulumi.py").write_text(FAKE_PULUMI)
        script = bin_dir / "pulumi"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{tmp_path / "fake_pulumi.py"}" "$@"\n')
        script.chmod(0o755)
        (tmp_path / "answers.json").write_text(json.dumps(answers))
        monkeypatch.setenv("FAKE_PULUMI_ANSWERS", str(tmp_path / "answers.json"))

    return use


def test_the_smoke_check_reads_the_fleet_output_and_checks_the_import_gateway_and_every_export(
    fake_kubectl, fake_pulumi, capsys
):
    """scripts/smoke.py on a fleet stack file reads the fleet's last `up` (`pulumi stack output fleet --json`), not
    the offline run: a route only the real output has is checked too. Against recorded kubectl answers
    (tests/fixtures/kubectl/fleet-*): Gateway status.conditions[type=Programmed] (Gateway API v1
    GatewayConditionType), the GCPInferencePoolImport GKE creates in the config cluster (F1), and in every region's
    cluster the pool's `networking.gke.io/export: "True"` (F1; GKE documents no import status listing the clusters
    it merged, so each region is checked at its export)."""
    import smoke

    routing = recorded(FLEET_FILE, True).outputs["fleet"]
    real = copy.deepcopy(routing)
    real["routes"]["llama8b/other"] = copy.deepcopy(real["routes"]["llama8b/llama8b"])
    answers = {"fleet fleet": json.dumps(real)}
    answers |= {
        f"{r['stack']} kubeconfig": "apiVersion: v1" for r in routing["routes"]["llama8b/llama8b"]["regions"].values()
    }
    fake_pulumi(answers)
    fake_kubectl("fleet-healthy")
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 1  # llama8b/other is not imported
    out = capsys.readouterr().out
    assert "| import | llama8b/llama8b | ok |" in out and "| gateway | llama8b/fleet-gateway | ok | Programmed |" in out
    assert "| import | llama8b/other | FAIL |" in out
    assert "| export | us-east5 llama8b/llama8b | ok | exported |" in out
    assert "| export | europe-west4 llama8b/llama8b | ok | exported |" in out
    fake_pulumi({**answers, "fleet fleet": json.dumps(routing)})
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 0
    fake_kubectl("fleet-broken")
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 1
    out = capsys.readouterr().out
    assert "| import | llama8b/llama8b | FAIL |" in out and "not Programmed: Pending" in out
    assert "gcloud container fleet ingress describe" in out
    assert "| export | europe-west4 llama8b/llama8b | FAIL | networking.gke.io/export is None" in out
    fake_pulumi({})  # the fleet stack was never `up`: smoke cannot run
    assert smoke.main([str(FLEET_FILE), "--kubeconfig", "unused"]) == 2


def test_every_fleet_resource_is_inside_the_fleet_component_and_named_after_it():
    rec = recorded(FLEET_FILE, True)
    (component,) = [r for r in rec.resources if not r.custom]
    assert component.type == "tpu-serving:fleet:Fleet"
    for r in rec.resources:
        if r is not component:
            assert r.parent == component.urn and r.name.startswith(f"{component.name}-"), (r.type, r.name)


# ---- the reviewer's findings (APIs, IAM, custom-metric selectors, HPA profile, singletons, leaders) -------------

F3 = "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/enabling-multi-cluster-gateways"
G1 = "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling"


def test_docs_list_every_api_and_the_service_agent_role_the_fleet_needs():
    """F1 "Before you begin" (Compute, Kubernetes Engine, Network Services, Autoscaling; Model Armor for its
    optional security checks), F3 "Multi-cluster Gateway requirements" (GKE Hub, Cloud Service Mesh, Multi-cluster
    Services, Multi Cluster Ingress) and F3 "Grant IAM permissions required by the Gateway controller": the fleet
    enables no API (as the regional stacks), so docs/fleet.md step 0 lists them all."""
    text = (ROOT / "docs" / "fleet.md").read_text()
    start = text.index("\n0. ")
    step0 = text[start : text.index("\n1. ", start)]
    for api in (*fleet.REQUIRED_APIS, *fleet.OPTIONAL_APIS, "roles/gkehub.admin"):
        assert api in step0, api
    assert "gcloud services enable " + " ".join(fleet.REQUIRED_APIS) in step0
    assert fleet.INGRESS_AGENT_ROLE in text


def test_the_ingress_service_agent_gets_container_admin_before_the_config_cluster_objects():
    """F3 "Grant IAM permissions required by the Gateway controller": service-<project number>@gcp-sa-
    multiclusteringress.iam.gserviceaccount.com gets roles/container.admin; the config cluster's objects wait."""
    from tooling.harness.offline import PROJECT_NUMBER

    rec = recorded(FLEET_FILE, True)
    (grant,) = rec.of_type("gcp:projects/iAMMember:IAMMember")
    assert grant.inputs["role"] == "roles/container.admin"
    assert grant.inputs["project"] == "my-tpu-project"
    assert grant.inputs["member"] == (
        f"serviceAccount:service-{PROJECT_NUMBER}@gcp-sa-multiclusteringress.iam.gserviceaccount.com"
    )
    assert rec.one("gcp:gkehub/feature:Feature").urn in grant.dependencies
    k8s_objects = [
        r for r in rec.resources if r.type.startswith("kubernetes:") and r.custom and "Provider" not in r.type
    ]
    assert k8s_objects and all(grant.urn in r.dependencies for r in k8s_objects if r.name.endswith("gateway"))
    (gateway,) = [r for r in k8s_objects if r.name == "fleet-gateway"]
    assert grant.urn in gateway.dependencies


def _multi_host_regional(workload_type: str, replicas: int = 2) -> dict[str, Any]:
    """The fleet example's us-east5 stack serving from a multi-host v6e 4x4 pool (4 hosts a replica)."""
    config = load_stack_file(REGIONAL_FILES[0] if "us-east5" in REGIONAL_FILES[0].name else REGIONAL_FILES[1])
    config["tpu-serving:tpuPools"] = [
        {
            **config["tpu-serving:tpuPools"][0],
            "name": "v6e-4x4",
            "topology": "4x4",
            "slices": replicas,
            "autoscaling": None,
        }
    ]
    config["tpu-serving:tpuPools"][0].pop("autoscaling")
    config["tpu-serving:workloads"] = [
        {**config["tpu-serving:workloads"][0], "type": workload_type, "pool": "v6e-4x4", "replicas": replicas}
    ]
    return config


@pytest.mark.parametrize("workload_type", ["vllm"])  # the types whose gateway backends name a KV-cache metric
def test_every_exporting_type_selects_its_kv_cache_metric_pods_by_simple_leader_labels(workload_type):
    """G1 "Requirements": AutoscalingMetric pod label selector keys only of letters, digits, `-`, `_` (no
    `leaderworkerset.sigs.k8s.io/name`); the labels are on the leader template only (F1: leaders only), so every
    replica's leader (replicas 2) is selected and no worker."""
    import re

    from stacks.reports.fleet_output import regional_output

    config = _multi_host_regional(workload_type)
    rec = run_program(config, stack="fleet-us-east5", preview=True)
    (metric,) = _objects(rec, "AutoscalingMetric")
    selector = metric["spec"]["selector"]["matchLabels"]
    assert selector and all(re.fullmatch(r"[A-Za-z0-9_-]+", key) for key in selector), selector
    (lws,) = _objects(rec, "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    leader = template["leaderTemplate"]["metadata"]["labels"]
    worker = template["workerTemplate"]["metadata"]["labels"]
    assert selector.items() <= leader.items() and not selector.items() <= worker.items()
    assert lws["spec"]["replicas"] == 2
    # the fleet accepts the recorded export of this stack (and its selectors) as a region
    out = regional_output(parse_config(config, "fleet-us-east5"))
    assert out["exports"][0]["metricSelector"] == selector
    outputs = copy.deepcopy(OUTPUTS)
    outputs["fleet-us-east5"]["fleet"] = out
    outputs["fleet-europe-west4"]["fleet"]["exports"][0].update(
        {k: out["exports"][0][k] for k in ("selector", "metricSelector", "hostsPerReplica", "model", "servedName")}
    )
    _run_fleet(outputs)


def test_the_fleet_refuses_a_metric_selector_gke_does_not_accept():
    """G1: an export whose AutoscalingMetric selector keys hold `/` or `.` (or that has none) is refused."""
    outputs = copy.deepcopy(OUTPUTS)
    outputs["fleet-us-east5"]["fleet"]["exports"][0]["metricSelector"] = {"leaderworkerset.sigs.k8s.io/name": "m"}
    del outputs["fleet-europe-west4"]["fleet"]["exports"][0]["metricSelector"]
    with pytest.raises(pulumi.RunError) as err:
        _run_fleet(outputs)
    assert "label keys ['leaderworkerset.sigs.k8s.io/name']" in str(err.value)
    assert "no metricSelector" in str(err.value)


def test_only_the_leader_template_label_counts_as_leader_only():
    """kubernetes-sigs/lws@v0.10.0 charts/lws/crds/disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml: the
    selector "matching one pod per LWS group (the leader)" is leaderworkerset.sigs.k8s.io/worker-index=0; the pod
    index apps.kubernetes.io/pod-index=0 is one pod of group 0 only, so with replicas > 1 it is refused."""
    assert "apps.kubernetes.io/pod-index" not in fleet.LEADER_ONLY_LABELS
    for selector, refused in (
        ({"app": "llama8b", "apps.kubernetes.io/pod-index": "0"}, True),
        ({"app": "llama8b", "leaderworkerset.sigs.k8s.io/worker-index": "0"}, False),
        ({"app": "llama8b", "role": "leader"}, False),
    ):
        outputs = copy.deepcopy(OUTPUTS)
        for out in outputs.values():
            leaders = {"app": "llama8b", "role": "leader"}
            out["fleet"]["exports"][0].update(hostsPerReplica=4, selector=selector, metricSelector=leaders)
        if refused:
            with pytest.raises(pulumi.RunError, match="also matches workers"):
                _run_fleet(outputs)
        else:
            _run_fleet(outputs)


def test_an_exporting_stack_needs_the_performance_hpa_profile_and_the_fleet_checks_it():
    """F1 creates its clusters with --hpa-profile=performance; G1 "Requirements": custom metrics need HPA with the
    performance profile. The regional stack refuses another profile with its other problems; the fleet refuses an
    output that does not carry PERFORMANCE."""
    config = load_stack_file(REGIONAL_FILES[0])
    config["tpu-serving:cluster"] = {**config["tpu-serving:cluster"], "hpaProfile": "NONE"}
    config["tpu-serving:gateway"] = {**config["tpu-serving:gateway"], "exposure": "external"}
    with pytest.raises(ConfigError) as err:
        parse_config(config, "fleet-us-east5")
    paths = {p.path: p.message for p in err.value.problems}
    assert "PERFORMANCE" in paths["tpu-serving:cluster.hpaProfile"] and "tpu-serving:gateway.exposure" in paths
    outputs = copy.deepcopy(OUTPUTS)
    outputs["fleet-europe-west4"]["fleet"]["hpaProfile"] = ""
    with pytest.raises(pulumi.RunError, match=r"regions\[1\]\.stack: cluster.hpaProfile 'unset' is not PERFORMANCE"):
        _run_fleet(outputs)


def test_a_region_may_use_its_existing_global_proxy_subnet_and_names_exactly_one():
    """F1: one GLOBAL_MANAGED_PROXY subnet per region and VPC: a region whose VPC has one names it and the fleet
    creates none there; naming both or neither, a malformed one or one of another region is refused."""
    regions = copy.deepcopy(load_stack_file(FLEET_FILE)["tpu-serving:fleet"]["regions"])
    regions[1] = {
        "stack": regions[1]["stack"],
        "existingProxySubnet": "projects/my-tpu-project/regions/europe-west4/subnetworks/shared-proxy",
    }
    rec = _run_fleet(OUTPUTS, regions=regions)
    assert [s.inputs["region"] for s in rec.of_type("gcp:compute/subnetwork:Subnetwork")] == ["us-east5"]
    bad = copy.deepcopy(regions)
    bad[0]["existingProxySubnet"] = "Not_A_Name"  # and its proxySubnetCidr: both
    bad[1]["existingProxySubnet"] = "projects/my-tpu-project/regions/us-east5/subnetworks/shared-proxy"
    with pytest.raises(pulumi.RunError) as err:
        _run_fleet(OUTPUTS, regions=bad)
    text = str(err.value)
    assert "regions[0]: set exactly one of proxySubnetCidr" in text
    assert "regions[0].existingProxySubnet: 'Not_A_Name' is neither" in text
    assert "regions[1].existingProxySubnet" in text and "region 'europe-west4'" in text


def test_the_documented_autoscaling_metric_schema_refuses_a_selector_key_gke_does_not_accept():
    """G1 "Requirements": pod label selector keys of letters, digits, hyphen and underscore only."""
    schema = SCHEMAS[("autoscaling.gke.io/v1beta1", "AutoscalingMetric")]
    metric = fleet.autoscaling_metric_manifest("m", "ns", {"app": "m", "role": "leader"}, 8000, "vllm:x")
    assert validate_custom(metric, schema) == []
    metric["spec"]["selector"]["matchLabels"]["leaderworkerset.sigs.k8s.io/name"] = "m"
    assert validate_custom(metric, schema)
