"""A LeaderWorkerSet's controller creates a headless Service named after the LeaderWorkerSet for its pods' DNS
(sigs.k8s.io/lws@v0.7.0 pkg/controllers/leaderworkerset_controller.go reconcileHeadlessServices:
CreateHeadlessServiceIfNotExists(ctx, ..., lws, lws.Name, {leaderworkerset.sigs.k8s.io/name: lws.Name}, lws) when
spec.networkConfig is unset or its subdomainPolicy is Shared). A Service of the stack with that name and namespace
conflicts with it at the first `up` (Server-Side Apply: `conflict with "lws" using v1: .spec.selector`, seen by
`make e2e` on ironwood), or, applied first, is taken for it and leaves the workers no DNS name for their leader.
Checked over every shipped stack (every workload type that runs on a LeaderWorkerSet has one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.review.render import stack_name


def lws_headless_services(objects: list[dict]) -> set[tuple[str, str]]:
    """(namespace, name) of the headless Services LWS creates for each LeaderWorkerSet of `objects`: Shared, one named
    after it; UniquePerReplica, one per group named after its leader pod `<lws>-<group>` (sigs.k8s.io/lws@v0.7.0
    pkg/controllers/pod_controller.go: CreateHeadlessServiceIfNotExists(..., pod.Name, ...); the leader
    StatefulSet's pods are `<lws>-<ordinal>`)."""
    out = set()
    for obj in objects:
        if obj["kind"] != "LeaderWorkerSet":
            continue
        spec, ns, name = obj.get("spec") or {}, obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]
        policy = (spec.get("networkConfig") or {}).get("subdomainPolicy", "Shared")
        if policy == "Shared":
            out.add((ns, name))
        else:
            out |= {(ns, f"{name}-{g}") for g in range(int(spec.get("replicas", 1)))}
    return out


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_no_service_of_the_stack_is_a_leaderworkersets_headless_service(path: Path) -> None:
    objects = kubernetes_objects(recorded(path, False))
    services = {
        (o["metadata"].get("namespace", "default"), o["metadata"]["name"]) for o in objects if o["kind"] == "Service"
    }
    assert not services & lws_headless_services(objects)


def test_the_rule_sees_a_conflict() -> None:
    lws = {"kind": "LeaderWorkerSet", "metadata": {"name": "m", "namespace": "n"}, "spec": {}}
    unique = {**lws, "spec": {"networkConfig": {"subdomainPolicy": "UniquePerReplica"}}}
    assert lws_headless_services([lws]) == {("n", "m")}
    assert lws_headless_services([unique]) == {("n", "m-0")}


def _is_vllm(lws: dict) -> bool:
    containers = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    return any(c["name"] == "vllm-leader" for c in containers)


def test_every_vllm_leaderworkerset_has_a_headless_service_per_group() -> None:
    """vLLM's Service is `<name>` on every pool (workloads/vllm/plan.py service_name): its LeaderWorkerSets ask LWS
    for per-group headless Services, so none takes that name."""
    seen = 0
    for path in STACK_FILES:
        for obj in kubernetes_objects(recorded(path, False)):
            if obj["kind"] == "LeaderWorkerSet" and _is_vllm(obj):
                seen += 1
                assert obj["spec"]["networkConfig"] == {"subdomainPolicy": "UniquePerReplica"}, path
    assert seen >= 4  # ironwood, time-to-serve (two), vllm-multi-host


def test_an_lws_example_is_checked() -> None:
    """The rule is not vacuous: shipped stacks run vLLM and JetStream-Pathways on LeaderWorkerSets."""
    names = {stack_name(p) for p in STACK_FILES}
    assert {"ironwood", "vllm-multi-host"} <= names
