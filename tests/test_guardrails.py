"""stacks/guardrails.py, the rules the policy pack runs (policy/), as pure functions: every shipped stack's registered
resources pass every rule, and a stack changed to break one fails it with a message naming the resource, the field
and what is allowed.

Sources of the outside rules:
- Service type LoadBalancer, spec.loadBalancerSourceRanges: https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/
- GKE's internal load balancer annotation networking.gke.io/load-balancer-type: Internal:
  https://cloud.google.com/kubernetes-engine/docs/how-to/internal-load-balancing
- GKE GatewayClasses (external vs rilb): https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities
- GCPBackendPolicy spec.default.securityPolicy (Cloud Armor) and spec.targetRef (the policy's namespace): the CRD,
  ../shared/reference/gke-crds (tested below); https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources
- a CustomResourcePatch's type token `kubernetes:<apiVersion>:<Kind>Patch`: pulumi-kubernetes 4.34.2
  sdk/python/pulumi_kubernetes/apiextensions/CustomResourcePatch.py (the installed SDK, read below)
- HTTPRoute parentRefs/backendRefs group and kind defaults: kubernetes-sigs/gateway-api@v1.6.1
  config/crd/standard/gateway.networking.k8s.io_httproutes.yaml (../shared/reference/crds, read below)
- the router chart's GCPBackendPolicy (named after the release, targeting its InferencePool): llm-d/llm-d-router@v0.10.0
  config/charts/llm-d-router-gateway/templates/gke.yaml, rendered by the pinned Helm below
- control plane endpoints: https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation
- Pod Security Admission labels: https://kubernetes.io/docs/concepts/security/pod-security-admission/
- Cloud Storage roles and IAM conditions: https://cloud.google.com/storage/docs/access-control/iam-roles,
  https://cloud.google.com/storage/docs/access-control/iam#conditions; the log writer group:
  https://cloud.google.com/storage/docs/access-logs
- `protect` as an analyzer sees it: pulumi-policy@v1.21.0 pulumi_policy/policy.py PolicyResourceOptions.protect
  (tests/test_policy_pack.py)
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks import guardrails as g
from stacks.facts import versions
from stacks.model.profiles import PROFILES
from stacks.security import bucket_access, pod_security
from stacks.serving import gateway as serving_gateway
from tests.conftest import ALL_EXAMPLES, STACK_FILES, recorded, recorded_outputs, reference_file, session_run
from tooling.harness.offline import ROOT, Recording, load_stack_file

SHIPPED = sorted({*STACK_FILES, *ALL_EXAMPLES})


def resources(rec: Recording) -> list[g.Resource]:
    return [g.Resource(r.type, r.name, copy.deepcopy(r.inputs), r.protect, r.urn) for r in rec.resources]


def environment(path: Path) -> str:
    return g.environment_of(load_stack_file(path).get("tpu-serving:environment"), path.stem)


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_stack_passes_every_guardrail(path, preview):
    found = g.violations(resources(recorded(path, preview)), environment(path))
    assert not found, "\n".join(v.message for v in found)


# The program's own external gateway, the two ways it admits clients (gateway.sourceRanges: a Cloud Armor policy the
# stack creates; gateway.cloudArmorPolicy: an existing one), in the environments where no-public-endpoint refuses.
EXTERNAL = {
    "source-ranges": {"exposure": "external", "sourceRanges": ["203.0.113.0/24"]},
    "cloud-armor-policy": {"exposure": "external", "cloudArmorPolicy": "clients-only"},
}


def external_recording(kind: str, env: str, preview: bool) -> Recording:
    slo = ROOT / "examples/vllm-staging-slo/Pulumi.vllm-staging-slo.yaml"
    config = copy.deepcopy(load_stack_file(slo))
    config["tpu-serving:environment"] = env
    config["tpu-serving:gateway"] = {**config["tpu-serving:gateway"], **EXTERNAL[kind]}
    return session_run(config, stack=f"slo-{env}", preview=preview, stack_outputs=recorded_outputs(slo))


def external_variant(kind: str, env: str, preview: bool) -> list[g.Resource]:
    return resources(external_recording(kind, env, preview))


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
@pytest.mark.parametrize("env", ["staging", "prod"])
@pytest.mark.parametrize("kind", sorted(EXTERNAL))
def test_the_programs_external_gateway_passes_every_guardrail(kind, env, preview):
    res = external_variant(kind, env, preview)
    gateway = res[first(res, g.GATEWAY)]
    assert gateway.props["spec"]["gatewayClassName"] in g.EXTERNAL_GATEWAY_CLASSES
    assert g.gateway_backends(gateway, res), "the route to the workload's InferencePool is linked to the Gateway"
    found = g.violations(res, env)
    assert not found, "\n".join(v.message for v in found)


def _drop(res: list[g.Resource], type_: str) -> list[g.Resource]:
    return [r for r in res if r.type != type_]


def _retarget(res: list[g.Resource], **target: str) -> list[g.Resource]:
    i = first(res, f"{g.BACKEND_POLICY}Patch")
    return changed(res, i, lambda p: p["spec"].update(targetRef={**p["spec"]["targetRef"], **target}))


def _move(res: list[g.Resource]) -> list[g.Resource]:
    return changed(res, first(res, f"{g.BACKEND_POLICY}Patch"), lambda p: p["metadata"].update(namespace="elsewhere"))


@pytest.mark.parametrize(
    "breaks",
    [
        lambda res: _drop(res, f"{g.BACKEND_POLICY}Patch"),  # no Cloud Armor on the backend
        lambda res: _retarget(res, name="another-pool"),  # a policy on another backend
        lambda res: _retarget(res, kind="Service"),  # on a Service of the pool's name, not the pool
        _move,  # a policy in another namespace than the backend's
    ],
    ids=["no-policy", "other-backend", "other-kind", "other-namespace"],
)
@pytest.mark.parametrize("env", ["staging", "prod"])
def test_an_external_gateways_backend_without_its_own_cloud_armor_policy_fails(env, breaks):
    found = [v for v in g.violations(breaks(external_variant("source-ranges", env, False)), env)]
    assert [v.rule for v in found] == [g.PUBLIC_ENDPOINT], [v.message for v in found]
    assert "HTTPRoute chat/chat" in found[0].message and "InferencePool chat/chat" in found[0].message
    assert g.ENFORCEMENT[g.PUBLIC_ENDPOINT][env] == g.MANDATORY


def test_a_whole_gcpbackendpolicy_on_the_backend_counts_as_the_patch_does():
    res = external_variant("cloud-armor-policy", "prod", False)
    i = first(res, f"{g.BACKEND_POLICY}Patch")
    res[i] = g.Resource(g.BACKEND_POLICY, res[i].name, res[i].props, res[i].protect, res[i].urn)
    assert not [v.message for v in g.violations(res, "prod")]


def test_the_patch_type_token_is_the_sdks():
    import pulumi_kubernetes

    source = (Path(pulumi_kubernetes.__file__).parent / "apiextensions/CustomResourcePatch.py").read_text()
    assert 'f"kubernetes:{api_version}:{kind}Patch"' in source
    assert g.BACKEND_POLICY_TYPES[1] == f"{g.BACKEND_POLICY}Patch"


def test_the_reference_defaults_are_the_httproute_crds():
    crd = yaml.safe_load(reference_file("crds/gateway.networking.k8s.io_httproutes.yaml").read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    parent = spec["parentRefs"]["items"]["properties"]
    backend = spec["rules"]["items"]["properties"]["backendRefs"]["items"]["properties"]
    assert (parent["group"]["default"], parent["kind"]["default"]) == g.PARENT_DEFAULT
    assert (backend["group"]["default"], backend["kind"]["default"]) == g.BACKEND_DEFAULT


def test_the_armor_patch_names_the_charts_policy_and_its_target():
    """The patch's metadata and targetRef are the router chart's GCPBackendPolicy's (the chart at its tag rendered by
    the pinned Helm), so the patch changes that object without a conflicting field (server-side apply)."""
    from tests.helm_charts import render_release, unavailable

    rec = external_recording("source-ranges", "staging", False)
    res = resources(rec)
    releases = rec.of_type("kubernetes:helm.sh/v3:Release")
    (router,) = [r for r in releases if r.inputs["chart"] == versions.LLM_D_ROUTER.chart]
    why = unavailable(versions.LLM_D_ROUTER.chart, versions.LLM_D_ROUTER.version)
    if why:
        pytest.skip(why)
    (policy,) = [o for o in render_release(router) if o["kind"] == "GCPBackendPolicy"]
    patch = res[first(res, f"{g.BACKEND_POLICY}Patch")].props
    assert patch["metadata"] == {k: policy["metadata"][k] for k in ("name", "namespace")}
    assert patch["spec"]["targetRef"] == policy["spec"]["targetRef"]


# ---- each rule broken: the stack fails it, naming the resource, the field and what is allowed ----------------


def first(res: list[g.Resource], type_: str, where: Callable[[g.Resource], bool] = lambda r: True) -> int:
    return next(i for i, r in enumerate(res) if r.type == type_ and where(r))


def changed(res: list[g.Resource], i: int, change: Callable[[dict[str, Any]], None], **fields: Any) -> list[g.Resource]:
    props = copy.deepcopy(dict(res[i].props))
    change(props)
    out = list(res)
    out[i] = g.Resource(res[i].type, res[i].name, props, fields.get("protect", res[i].protect), res[i].urn)
    return out


def _public_service(p):
    p["metadata"]["annotations"] = {}


def _open_service(p):
    p["metadata"]["annotations"] = {}
    p["spec"]["loadBalancerSourceRanges"] = ["0.0.0.0/0"]


def _external_gateway(p):
    p["spec"]["gatewayClassName"] = "gke-l7-regional-external-managed"


def _public_control_plane(p):
    p.pop("masterAuthorizedNetworksConfig", None)
    p["privateClusterConfig"] = {**p.get("privateClusterConfig", {}), "enablePrivateEndpoint": False}


def _pss_unpinned(p):
    p["metadata"]["labels"][f"{pod_security.LABEL_PREFIX}enforce-version"] = "latest"


def _pss_missing(p):
    p["metadata"]["labels"].pop(f"{pod_security.LABEL_PREFIX}enforce")


def _pss_looser(p):
    p["metadata"]["labels"][f"{pod_security.LABEL_PREFIX}enforce"] = "privileged"


def _whole_bucket(p):
    p.pop("condition")


def _wider_condition(p):
    p["condition"] = {**p["condition"], "expression": 'resource.name.startsWith("projects/_/buckets/")'}


def _latest(p):
    pod_security_spec = next(pod_security.pod_specs(p["spec"]))
    pod_security_spec["containers"][0]["image"] = "vllm/vllm-tpu:latest"


def _untagged(p):
    next(pod_security.pod_specs(p["spec"]))["containers"][0]["image"] = "us-docker.pkg.dev/p/r/server"


def _off_matrix(p):
    image = next(pod_security.pod_specs(p["spec"]))["containers"][0]["image"]
    repository = image.split("@")[0].rsplit(":", 1)[0]
    next(pod_security.pod_specs(p["spec"]))["containers"][0]["image"] = f"{repository}:some-other-tag"


def _inference_pool_crd(p):
    p["metadata"]["name"] = "inferencepools.inference.networking.k8s.io"


def _gmp_namespace(p):
    p["metadata"]["name"] = "gmp-system"


def is_lb(r):
    return (r.props.get("spec") or {}).get("type") == "LoadBalancer"


def has_condition(r):
    return bool(r.props.get("condition"))


def has_pods(r):
    return r.type.startswith("kubernetes:apps/v1:Deployment") and any(pod_security.pod_specs(r.props.get("spec") or {}))


def restricted_ns(r):
    return r.props["metadata"]["labels"].get(f"{pod_security.LABEL_PREFIX}enforce") == "restricted"


SAXML, ALL_IN_ONE, SLO = (
    ROOT / "examples/saxml-175b/Pulumi.saxml-175b.yaml",
    ROOT / "examples/all-in-one/Pulumi.all-in-one.yaml",
    ROOT / "examples/vllm-staging-slo/Pulumi.vllm-staging-slo.yaml",
)
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
BROKEN = {
    # (stack, environment, type, which, change, rule, words the message must hold)
    "internet-facing-service": (
        SAXML,
        "staging",
        g.SERVICE,
        is_lb,
        _public_service,
        g.PUBLIC_ENDPOINT,
        ["spec.type LoadBalancer", "networking.gke.io/load-balancer-type: Internal"],
    ),
    "service-open-to-all": (
        SAXML,
        "prod",
        g.SERVICE,
        is_lb,
        _open_service,
        g.PUBLIC_ENDPOINT,
        ["['0.0.0.0/0']", "not 0.0.0.0/0"],
    ),
    "external-gateway-no-armor": (
        SLO,
        "staging",
        g.GATEWAY,
        lambda r: True,
        _external_gateway,
        g.PUBLIC_ENDPOINT,
        ["spec.gatewayClassName gke-l7-regional-external-managed", "spec.default.securityPolicy"],
    ),
    "public-control-plane": (
        SLO,
        "staging",
        g.CLUSTER,
        lambda r: True,
        _public_control_plane,
        g.PUBLIC_ENDPOINT,
        ["privateClusterConfig.enablePrivateEndpoint", "masterAuthorizedNetworksConfig"],
    ),
    "pss-version-latest": (
        SLO,
        "dev",
        g.NAMESPACE,
        lambda r: True,
        _pss_unpinned,
        g.POD_SECURITY,
        ["enforce-version='latest'", "v1.<minor>"],
    ),
    "pss-no-enforce": (
        SLO,
        "dev",
        g.NAMESPACE,
        lambda r: True,
        _pss_missing,
        g.POD_SECURITY,
        ["enforce=None", "privileged, baseline, restricted"],
    ),
    "grant-whole-bucket": (
        SLO,
        "dev",
        g.BUCKET_IAM_MEMBER,
        has_condition,
        _whole_bucket,
        g.BUCKET_GRANTS,
        ["condition.expression None", "one prefix", "<prefix>/"],
    ),
    "grant-wider-condition": (
        SLO,
        "dev",
        g.BUCKET_IAM_MEMBER,
        has_condition,
        _wider_condition,
        g.BUCKET_GRANTS,
        ['startsWith("projects/_/buckets/")', "one prefix"],
    ),
    "image-latest": (
        SLO,
        "prod",
        g.SERVICE.replace("core/v1:Service", "apps/v1:Deployment"),
        has_pods,
        _latest,
        g.IMAGES,
        [".image:", "tag latest", "version tag or @sha256 digest"],
    ),
    "image-untagged": (
        SLO,
        "staging",
        "kubernetes:apps/v1:Deployment",
        has_pods,
        _untagged,
        g.IMAGES,
        ["tag none", "digest"],
    ),
    "image-off-matrix": (
        SLO,
        "prod",
        "kubernetes:apps/v1:Deployment",
        has_pods,
        _off_matrix,
        g.IMAGES,
        ["some-other-tag", "version matrix's pin"],
    ),
    "gke-managed-namespace": (
        SLO,
        "dev",
        g.NAMESPACE,
        lambda r: True,
        _gmp_namespace,
        g.GKE_MANAGED,
        ["Namespace gmp-system", "never create"],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_stack_breaking_a_rule_fails_it_with_its_message(case):
    path, env, type_, which, change, rule, words = BROKEN[case]
    res = resources(recorded(path, True))
    i = first(res, type_, which)
    found = [v for v in g.violations(changed(res, i, change), env) if v.rule == rule]
    assert found, case
    message = found[0].message
    assert found[0].resource.name == res[i].name and repr(res[i].name) in message, message
    for word in words:
        assert word in message, (word, message)
    assert g.ENFORCEMENT[rule][env] in (g.ADVISORY, g.MANDATORY)


def test_a_namespace_enforcing_less_than_its_pods_pass_fails():
    res = resources(recorded(SLO, True))
    ns = res[first(res, "kubernetes:apps/v1:Deployment", has_pods)].props["metadata"]["namespace"]
    i = first(res, g.NAMESPACE, lambda r: r.props["metadata"]["name"] == ns)
    assert restricted_ns(res[i])
    found = [v for v in g.violations(changed(res, i, _pss_looser), "dev") if v.rule == g.POD_SECURITY]
    assert [v.resource.name for v in found] == [res[i].name]
    assert "enforce=privileged" in found[0].message and "allowed: restricted" in found[0].message


def test_a_pod_needing_more_than_its_namespace_enforces_fails():
    # admission would reject the stack's own pods (https://kubernetes.io/docs/concepts/security/pod-security-admission/)
    res = resources(recorded(SLO, True))
    i = first(res, "kubernetes:apps/v1:Deployment", has_pods)
    ns = res[i].props["metadata"]["namespace"]

    def privileged(p):
        next(pod_security.pod_specs(p["spec"]))["containers"][0].setdefault("securityContext", {})["privileged"] = True

    found = [v for v in g.violations(changed(res, i, privileged), "dev") if v.rule == g.POD_SECURITY]
    assert any(f"namespace {ns} pass is privileged" in v.message for v in found), found


def test_an_unprotected_tpu_pool_cluster_or_bucket_fails_in_prod_and_warns_in_staging():
    res = resources(recorded(ALL_IN_ONE, True))
    for type_ in (g.CLUSTER, g.BUCKET, g.NODE_POOL):
        i = first(res, type_, g.must_protect)
        broken = list(res)
        broken[i] = g.Resource(res[i].type, res[i].name, res[i].props, False, res[i].urn)
        for env, level in (("prod", g.MANDATORY), ("staging", g.ADVISORY)):
            found = [v for v in g.violations(broken, env) if v.rule == g.PROTECTED]
            assert [v.resource.name for v in found] == [res[i].name], (type_, env)
            assert "resource option protect is false" in found[0].message and "protect=True" in found[0].message
            assert g.ENFORCEMENT[g.PROTECTED][env] == level
        assert not [v for v in g.violations(broken, "dev") if v.rule == g.PROTECTED]


def test_a_cpu_pool_needs_no_protection():
    pool = g.Resource(g.NODE_POOL, "system", {"nodeConfig": {"machineType": "e2-standard-4"}})
    tpu = g.Resource(g.NODE_POOL, "tpu", {"nodeConfig": {"machineType": "ct6e-standard-4t"}})
    assert g.protect_problem(pool, "prod") is None and g.protect_problem(tpu, "prod")


# ---- the program and the pack read the rules the same way -----------------------------------------------------


def test_the_environments_the_rule_protects_are_the_profiles_that_protect():
    assert {name for name, p in PROFILES.items() if p.protect} == set(g.PROTECTED_ENVIRONMENTS)
    assert set(PROFILES) == set(g.ENVIRONMENTS)


# ---- the program refuses what the pack refuses and warns about what it warns about (one table, guardrails.level) --


@pytest.mark.parametrize("env", g.ENVIRONMENTS)
def test_the_program_and_the_pack_judge_a_matrix_image_at_another_tag_at_the_same_level(env):
    from tooling.scans import fuzz

    other = "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.4"
    assert g.image_problem(other)  # the pack's images-pinned fails it
    config = copy.deepcopy(load_stack_file(ROOT / "Pulumi.dev.yaml"))
    config["tpu-serving:environment"] = env
    config["tpu-serving:workloads"] = [
        {"type": "jetstream", "name": "gemma", "pool": "v5e-2x4", "model": "gemma-7b", "checkpoint": "gs://ckpt/gemma",
         "images": {"http": other}}
    ]  # fmt: skip
    level = g.ENFORCEMENT[g.IMAGES][env]
    if level == g.MANDATORY:
        with pytest.raises(Exception, match=r"workloads\[0\]\.images\.http: .*not the version matrix's pin"):
            fuzz.parse(config, env)
    else:
        warnings = fuzz.parse(config, env).warnings
        assert any("images.http" in w and "version matrix's pin" in w for w in warnings) == (level == g.ADVISORY)


@pytest.mark.parametrize("env", g.ENVIRONMENTS)
def test_the_whole_internet_is_refused_by_the_program_where_the_pack_refuses_it(env):
    from stacks.model.config_model import GatewayConfig
    from stacks.pieces import gateway as gateway_piece

    config = GatewayConfig(enabled=True, exposure="external", source_ranges=["0.0.0.0/0"])
    refused = [p for p in gateway_piece.problems(config, env) if "whole internet" in p.message]
    assert bool(refused) == (g.ENFORCEMENT[g.PUBLIC_ENDPOINT][env] == g.MANDATORY)
    assert g.level(g.PUBLIC_ENDPOINT, "production") == g.MANDATORY  # an environment it does not know: strictest


def test_the_gateways_external_class_is_one_the_rule_calls_external_and_internal_is_not():
    # gke_managed G1 (https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities): rilb is the
    # regional internal Application Load Balancer, regional-external-managed the regional external one
    classes = serving_gateway.GATEWAY_CLASSES
    assert classes["external"] in g.EXTERNAL_GATEWAY_CLASSES
    assert classes["internal"] not in g.EXTERNAL_GATEWAY_CLASSES


def test_the_cloud_armor_field_the_rule_reads_is_the_gcpbackendpolicy_crds():
    # GKE's GCPBackendPolicy CRD (gke_managed G4): spec.default.securityPolicy, "a reference to a GCP Cloud Armor
    # SecurityPolicy resource"
    crd = yaml.safe_load(reference_file("gke-crds/networking.gke.io_gcpbackendpolicies.yaml").read_text())
    for version in crd["spec"]["versions"]:
        spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        assert spec["default"]["properties"]["securityPolicy"]["type"] == "string"
        assert "Cloud Armor" in spec["default"]["properties"]["securityPolicy"]["description"]
    assert crd["spec"]["names"]["kind"] == g.BACKEND_POLICY.rsplit(":", 1)[1]
    assert f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}" in g.BACKEND_POLICY


def test_a_condition_is_a_prefix_only_as_the_program_writes_it():
    expression = bucket_access.prefix_expression("b", "models/llama/")
    assert g.prefix_of(expression, "b") == "models/llama/"
    assert g.prefix_of(expression, "other") is None
    assert g.prefix_of(expression + " || true", "b") is None


def test_every_matrix_image_is_pinned_by_the_rule():
    for key, pin in versions.IMAGES.items():
        assert g.image_problem(pin) is None, key
        assert g.image_problem(pin.split("@")[0]) is None, key  # the tag the digest was read from


@pytest.mark.parametrize(
    "tags,config,stack,env",
    [
        ({}, {}, "prod", "prod"),
        ({}, {}, "my-staging-eu", "staging"),
        ({}, {}, "llama-dev", "dev"),
        ({}, {}, "team-a", "prod"),  # unknown: the strictest
        ({}, {"tpu-serving:environment": "dev"}, "prod-like-name", "dev"),
    ],
)
def test_the_environment_is_the_configured_one_else_the_stack_name_else_prod(tags, config, stack, env):
    assert g.environment_of(config.get("tpu-serving:environment"), stack) == env


@pytest.mark.parametrize(
    ("annotation", "class_name", "external"),
    [
        (None, None, True),  # no class: GKE's Ingress controller makes an external Application Load Balancer
        ("gce", None, True),
        ("gce", "nginx", True),  # ingressClassName ignored when the annotation is set
        ("gce-internal", None, False),
        (None, "nginx", False),  # another controller's (its Service is what is exposed)
        ("nginx", None, False),
    ],
)
def test_an_ingress_gke_makes_external_fails_outside_dev(annotation, class_name, external):
    # https://cloud.google.com/kubernetes-engine/docs/concepts/ingress, "GKE Ingress controller behavior"
    meta: dict[str, Any] = {"name": "web", "namespace": "serve"}
    if annotation:
        meta["annotations"] = {"kubernetes.io/ingress.class": annotation}
    spec: dict[str, Any] = {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}
    if class_name:
        spec["ingressClassName"] = class_name
    found = g.violations([g.Resource(g.INGRESS, "web", {"metadata": meta, "spec": spec})], "prod")
    assert [v.rule for v in found] == ([g.PUBLIC_ENDPOINT] if external else []), [v.message for v in found]
    if external:
        assert "Ingress serve/web" in found[0].message and "gce-internal" in found[0].message


def test_unknown_values_are_never_guessed():
    svc = g.Resource(g.SERVICE, "s", {"spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": g.UNKNOWN}})
    assert g.service_endpoint_problem(svc) is None


# ---- one definition per rule: the program's checks and the pack read the same function -------------------------


@pytest.mark.parametrize("endpoint", ["dns", "ip"])
@pytest.mark.parametrize("private_nodes", [True, False], ids=["private-nodes", "public-nodes"])
@pytest.mark.parametrize("cidrs", [[], ["10.0.0.0/8"], ["10.0.0.0/8", "0.0.0.0/0"]], ids=["none", "listed", "open"])
def test_the_clusters_warning_and_the_pack_read_the_control_plane_the_same_way(endpoint, private_nodes, cidrs):
    """What components/cluster.py sends for each setting, read by the pack's rule, and the program's own warning
    (stacks/pieces/cluster.py warnings) agree: both from guardrails.control_plane_open."""
    from types import SimpleNamespace

    from components.cluster import control_plane_access
    from stacks.model.config_model import ClusterConfig
    from stacks.pieces import cluster as cluster_piece

    config = ClusterConfig(
        control_plane_endpoint=endpoint,
        private_nodes=private_nodes,
        master_authorized_networks=[{"cidrBlock": c} for c in cidrs],
    )
    args = control_plane_access(SimpleNamespace(config=config, authorized_networks=tuple((c, c) for c in cidrs)))
    authorized = args["master_authorized_networks_config"]
    props = {
        "privateClusterConfig": {"enablePrivateEndpoint": args["private_cluster_config"].enable_private_endpoint},
        "masterAuthorizedNetworksConfig": None
        if authorized is None
        else {"cidrBlocks": [{"cidrBlock": b.cidr_block} for b in authorized.cidr_blocks or []]},
    }
    pack = g.cluster_endpoint_problem(g.Resource(g.CLUSTER, "cluster", props))
    warned = [w for w in cluster_piece.warnings(config, "dev") if "control plane endpoint accepts" in w]
    assert bool(pack) == bool(warned), (pack, warned)
    assert bool(pack) == ("0.0.0.0/0" in cidrs or (endpoint == "ip" and not cidrs))


def test_saxml_and_the_gateway_read_the_whole_internet_as_the_pack_does():
    import inspect

    from stacks.pieces import gateway as gateway_piece
    from workloads.saxml import checks as saxml_checks

    for module in (saxml_checks, gateway_piece):
        source = inspect.getsource(module)
        assert "guardrails.whole_internet(" in source and "prefixlen == 0" not in source, module.__name__
    assert g.whole_internet("::/0") and g.whole_internet("0.0.0.0/0") and not g.whole_internet("0.0.0.0/1")


# Every grant resource of the provider the rule reads: the installed pulumi-gcp SDK's resource classes named
# *IAMMember/*IAMBinding/*IAMPolicy in its storage, projects, folder and organizations modules, each one token.
def test_the_grant_types_are_every_iam_resource_of_the_providers_modules():
    import importlib
    import inspect

    import pulumi
    import pulumi_gcp

    root = Path(pulumi_gcp.__file__).parent
    # the SDK names a resource's file after its class in snake case (bucket_iam_member.py: BucketIAMMember)
    classes = {
        (module, name)
        for module in g.GRANT_MODULES
        for path in (root / module).glob("*iam*.py")
        for name, cls in inspect.getmembers(
            importlib.import_module(f"pulumi_gcp.{module}.{path.stem}"), inspect.isclass
        )
        if issubclass(cls, pulumi.CustomResource) and name.endswith(("IAMMember", "IAMBinding", "IAMPolicy"))
    }
    assert {(t.split(":")[1].split("/")[0], t.rsplit(":", 1)[1]) for t in g.GRANT_TYPES} == classes
    assert {g.BUCKET_IAM_MEMBER, g.PROJECT_IAM_POLICY, "gcp:folder/iAMMember:IAMMember"} <= set(g.GRANT_TYPES)
    assert {"gcp:organizations/iAMBinding:IAMBinding", "gcp:organizations/iAMPolicy:IAMPolicy"} <= set(g.GRANT_TYPES)


PREFIXED = bucket_access.prefix_expression("stack-b", "models/x/")
MEMBER = "serviceAccount:w@p.iam.gserviceaccount.com"


def policy_data(role: str, expression: str | None) -> str:
    import json

    binding: dict[str, Any] = {"role": role, "members": [MEMBER]}
    if expression:
        binding["condition"] = {"title": "t", "expression": expression}
    return json.dumps({"bindings": [binding]})


STACK_BUCKET = g.Resource(g.BUCKET, "bucket", {"name": "stack-b"})
GRANTS = {
    # (resource, violates)
    "member-prefixed": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "stack-b", "role": bucket_access.OBJECT_USER,
                        "member": MEMBER, "condition": {"expression": PREFIXED}}), False),
    "binding-whole-stack-bucket": (g.Resource(g.BUCKET_IAM_BINDING, "b", {"bucket": "stack-b",
                                   "role": bucket_access.OBJECT_VIEWER, "members": [MEMBER]}), True),
    "binding-prefixed": (g.Resource(g.BUCKET_IAM_BINDING, "b", {"bucket": "stack-b", "role": "roles/storage.objectAdmin",
                         "members": [MEMBER], "condition": {"expression": PREFIXED}}), False),
    "policy-whole-stack-bucket": (g.Resource(g.BUCKET_IAM_POLICY, "p", {"bucket": "stack-b",
                                  "policyData": policy_data("roles/storage.objectUser", None)}), True),
    "policy-prefixed": (g.Resource(g.BUCKET_IAM_POLICY, "p", {"bucket": "stack-b",
                        "policyData": policy_data("roles/storage.objectUser", PREFIXED)}), False),
    "project-member": (g.Resource(g.PROJECT_IAM_MEMBER, "pm", {"project": "p", "role": bucket_access.OBJECT_VIEWER,
                       "member": MEMBER}), True),
    "project-binding": (g.Resource(g.PROJECT_IAM_BINDING, "pb", {"project": "p", "role": "roles/storage.admin",
                        "members": [MEMBER]}), True),
    "project-policy": (g.Resource(g.PROJECT_IAM_POLICY, "pp", {"project": "p",
                       "policyData": policy_data("roles/storage.objectCreator", None)}), True),
    "project-member-prefixed": (g.Resource(g.PROJECT_IAM_MEMBER, "pm", {"project": "p",
                                "role": bucket_access.OBJECT_VIEWER, "member": MEMBER,
                                "condition": {"expression": PREFIXED}}), False),
    "project-other-role": (g.Resource(g.PROJECT_IAM_MEMBER, "pm", {"project": "p", "role": "roles/logging.logWriter",
                           "member": MEMBER}), False),
    "read-of-another-bucket": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "user-models",
                               "role": bucket_access.OBJECT_VIEWER, "member": MEMBER}), False),
    "write-to-another-bucket": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "user-models",
                                "role": bucket_access.OBJECT_USER, "member": MEMBER}), True),
    "another-buckets-prefix-on-the-stack-bucket": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "stack-b",
        "role": bucket_access.OBJECT_USER, "member": MEMBER,
        "condition": {"expression": bucket_access.prefix_expression("other", "x/")}}), True),
    "log-writer-group": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "stack-b", "role": "roles/storage.objectCreator",
                         "member": g.GOOGLE_GROUPS[0]}), False),
    # above the project: a folder's or an organization's grant reaches every bucket under it
    "folder-member": (g.Resource("gcp:folder/iAMMember:IAMMember", "fm", {"folder": "folders/1",
                      "role": bucket_access.OBJECT_VIEWER, "member": MEMBER}), True),
    "folder-binding": (g.Resource("gcp:folder/iAMBinding:IAMBinding", "fb", {"folder": "folders/1",
                       "role": "roles/storage.objectAdmin", "members": [MEMBER]}), True),
    "folder-policy": (g.Resource("gcp:folder/iAMPolicy:IAMPolicy", "fp", {"folder": "folders/1",
                      "policyData": policy_data("roles/storage.objectUser", None)}), True),
    "organization-member": (g.Resource("gcp:organizations/iAMMember:IAMMember", "om", {"orgId": "123",
                            "role": bucket_access.OBJECT_VIEWER, "member": MEMBER}), True),
    "organization-binding": (g.Resource("gcp:organizations/iAMBinding:IAMBinding", "ob", {"orgId": "123",
                             "role": "roles/storage.admin", "members": [MEMBER]}), True),
    "organization-policy": (g.Resource("gcp:organizations/iAMPolicy:IAMPolicy", "op", {"orgId": "123",
                            "policyData": policy_data("roles/storage.objectCreator", None)}), True),
    # the basic roles and a managed folders' admin hold object permissions
    "project-editor": (g.Resource(g.PROJECT_IAM_MEMBER, "pe", {"project": "p", "role": "roles/editor",
                       "member": MEMBER}), True),
    "project-owner": (g.Resource(g.PROJECT_IAM_BINDING, "po", {"project": "p", "role": "roles/owner",
                      "members": [MEMBER]}), True),
    "folder-admin-on-the-stack-bucket": (g.Resource(g.BUCKET_IAM_MEMBER, "fa", {"bucket": "stack-b",
                                         "role": "roles/storage.folderAdmin", "member": MEMBER}), True),
    # the public: never, not even a read of another bucket
    "all-users-read-of-another-bucket": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "user-models",
                                         "role": bucket_access.OBJECT_VIEWER, "member": "allUsers"}), True),
    "all-authenticated-users-binding": (g.Resource(g.BUCKET_IAM_BINDING, "b", {"bucket": "user-models",
                                        "role": bucket_access.LEGACY_BUCKET_READER,
                                        "members": [MEMBER, "allAuthenticatedUsers"]}), True),
    "all-users-prefixed": (g.Resource(g.BUCKET_IAM_MEMBER, "m", {"bucket": "stack-b",
                           "role": bucket_access.OBJECT_VIEWER, "member": "allUsers",
                           "condition": {"expression": PREFIXED}}), True),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(GRANTS))
def test_every_way_an_identity_gets_object_access_is_prefix_scoped(case):
    resource, violates = GRANTS[case]
    found = [v for v in g.violations([STACK_BUCKET, resource], "dev") if v.rule == g.BUCKET_GRANTS]
    assert bool(found) == violates, [v.message for v in found]
    if violates:
        message = found[0].message
        if case.startswith("all-"):
            assert "makes objects public" in message and "never allUsers or allAuthenticatedUsers" in message
            return
        assert repr(resource.name) in message and "allowed: a grant on the bucket with a condition" in message
        above = {"projects": "the project p (every", "folder": "the folder folders/1 (every", "organizations":
                 "the organization 123 (every"}  # fmt: skip
        module = resource.type.split(":")[1].split("/")[0]
        assert (above.get(module, "~") in message) == (resource.type in g.PROJECT_GRANT_TYPES), message
