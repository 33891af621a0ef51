"""TPU servers replaced under their own URN: deleted first, and the review's capacity rule (tooling/review/
transition.py `capacity`) counting a replacement twice only when the engine creates it before deleting the old one.

The Kubernetes provider creates a replacement first when the name or namespace changes, and deletes first for its own
forceNew fields when both stay (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff: deleteBeforeReplace
when `len(replaces) > 0` and the same metadata.name and namespace). A replacement created first beside the old server
needs a second set of TPU hosts, which a pool sized for the workload lacks: its pods stay Pending until the up's
customTimeouts (seen on a local cluster, ironwood, docs/local.md). So every TPU server is deleted before it is
replaced (components/serving.py ServingWorkload.server_opts; a custom resource with immutable fields,
components/manifests.py custom_resource), and the rule stays for anything that is not."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from tests.conftest import STACK_FILES, session_run
from tests.test_transitions import example
from tooling.harness.offline import Recording, load_stack_file
from tooling.review import transition
from tooling.review.render import stack_name

SERVER = "workload-qwen-deployment"


def moved(config: dict) -> dict:
    out = copy.deepcopy(config)
    workload = out["tpu-serving:workloads"][0]
    workload["namespace"] = f"{workload['name']}-moved"
    return out


def capacity(old: Recording, new: Recording) -> list[str]:
    return [p for p in transition.problems(old, new) if p.startswith("capacity:")]


def full_pool() -> tuple[dict, str]:
    """examples/vllm-disaggregated without disaggregation on a pool of one ct6e-standard-8t node: one Deployment
    holding all 8 chips."""
    path = example("vllm-disaggregated")
    config = load_stack_file(path)
    del config["tpu-serving:workloads"][0]["disaggregation"]
    config["tpu-serving:tpuPools"][0]["autoscaling"].update(minNodes=1, maxNodes=1)
    return config, stack_name(path)


def with_server(rec: Recording, **changes) -> Recording:
    """`rec` with the server Deployment's registration changed (its options or inputs)."""
    return Recording(
        [dataclasses.replace(r, **changes) if r.name == SERVER else r for r in rec.resources], outputs=rec.outputs
    )


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_every_tpu_server_is_deleted_before_it_is_replaced(path):
    rec = session_run(load_stack_file(path), stack=stack_name(path))
    servers = [r for r in rec.resources if transition.server_chips(r) is not None]
    for reg in servers:
        assert reg.delete_before_replace, f"{reg.type} {reg.name}: replaced beside itself, a second set of TPU hosts"


def test_a_namespace_change_on_a_full_pool_fits_because_the_server_is_deleted_first():
    config, name = full_pool()
    old, new = session_run(config, stack=name), session_run(moved(config), stack=name)
    assert [r.delete_before_replace for r in new.resources if r.name == SERVER] == [True]
    assert capacity(old, new) == []


def test_a_server_created_before_its_old_one_is_deleted_is_counted_twice():
    """The rule for a server that is not deleted first (a workload type that forgets server_opts)."""
    config, name = full_pool()
    old = session_run(config, stack=name)
    new = with_server(session_run(moved(config), stack=name), delete_before_replace=False)
    (found,) = capacity(old, new)
    assert found.startswith("capacity: pool v6e-2x4: during the up its old and new servers run at once")
    assert f"{SERVER} (its replacement) (8 chips, created)" in found
    assert "= 16 chips (2 nodes of 8), more than its at most 1 nodes hold (8 chips)" in found


def test_a_forcenew_replacement_under_the_same_name_is_deleted_first_by_the_provider():
    """A selector change keeps the name and namespace: the provider deletes first (no capacity problem), even
    without the option."""
    config, name = full_pool()
    old = with_server(session_run(config, stack=name), delete_before_replace=False)
    before = next(r for r in old.resources if r.name == SERVER)
    inputs = copy.deepcopy(before.inputs)
    inputs["spec"]["selector"]["matchLabels"]["extra"] = "x"
    new = with_server(old, inputs=inputs)
    assert any("spec.selector" in p for p in transition.problems(old, new) if p.startswith("replaced:"))
    assert capacity(old, new) == []


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_every_autoscaler_reads_its_servers_namespace(path):
    """An HPA or ScaledObject's metadata reads its server's output: the engine then deletes it before a delete-first
    replacement of the server (pulumi/pulumi pkg/v3@v3.274.1 resource/deploy/step_generator.go
    calculateDependentReplacements), not at the end of the up with its target gone (make e2e, vllm-single-host-keda:
    KEDA logged "target deployment doesn't exist")."""
    rec = session_run(load_stack_file(path), stack=stack_name(path))
    by_urn = {r.urn: r for r in rec.resources}
    autoscalers = [r for r in rec.resources if r.type.endswith((":HorizontalPodAutoscaler", ":ScaledObject"))]
    for reg in autoscalers:
        target = reg.inputs["spec"]["scaleTargetRef"]
        read = [by_urn[u] for u in reg.property_dependencies.get("metadata", []) if u in by_urn]
        assert [
            r
            for r in read
            if r.type.endswith(":" + target["kind"])
            and r.inputs["metadata"]["name"] == target["name"]
            and r.inputs["metadata"].get("namespace") == reg.inputs["metadata"]["namespace"]
        ], (reg.name, target)
