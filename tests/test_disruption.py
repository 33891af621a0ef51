"""Disruption-safe serving (stacks/serving/disruption.py): a PodDisruptionBudget over every set of serving pods of every
workload type, a multi-host replica as one unit; and termination settings that outlast the load balancer's and the
endpoint picker's view of a pod, so a drain or a rollout drops no request in flight. Sources are cited per test."""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

import pytest

from stacks.facts import versions
from stacks.serving import disruption
from tests.conftest import EXAMPLES, ROOT, make_config, recorded, reference_file
from tests.test_workload_registry import ECHO_CONFIG, echo_registered  # noqa: F401  (a fixture)
from tooling.harness.offline import Recording, Registration
from tooling.oracles.chart_objects import RELEASE_TYPE
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
    controllers' own rules, not from stacks/serving/disruption.py; None: it has none."""
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
            out.setdefault(w.inputs["workloadType"], []).append(path)
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
    assert assert_budgets(rec) > 0 or all(w.inputs.get("workloadType") == "PathwaysJob" for w in workloads(rec))


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
        kind = workload.inputs["workloadType"]
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
    if not any(w.inputs["workloadType"] == "PathwaysJob" for w in workloads(rec)):
        assert checked


SERVICE = "kubernetes:core/v1:Service"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"  # LWS puts it on every pod of the set (lws@v0.7.0 SetNameLabelKey)


def _sleeps(template: dict[str, Any]) -> bool:
    return any("sleep" in (c.get("lifecycle", {}).get("preStop") or {}) for c in template["spec"]["containers"])


def sleep_problems(rec: Recording) -> list[str]:
    """Every pod template with a preStop sleep must be worth its wait: the sleep is the drain, the time routing takes
    to stop and the requests in flight take to finish (stacks/serving/disruption.py). So it is on
    - a routed endpoint: a pod a Service of its namespace selects (its labels, with the set-name label LWS adds), or
      the InferencePool of a router release in its namespace (values router.modelServers.matchLabels: a
      disaggregated vLLM workload's prefill servers are reached through the gateway's picker only);
    - or a pod a routed endpoint's requests run on: a LeaderWorkerSet worker of a group whose leader is routed (a
      multi-host replica computes on every host of its slice, vLLM through its Ray workers, JetStream through the
      Pathways workers: a worker that stopped at once would cut the leader's requests while it drains);
    - or a Saxml model server: its admin server "helps clients locate model servers serving specific published
      models" (google/saxml README.md), and the sax-http server behind the Service is such a client.
    A pod that is none of these would sleep for nothing, and hold its TPU node 5 minutes longer on every stop."""
    found = []
    services = [
        (r.inputs["metadata"].get("namespace", ""), r.inputs["spec"].get("selector"))
        for r in rec.resources
        if r.type == SERVICE
    ]
    services += [
        (r.inputs.get("namespace", ""), pool)
        for r in rec.resources
        if r.type == RELEASE_TYPE
        and (
            pool := (((r.inputs.get("values") or {}).get("router") or {}).get("modelServers") or {}).get("matchLabels")
        )
    ]
    for workload in workloads(rec):
        for server in children(rec, workload, *SERVERS):
            name, ns = server.inputs["metadata"]["name"], server.inputs["metadata"].get("namespace", "")

            def routed(template: dict[str, Any], extra: dict[str, str]) -> bool:
                labels = {**(template.get("metadata") or {}).get("labels", {}), **extra}  # noqa: B023
                return any(
                    namespace == ns and selector and selector.items() <= labels.items()  # noqa: B023
                    for namespace, selector in services
                )

            if server.type == LWS:
                t = server.inputs["spec"]["leaderWorkerTemplate"]
                leader = routed(t["leaderTemplate"], {LWS_NAME: name})
                for role, template in (("leader", t["leaderTemplate"]), ("worker", t["workerTemplate"])):
                    if _sleeps(template) and not leader:
                        found.append(f"{server.name} {role}: sleeps, and its group's leader is no routed endpoint")
                continue
            for template in pod_templates(server):
                saxml_model_server = server.type == JOBSET and workload.inputs.get("workloadType") == "Saxml"
                if _sleeps(template) and not (routed(template, {}) or saxml_model_server):
                    found.append(f"{server.name}: sleeps, and is no routed endpoint")
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_every_prestop_sleep_is_on_a_routed_pod_or_one_its_requests_run_on(path):
    assert sleep_problems(recorded(path, False)) == []


def test_the_sleep_check_finds_a_sleep_on_a_pod_nothing_routes_to():
    """The check fails where a sleeping pod is no endpoint: the vLLM multi-host example with its Service (and its
    router release's InferencePool) taken away."""
    (path,) = [p for p in EXAMPLES if p.parent.name == "vllm-multi-host"]
    rec = recorded(path, False)
    assert sleep_problems(rec) == []
    bare = Recording(resources=[r for r in rec.resources if r.type not in (SERVICE, RELEASE_TYPE)])
    assert sleep_problems(bare)


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


def default_pod_grace_seconds() -> int:
    """The grace of a pod that sets none, from the Kubernetes API schema (kubernetes-validate's PodSpec at the matrix's
    minor: terminationGracePeriodSeconds "Defaults to 30 seconds")."""
    import kubernetes_validate.utils as kv_utils

    from stacks.facts.versions import DEFAULT_KUBERNETES_MINOR

    versions = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= DEFAULT_KUBERNETES_MINOR]
    schema = kv_utils.schema_contents(
        f"kubernetes-json-schema/v{versions[-1]}-local-strict/podspec-v1.json", DEFAULT_KUBERNETES_MINOR
    )
    found = re.search(
        r"Defaults to (\d+) seconds", schema["properties"]["terminationGracePeriodSeconds"]["description"]
    )
    assert found, "the PodSpec schema no longer states the default grace"
    return int(found.group(1))


def probe_kill_problems(where: str, spec: dict[str, Any], default_grace: int) -> list[str]:
    """What is wrong with how the probes of one PodSpec kill: on a pod whose grace is longer than the default, every
    liveness and startup probe (a failure restarts the container, and the kubelet runs the preStop hook within the
    kill's grace: kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go setTerminationGracePeriod,
    killContainer) sets its own terminationGracePeriodSeconds, no longer than the default; a readiness probe sets none
    (pkg/apis/core/validation validateReadinessProbe: "must not be set for readinessProbes")."""
    out = []
    long_grace = spec.get("terminationGracePeriodSeconds", default_grace) > default_grace
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        if "terminationGracePeriodSeconds" in c.get("readinessProbe", {}):
            out.append(f"{where} {c['name']}: readinessProbe.terminationGracePeriodSeconds is refused by the API")
        for probe in ("livenessProbe", "startupProbe"):
            if long_grace and probe in c:
                own = c[probe].get("terminationGracePeriodSeconds")
                if own is None or own > default_grace:
                    out.append(f"{where} {c['name']}: {probe} kills with grace {own or 'of the pod'}")
    return out


def every_workload_pod() -> list[tuple[str, dict[str, Any]]]:
    """(where, PodSpec) of every pod of every workload of every shipped stack, and of every example's rendered
    objects (charts' aside)."""
    from stacks.security.pod_security import pod_templates
    from tests.conftest import STACK_FILES
    from tooling.harness.k8s_objects import kubernetes_objects
    from tooling.harness.offline import load_stack_file, parse_config

    out = []
    for path in STACK_FILES:
        cfg = parse_config(load_stack_file(path), path.name.removeprefix("Pulumi.").removesuffix(".yaml"))
        for plan in getattr(cfg, "workloads", []):
            for manifest in plan.pod_manifests():
                out += [(f"{path.name} {plan.workload.type} {w}", s) for w, _, s in pod_templates(manifest)]
    for path in EXAMPLES:
        for obj in kubernetes_objects(recorded(path, False)):
            where = f"{path.name} {obj['kind']} {obj['metadata'].get('name')}"
            out += [(f"{where} {w}", s) for w, _, s in pod_templates(obj.get("spec", {}))]
    return out


def test_every_probe_that_kills_on_a_long_grace_pod_has_its_own_short_grace():
    """The class of issue 34's finding 5: a liveness or startup kill of a server held its slice for the whole drain
    (PRESTOP_SECONDS), and on a LeaderWorkerSet the group's restart waited for it. Over every pod of every workload
    type in the shipped stacks and every example's rendered objects."""
    default = default_pod_grace_seconds()
    pods = every_workload_pod()
    long_grace = [(w, s) for w, s in pods if s.get("terminationGracePeriodSeconds", default) > default]
    assert long_grace and any("livenessProbe" in c for _, s in long_grace for c in s["containers"])
    assert [p for w, s in pods for p in probe_kill_problems(w, s, default)] == []
    assert disruption.PROBE_KILL_GRACE_SECONDS <= default < disruption.GRACE_SECONDS
    # the old pods: a liveness probe on a drained pod without its own grace
    old = {
        "terminationGracePeriodSeconds": disruption.GRACE_SECONDS,
        "containers": [{"name": "s", "livenessProbe": {}}],
    }
    assert probe_kill_problems("old", old, default)


def test_a_type_added_to_the_registry_is_checked_and_drained_pods_get_short_probe_kills(echo_registered):  # noqa: F811
    """A type a test adds is held to the same rule, and `drained` (what every type's serving pods go through) gives
    each killing probe the short grace and leaves readiness alone."""
    from stacks.security.pod_security import pod_specs
    from tooling.harness.offline import parse_config

    default = default_pod_grace_seconds()
    (plan,) = parse_config(make_config(tpu_serving__workloads=[ECHO_CONFIG]), "dev").workloads
    assert [
        p for m in plan.pod_manifests() for s in pod_specs(m) for p in probe_kill_problems("echo", s, default)
    ] == []
    pod = disruption.drained(
        {
            "containers": [
                {"name": "a", "livenessProbe": {"httpGet": {"path": "/", "port": 1}}, "readinessProbe": {"exec": {}}},
                {"name": "b", "startupProbe": {"tcpSocket": {"port": 1}}},
            ]
        }
    )
    assert probe_kill_problems("drained", pod, default) == []
    assert pod["containers"][0]["livenessProbe"]["terminationGracePeriodSeconds"] == disruption.PROBE_KILL_GRACE_SECONDS
    assert pod["containers"][1]["startupProbe"]["terminationGracePeriodSeconds"] == disruption.PROBE_KILL_GRACE_SECONDS
    assert "terminationGracePeriodSeconds" not in pod["containers"][0]["readinessProbe"]


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
    # what a fault costs on a LeaderWorkerSet, and why (lws@v0.7.0 pod_controller.go handleRestartPolicy deletes the
    # leader with the pod's grace: every pod of the group sleeps)
    fault = section[section.index("### What a fault costs on a LeaderWorkerSet") :]
    assert f"about {disruption.GRACE_SECONDS} s" in fault and "handleRestartPolicy" in fault


# ---- rollouts fit the pool ---------------------------------------------------------------------------------------


def _builtin_schema(name: str) -> dict[str, Any]:
    import kubernetes_validate.utils as kv_utils

    from stacks.facts.versions import DEFAULT_KUBERNETES_MINOR

    versions = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= DEFAULT_KUBERNETES_MINOR]
    return kv_utils.schema_contents(f"kubernetes-json-schema/v{versions[-1]}-local-strict/{name}", "")


@functools.cache
def rollout_defaults() -> dict[str, dict[str, tuple[Any, bool]]]:
    """(default, rounds up) of maxSurge and maxUnavailable, per kind, from the API's own schemas: a Deployment's from
    kubernetes-validate's apps/v1 RollingUpdateDeployment ("Defaults to 25%", "calculated from percentage by rounding
    up" / "down"), a LeaderWorkerSet's from its CRD at the pinned tag (kubernetes-sigs/lws@v0.7.0
    config/crd/bases: rollingUpdateConfiguration maxSurge default 0, maxUnavailable default 1)."""
    import yaml

    out: dict[str, dict[str, tuple[Any, bool]]] = {"Deployment": {}, "LeaderWorkerSet": {}}
    deployment = _builtin_schema("rollingupdatedeployment-apps-v1.json")["properties"]
    lws_crd = yaml.safe_load(reference_file("crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml").read_text())
    (version,) = [v for v in lws_crd["spec"]["versions"] if v["name"] == "v1"]
    lws = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rolloutStrategy"]["properties"][
        "rollingUpdateConfiguration"
    ]["properties"]
    for key in ("maxSurge", "maxUnavailable"):
        text = deployment[key]["description"]
        default = re.search(r"Defaults to (\d+%)", text)
        rounding = re.search(r"rounding (up|down)", text)
        assert default and rounding, text
        out["Deployment"][key] = (default.group(1), rounding.group(1) == "up")
        lws_rounding = re.search(r"rounding (up|down)", lws[key]["description"])
        assert lws_rounding, lws[key]["description"]
        out["LeaderWorkerSet"][key] = (lws[key]["default"], lws_rounding.group(1) == "up")
    return out


def _absolute(value: Any, replicas: int, up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * replicas / 100
        return math.ceil(share) if up else math.floor(share)
    return int(value)


def _tpu_pod(spec: dict[str, Any]) -> bool:
    return any(
        float(c.get("resources", {}).get("requests", {}).get("google.com/tpu", 0)) > 0 for c in spec["containers"]
    )


def rollout_demand(plan: Any, manifest: dict[str, Any]) -> tuple[int, int, int] | None:
    """(TPU hosts at the workload's most replicas, hosts its surge takes, replicas it may stop) of one Deployment or
    LeaderWorkerSet, read from the rendered manifest with the API's defaults for what it leaves unset; None for a
    manifest that holds no TPU host or rolls out nothing (a Job, a JobSet)."""
    kind, spec = manifest.get("kind"), manifest.get("spec", {})
    auto = getattr(plan.workload, "autoscaling", None)
    replicas = auto.max_replicas if auto is not None else int(spec.get("replicas", 1))
    if kind == "Deployment":
        pod = spec["template"]["spec"]
        per_replica = 1 if _tpu_pod(pod) else 0
        if per_replica:
            assert pod["nodeSelector"].items() >= plan.pool.pool_selector.items(), manifest["metadata"]["name"]
        strategy = spec.get("strategy", {})
        if strategy.get("type", "RollingUpdate") == "Recreate":
            return replicas * per_replica, 0, replicas
        params = strategy.get("rollingUpdate", {})
    elif kind == "LeaderWorkerSet":
        template = spec["leaderWorkerTemplate"]
        leader = template.get("leaderTemplate", template["workerTemplate"])["spec"]
        per_replica = int(_tpu_pod(leader)) + (int(template["size"]) - 1) * int(
            _tpu_pod(template["workerTemplate"]["spec"])
        )
        params = spec.get("rolloutStrategy", {}).get("rollingUpdateConfiguration", {})
    else:
        return None
    if not per_replica:
        return None
    defaults = rollout_defaults()[kind]
    surge = _absolute(params.get("maxSurge", defaults["maxSurge"][0]), replicas, defaults["maxSurge"][1])
    stop = _absolute(
        params.get("maxUnavailable", defaults["maxUnavailable"][0]), replicas, defaults["maxUnavailable"][1]
    )
    return replicas * per_replica, surge * per_replica, stop


def rollout_problems(plans: list[Any]) -> list[str]:
    """Where a rollout of the plans' Deployments and LeaderWorkerSets at their most replicas would never progress: a
    controller that may stop no replica (maxUnavailable 0) waits for its surge pods to be Ready, and a surge pod on a
    pool already holding every workload at its maximum finds no node (the pool's capacity, PoolPlan.capacity_hosts,
    is the most the cluster autoscaler grows it to). One `pulumi up` may roll out every workload of a pool at once."""
    held: dict[str, int] = {}
    waiting: dict[str, list[tuple[str, int]]] = {}
    pools = {}
    for plan in plans:
        for manifest in plan.pod_manifests():
            demand = rollout_demand(plan, manifest)
            if demand is None:
                continue
            hosts, surge, stop = demand
            pools[plan.pool.name] = plan.pool
            held[plan.pool.name] = held.get(plan.pool.name, 0) + hosts
            if stop == 0:
                waiting.setdefault(plan.pool.name, []).append((f"{manifest['kind']} {plan.name}", surge))
    out = []
    for name, rollouts in waiting.items():
        free = pools[name].capacity_hosts - held[name]
        if sum(s for _, s in rollouts) > free:
            out.append(f"pool {name!r} ({free} host(s) free at the maximum) cannot take the surge of {rollouts}")
    return out


def test_every_rollout_fits_the_capacity_its_pool_plan_provides():
    """Issue 34 finding 7's class: over every workload of every shipped stack (every registry type is in one), a
    rollout at the most replicas progresses within its pool. The old Deployments (no strategy: Kubernetes' 25%, so
    maxSurge 1 and maxUnavailable 0 below 4 replicas) on pools sized to their maximum stall; the check says so."""
    from tests.conftest import STACK_FILES
    from tooling.harness.offline import load_stack_file, parse_config

    checked, surging = set(), 0
    for path in STACK_FILES:
        cfg = parse_config(load_stack_file(path), path.name.removeprefix("Pulumi.").removesuffix(".yaml"))
        plans = list(getattr(cfg, "workloads", []))
        assert rollout_problems(plans) == [], path.name
        for plan in plans:
            for manifest in plan.pod_manifests():
                demand = rollout_demand(plan, manifest)
                if demand is not None:
                    checked.add(manifest["kind"])
                    surging += demand[1] > 0
        if path.name == "Pulumi.vllm-staging-slo.yaml":  # its pool keeps a node above maxReplicas: it surges
            (plan,) = plans
            assert plan.deployment_strategy()["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
            assert rollout_demand(plan, _without_strategy(plan.pod_manifests()[0])) == (3, 1, 0)  # the API's 25%
    assert checked == {"Deployment", "LeaderWorkerSet"} and surging
    # a pool sized exactly to the replicas' maximum, as the old Deployments met it: the check refuses the old render
    cfg = parse_config(
        load_stack_file(ROOT / "examples/vllm-single-host/Pulumi.vllm-single-host.yaml"), "vllm-single-host"
    )
    (plan,) = cfg.workloads
    assert plan.pool.capacity_hosts == plan.hosts_needed
    assert rollout_problems([plan]) == []
    assert rollout_problems([_Rendered(plan, [_without_strategy(plan.pod_manifests()[0])])])


def _without_strategy(manifest: dict[str, Any]) -> dict[str, Any]:
    """A Deployment as the stack rendered it before issue 34: no `strategy`, so Kubernetes' defaults."""
    return {**manifest, "spec": {k: v for k, v in manifest["spec"].items() if k != "strategy"}}


class _Rendered:
    """A plan whose pod manifests are given (an old render)."""

    def __init__(self, plan: Any, manifests: list[dict[str, Any]]):
        self.plan, self.manifests = plan, manifests
        self.pool, self.workload, self.name = plan.pool, plan.workload, plan.name

    def pod_manifests(self) -> list[dict[str, Any]]:
        return self.manifests


def test_a_type_added_to_the_registry_is_held_to_its_pools_capacity(echo_registered):  # noqa: F811
    """A type that sets no strategy keeps Kubernetes' (25%: one surge pod, none stopped below 4 replicas): if its pods
    take a TPU host each (the echo type's Deployment with every chip of its host requested), on a pool sized to its
    replicas its rollout would stall and the check says so; with a host to spare it fits."""
    from stacks.serving.workload_plan import tpu_resources
    from tests.conftest import pool
    from tooling.harness.offline import parse_config

    for max_nodes, fits in ((2, False), (3, True)):
        v5e = pool(name="v5e-2x4", tpu="v5e", topology="2x4", zone="us-east5-a")
        v5e["autoscaling"] = {"minNodes": 0, "maxNodes": max_nodes}
        cfg = parse_config(make_config(tpu_serving__tpuPools=[v5e], tpu_serving__workloads=[ECHO_CONFIG]), "dev")
        (plan,) = cfg.workloads
        (deployment,) = plan.pod_manifests()
        assert rollout_problems([plan]) == []  # its pods request no TPU: a surge pod shares a node
        pod = deployment["spec"]["template"]["spec"]
        pod["containers"][0]["resources"] = tpu_resources(plan.shape)
        assert (rollout_problems([_Rendered(plan, [deployment])]) == []) == fits, max_nodes
