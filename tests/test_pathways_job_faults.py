"""A PathwaysJob survives a head eviction, no budget holds a drain, and a batch head's pool is its head's alone
(issue 36 #10).

google/pathways-job@v0.1.4 internal/controller/pathwaysjob_controller.go:
- MakePathwaysHeadReplicatedJob gives the head Job `backoffLimit: 0`, and the JobSet's `failurePolicy.maxRestarts` is
  `spec.maxRestarts` (the only restart setting of the CRD, ../shared/reference/crds, immutable): with 0, a head
  eviction fails the job for good;
- MakePathwaysHeadPodSpec copies `controller.template`'s pod spec (its nodeSelector and tolerations with it) for a
  batch job, and builds a headless (interactive) head from scratch: no nodeSelector, no toleration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, recorded, reference_file
from tooling.harness.offline import Recording
from workloads.pathways_job.config import DEFAULT_MAX_RESTARTS

PATHWAYS_JOB = "kubernetes:pathways-job.pathways.domain/v1:PathwaysJob"
NODE_POOL = "gcp:container/nodePool:NodePool"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
CRD = "crds/pathways-job.pathways.domain_pathwaysjobs.yaml"


def _example(name: str) -> Path:
    (path,) = [p for p in EXAMPLES if p.name == f"Pulumi.{name}.yaml"]
    return path


def _spec_schema() -> dict[str, Any]:
    path = reference_file(CRD)
    if not path.exists():
        pytest.skip(f"no {CRD} in ../shared/reference")
    crd = yaml.safe_load(path.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def test_a_job_restarts_after_a_head_eviction_by_default():
    schema = _spec_schema()["properties"]["maxRestarts"]
    assert schema["type"] == "integer" and schema["format"] == "int32"
    assert DEFAULT_MAX_RESTARTS > 0
    rec = recorded(_example("pathways-job"), False)
    jobs = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in rec.of_type(PATHWAYS_JOB)}
    assert jobs["pw"]["maxRestarts"] == DEFAULT_MAX_RESTARTS  # unset in the example
    assert jobs["train"]["maxRestarts"] == 2  # as the example sets it


def _pod_templates(rec: Recording) -> list[tuple[str, dict[str, Any]]]:
    """(resource name, pod spec) of every pod template the stack registers, a PathwaysJob's head template included."""
    out = []

    def walk(name: str, node: Any) -> None:
        if isinstance(node, dict):
            spec = node.get("spec")
            if isinstance(spec, dict) and "containers" in spec:
                out.append((name, spec))
            for value in node.values():
                walk(name, value)
        elif isinstance(node, list):
            for value in node:
                walk(name, value)

    for r in rec.resources:
        if r.type.startswith("kubernetes:"):
            walk(r.name, r.inputs.get("spec"))
    return out


@pytest.mark.parametrize("name", ["pathways-job", "all-in-one"])
def test_a_batch_heads_pool_is_tainted_for_its_head_alone(name):
    rec = recorded(_example(name), False)
    jobs = {r.inputs["metadata"]["name"]: r.inputs for r in rec.of_type(PATHWAYS_JOB)}
    heads = {r.inputs["name"]: r.inputs for r in rec.of_type(NODE_POOL) if r.name.endswith("-head")}
    assert jobs
    for job, inputs in jobs.items():
        controller = inputs["spec"]["controller"]
        (pool,) = [p for p in heads.values() if p["nodeConfig"]["labels"].get("tpu-serving/workload") == job]
        taints = pool["nodeConfig"].get("taints") or []
        if "template" not in controller:  # interactive: the controller gives its head no toleration
            assert taints == [], job
            continue
        # container.v1 NodeTaint: effect NO_SCHEDULE, which GKE puts on the node as NoSchedule
        assert taints == [{"key": "tpu-serving/workload", "value": job, "effect": "NO_SCHEDULE"}], job
        head = controller["template"]["spec"]
        assert head["nodeSelector"].items() <= pool["nodeConfig"]["labels"].items()
        assert head["tolerations"] == [
            {"key": "tpu-serving/workload", "operator": "Equal", "value": job, "effect": "NoSchedule"}
        ]
        # no other pod template of the stack tolerates it
        others = [
            n
            for n, spec in _pod_templates(rec)
            if spec is not head
            and any(t.get("key") in ("tpu-serving/workload", None) for t in spec.get("tolerations") or [])
        ]
        assert others == [], others


def test_the_controller_copies_the_template_the_crd_keeps():
    """`controller.template` is kept whole by the API server (x-kubernetes-preserve-unknown-fields), so the head's
    tolerations reach the controller, which copies the template's pod spec (MakePathwaysHeadPodSpec)."""
    template = _spec_schema()["properties"]["controller"]["properties"]["template"]
    assert template.get("x-kubernetes-preserve-unknown-fields") is True or "spec" in template.get("properties", {})


def test_no_budget_holds_a_drain_of_a_pathways_job():
    rec = recorded(_example("pathways-job"), False)
    namespaces = {r.inputs["metadata"]["namespace"] for r in rec.of_type(PATHWAYS_JOB)}
    assert not [r.name for r in rec.of_type(PDB) if r.inputs["metadata"]["namespace"] in namespaces]


# What would make a worker's eviction restart the whole job: a JobSet failure-policy rule (jobset@v0.10.1
# api/jobset/v1alpha2 FailurePolicyRule, e.g. onJobFailureReasons/onJobFailureMessagePatterns with
# RestartJobSet, the Saxml fix), or a worker Job that fails at its first pod failure (backoffLimit 0, or a
# podFailurePolicy FailJob on DisruptionTarget), so that the JobSet's maxRestarts applies.
RESTART_KNOBS = {"rules", "failurePolicy", "podFailurePolicy", "backoffLimit", "onJobFailureReasons"}


def _keys(schema: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(schema, dict):
        for key, value in (schema.get("properties") or {}).items():
            out |= {key} | _keys(value)
        for key in ("items", "additionalProperties"):
            out |= _keys(schema.get(key))
    return out


def test_a_worker_eviction_can_restart_nothing_the_stack_sets():
    """Issue 36 #10, the worker: why a worker pod's eviction cannot restart the job from this stack.

    google/pathways-job@v0.1.4 internal/controller/pathwaysjob_controller.go builds the JobSet once (Reconcile: "JobSet
    exists, not creating"; it never updates it) with `FailurePolicy{MaxRestarts: pw.Spec.MaxRestarts}` and no rules
    (createJobSet), and the worker Job with `BackoffLimit: NumVMs * 4` ("default for suspend resume", MakeWorkerJob;
    `NumVMs * maxSliceRestarts` with elasticSlices) and no podFailurePolicy: an evicted worker pod is a pod failure its
    Job counts and replaces, and the Job fails (restarting the JobSet) only after 4 per host. The CRD has no field
    for either (checked here: the spec schema holds none of RESTART_KNOBS beyond the pod template the controller
    copies into the head only), and the JobSet's failurePolicy is immutable once created (jobset@v0.10.1 CRD:
    `self == oldSelf`), so the stack cannot add a rule after the controller made it. What the job does while a host is
    gone is Pathways' (its state under `pathwaysDir`, "HBM state during interruptions", the CRD's own description);
    docs/operations.md says so."""
    spec = _spec_schema()
    template = spec["properties"]["controller"]["properties"]["template"]
    outside = {k: v for k, v in spec["properties"].items() if k != "controller"}
    controller = {k: v for k, v in spec["properties"]["controller"]["properties"].items() if k != "template"}
    found = _keys({"properties": outside}) | _keys({"properties": controller})
    assert not found & RESTART_KNOBS, found & RESTART_KNOBS
    assert "pathwaysDir" in spec["properties"] and "interruptions" in spec["properties"]["pathwaysDir"]["description"]
    assert template is not None  # the head's pod template: a pod spec, no Job or JobSet policy

    jobset = yaml.safe_load(reference_file("crds/jobset.x-k8s.io_jobsets.yaml").read_text())
    (version,) = [v for v in jobset["spec"]["versions"] if v["name"] == "v1alpha2"]
    policy = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["failurePolicy"]
    assert {"rule": "self == oldSelf", "message": "Value is immutable"} in policy["x-kubernetes-validations"]
    assert "rules" in policy["properties"]  # JobSet has the remedy; PathwaysJob does not pass it on

    # what the stack renders is only what the CRD defines (nothing it would drop or refuse)
    rec = recorded(_example("pathways-job"), False)
    for job in rec.of_type(PATHWAYS_JOB):
        assert set(job.inputs["spec"]) <= set(spec["properties"]), job.name
