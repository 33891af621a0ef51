"""Disruption-safe serving (stacks/disruption.py): a PodDisruptionBudget over every set of serving pods of every
workload type, a multi-host replica as one unit; and termination settings that outlast the load balancer's and the
endpoint picker's view of a pod, so a drain or a rollout drops no request in flight. Sources are cited per test."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from stacks import disruption, versions
from tests.conftest import EXAMPLES, make_config, recorded
from tests.test_workload_registry import ECHO_CONFIG, echo_registered  # noqa: F401  (a fixture)
from tooling.offline import Recording, Registration
from workloads import registry

PDB = "kubernetes:policy/v1:PodDisruptionBudget"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
PATHWAYS_JOB = "kubernetes:pathways-job.pathways.domain/v1:PathwaysJob"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SERVERS = (DEPLOYMENT, LWS, JOBSET, PATHWAYS_JOB)
RELEASE = "kubernetes:helm.sh/v3:Release"


def workloads(rec: Recording) -> list[Registration]:
    return [r for r in rec.resources if r.type.startswith("tpu-serving:workloads:") and r.type != NAMESPACES]


NAMESPACES = "tpu-serving:workloads:Namespaces"


def children(rec: Recording, parent: Registration, *types: str) -> list[Registration]:
    return [r for r in rec.resources if r.parent == parent.urn and r.type in types]


def expected_budget(server: Registration) -> tuple[dict[str, str], dict[str, int]] | None:
    """(selector, limit) the budget of a server object must have, worked out from the object itself and the
    controllers' own rules, not from stacks/disruption.py; None: it has none."""
    name, spec = server.inputs["metadata"]["name"], server.inputs["spec"]
    if server.type == DEPLOYMENT:
        # the disruption controller reads a Deployment's scale: maxUnavailable works with any replica count
        return spec["selector"]["matchLabels"], {"maxUnavailable": 1}
    if server.type == LWS:
        # every pod of the set carries SetNameLabelKey, and StatefulSets own them all (kubernetes-sigs/lws@v0.7.0
        # api/leaderworkerset/v1/leaderworkerset_types.go; pkg/controllers/pod_controller.go): one group at a time
        return {"leaderworkerset.sigs.k8s.io/name": name}, {"maxUnavailable": 1}
    if server.type == JOBSET:
        # Jobs have no scale: an integer minAvailable (kubernetes.io/docs/tasks/run-application/configure-pdb,
        # "Arbitrary workloads and arbitrary selectors"); pods counted as the JobSet controller creates them
        pods = sum(int(j["replicas"]) * int(j["template"]["spec"]["parallelism"]) for j in spec["replicatedJobs"])
        return {"jobset.sigs.k8s.io/jobset-name": name}, {"minAvailable": pods - 1}
    # a PathwaysJob: none. Its JobSet cannot lose a pod and go on (google/pathways-job@v0.1.4: the head Job's
    # backoffLimit is 0; a worker Job recreates only its pod), so a budget over its pods (an integer minAvailable)
    # would only refuse every eviction after the first, holding the drain while the evicted pod waits for a node
    assert server.type == PATHWAYS_JOB, server.type
    return None


@functools.cache
def examples_by_type() -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in EXAMPLES:
        for w in workloads(recorded(path, False)):
            out.setdefault(w.type.rsplit(":", 1)[1], []).append(path)
    return out


def test_every_registry_type_is_in_a_shipped_example():
    """The budget test below runs over the examples: each registry entry must be in one."""
    components = {t.component.__name__ for t in registry.WORKLOAD_TYPES.values()}
    assert components <= set(examples_by_type())


def assert_budgets(rec: Recording) -> int:
    """Every server object of every workload has exactly one budget beside it, over its pods, with the limit its
    controller allows; returns how many it checked."""
    checked = 0
    for workload in workloads(rec):
        budgets = children(rec, workload, PDB)
        servers = children(rec, workload, *SERVERS)
        assert servers, workload.name
        expected = {s.urn: e for s in servers if (e := expected_budget(s)) is not None}
        assert len(budgets) == len(expected), (workload.name, [b.name for b in budgets])
        for server in servers:
            if server.urn not in expected:
                continue
            selector, limit = expected[server.urn]
            (budget,) = [b for b in budgets if b.inputs["spec"]["selector"] == {"matchLabels": selector}]
            spec = budget.inputs["spec"]
            assert {k: spec[k] for k in ("minAvailable", "maxUnavailable") if k in spec} == limit, budget.name
            # a pod that is not Ready never holds a drain (policy/v1 unhealthyPodEvictionPolicy, GA in 1.31)
            assert spec["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
            assert budget.inputs["metadata"]["namespace"] == server.inputs["metadata"]["namespace"]
            checked += 1
    return checked


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_server_of_every_workload_has_its_budget(path):
    rec = recorded(path, False)
    if not workloads(rec):
        pytest.skip("no workload")
    # every workload has its budgets, but a PathwaysJob has none (expected_budget)
    assert assert_budgets(rec) > 0 or all(w.type.endswith(":PathwaysJob") for w in workloads(rec))


def test_a_type_added_to_the_registry_gets_its_budget(run, echo_registered):  # noqa: F811
    rec = run(make_config(tpu_serving__workloads=[ECHO_CONFIG]))
    assert assert_budgets(rec) == 1
    assert rec.one(PDB, "workload-echo-pdb").inputs["spec"]["maxUnavailable"] == 1


def test_one_replica_is_never_held_and_a_paused_stack_has_no_budget(run, echo_registered):  # noqa: F811
    # One replica: maxUnavailable 1 lets its pod be evicted. minAvailable 1 would hold every drain of its node until
    # GKE stops respecting the budget (an hour into a node upgrade) and the cluster autoscaler for good.
    rec = run(make_config(tpu_serving__workloads=[{**ECHO_CONFIG, "replicas": 1}]))
    spec = rec.one(PDB, "workload-echo-pdb").inputs["spec"]
    assert spec["maxUnavailable"] == 1 and "minAvailable" not in spec
    paused = run(make_config(tpu_serving__workloads=[ECHO_CONFIG], **{"tpu_serving__paused": True}))
    assert not paused.of_type(PDB)


def test_a_multi_host_budget_covers_workers_as_well_as_leaders():
    """Over the leaders alone, a drain could take the workers of every group at once: the selector is the set's
    name label, which the LWS controller puts on leaders and workers alike, never `role` or the group index."""
    (path,) = [p for p in EXAMPLES if p.parent.name == "vllm-multi-host"]
    rec = recorded(path, False)
    (budget,) = rec.of_type(PDB)
    assert set(budget.inputs["spec"]["selector"]["matchLabels"]) == {"leaderworkerset.sigs.k8s.io/name"}


# ---- termination -------------------------------------------------------------------------------------------


def pod_templates(server: Registration) -> list[dict[str, Any]]:
    spec = server.inputs["spec"]
    if server.type == DEPLOYMENT:
        return [spec["template"]]
    if server.type == LWS:
        t = spec["leaderWorkerTemplate"]
        return [t["leaderTemplate"], t["workerTemplate"]]
    if server.type == JOBSET:
        return [j["template"]["spec"]["template"] for j in spec["replicatedJobs"]]
    return []  # the PathwaysJob controller builds its pods


DRAINED = {
    # kind: the names of the servers that take requests (CPU servers that only coordinate are left alone)
    "Saxml": ("sax-http", "sax-model-server"),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_serving_pod_sleeps_before_sigterm_within_its_grace(path):
    rec = recorded(path, False)
    checked = 0
    for workload in workloads(rec):
        kind = workload.type.rsplit(":", 1)[1]
        for server in children(rec, workload, *SERVERS):
            if kind in DRAINED and server.inputs["metadata"]["name"] not in DRAINED[kind]:
                continue
            for template in pod_templates(server):
                pod = template["spec"]
                assert pod["terminationGracePeriodSeconds"] == disruption.GRACE_SECONDS, server.name
                for container in pod["containers"]:
                    # the kubelet's sleep action: no shell or sleep binary needed in the image (PodLifecycleSleepAction)
                    assert container["lifecycle"]["preStop"] == {"sleep": {"seconds": disruption.PRESTOP_SECONDS}}
                    checked += 1
    if not workloads(rec):
        pytest.skip("no workload")
    if not any(w.type.endswith(":PathwaysJob") for w in workloads(rec)):
        assert checked


def test_the_delays_outlast_routing_and_fit_the_limits():
    # The API server refuses a sleep longer than the grace period (kubernetes pkg/apis/core/validation
    # validateSleepAction: the seconds must be "less than terminationGracePeriodSeconds"), and SIGTERM must leave time to exit.
    assert 0 < disruption.PRESTOP_SECONDS < disruption.GRACE_SECONDS
    assert disruption.GRACE_SECONDS - disruption.PRESTOP_SECONDS >= disruption.SHUTDOWN_SECONDS
    # Compute Engine health check defaults (cloud.google.com/compute/docs/reference/rest/v1/healthChecks):
    # checkIntervalSec 5, timeoutSec 5, unhealthyThreshold 2
    assert disruption.ROUTING_SECONDS >= 5 * 2 + 5
    # the picker drops a terminating pod on its watch event and refreshes every 50 ms
    # (llm-d/llm-d-router@v0.10.0 pkg/epp/util/pod/pod.go IsPodReady; pkg/epp/server/options.go)
    assert disruption.ROUTING_SECONDS >= disruption.EPP_REMOVAL_SECONDS >= 0.05
    # the cluster autoscaler waits at most 600 s for a pod to terminate in a scale-down (kubernetes/autoscaler
    # cluster-autoscaler/FAQ.md --max-graceful-termination-sec): beyond it the server is killed mid-drain
    assert disruption.GRACE_SECONDS <= 600


def _chart_gke_policies() -> dict[str, dict[str, int]]:
    """The first HealthCheckPolicy's and GCPBackendPolicy's integer settings (`spec.default`) the llm-d router chart
    installs for the gateway-served workload of vllm-multi-host: the chart at its tag rendered by the pinned Helm
    with the release's values, parsed (tests/helm_charts.py render_release), never its template read as text."""
    from tests.helm_charts import render_release

    (path,) = [p for p in EXAMPLES if p.name == "Pulumi.vllm-multi-host.yaml"]
    (router,) = [r for r in recorded(path, False).of_type(RELEASE) if r.inputs["chart"] == versions.LLM_D_ROUTER.chart]
    out: dict[str, dict[str, int]] = {}
    for obj in render_release(router):
        if obj["kind"] in ("HealthCheckPolicy", "GCPBackendPolicy") and obj["kind"] not in out:
            default = obj["spec"]["default"]
            out[obj["kind"]] = {k: v for k, v in default.items() if k.endswith("Sec") and isinstance(v, int)}
    return out


def test_the_drain_covers_the_gateway_backend_timeout_and_its_health_check():
    """llm-d/llm-d-router@v0.10.0 config/charts/llm-d-router-gateway/templates/gke.yaml, which the stack installs per
    gateway-served workload: GCPBackendPolicy timeoutSec (the longest a request through the gateway runs) and the
    HealthCheckPolicy on the InferencePool (2 s interval and timeout; GKE's unhealthy threshold default 2)."""
    policies = _chart_gke_policies()
    assert disruption.REQUEST_SECONDS == policies["GCPBackendPolicy"]["timeoutSec"]
    check = policies["HealthCheckPolicy"]
    assert disruption.ROUTING_SECONDS >= check["checkIntervalSec"] * 2 + check["timeoutSec"]


# ---- upgrades: hold the serving slices, let patches reach the rest ----------------------------------------------

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
HELD = {"maintenance": {"holdMinorAndNodeUpgrades": True}}


def _scope(rec: Recording) -> str:
    (exclusion,) = rec.one(CLUSTER).inputs["maintenancePolicy"]["maintenanceExclusions"]
    return exclusion["exclusionOptions"]["scope"]


def test_held_tpu_node_pools_are_held_by_the_cluster_exclusion_which_an_update_can_change(run):
    # GKE API MaintenanceExclusionOptions.Scope NO_MINOR_OR_NODE_UPGRADES ("excludes all minor upgrades for the
    # cluster, and also exclude all node pool upgrades. Only control plane patches are allowed"),
    # https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#scope. The node
    # pool's own exclusion is create-only in the provider (google-beta resource_container_node_pool.go: nodePoolUpdate
    # never sends maintenance_policy), so no node pool carries one and every TPU node pool ignores the field.
    rec = run(make_config(tpu_serving__cluster=HELD))
    assert _scope(rec) == "NO_MINOR_OR_NODE_UPGRADES"
    pools = {r.name: r for r in rec.of_type(NODE_POOL)}
    assert pools and all("maintenancePolicies" not in r.inputs for r in pools.values())
    assert all("maintenancePolicies" in r.ignore_changes for n, r in pools.items() if n != "cluster-system")


def test_a_pool_gke_creates_node_pools_for_keeps_the_cluster_wide_hold(run):
    # A ComputeClass pool (capacity a list) has no node pool of its own: the cluster's exclusion holds what GKE
    # creates for it, with the same scope as any other stack (so leaving the list narrows nothing).
    listed = {
        "name": "v5e-2x4",
        "tpu": "v5e",
        "topology": "2x4",
        "zone": "us-east5-a",
        "capacity": ["spot", "on-demand"],
        "autoscaling": {"minNodes": 0, "maxNodes": 3},
    }
    cluster = {**HELD, "minMasterVersion": "1.35.0-gke.1000000"}
    rec = run(make_config(tpu_serving__cluster=cluster, **{"tpu_serving__tpuPools": [listed]}))
    assert _scope(rec) == "NO_MINOR_OR_NODE_UPGRADES"


def test_the_operations_page_states_the_delays_the_code_sets():
    page = (Path(__file__).resolve().parent.parent / "docs/operations.md").read_text()
    section = page[page.index("## Disruption-safe serving") :]
    for seconds in (
        disruption.PRESTOP_SECONDS,
        disruption.GRACE_SECONDS,
        disruption.ROUTING_SECONDS,
        disruption.REQUEST_SECONDS,
        disruption.SHUTDOWN_SECONDS,
    ):
        assert f"{seconds} s" in section, seconds
