"""The review's capacity rule (tooling/review/transition.py `capacity`) for a server replaced under its own URN: a
namespace change replaces a workload's server. A Deployment (a typed resource, no deleteBeforeReplace) is created in
the new namespace before the old one is deleted: pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff asks
for deleteBeforeReplace only when the replacement keeps the name and the namespace (`len(replaces) > 0` and the same
metadata.name/namespace), so both servers hold chips at once and, on a full pool, the new pods stay Pending until the
up's timeouts (seen on a local cluster, docs/local.md, ironwood before its LeaderWorkerSet was deleted first). A
custom resource with immutable fields (components/manifests.py custom_resource: the LeaderWorkerSet) is deleted first,
so the same change fits."""

from __future__ import annotations

import copy

from tests.conftest import session_run
from tests.test_transitions import example
from tooling.harness.offline import load_stack_file
from tooling.review import transition
from tooling.review.render import stack_name


def moved(config: dict) -> dict:
    out = copy.deepcopy(config)
    workload = out["tpu-serving:workloads"][0]
    workload["namespace"] = f"{workload['name']}-moved"
    return out


def capacity(before: dict, after: dict, stack: str) -> list[str]:
    problems = transition.problems(session_run(before, stack=stack), session_run(after, stack=stack))
    return [p for p in problems if p.startswith("capacity:")]


def test_a_namespace_change_of_a_deployment_on_a_full_pool_is_a_capacity_problem():
    path = example("vllm-disaggregated")
    full = load_stack_file(path)
    del full["tpu-serving:workloads"][0]["disaggregation"]  # one Deployment, one ct6e-standard-8t node (8 chips)
    full["tpu-serving:tpuPools"][0]["autoscaling"].update(minNodes=1, maxNodes=1)
    (found,) = capacity(full, moved(full), stack_name(path))
    assert found.startswith("capacity: pool v6e-2x4: during the up its old and new servers run at once")
    assert "(8 chips, created)" in found and "its replacement" in found
    assert "= 16 chips (2 nodes of 8), more than its at most 1 nodes hold (8 chips)" in found
    # with room for both (the example's maxNodes 2) it is clean
    roomy = copy.deepcopy(full)
    roomy["tpu-serving:tpuPools"][0]["autoscaling"]["maxNodes"] = 2
    assert capacity(roomy, moved(roomy), stack_name(path)) == []


def test_a_namespace_change_of_a_leaderworkerset_on_a_full_pool_deletes_it_first():
    path = example("ironwood")  # one 2x2x2 slice: 2 nodes of 4 chips, the LeaderWorkerSet holds all 8
    config = load_stack_file(path)
    name = stack_name(path)
    rec = session_run(moved(config), stack=name)
    (lws,) = [r for r in rec.resources if r.type.endswith(":LeaderWorkerSet")]
    assert lws.delete_before_replace
    assert capacity(config, moved(config), name) == []
