"""Invariants of every stack we ship (the dev stack and every example), on a first `up` and a first `preview`."""

import time

import pytest

from tests.conftest import STACK_FILES, recorded
from tooling.harness.offline import Recording, run_stack_file

MODES = {"up": False, "preview": True}
COMPONENT_PREFIX = "tpu-serving:"


@pytest.fixture(
    scope="module", params=[(f, m) for f in STACK_FILES for m in MODES], ids=lambda p: f"{p[0].stem}-{p[1]}"
)
def recording(request) -> Recording:
    path, mode = request.param
    return recorded(path, MODES[mode])


def test_examples_exist():
    names = {p.parent.name for p in STACK_FILES[1:]}
    assert {"llama3-405b-pathways", "llama2-70b-disaggregated", "saxml-175b", "gemma-hpa", "all-in-one"} <= names


def test_resource_names_are_unique(recording):
    assert recording.duplicate_urns == []
    assert len({r.urn for r in recording.resources}) == len(recording.resources)


def test_every_resource_has_a_component_parent(recording):
    components = {r.urn: r for r in recording.resources if not r.custom}
    for r in recording.resources:
        # a provider's multi-language component (e.g. kubernetes:yaml/v2:ConfigFile) sits inside ours like a resource
        if r.type.startswith("pulumi:providers:") or r.custom or r.remote:
            assert r.parent in components, f"{r.type} {r.name} is not inside a component"
            parent = components[r.parent]
            assert r.name.startswith(parent.name), f"{r.name} is not named after its component {parent.name}"
        else:
            assert r.type.startswith(COMPONENT_PREFIX) and r.type.count(":") == 2, r.type


def test_every_kubernetes_resource_has_an_explicit_provider(recording):
    for r in recording.resources:
        if r.custom and r.type.startswith("kubernetes:"):
            assert r.provider.startswith(recording.one("pulumi:providers:kubernetes", "cluster-k8s").urn)


def test_iam_is_member_level_only(recording):
    for r in recording.resources:
        assert not any(word in r.type for word in ("IAMBinding", "IAMPolicy", "iAMBinding", "iAMPolicy")), r.type


def test_kubeconfig_is_secret(recording):
    assert "kubeconfig" in recording.secret_outputs


def test_outputs(recording):
    out = recording.outputs
    for key in (
        "clusterName",
        "clusterLocation",
        "clusterEndpoint",
        "kubeconfig",
        "getCredentialsCommand",
        "bucketName",
        "bucketUrl",
        "tpuPools",
        "nodeServiceAccount",
    ):
        assert key in out
    assert out["getCredentialsCommand"].startswith(f"gcloud container clusters get-credentials {out['clusterName']} ")
    for summary in out["tpuPools"].values():
        assert summary["chipsPerSlice"] == summary["hostsPerSlice"] * summary["chipsPerHost"]
        if "computeClass" in summary:  # a capacity list: GKE creates the node pools
            assert summary["nodePools"] == [] and isinstance(summary["capacity"], list)
        else:
            assert len(summary["nodePools"]) == (summary["slices"] if summary["hostsPerSlice"] > 1 else 1)


def test_node_pools_match_the_summary(recording):
    node_pools = {r.inputs["name"]: r.inputs for r in recording.of_type("gcp:container/nodePool:NodePool")}
    for summary in recording.outputs["tpuPools"].values():
        for name in summary["nodePools"]:
            inputs = node_pools[name]
            assert inputs["nodeConfig"]["machineType"] == summary["machineType"]
            if summary["hostsPerSlice"] > 1 and summary["tpu"] == "tpu7x":  # a workload policy, no topology
                assert set(inputs["placementPolicy"]) == {"type", "policyName"}
            elif summary["hostsPerSlice"] > 1:
                assert inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": summary["topology"]}


def test_preview_leaves_computed_values_unknown():
    rec = run_stack_file(STACK_FILES[0], preview=True)
    assert rec.outputs["clusterEndpoint"] == "(known after apply)"
    assert rec.outputs["kubeconfig"] == "(known after apply)"


def test_largest_example_evaluates_in_a_few_seconds():
    # CPU time of this process (all its threads), not wall time: a machine shared by other jobs must not fail it
    start = time.process_time()
    run_stack_file(next(p for p in STACK_FILES if p.parent.name == "all-in-one"))
    assert time.process_time() - start < 5
