"""Body-based routing (issue 38 #1): one Gateway, one endpoint; the body-based router reads `model` from the request
body and sets the header each workload's HTTPRoute matches; adapter names map to their base model's pool.

Sources:
- GKE "Configure Body-Based Routing" (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-body-based-routing):
  the extension injects X-Gateway-Model-Name from the body's `model`, HTTPRoutes match the injected header.
- kubernetes-sigs/gateway-api-inference-extension@v1.5.0: config/charts/body-based-routing (values.yaml, templates/
  bbr.yaml, gke.yaml), pkg/bbr/plugins/basemodelextractor (base_model_to_header.go: header X-Gateway-Base-Model-Name;
  adapters_store.go: ConfigMap keys baseModel and adapters; configmap_reconciler.go: label
  inference.networking.k8s.io/bbr-managed "true"). Removed at v1.6.0 (commit 24daf87c, #2959).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from stacks.config import ConfigError
from stacks.facts.versions import BODY_BASED_ROUTER
from stacks.serving import gateway
from tests.conftest import reference_dir
from tests.test_gateway import make_config, parse_config
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.oracles import chart_objects
from tooling.oracles.schemas import crd_schema
from tooling.review import model_routing, summary

RELEASE = "kubernetes:helm.sh/v3:Release"
GKE_CRDS = reference_dir() / "gke-crds"


def _vllm(name: str, model: str, **extra: Any) -> dict[str, Any]:
    return {"type": "vllm", "name": name, "pool": "v6e-8", "model": model, "gated": False, **extra}


def two_models(**first: Any) -> dict[str, Any]:
    cfg = make_config(tpu_serving__gateway={"enabled": True})
    cfg["tpu-serving:tpuPools"] = [
        {
            "name": "v6e-8",
            "tpu": "v6e",
            "topology": "2x4",
            "zone": "us-east5-b",
            "capacity": "on-demand",
            "autoscaling": {"minNodes": 0, "maxNodes": 2},
        }
    ]
    cfg["tpu-serving:workloads"] = [
        _vllm("qwen", "Qwen/Qwen3-8B", **first),
        _vllm("gemma", "google/gemma-3-12b-it"),
    ]
    return cfg


# ---- the chart and its values ------------------------------------------------------------------------------------


def _chart_source() -> Path:
    """The chart at its tag, where a chart folder holds it (tooling/oracles/chart_objects.py), else skip."""
    folder = chart_objects.chart_dir(chart_objects.charts_root(), BODY_BASED_ROUTER.chart, BODY_BASED_ROUTER.version)
    if not (folder / "Chart.yaml").is_file():
        pytest.skip(
            f"chart source missing: {folder} (kubernetes-sigs/gateway-api-inference-extension@v1.5.0:"
            "config/charts/body-based-routing; not in ../shared/reference: `make bbr-chart` fetches it from the Go "
            "module proxy into .cache/charts/)"
        )
    return folder


def test_router_values_keys_exist_in_the_pinned_chart():
    defaults = yaml.safe_load((_chart_source() / "values.yaml").read_text())

    def missing(given: Any, base: Any, path: str = "") -> list[str]:
        out = []
        for key, value in given.items():
            where = f"{path}.{key}" if path else key
            if not isinstance(base, dict) or key not in base:
                out.append(where)
            elif isinstance(value, dict) and isinstance(base[key], dict):
                out += missing(value, base[key], where)
        return out

    assert missing(gateway.body_router_values(), defaults) == []
    # the plugins the stack lists are the chart's defaults (the runner's own behaviour)
    assert defaults["bbr"]["plugins"] == [dict(p) for p in gateway.BBR_PLUGINS]
    assert (defaults["bbr"]["port"], defaults["bbr"]["healthCheckPort"]) == (gateway.BBR_PORT, gateway.BBR_HEALTH_PORT)
    assert defaults["bbr"]["name"] == gateway.BBR_NAME


def test_the_chart_renders_a_routing_extension_on_the_stack_gateway_that_validates():
    helm = chart_objects.find_helm()
    if helm is None:
        pytest.skip("no helm (make helm)")
    folder = _chart_source()
    values = yaml.safe_dump(gateway.body_router_values())
    out = subprocess.run(
        [helm, "template", BODY_BASED_ROUTER.release_name, str(folder), "-n", gateway.GATEWAY_NAMESPACE, "-f", "-"],
        input=values,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    objects = [o for o in yaml.safe_load_all(out) if o]
    ext = next(o for o in objects if o["kind"] == "GCPRoutingExtension")
    assert ext["metadata"]["namespace"] == gateway.GATEWAY_NAMESPACE
    assert ext["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway.GATEWAY_NAME}
    ]
    (chain,) = ext["spec"]["extensionChains"]
    assert "RequestBody" in chain["extensions"][0]["supportedEvents"]
    deploy = next(o for o in objects if o["kind"] == "Deployment")
    (container,) = deploy["spec"]["template"]["spec"]["containers"]
    assert container["image"] == f"{BODY_BASED_ROUTER.image_repository}:{BODY_BASED_ROUTER.image_tag}"
    assert deploy["spec"]["template"]["metadata"]["labels"] == gateway.body_router_pod_labels()
    # single-namespace mode: it reads the ConfigMaps of its own namespace only, where the stack writes them
    assert {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in container["env"]
    assert "securityContext" not in container  # hence the namespace's baseline level (GatewayPlan.namespace_level)
    if not GKE_CRDS.is_dir():
        pytest.skip(f"no GKE CRDs at {GKE_CRDS}")
    for obj in objects:
        if obj["apiVersion"].startswith("networking.gke.io/"):
            schema = crd_schema(GKE_CRDS, obj["apiVersion"], obj["kind"])
            assert schema is not None, obj["kind"]
            errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
            assert errors == [], (obj["kind"], errors)


def test_the_recorded_chart_objects_put_the_router_beside_the_gateway():
    installed = chart_objects.installed(
        BODY_BASED_ROUTER.chart, BODY_BASED_ROUTER.version, BODY_BASED_ROUTER.release_name, gateway.GATEWAY_NAMESPACE
    )
    assert installed is not None
    kinds = {(o["kind"], o["namespace"]) for o in installed}
    assert ("GCPRoutingExtension", gateway.GATEWAY_NAMESPACE) in kinds
    assert not any(o["clusterScoped"] for o in installed)  # a namespaced Role: its own namespace's ConfigMaps only
    (service,) = [o for o in installed if o["kind"] == "Service"]
    assert service["ports"] == [{"port": gateway.BBR_PORT, "protocol": "TCP"}]


# ---- the stack: one endpoint, every name to its pool -------------------------------------------------------------


def test_every_model_name_reaches_its_own_pool(run):
    rec = run(two_models())
    found = summary.model_routes(rec)
    assert model_routing.problems(found) == []
    assert {r.name: r.pools for r in found} == {
        "Qwen/Qwen3-8B": ("qwen/qwen",),
        "google/gemma-3-12b-it": ("gemma/gemma",),
    }
    # one body-based router, in the Gateway's namespace, after the Gateway
    (router,) = [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == BODY_BASED_ROUTER.chart]
    assert router.inputs["namespace"] == gateway.GATEWAY_NAMESPACE
    objects = kubernetes_objects(rec)
    ns = next(o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == gateway.GATEWAY_NAMESPACE)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    allow = next(o for o in objects if o["metadata"]["name"] == f"allow-{gateway.BBR_NAME}-clients")
    assert allow["spec"]["ingress"] == [
        {"ports": [{"protocol": "TCP", "port": gateway.BBR_PORT}, {"protocol": "TCP", "port": gateway.BBR_HEALTH_PORT}]}
    ]
    # no client header in the commands the stack prints
    for out in rec.outputs["gateway"]["routes"].values():
        assert "X-Gateway" not in out["gatewayCurl"]


def test_the_replay_fails_on_a_name_no_configmap_names():
    # a route whose model no ConfigMap names is unreachable: the router sets "" (adapters_store.go getBaseModel)
    route = gateway.http_route_manifest(
        gateway.GatewayBackend("a", "ns", {"app": "a"}, 8000, "m", model_server_type="vllm")
    )
    found = model_routing.routes([route], gateway.GATEWAY_NAMESPACE)
    assert [r.pools for r in found] == [()]
    assert "no ConfigMap" in model_routing.problems(found)[0]


def test_a_weighted_split_is_one_route_and_two_rules_are_an_ambiguity():
    """A rollout's two server sets share one route rule with weighted backendRefs (a split by weight, Gateway API
    HTTPRoute backendRefs.weight): the replay shows both pools with their weights and reports nothing; two rules
    matching one model are a choice the Gateway makes silently: reported."""
    current = gateway.GatewayBackend("chat", "ns", {"app": "chat"}, 8000, "m", model_server_type="vllm", weight=90)
    candidate = gateway.GatewayBackend(
        "chat-b", "ns", {"app": "chat-b"}, 8000, "m", model_server_type="vllm", route="chat", weight=10
    )
    split = model_routing.routes([gateway.http_route_manifest(current, candidate)], None)
    assert [r.pools for r in split] == [("ns/chat (weight 90)", "ns/chat-b (weight 10)")]
    assert model_routing.problems(split) == []
    two = [gateway.http_route_manifest(current), gateway.http_route_manifest(candidate)]
    (problem,) = model_routing.problems(model_routing.routes(two, None))
    assert "several pools" in problem


def test_two_workloads_serving_one_model_name_are_refused():
    cfg = two_models()
    cfg["tpu-serving:workloads"][1]["model"] = "Qwen/Qwen3-8B"
    with pytest.raises(ConfigError) as err:
        parse_config(copy.deepcopy(cfg))
    (problem,) = [str(p) for p in err.value.problems if "model name" in str(p)]
    assert "tpu-serving:workloads[1]" in problem and "'Qwen/Qwen3-8B'" in problem
    # without the gateway, two workloads may serve one model
    cfg["tpu-serving:gateway"] = {"enabled": False}
    parse_config(cfg)
