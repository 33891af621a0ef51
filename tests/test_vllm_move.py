"""A vLLM workload moved between a single-host and a multi-host pool serves throughout (issue 36 #7).

Its server changes kind (a Deployment, a LeaderWorkerSet), so Pulumi creates the new one under its own resource name
and deletes the old one at the end of the `up`, after every create and update (pulumi/pulumi pkg/resource/deploy:
deletes of resources no longer in the program run last; tooling/review/transition.py). The move is hitless when:
- every selector that routes to or watches the serving pods (Service, InferencePool, PodMonitoring, NetworkPolicy)
  is the same before and after, and matches the serving pods of both servers (never a multi-host group's Ray workers):
  the old pods keep serving until their server is deleted, the new ones join once Ready (the endpoint picker adds a
  pod that matches the InferencePool's selector and is Ready, llm-d/llm-d-router@v0.10.0
  pkg/epp/controller/pod_reconciler.go updateDatastore; a Service routes to its Ready endpoints);
- the new server is awaited ready before the `up` goes on to the deletes: a Deployment by pulumi-kubernetes's
  rollout check unless `pulumi.com/skipAwait`, a LeaderWorkerSet by `pulumi.com/waitFor: condition=Available`
  (pulumi-kubernetes provider/pkg/metadata/overrides.go ReadyCondition; lws@v0.7.0 sets Available once every group
  is ready and updated), on every kind of pool, for as long as the time-to-serve model says a replica takes from no
  capacity (customTimeouts: WorkloadPlan.server_timeouts; tests/test_server_await.py covers every type and pool kind).
A stockout longer than that fails the `up` before the deletes: the old server keeps serving."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import EXAMPLES, recorded, session_run
from tests.test_lws_headless_service import lws_headless_services
from tooling.harness.offline import Recording, Registration, load_stack_file, parse_config, parse_stack_file
from tooling.review import transition
from workloads.vllm.manifests import LWS_READY
from workloads.vllm.plan import COLD_START_S

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
SERVICE = "kubernetes:core/v1:Service"
RELEASE = "kubernetes:helm.sh/v3:Release"
POD_MONITORING = "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SKIP_AWAIT, WAIT_FOR = "pulumi.com/skipAwait", "pulumi.com/waitFor"
STACK = "vllm-single-host"
MULTI_POOL = {
    "name": "v6e-4x4",
    "tpu": "v6e",
    "topology": "4x4",  # 4 hosts of 4 chips
    "zone": "us-east5-b",
    "capacity": "on-demand",
    # created whole, so `up` waits for its capacity and for the server on it (stacks/serving/pool_sizing.py)
    "slices": 2,
    "autoscaling": {"minNodes": 4, "maxNodes": 4},
}


def _single() -> dict[str, Any]:
    (path,) = [p for p in EXAMPLES if p.name == f"Pulumi.{STACK}.yaml"]
    config = load_stack_file(path)
    config["tpu-serving:tpuPools"] = [*config["tpu-serving:tpuPools"], MULTI_POOL]
    config["tpu-serving:gateway"] = {"enabled": True}
    # GKE's InferencePool CRD comes with this version (stacks/facts/gke_managed.py)
    config["tpu-serving:cluster"] = {**config.get("tpu-serving:cluster", {}), "minMasterVersion": "1.34.0-gke.1626000"}
    return config


def _multi() -> dict[str, Any]:
    config = copy.deepcopy(_single())
    (workload,) = config["tpu-serving:workloads"]
    workload["pool"] = MULTI_POOL["name"]
    return config


def _runs() -> dict[str, Recording]:
    return {"single": session_run(_single(), stack=STACK), "multi": session_run(_multi(), stack=STACK)}


def _kind(which: str) -> str:
    return "before" if which == "single" else "after"


def _server(rec: Recording) -> Registration:
    (server,) = [
        r
        for r in rec.resources
        if (r.type, r.name) in {(DEPLOYMENT, "workload-llama70b-deployment"), (LWS, "workload-llama70b-lws")}
    ]
    return server


def _serving_templates(server: Registration) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(labels of its pod templates that serve HTTP, labels of those that do not)."""
    spec = server.inputs["spec"]
    if server.type == DEPLOYMENT:
        return [spec["template"]["metadata"]["labels"]], []
    tmpl = spec["leaderWorkerTemplate"]
    return [tmpl["leaderTemplate"]["metadata"]["labels"]], [tmpl["workerTemplate"]["metadata"]["labels"]]


def _selectors(rec: Recording) -> dict[str, dict[str, str]]:
    """Every selector of the workload's serving pods, by the resource (URN) that holds it."""
    out: dict[str, dict[str, str]] = {}
    for r in rec.resources:
        namespace = (r.inputs.get("metadata") or {}).get("namespace")
        if r.type == SERVICE and namespace == "llama70b":
            out[r.urn] = r.inputs["spec"]["selector"]
        elif r.type == POD_MONITORING and namespace == "llama70b":
            out[r.urn] = r.inputs["spec"]["selector"]["matchLabels"]
        elif r.type == NETWORK_POLICY and namespace == "llama70b":
            selector = r.inputs["spec"]["podSelector"].get("matchLabels", {})
            if selector.get("app") == "llama70b":  # the workload's, not the endpoint picker's nor the namespace's
                out[r.urn] = selector
        elif r.type == RELEASE and r.inputs["name"] == "llama70b":  # the router chart renders the InferencePool
            out[r.urn] = r.inputs["values"]["router"]["modelServers"]["matchLabels"]
    return out


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return selector.items() <= labels.items()


@pytest.mark.parametrize(("before", "after"), [("single", "multi"), ("multi", "single")])
def test_the_move_creates_the_new_server_awaited_and_deletes_the_old_one_last(before, after):
    runs = _runs()
    old, new = runs[before], runs[after]
    # the Service is `<name>` on every pool (the LeaderWorkerSet's headless Services are per group,
    # tests/test_lws_headless_service.py): the move replaces the server and nothing else
    assert list(transition.problems(old, new)) == []
    old_server, new_server = _server(old), _server(new)
    assert old_server.type != new_server.type
    # the new server is created (its URN is not in the old run), the old one deleted (not in the new run): Pulumi
    # deletes it after every create and update, when the new server's create, awaited, has returned
    assert new_server.urn not in {r.urn for r in old.resources}
    assert old_server.urn not in {r.urn for r in new.resources}
    annotations = new_server.inputs["metadata"].get("annotations", {})
    assert SKIP_AWAIT not in annotations
    assert annotations.get(WAIT_FOR) == (LWS_READY if new_server.type == LWS else None)
    (plan,) = parse_config({"before": _single(), "after": _multi()}[_kind(after)], STACK).workloads
    minutes = plan.server_await_minutes
    assert minutes is not None and minutes * 60 > COLD_START_S
    assert new_server.custom_timeouts == {"create": f"{minutes}m", "update": f"{minutes}m"}
    # nothing that depends on the old server stays: the old server's delete waits for no one
    assert not [r.name for r in new.resources if old_server.urn in r.dependencies]


def test_no_service_of_the_move_takes_the_leaderworkersets_headless_service_name():
    """During the move both servers and both Services exist (the new ones created, the old deleted last), and LWS
    makes a headless Service named after the LeaderWorkerSet (sigs.k8s.io/lws@v0.7.0
    pkg/controllers/leaderworkerset_controller.go reconcileHeadlessServices, CreateHeadlessServiceIfNotExists with
    lws.Name): a Service of the stack's under that name meets it (to single-host: "Server-Side Apply field conflict
    detected", e2e vllm-hosts) or keeps LWS from making it (to multi-host: no DNS for the workers' leader)."""
    runs = _runs()
    lws = {
        name
        for rec in runs.values()
        for r in rec.of_type(LWS)
        for _, name in lws_headless_services(
            [{"kind": "LeaderWorkerSet", "metadata": r.inputs["metadata"], "spec": r.inputs["spec"]}]
        )
    }
    services = {
        r.inputs["metadata"]["name"]
        for rec in runs.values()
        for r in rec.of_type(SERVICE)
        if r.inputs["metadata"]["namespace"] == "llama70b"
    }
    assert lws and services and not lws & services, (lws, services)


def test_every_selector_of_the_serving_pods_stays_and_matches_both_servers():
    runs = _runs()
    single, multi = _selectors(runs["single"]), _selectors(runs["multi"])
    assert single == multi
    kinds = {r.type for r in runs["single"].resources if r.urn in single}
    assert kinds == {SERVICE, POD_MONITORING, NETWORK_POLICY, RELEASE}, kinds
    for rec in runs.values():
        serving, workers = _serving_templates(_server(rec))
        for urn, selector in single.items():
            assert all(_matches(selector, labels) for labels in serving), (urn, selector, serving)
            assert not any(_matches(selector, labels) for labels in workers), (urn, selector, workers)


def test_the_service_follows_the_server():
    """A change of the Service's selector (e.g. the `role: leader` label the single-host pods gained) is applied after
    the server's rollout, which `up` awaits where the pool's capacity is awaited."""
    for rec in _runs().values():
        (svc,) = [r for r in rec.of_type(SERVICE) if r.inputs["metadata"]["namespace"] == "llama70b"]
        assert _server(rec).urn in svc.dependencies


@pytest.mark.parametrize("path", [p for p in EXAMPLES if "vllm" in p.read_text()], ids=lambda p: p.stem)
def test_every_vllm_server_and_service_is_awaited_on_every_pool(path):
    """Awaited whatever the pool (the provider awaits a Service until a pod behind it is Ready,
    provider/pkg/await/service.go): nothing carries skipAwait, a LeaderWorkerSet waits for Available."""
    cfg = parse_stack_file(path)
    rec = recorded(path, False)
    for workload in cfg.workloads:
        if workload.workload.type != "vllm":
            continue
        servers = [
            r
            for r in rec.resources
            if r.type in (DEPLOYMENT, LWS)
            and r.inputs["metadata"]["name"] == workload.name
            and r.inputs["metadata"]["namespace"] == workload.namespace
        ]
        (svc,) = [
            r
            for r in rec.of_type(SERVICE)
            if r.inputs["metadata"]["namespace"] == workload.namespace
            and r.inputs["metadata"]["name"] == workload.service_name
        ]
        for obj in (*servers, svc):
            assert SKIP_AWAIT not in obj.inputs["metadata"].get("annotations", {}), obj.name
        for server in servers:
            assert (WAIT_FOR in server.inputs["metadata"].get("annotations", {})) == (server.type == LWS)
