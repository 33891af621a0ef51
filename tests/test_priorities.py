"""Priorities per model or tenant through the router's objective resource (issue 38 #3).

Sources:
- llm-d/llm-d-router@v0.10.0: config/charts/routerlib/templates/_inferenceobjective.yaml (one InferenceObjective
  llm-d.ai/v1alpha2 per `router.inferenceObjectives` entry, poolRef the release's pool);
  config/crd/bases/llm-d.ai_inferenceobjectives.yaml (= ../shared/reference/crds, sha256 below; v1alpha2 only);
  pkg/epp/metadata/consts.go ObjectiveKey "x-llm-d-inference-objective"; pkg/epp/requestcontrol/director.go (no
  objective: priority 0); pkg/epp/server/controller_config.go (the picker watches the kind only if served at start).
- GKE installs only the GA CRDs of the inference extension (stacks/facts/gke_managed.py, tests/test_gateway.py):
  the stack applies this one.
"""

from __future__ import annotations

import hashlib

import jsonschema
import pytest

from stacks.facts import gke_managed
from stacks.facts.versions import INFERENCE_OBJECTIVE_CRDS, INFERENCE_OBJECTIVE_SHA256, LLM_D_ROUTER
from stacks.serving import gateway
from tests.conftest import reference_file
from tests.test_body_routing import two_models
from tests.test_vllm_lora import problems_of
from tooling.oracles import chart_objects
from tooling.oracles.schemas import crd_schema

RELEASE = "kubernetes:helm.sh/v3:Release"
GROUP = "kubernetes:yaml/v2:ConfigGroup"
OBJECTIVES = [{"name": "interactive", "priority": 10}, {"name": "batch", "priority": -5}]


def test_objectives_become_the_pickers_inference_objectives_after_their_crd(run):
    rec = run(two_models(objectives=OBJECTIVES))
    router = rec.one(RELEASE, "gateway-qwen-router")
    assert router.inputs["values"]["router"]["inferenceObjectives"] == OBJECTIVES
    crd = rec.one(GROUP, "gateway-inference-objective-crd")
    assert crd.inputs["files"] == [
        "https://raw.githubusercontent.com/llm-d/llm-d-router/v0.10.0/config/crd/bases/llm-d.ai_inferenceobjectives.yaml"
    ]
    assert crd.urn in router.dependencies  # served before the picker starts, or it never watches the kind
    # the other workload sets none: its picker does not wait for the CRD, and its values carry no objectives
    other = rec.one(RELEASE, "gateway-gemma-router")
    assert "inferenceObjectives" not in other.inputs["values"]["router"] and crd.urn not in other.dependencies
    out = rec.outputs["gateway"]["routes"]["qwen"]["objectives"]
    assert (
        out
        == "x-llm-d-inference-objective: interactive (priority 10), x-llm-d-inference-objective: batch (priority -5)"
    )


def test_without_objectives_nothing_is_applied(run):
    rec = run(two_models())
    assert not [r for r in rec.of_type(GROUP) if "inference-objective" in r.name]


def test_the_crd_is_the_pinned_routers_and_not_gkes():
    path = reference_file("crds/llm-d.ai_inferenceobjectives.yaml")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == INFERENCE_OBJECTIVE_SHA256
    assert INFERENCE_OBJECTIVE_CRDS.names == ("inferenceobjectives.llm-d.ai",)
    managed = {name for kind, name in gke_managed.never_created() if kind == gke_managed.CRD}
    assert "inferenceobjectives.llm-d.ai" not in managed


def test_the_chart_renders_objectives_that_validate_against_the_crd():
    helm = chart_objects.find_helm()
    if helm is None:
        pytest.skip("no helm (make helm)")
    backend = gateway.GatewayBackend(
        "qwen", "qwen", {"app": "qwen"}, 8000, "Qwen/Qwen3-8B", model_server_type="vllm", objectives=(("batch", -5),)
    )
    release = chart_objects.Release(
        LLM_D_ROUTER.chart, LLM_D_ROUTER.version, "qwen", "qwen", gateway.router_values(backend, {"a": "b"}), False
    )
    if not chart_objects.has_source(chart_objects.charts_root(), release):
        pytest.skip("no llm-d-router chart source in ../shared/reference/charts")
    objects = chart_objects.helm_template(helm, chart_objects.charts_root(), release)
    (objective,) = [o for o in objects if o["kind"] == "InferenceObjective"]
    assert objective["metadata"]["name"] == "batch" and objective["metadata"]["namespace"] == "qwen"
    assert objective["spec"] == {"priority": -5, "poolRef": {"group": "inference.networking.k8s.io", "name": "qwen"}}
    crds = reference_file("crds/llm-d.ai_inferenceobjectives.yaml").parent
    schema = crd_schema(crds, objective["apiVersion"], objective["kind"])
    assert schema is not None
    assert [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(objective)] == []


def test_objectives_need_the_gateway_and_unique_names():
    cfg = two_models(objectives=[*OBJECTIVES, {"name": "batch", "priority": 1}])
    (dup,) = [p for p in problems_of(cfg) if "objectives" in p]
    assert dup.startswith("tpu-serving:workloads[0].objectives[2].name: 'batch'")
    cfg = two_models(objectives=OBJECTIVES)
    cfg["tpu-serving:gateway"] = {"enabled": False}
    (off,) = problems_of(cfg)
    assert off.startswith("tpu-serving:workloads[0].objectives: priorities are the gateway's")
    (bad,) = problems_of(two_models(objectives=[{"name": "Batch_1", "priority": 1}]))
    assert "objectives[0].name" in bad
