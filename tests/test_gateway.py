"""tpu-serving:gateway, the GKE Inference Gateway: config rules, the platform pieces (Gateway API, HTTP load
balancing, proxy-only subnet, InferencePool CRD) and the one Gateway, as registered and as the CRDs accept them.

Sources:
- GKE Gateway controller requirements (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources):
  VPC-native clusters only; "If you are using the regional or cross-region GatewayClasses, you must enable a
  proxy-only subnet"; "Your cluster must have the HttpLoadBalancing add-on enabled".
- GKE Inference Gateway guide (https://cloud.google.com/kubernetes-engine/docs/how-to/deploy-gke-inference-gateway,
  with its llm-d edition https://llm-d.ai/docs/resources/gateway/gke): steps "Configure a proxy-only subnet",
  "Enable Gateway API in your cluster"; external class gke-l7-regional-external-managed (also
  llm-d/llm-d-router@v0.10.0:config/manifests/gateway/gke/gateway.yaml).
- pulumi-gcp 10.2.0 container/_inputs.py ClusterGatewayApiConfigArgs(channel: CHANNEL_DISABLED |
  CHANNEL_EXPERIMENTAL | CHANNEL_STANDARD), ClusterAddonsConfigHttpLoadBalancingArgs(disabled);
  compute/subnetwork.py purpose REGIONAL_MANAGED_PROXY, role "only used when purpose is REGIONAL_MANAGED_PROXY".
"""

from __future__ import annotations

from typing import Any

import pytest

from stacks.config import ConfigError, parse_stack_config
from stacks.facts import gke_managed
from stacks.facts.versions import CRDS, LLM_D_ROUTER
from stacks.serving import gateway
from tests.conftest import make_config as base_config
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.oracles import chart_objects
from tooling.oracles.schemas import crd_dir, validate_objects
from workloads.registry import WORKLOAD_TYPES

CLUSTER = "gcp:container/cluster:Cluster"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
NODE_POOL = "gcp:container/nodePool:NodePool"

needs_crds = pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
# The first GKE version that installs the InferencePool CRD (llm-d.ai/docs/dev/resources/gateway/install-crds:
# "GKE automatically installs all GA CRDs for Gateway API and Gateway API Inference Extension on GKE versions
# 1.34.0-gke.1626000 or later"); an enabled gateway needs at least it.
INFERENCE_POOL_GKE = "1.34.0-gke.1626000"


def make_config(**changes: Any) -> dict[str, Any]:
    """conftest.make_config with a control plane new enough for the gateway (INFERENCE_POOL_GKE), unless the
    cluster config says otherwise."""
    cfg = base_config(**changes)
    cfg["tpu-serving:cluster"] = {"minMasterVersion": INFERENCE_POOL_GKE, **cfg.get("tpu-serving:cluster", {})}
    return cfg


def parse(gateway_config: dict[str, Any], network: dict[str, Any] | None = None):
    cfg = make_config(tpu_serving__gateway=gateway_config)
    if network is not None:
        cfg["tpu-serving:cluster"] = {**cfg["tpu-serving:cluster"], "network": network}
    return parse_config(cfg)


def parse_config(cfg: dict[str, Any]):
    raw = {k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("tpu-serving:")}
    return parse_stack_config(
        raw,
        stack="dev",
        pulumi_project="tpu-serving",
        gcp_project=cfg["gcp:project"],
        region=cfg["gcp:region"],
        workload_types=WORKLOAD_TYPES,
    )


def problems(gateway_config: dict[str, Any], network: dict[str, Any] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse(gateway_config, network)
    return [str(p) for p in err.value.problems]


EXISTING = {"create": False, "network": "shared", "subnetwork": "shared-us-east5", "nat": False}


def test_defaults_off_and_internal():
    cfg = parse({})
    assert cfg.gateway.enabled is False and cfg.gateway.exposure == "internal"
    assert cfg.proxy_subnet_created is False


def test_external_needs_source_ranges_or_a_cloud_armor_policy():
    assert problems({"enabled": True, "exposure": "external"}) == [
        "tpu-serving:gateway.exposure: external needs sourceRanges (client CIDRs; every other source is denied) or "
        "cloudArmorPolicy (an existing regional Cloud Armor policy); the gateway is never open to the internet by "
        "default"
    ]
    assert parse({"enabled": True, "exposure": "external", "sourceRanges": ["203.0.113.0/24"]}).gateway.source_ranges
    assert parse({"enabled": True, "exposure": "external", "cloudArmorPolicy": "llm-clients"}).gateway


def test_every_gateway_problem_at_once():
    found = problems(
        {
            "enabled": True,
            "exposure": "internal",
            "sourceRanges": ["203.0.113.7/24"],
            "cloudArmorPolicy": "Bad_Name",
            "proxySubnetCidr": "10.0.8.0/27",
        }
    )
    joined = "\n".join(found)
    assert "gateway.sourceRanges[0]: '203.0.113.7/24' is not a valid IPv4 CIDR block" in joined
    assert "gateway.cloudArmorPolicy: 'Bad_Name' is not a security policy name" in joined
    assert "gateway.sourceRanges: only for exposure: external" in joined
    assert "gateway.cloudArmorPolicy: only for exposure: external" in joined
    # a proxy-only subnet is /26 or larger (https://cloud.google.com/load-balancing/docs/proxy-only-subnets)
    assert "gateway.proxySubnetCidr: 10.0.8.0/27 is smaller than /26" in joined
    assert "gateway.proxySubnetCidr: 10.0.8.0/27 overlaps cluster.network.nodesCidr 10.0.0.0/20" in joined


@pytest.mark.parametrize("environment", ["staging", "prod"])
def test_an_external_gateway_open_to_the_internet_is_dev_only(environment):
    """The model endpoint behind the gateway has no authentication (as Saxml's HTTP API, which refuses /0 outside
    dev): 0.0.0.0/0 on an external gateway is refused in staging and prod, accepted in dev."""
    gw = {"enabled": True, "exposure": "external", "sourceRanges": ["203.0.113.0/24", "0.0.0.0/0"]}
    cfg = make_config(tpu_serving__gateway=gw, tpu_serving__environment=environment)
    with pytest.raises(ConfigError) as err:
        parse_config(cfg)
    assert [str(p) for p in err.value.problems] == [
        "tpu-serving:gateway.sourceRanges[1]: '0.0.0.0/0' opens the external gateway's model endpoint (no "
        "authentication) to the whole internet; allowed only in dev (environment is "
        f"'{environment}'): list the CIDRs of its clients"
    ]
    assert parse(gw).gateway.source_ranges == ["203.0.113.0/24", "0.0.0.0/0"]  # dev


def test_both_source_ranges_and_policy_refused():
    assert problems(
        {"enabled": True, "exposure": "external", "sourceRanges": ["203.0.113.0/24"], "cloudArmorPolicy": "p"}
    ) == [
        "tpu-serving:gateway.cloudArmorPolicy: give sourceRanges or cloudArmorPolicy, not both (a backend has one "
        "security policy)"
    ]


def test_existing_network_must_say_whether_it_has_a_proxy_only_subnet():
    (found,) = problems({"enabled": True}, EXISTING)
    assert found.startswith("tpu-serving:gateway.proxySubnet: required when cluster.network.create is false")
    assert parse({"enabled": True, "proxySubnet": "existing"}, EXISTING).proxy_subnet_created is False
    assert parse({"enabled": True, "proxySubnet": "create"}, EXISTING).proxy_subnet_created is True
    (found,) = problems({"enabled": True, "proxySubnet": "existing"})
    assert found.startswith("tpu-serving:gateway.proxySubnet: 'existing' needs cluster.network.create: false")


def test_disabled_gateway_adds_nothing(run):
    rec = run(make_config())
    gke = rec.one(CLUSTER).inputs
    assert "gatewayApiConfig" not in gke and "httpLoadBalancing" not in gke["addonsConfig"]
    assert not rec.of_type(GATEWAY) and not [r for r in rec.of_type(SUBNET) if "proxy" in r.name]
    assert "gateway" not in rec.outputs


@pytest.fixture(scope="module")
def internal():
    from tooling.harness.offline import run_program

    return run_program(make_config(tpu_serving__gateway={"enabled": True}), stack="dev")


def test_cluster_gets_gateway_api_standard_and_http_load_balancing(internal):
    gke = internal.one(CLUSTER).inputs
    assert gke["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert gke["addonsConfig"]["httpLoadBalancing"] == {"disabled": False}
    assert gke["networkingMode"] == "VPC_NATIVE"  # Gateway API needs a VPC-native cluster


def test_proxy_only_subnet_in_the_stack_vpc_and_region(internal):
    proxy = internal.one(SUBNET, "network-proxy-only").inputs
    assert proxy["purpose"] == "REGIONAL_MANAGED_PROXY" and proxy["role"] == "ACTIVE"
    assert proxy["region"] == "us-east5" and proxy["ipCidrRange"] == "10.24.0.0/23"
    vpc = internal.one("gcp:compute/network:Network")
    assert proxy["network"] == internal.one(SUBNET, "network-subnet").inputs["network"]
    assert vpc.name == "network-vpc"
    # a proxy-only subnet takes no Private Google Access or secondary ranges
    assert "privateIpGoogleAccess" not in proxy and "secondaryIpRanges" not in proxy


def test_existing_network_with_existing_proxy_subnet_creates_none(run):
    cfg = make_config(
        tpu_serving__gateway={"enabled": True, "proxySubnet": "existing"}, tpu_serving__cluster={"network": EXISTING}
    )
    rec = run(cfg)
    assert not [r for r in rec.of_type(SUBNET) if "proxy" in r.name]
    assert rec.one(GATEWAY)


def test_one_gateway_internal_class_waits_for_subnet_and_system_pool(internal):
    gw = internal.one(GATEWAY)
    assert gw.inputs["spec"]["gatewayClassName"] == "gke-l7-rilb"
    assert gw.inputs["metadata"] == {
        "name": "inference-gateway",
        "namespace": "inference-gateway",
        "labels": {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "tpu-serving"},
    }
    (listener,) = gw.inputs["spec"]["listeners"]
    assert listener["protocol"] == "HTTP" and listener["port"] == 80
    # no gateway-served workload: routes only from the Gateway's own namespace, which holds none
    assert listener["allowedRoutes"] == {"namespaces": {"from": "Same"}}
    deps = set(gw.dependencies)
    assert internal.one(SUBNET, "network-proxy-only").urn in deps
    assert internal.one(NODE_POOL, "cluster-system").urn in deps
    assert internal.one("kubernetes:core/v1:Namespace", "gateway-ns").urn in deps


def test_gateway_namespace_enforces_restricted(internal):
    ns = internal.one("kubernetes:core/v1:Namespace", "gateway-ns").inputs["metadata"]
    assert ns["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_stack_never_applies_the_inference_pool_crd(internal):
    # GKE installs it (INFERENCE_POOL_GKE); applying it too answers AlreadyExists, or with upsertExistingObjects
    # the stack would own GKE's CRD and a destroy would delete it with every InferencePool (issue 22 item 2).
    assert not internal.of_type(CONFIG_FILE)
    assert not internal.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
    assert gke_managed.installed_from(gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, frozenset()) == (
        INFERENCE_POOL_GKE
    )
    # what InferencePools are validated against is still the pinned release's file
    assert CRDS["gatewayApiInferenceExtension"]["1.6.0"][0].file_name == (
        "inference.networking.k8s.io_inferencepools.yaml"
    )


@pytest.mark.parametrize(
    ("cluster", "given"),
    [
        ({}, "unset (the release channel's default version, unknown before the cluster exists)"),
        ({"minMasterVersion": "1.34"}, "'1.34'"),
        ({"minMasterVersion": "1.34.0-gke.1625999"}, "'1.34.0-gke.1625999'"),
    ],
)
def test_gateway_needs_a_control_plane_gke_installs_the_inference_pool_crd_on(cluster, given):
    # An unpinned version is refused too: the channel's default may be older than INFERENCE_POOL_GKE, and a
    # "1.34" floor admits 1.34.0 patches before it.
    with pytest.raises(ConfigError) as err:
        parse_config(base_config(tpu_serving__gateway={"enabled": True}, tpu_serving__cluster=cluster))
    assert [str(p) for p in err.value.problems] == [
        f"tpu-serving:cluster.minMasterVersion: {given} with gateway.enabled: set it to {INFERENCE_POOL_GKE} or "
        "later, a version the REGULAR channel offers; GKE installs the InferencePool CRD "
        f"(inferencepools.inference.networking.k8s.io) from {INFERENCE_POOL_GKE} and the stack never applies a CRD "
        "GKE manages"
    ]
    # at or above it, and without the gateway, no problem
    assert parse({"enabled": True}).cluster.min_master_version == INFERENCE_POOL_GKE
    assert parse({}).gateway.enabled is False


def test_external_class(run):
    rec = run(
        make_config(tpu_serving__gateway={"enabled": True, "exposure": "external", "sourceRanges": ["203.0.113.0/24"]})
    )
    assert rec.one(GATEWAY).inputs["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"
    assert rec.outputs["gateway"]["exposure"] == "external"


def test_route_namespaces_selected_by_name():
    assert gateway.route_namespace_selector(["b", "a", "b"]) == {
        "from": "Selector",
        "selector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}]
        },
    }


def test_output_says_how_to_reach_it(internal):
    out = internal.outputs["gateway"]
    assert out["gatewayClassName"] == "gke-l7-rilb"
    assert out["addressCommand"] == (
        "kubectl get gateway inference-gateway -n inference-gateway -o jsonpath='{.status.addresses[0].value}'"
    )
    assert any("gateway.enabled=true but no workload is served" in w for w in internal.warnings)


@needs_crds
@pytest.mark.parametrize("routes", [[], ["serving", "llm"]])
@pytest.mark.parametrize("exposure", ["internal", "external"])
def test_gateway_validates_against_the_gateway_api_crd(exposure, routes):
    report = validate_objects([gateway.gateway_manifest(exposure, routes)], "1.34")
    assert report.errors == [] and report.unchecked == [] and report.checked == 1


@needs_crds
def test_registered_objects_validate(internal):
    objects = kubernetes_objects(internal)
    report = validate_objects(objects, "1.34")
    assert report.errors == [] and report.unchecked == []


# ---- per workload: the endpoint picker chart, InferencePool, HTTPRoute ----------------------------------------

CHARTS = "llm-d-router-v0.10.0/config/charts"
BACKEND = gateway.GatewayBackend(
    name="llama",
    namespace="serving",
    selector={"leaderworkerset.sigs.k8s.io/name": "llama", "role": "leader"},
    port=8000,
    model_server_type="vllm",
    model="meta-llama/Llama-3.1-70B-Instruct",
)


def _chart_defaults() -> tuple[dict[str, Any], str, str]:
    """The gateway chart's values with routerlib's under `router` (Chart.yaml: dependency routerlib, alias router),
    and the raw texts (for keys the chart documents commented out)."""
    import yaml

    from tests.conftest import reference_file

    base = reference_file(CHARTS)
    gateway_text = (base / "llm-d-router-gateway/values.yaml").read_text()
    routerlib_text = (base / "routerlib/values.yaml").read_text()
    values = yaml.safe_load(gateway_text)
    router = yaml.safe_load(routerlib_text)
    for key, value in (values.get("router") or {}).items():
        if value is not None:
            router[key] = value
    values["router"] = router
    return values, gateway_text, routerlib_text


def _missing_keys(given: dict[str, Any], defaults: Any, path: str = "") -> list[str]:
    """Paths of `given` absent from the chart's values; maps whose default is empty ({}: affinity, resources) are
    the user's to fill and are not descended into."""
    missing = []
    for key, value in given.items():
        where = f"{path}.{key}" if path else key
        if not isinstance(defaults, dict) or key not in defaults:
            missing.append(where)
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            missing += _missing_keys(value, defaults[key], where)
    return missing


def test_router_values_keys_exist_in_the_pinned_chart():
    # llm-d/llm-d-router@v0.10.0 config/charts/llm-d-router-gateway/values.yaml and routerlib/values.yaml
    defaults, gateway_text, _ = _chart_defaults()
    values = gateway.router_values(BACKEND, {"tpu-serving/role": "system"})
    missing = _missing_keys(values, defaults)
    # matchLabels is documented commented out ("# matchLabels: # REQUIRED") and required by the chart's
    # validation (templates/_validations.tpl: ".Values.router.modelServers.matchLabels is required")
    assert missing == ["router.modelServers.matchLabels"]
    assert "# matchLabels: # REQUIRED" in gateway_text
    assert defaults["provider"]["name"] == "none" and values["provider"] == {"name": "gke"}


def test_router_values_select_exactly_the_serving_pods_and_port():
    values = gateway.router_values(BACKEND, {"tpu-serving/role": "system"})["router"]
    assert values["modelServers"]["matchLabels"] == BACKEND.selector
    assert values["modelServers"]["targetPorts"] == [{"number": 8000}]
    # HTTP: the chart's GKE HealthCheckPolicy then checks HTTP /health on that port (templates/gke.yaml)
    assert values["modelServers"]["protocol"] == "http" and values["modelServers"]["type"] == "vllm"
    assert values["epp"]["image"] == {
        "registry": "ghcr.io/llm-d",
        "repository": "llm-d-router-endpoint-picker",
        "tag": "v0.10.0",
        "pullPolicy": "IfNotPresent",
    }
    (term,) = values["epp"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term == {"matchExpressions": [{"key": "tpu-serving/role", "operator": "In", "values": ["system"]}]}


def test_inference_pool_is_what_the_chart_renders_and_selects_the_serving_pods():
    pool = gateway.inference_pool_manifest(BACKEND)
    # routerlib templates/_inferencepool.yaml at v0.10.0: name = release, targetPorts from modelServers.targetPorts,
    # appProtocol http, selector.matchLabels, endpointPickerRef <release>-epp port 9002, failureMode FailOpen
    assert pool["metadata"] == {"name": "llama", "namespace": "serving"}
    assert pool["spec"]["selector"] == {"matchLabels": BACKEND.selector}
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    assert pool["spec"]["endpointPickerRef"] == {
        "name": "llama-epp",
        "port": {"number": 9002},
        "failureMode": "FailOpen",
    }
    assert gateway.epp_name("A" * 50) == "a" * 40 + "-epp"


def test_route_sends_the_model_header_to_the_pool_through_the_stack_gateway():
    route = gateway.http_route_manifest(BACKEND)
    (parent,) = route["spec"]["parentRefs"]
    assert (parent["name"], parent["namespace"], parent["sectionName"]) == (
        "inference-gateway",
        "inference-gateway",
        "http",
    )
    (rule,) = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama"}]
    assert rule["matches"][0]["headers"] == [
        {"type": "Exact", "name": "X-Gateway-Base-Model-Name", "value": "meta-llama/Llama-3.1-70B-Instruct"}
    ]
    curl = gateway.curl_command(BACKEND)
    # a plain OpenAI request: the body-based router sets the header from `model` (issue 38: clients send no header)
    assert "/v1/completions" in curl and "X-Gateway" not in curl
    assert '"model": "meta-llama/Llama-3.1-70B-Instruct"' in curl


@needs_crds
def test_pool_and_route_validate_against_their_crds():
    objects = [gateway.inference_pool_manifest(BACKEND), gateway.http_route_manifest(BACKEND)]
    report = validate_objects(objects, "1.34")
    assert report.errors == [] and report.unchecked == [] and report.checked == 2


# ---- vllm workloads through the gateway ----------------------------------------------------------------------

RELEASE = "kubernetes:helm.sh/v3:Release"
ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _multi_host():
    from tests.conftest import EXAMPLES, recorded

    (path,) = [p for p in EXAMPLES if p.parent.name == "vllm-multi-host"]
    return recorded(path, False)


def _pool_values(rec, workload: str) -> dict[str, Any]:
    release = rec.one(RELEASE, f"gateway-{workload}-router").inputs
    assert release["chart"] == "oci://ghcr.io/llm-d/charts/llm-d-router-gateway" and release["version"] == "v0.10.0"
    return release


def test_multi_host_pool_selects_exactly_the_leaders_on_the_server_port():
    rec = _multi_host()
    release = _pool_values(rec, "llama70b")
    assert (release["name"], release["namespace"]) == ("llama70b", "llama70b")
    servers = release["values"]["router"]["modelServers"]
    lws = rec.one(LWS).inputs["spec"]["leaderWorkerTemplate"]
    leader, worker = lws["leaderTemplate"], lws["workerTemplate"]
    # LWS puts leaderworkerset.sigs.k8s.io/name=<lws name> on every pod of the set (leaders and workers); role
    # tells them apart (LeaderWorkerSet API, ../shared/reference/lws); only the leader runs the HTTP server.
    lws_name = rec.one(LWS).inputs["metadata"]["name"]
    leader_pod_labels = {**leader["metadata"]["labels"], "leaderworkerset.sigs.k8s.io/name": lws_name}
    worker_pod_labels = {**worker["metadata"]["labels"], "leaderworkerset.sigs.k8s.io/name": lws_name}
    selector = servers["matchLabels"]
    assert selector.items() <= leader_pod_labels.items()
    assert not selector.items() <= worker_pod_labels.items()
    (server,) = [c for c in leader["spec"]["containers"] if any(p.get("name") == "http" for p in c.get("ports", []))]
    (http,) = [p for p in server["ports"] if p["name"] == "http"]
    assert servers["targetPorts"] == [{"number": http["containerPort"]}]


def test_single_host_pool_selects_the_deployment_pods(run):
    from tests.conftest import EXAMPLES
    from tooling.harness.offline import load_stack_file

    (path,) = [p for p in EXAMPLES if p.name == "Pulumi.vllm-single-host.yaml"]
    cfg = load_stack_file(path)
    cfg["tpu-serving:gateway"] = {"enabled": True}
    cfg["tpu-serving:cluster"] = {**cfg.get("tpu-serving:cluster", {}), "minMasterVersion": INFERENCE_POOL_GKE}
    rec = run(cfg, stack="vllm-single-host")
    servers = _pool_values(rec, "llama70b")["values"]["router"]["modelServers"]
    deployment = rec.one(DEPLOYMENT, "workload-llama70b-deployment").inputs["spec"]
    # the Deployment's pods by their serving labels (VllmPlan.serving_selector), within its own selector's pods
    assert servers["matchLabels"] == {"app": "llama70b", "role": "leader"}
    assert deployment["selector"]["matchLabels"].items() <= servers["matchLabels"].items()
    assert servers["matchLabels"].items() <= deployment["template"]["metadata"]["labels"].items()
    container = deployment["template"]["spec"]["containers"][0]  # the server (then the compile-cache push)
    assert servers["targetPorts"] == [{"number": container["ports"][0]["containerPort"]}]
    route = rec.one(ROUTE).inputs
    # the model name clients send: the workload's model (vLLM serves it under --model without --served-model-name)
    assert route["spec"]["rules"][0]["matches"][0]["headers"][0]["value"] == "meta-llama/Llama-3.1-70B"


def test_route_and_release_order():
    rec = _multi_host()
    route = rec.one(ROUTE)
    release = rec.one(RELEASE, "gateway-llama70b-router")
    assert release.urn in route.dependencies and rec.one(GATEWAY).urn in route.dependencies
    # the chart's InferencePool needs GKE's CRD, installed with the control plane: the release waits for the
    # system pool, which waits for the cluster
    assert rec.one(NODE_POOL, "cluster-system").urn in release.dependencies
    assert rec.one("kubernetes:core/v1:Namespace", "namespaces-llama70b").urn in release.dependencies
    gw = rec.one(GATEWAY).inputs["spec"]["listeners"][0]["allowedRoutes"]
    assert gw["namespaces"]["selector"]["matchExpressions"][0]["values"] == ["llama70b"]
    out = rec.outputs["gateway"]["routes"]["llama70b"]
    assert '"model": "gs://my-tpu-project-models/Llama-3.3-70B-Instruct"' in out["gatewayCurl"]
    assert out["models"] == "gs://my-tpu-project-models/Llama-3.3-70B-Instruct"
    # the body-based router comes after the Gateway it extends; each ConfigMap after the router that reads it
    router = rec.one(RELEASE, "gateway-body-router")
    assert rec.one(GATEWAY).urn in router.dependencies
    assert router.urn in rec.one("kubernetes:core/v1:ConfigMap", "gateway-llama70b-models").dependencies


def _example_config(**gateway_config: Any) -> dict[str, Any]:
    from tests.conftest import EXAMPLES
    from tooling.harness.offline import load_stack_file

    (path,) = [p for p in EXAMPLES if p.parent.name == "vllm-multi-host"]
    cfg = load_stack_file(path)
    cfg["tpu-serving:gateway"] = {**cfg["tpu-serving:gateway"], **gateway_config}
    return cfg


def test_paused_keeps_the_gateway_and_routes_nothing(run):
    cfg = _example_config()
    cfg["tpu-serving:paused"] = True
    rec = run(cfg, stack="vllm-multi-host")
    assert rec.one(GATEWAY)
    assert not rec.of_type(ROUTE) and not [r for r in rec.of_type(RELEASE) if r.name.startswith("gateway-")]
    assert rec.outputs["gateway"]["routes"] == {"llama70b": {}}


def test_workload_opts_out(run):
    cfg = _example_config()
    cfg["tpu-serving:workloads"][0]["gateway"] = False
    rec = run(cfg, stack="vllm-multi-host")
    assert not rec.of_type(ROUTE) and rec.outputs["gateway"]["routes"] == {}
    assert rec.one(GATEWAY).inputs["spec"]["listeners"][0]["allowedRoutes"] == {"namespaces": {"from": "Same"}}


def test_external_source_ranges_become_a_cloud_armor_policy_on_the_pool(run):
    ranges = [f"198.51.{i}.0/24" for i in range(12)]
    rec = run(_example_config(exposure="external", sourceRanges=ranges), stack="vllm-multi-host")
    policy = rec.one("gcp:compute/regionSecurityPolicy:RegionSecurityPolicy").inputs
    assert policy["type"] == "CLOUD_ARMOR" and policy["region"] == "us-west4"
    rules = sorted(policy["rules"], key=lambda r: r["priority"])
    assert [r["match"]["config"]["srcIpRanges"] for r in rules[:2]] == [ranges[:10], ranges[10:]]
    assert [r["action"] for r in rules] == ["allow", "allow", "deny(403)"]
    assert rules[-1]["priority"] == 2147483647 and rules[-1]["match"]["config"]["srcIpRanges"] == ["*"]
    patch = rec.one("kubernetes:networking.gke.io/v1:GCPBackendPolicyPatch").inputs
    # the chart's GCPBackendPolicy is named after the release (templates/gke.yaml)
    assert patch["metadata"] == {"name": "llama70b", "namespace": "llama70b"}
    assert patch["spec"] == {
        "targetRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama70b"},
        "default": {"securityPolicy": policy["name"]},
    }


def test_network_policies_open_the_served_pods_and_the_picker_to_the_load_balancer():
    rec = _multi_host()
    policies = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]
        for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r.inputs["metadata"]["namespace"] == "llama70b"
    }
    assert "default-deny-ingress" in policies
    serving = policies["allow-llama70b-gateway-clients"]
    assert serving["podSelector"] == {"matchLabels": {"app": "llama70b", "role": "leader"}}
    assert serving["ingress"] == [{"ports": [{"protocol": "TCP", "port": 8000}]}]
    picker = policies["allow-llama70b-epp-clients"]
    # the picker's pod labels (routerlib selectorLabels, gateway mode) and its ext-proc and gRPC health ports
    assert picker["podSelector"] == {"matchLabels": {"llm-d-router-gateway": "llama70b-epp"}}
    assert picker["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9002}, {"protocol": "TCP", "port": 9003}]}]


def test_paused_opens_nothing_for_the_gateway(run):
    cfg = _example_config()
    cfg["tpu-serving:paused"] = True
    rec = run(cfg, stack="vllm-multi-host")
    names = {r.inputs["metadata"]["name"] for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")}
    assert not {"allow-llama70b-gateway-clients", "allow-llama70b-epp-clients"} & names


# ---- the InferenceObjective CRD: optional for the endpoint picker, installed by nobody -------------------------

# llm-d/llm-d-router@v0.10.0 (config/crd/bases/llm-d.ai_inferenceobjectives.yaml; the chart's RBAC also names the
# legacy group): neither is GA, and GKE installs only the GA Inference Extension CRD, InferencePool (G3).
INFERENCE_OBJECTIVE_CRDS = ("inferenceobjectives.llm-d.ai", "inferenceobjectives.inference.networking.x-k8s.io")


def _stacks_serving_through_the_gateway() -> list[Any]:
    """The recording of every shipped stack file with a served workload (one endpoint-picker release or more)."""
    from tests.conftest import STACK_FILES, recorded

    recs = [recorded(path, False) for path in STACK_FILES]
    return [rec for rec in recs if [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == LLM_D_ROUTER.chart]]


def test_the_endpoint_picker_starts_without_the_inference_objective_crd():
    # The picker watches InferenceObjective only if the API server serves it, at llm-d/llm-d-router@v0.10.0:
    # - cmd/epp/runner/runner.go:360-363: with --pool-name (no --endpoint-selector) startCrdReconcilers is true and
    #   controllerCfg.PopulateControllerConfig(cfg) asks the discovery API;
    # - pkg/epp/server/controller_config.go:71-80 and 99-110: hasInferenceObjective is set only when
    #   ServerResourcesForGroupVersion lists the kind in llm-d.ai/v1alpha2 (then inference.networking.x-k8s.io/
    #   v1alpha2); a missing group version (any error) leaves it false;
    # - pkg/epp/server/controller_manager.go:45-52 and 79-86: the scheme and the cache's ByObject get the kind only
    #   then, else "InferenceObjective GVK does not exist on the server. Skipping its reconciler/cache.";
    # - pkg/epp/server/runserver.go:134-144: the InferenceObjectiveReconciler is set up only then (the
    #   InferencePool reconciler, lines 126-132, always: GKE installs that CRD, version_needs requires it);
    # - pkg/epp/requestcontrol/director.go:222-233: a request with no objective gets the default priority (0).
    # So without `objectives` (none of the shipped stacks sets them) nothing may render an InferenceObjective (that
    # would need the CRD at helm install) and nothing need apply its CRD; GKE installs neither
    # (stacks/facts/gke_managed.py MANAGED, G3: GA only). With `objectives` the stack applies it first
    # (tests/test_priorities.py).
    assert not {(gke_managed.CRD, name) for name in INFERENCE_OBJECTIVE_CRDS} & gke_managed.never_created()
    recs = _stacks_serving_through_the_gateway()
    assert recs, "no shipped stack serves a workload through the gateway"
    for rec in recs:
        pickers = [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == LLM_D_ROUTER.chart]
        for release in pickers:  # every endpoint picker: pool mode (--pool-name), no InferenceObjective values
            router = release.inputs["values"]["router"]
            assert router["inferencePool"]["create"] is True and "inferenceObjectives" not in router
        assert not rec.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition")
        kinds = {obj.get("kind") for obj in kubernetes_objects(rec)}
        assert "InferenceObjective" not in kinds and "CustomResourceDefinition" not in kinds
    # what the chart installs with those values (a real `helm template`, tooling/data/chart_objects.json)
    installed = chart_objects.installed(LLM_D_ROUTER.chart, LLM_D_ROUTER.version, "llama", "serving")
    assert installed is not None
    assert {o["kind"] for o in installed} >= {"InferencePool", "Deployment", "Role"}
    assert not {"InferenceObjective", "CustomResourceDefinition"} & {o["kind"] for o in installed}


def test_the_pinned_chart_renders_inference_objectives_only_from_its_values():
    # llm-d/llm-d-router@v0.10.0: routerlib/values.yaml `inferenceObjectives: []`, and
    # routerlib/templates/_inferenceobjective.yaml ranges over .Values.router.inferenceObjectives, so values
    # without the key render none; the CRD is v1alpha2 only (not GA, so not GKE's: G3 installs GA CRDs).
    import yaml

    from tests.conftest import reference_file

    defaults, _, _ = _chart_defaults()
    assert defaults["router"]["inferenceObjectives"] == []
    template = reference_file(f"charts/{CHARTS}/routerlib/templates/_inferenceobjective.yaml").read_text()
    assert "{{- range .Values.router.inferenceObjectives }}" in template and "kind: InferenceObjective" in template
    crd = yaml.safe_load(reference_file("crds/llm-d.ai_inferenceobjectives.yaml").read_text())
    assert crd["metadata"]["name"] == INFERENCE_OBJECTIVE_CRDS[0]
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha2"]
