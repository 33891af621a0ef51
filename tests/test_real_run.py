"""Rules that only a real `pulumi up` / `preview` enforces (mocks accept every violation), asserted over every
shipped stack (the dev stack and every example) from the recorded inputs and dependencies (issue 11).

Each rule cites the source that confirmed it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.tpu_pool import ignored_changes, upgrade_settings
from stacks.config import StackConfig
from stacks.monitoring import dashboard
from stacks.reports import cost
from stacks.serving.pool_sizing import cluster_zones, sizing, system_pool_sizing, waits_for_capacity
from tests.conftest import STACK_FILES, make_config, pool, recorded
from tooling.harness.offline import Recording, parse_stack_file

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
IAM_TYPES = (
    "gcp:serviceaccount/iAMMember:IAMMember",
    "gcp:projects/iAMMember:IAMMember",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
)

stacks = pytest.mark.parametrize(
    "path", STACK_FILES, ids=lambda p: p.name.removeprefix("Pulumi.").removesuffix(".yaml")
)


def waits_for(rec: Recording, urn: str) -> set[str]:
    """Every URN the resource `urn` waits for, directly or through what it waits for."""
    deps = {r.urn: set(r.dependencies) for r in rec.resources}
    seen: set[str] = set()
    todo = list(deps.get(urn, ()))
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(deps.get(dep, ()))
    return seen


def names_identity_pool(member: Any) -> bool:
    return isinstance(member, str) and ".svc.id.goog" in member


# ---- item 1: grants that name the Workload Identity pool wait for the cluster ---------------------------------


@stacks
def test_grants_naming_the_identity_pool_wait_for_the_cluster(path):
    # The pool PROJECT.svc.id.goog is created with the project's first Workload Identity cluster; IAM refuses a
    # member in it before ("Error 400: Identity Pool does not exist"):
    # https://github.com/terraform-google-modules/terraform-google-kubernetes-engine/issues/916
    rec = recorded(path, False)
    cluster = rec.one(CLUSTER).urn
    grants = [r for t in IAM_TYPES for r in rec.of_type(t) if names_identity_pool(r.inputs.get("member"))]
    assert grants, "every shipped stack grants something to a Workload Identity principal"
    for grant in grants:
        assert cluster in waits_for(rec, grant.urn), f"{grant.name} does not wait for the cluster"


# ---- item 2: the dashboard JSON is what the Monitoring API returns ---------------------------------------------


def _defaults_the_api_drops(value: Any, path: str = "") -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _defaults_the_api_drops(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _defaults_the_api_drops(v, f"{path}[{i}]")]
    if value == "" or (type(value) is int and value == 0):
        return [f"{path}={value!r}"]
    return []


@stacks
def test_dashboard_json_has_no_value_the_api_drops(path):
    # The Monitoring API drops empty strings and zero numbers (xPos: 0, yPos: 0, unitOverride: ""); the provider
    # then shows a change on every preview: https://github.com/hashicorp/terraform-provider-google/issues/16173
    rec = recorded(path, False)
    for board in rec.of_type("gcp:monitoring/dashboard:Dashboard"):
        body = json.loads(board.inputs["dashboardJson"])
        assert _defaults_the_api_drops(body) == []
        tiles = body["mosaicLayout"]["tiles"]
        assert "xPos" not in tiles[0] and "yPos" not in tiles[0]  # the first tile sits at (0, 0)
        assert {(t.get("xPos", 0), t.get("yPos", 0)) for t in tiles} == {
            ((i % 2) * 24, (i // 2) * 16) for i in range(len(tiles))
        }


def test_api_shape_keeps_false_and_non_zero_values():
    assert dashboard.api_shape({"a": 0, "b": "", "c": False, "d": [{"e": 0, "f": 2}], "g": "x"}) == {
        "c": False,
        "d": [{"f": 2}],
        "g": "x",
    }


# ---- item 4: flex-start pools leave their upgrade strategy to GKE ----------------------------------------------


@stacks
def test_node_pool_upgrade_settings_converge(path):
    # GKE uses the SHORT_LIVED strategy for flex-start (and queued-provisioning) node pools ("SHORT_LIVED is the
    # dedicated upgrade strategy for QueuedProvisioning and flex start nodepools", NodePoolUpdateStrategy,
    # https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodePool#NodePoolUpdateStrategy and
    # https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies: "For nodes that use
    # flex-start VMs, GKE uses short-lived upgrades"): sending SURGE would never converge.
    rec = recorded(path, False)
    for node_pool in rec.of_type(NODE_POOL):
        flex = node_pool.inputs.get("nodeConfig", {}).get("flexStart") is True
        if flex:
            assert "upgradeSettings" not in node_pool.inputs
            assert "upgradeSettings" in node_pool.ignore_changes
        else:
            assert node_pool.inputs["upgradeSettings"]["strategy"] == "SURGE"


def test_flex_start_pools_send_no_upgrade_settings_and_ignore_gke_s(run):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[
                pool(name="flex", capacity="flex-start"),
                pool(name="flex1", topology="2x4", capacity="flex-start"),
                pool(name="od"),
            ]
        )
    )
    pools = {p.inputs["name"]: p for p in rec.of_type(NODE_POOL)}
    for name in ("flex-s0", "flex1"):
        assert "upgradeSettings" not in pools[name].inputs
        assert "upgradeSettings" in pools[name].ignore_changes
    assert pools["od-s0"].inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    assert "upgradeSettings" not in pools["od-s0"].ignore_changes


def test_upgrade_settings_per_capacity():
    class Plan:
        def __init__(self, capacity):
            self.config = type("C", (), {"capacity": capacity})()
            self.shape = type("S", (), {"uses_workload_policy": False})()  # placement: tests/test_tpu_pools.py

    assert upgrade_settings(Plan("flex-start")) is None
    # maintenancePolicies: create-only in the provider, ignored on every TPU pool (tests/test_change_safety.py)
    assert ignored_changes(Plan("flex-start"), True) == ["maintenancePolicies", "initialNodeCount", "upgradeSettings"]
    for capacity in ("on-demand", "spot", "reservation"):
        assert upgrade_settings(Plan(capacity)) is not None
        assert ignored_changes(Plan(capacity), False) == ["maintenancePolicies"]


# ---- item 7: nothing starts before what it needs --------------------------------------------------------------


@stacks
def test_pod_monitorings_and_releases_wait_for_a_node(path):
    # GMP before 0.16 admits PodMonitorings through a webhook served by the operator on a node, failurePolicy Fail
    # (issue 11; from GMP 0.16 a ValidatingAdmissionPolicy in the API server: prometheus-engine@v0.17.2
    # manifests/operator.yaml, ../shared/reference/manifests/prometheus-engine-v0.17.2); Helm releases roll out
    # controllers and webhooks that need a node. Both wait for the system pool (created with its first node).
    rec = recorded(path, False)
    system_pool = rec.one(NODE_POOL, "cluster-system").urn
    waiting = [
        *[r for r in rec.of_type("kubernetes:monitoring.googleapis.com/v1:PodMonitoring")],
        *rec.of_type("kubernetes:helm.sh/v3:Release"),
    ]
    assert waiting
    for resource in waiting:
        assert system_pool in waits_for(rec, resource.urn), f"{resource.name} does not wait for the system pool"


@stacks
def test_nodes_wait_for_their_service_account_roles(path):
    # A node that boots before its service account holds roles/container.defaultNodeServiceAccount cannot write
    # logs and metrics, and one without Artifact Registry reader (on the stack's image repositories, or on the
    # project when cluster.images.mirror is off) cannot pull images; IAM grants are member updates the engine runs in
    # parallel with anything that does not wait for them.
    rec = recorded(path, False)
    types = ("gcp:projects/iAMMember:IAMMember", "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    grants = {r.urn for t in types for r in rec.of_type(t) if r.name.startswith("cluster-nodes-")}
    assert len(grants) == 2
    for resource in [rec.one(CLUSTER), *rec.of_type(NODE_POOL)]:
        assert grants <= waits_for(rec, resource.urn), f"{resource.name} does not wait for the node roles"


# ---- item 8: system pool sizes are totals, and the cost estimate counts them so ----------------------------------


@stacks
def test_system_pool_sizes_are_totals_and_the_cost_estimate_matches(path):
    # GKE's NodePoolAutoscaling: min/max_node_count are "per zone", total_min/total_max_node_count count the whole
    # pool and cannot be combined with them; initial_node_count is per zone
    # (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools#NodePoolAutoscaling;
    # pulumi_gcp container NodePoolAutoscalingArgs). A regional pool spans 3 zones by default.
    rec = recorded(path, False)
    cfg: StackConfig = parse_stack_file(path)
    system = cfg.cluster.system_pool
    inputs = rec.one(NODE_POOL, "cluster-system").inputs
    assert inputs["autoscaling"] == {
        "totalMinNodeCount": system.min_nodes,
        "totalMaxNodeCount": system.max_nodes,
        "locationPolicy": "BALANCED",
    }
    zones = cluster_zones(cfg.cluster_location)
    assert inputs["initialNodeCount"] * zones <= system.max_nodes
    line = next(x for x in cost.estimate(cfg).lines if x.item == "system pool")
    price = cost.CPU_MACHINE_HOUR[system.machine_type]
    assert (line.baseline, line.peak) == (round(price * system.min_nodes, 4), round(price * system.max_nodes, 4))


def test_system_pool_sizing_per_location():
    assert cluster_zones("us-east5") == 3 and cluster_zones("us-east5-b") == 1
    assert system_pool_sizing(1, 3, 3).initial_per_zone == 1
    assert system_pool_sizing(0, 3, 1).initial_per_zone == 1  # the first controllers need a node
    assert system_pool_sizing(7, 9, 3).initial_per_zone == 3


def test_regional_system_pool_needs_room_for_a_node_per_zone(run):
    with pytest.raises(Exception, match=r"cluster\.systemPool\.maxNodes: 2 is below 3"):
        run(make_config(tpu_serving__cluster={"systemPool": {"minNodes": 1, "maxNodes": 2}}))
    run(make_config(tpu_serving__cluster={"location": "us-east5-b", "systemPool": {"minNodes": 1, "maxNodes": 2}}))


# ---- item 5: a stockout cannot fail `pulumi up` -----------------------------------------------------------------


@stacks
def test_only_reserved_capacity_is_created_whole(path):
    # A multi-host slice is atomic: "if GKE cannot deploy one node in the slice, no node of the slice is deployed",
    # and GKE scales it "to 0 and creates new nodes" as a unit (About TPUs in GKE,
    # https://cloud.google.com/kubernetes-engine/docs/concepts/tpus, multi-host TPU slice node pools); a node pool
    # create that waits for hosts a zone does not have fails. So only a reservation's slices are created whole;
    # every other pool starts at 0 with {min: 0, max: the slice}. The TPU servers are awaited on every pool, for as
    # long as the time-to-serve model says a replica takes from no capacity (tests/test_server_await.py): a stockout
    # fails the `up` only after that, with every other resource created.
    cfg = parse_stack_file(path)
    rec = recorded(path, False)
    pools = {r.inputs["name"]: r.inputs for r in rec.of_type(NODE_POOL) if r.name != "cluster-system"}
    for plan in cfg.pools:
        reserved = plan.config.capacity == "reservation" and plan.config.autoscaling is None
        for index, name in enumerate(plan.node_pool_names):
            inputs = pools[name]
            created = inputs.get("nodeCount") or inputs.get("initialNodeCount") or 0
            if plan.config.autoscaling is None:
                assert (created > 0) == reserved, name
            if not reserved and plan.config.autoscaling is None:
                # a warm slice (warmSlices) keeps the whole slice as its minimum, but is still created empty: the
                # minimum holds it once a scale-out brings it up (stacks/serving/pool_sizing.py sizing)
                low = plan.shape.hosts if index < plan.config.warm_slices else 0
                assert inputs["autoscaling"] == {"minNodeCount": low, "maxNodeCount": plan.max_nodes_per_node_pool}
            assert waits_for_capacity(plan) == (created > 0), name
    for workload in cfg.workloads:
        for deployment in rec.of_type("kubernetes:apps/v1:Deployment"):
            meta, pod = deployment.inputs["metadata"], deployment.inputs["spec"]["template"]["spec"]
            if meta.get("namespace") != workload.namespace or "google.com/tpu" not in json.dumps(pod["containers"]):
                continue
            assert "pulumi.com/skipAwait" not in meta.get("annotations", {}), deployment.name
            assert deployment.custom_timeouts == workload.server_timeouts(), deployment.name


@pytest.mark.parametrize(
    "capacity,autoscaling,whole",
    [
        ("on-demand", None, False),
        ("spot", None, False),
        ("flex-start", None, False),
        ("reservation", None, True),
        ("on-demand", {"minNodes": 4, "maxNodes": 4}, True),
        ("reservation", {"minNodes": 0, "maxNodes": 4}, False),
    ],
)
def test_stockout_safe_sizing_and_pause_stay_consistent(capacity, autoscaling, whole):
    """Created whole only where capacity is reserved (or asked for); paused, every slice may go to 0; unpaused,
    the configured minimum comes back, with the same maximum (an in-place autoscaling update, never a replace)."""
    from stacks.config import parse_stack_config
    from workloads.registry import WORKLOAD_TYPES

    extra = {"reservation": "r"} if capacity == "reservation" else {}
    if autoscaling:
        extra["autoscaling"] = autoscaling
    raw = {
        "environment": "dev",
        "tpuPools": [
            {"name": "p", "tpu": "v6e", "topology": "4x4", "zone": "us-east5-b", "capacity": capacity, **extra}
        ],
    }
    (plan,) = parse_stack_config(
        raw,
        stack="dev",
        pulumi_project="p",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=WORKLOAD_TYPES,
    ).pools
    running, paused = sizing(plan), sizing(plan, paused=True)
    assert waits_for_capacity(plan) == whole
    assert (running.min_nodes, running.max_nodes, running.initial_node_count) == ((4, 4, 4) if whole else (0, 4, 0))
    assert (paused.min_nodes, paused.max_nodes, paused.initial_node_count) == (0, 4, 0)


# ---- item 3: stacks that share a project share no identity and no grant --------------------------------------


def _grants(rec: Recording) -> set[tuple[str, str, str, str]]:
    """Member-level IAM grants as the API keys them: (kind, resource, role, member)."""
    out = set()
    for type_ in IAM_TYPES:
        for r in rec.of_type(type_):
            target = r.inputs.get("project") or r.inputs.get("bucket") or r.inputs.get("serviceAccountId")
            out.add((type_, str(target), r.inputs["role"], r.inputs["member"]))
    return out


def _principals(rec: Recording) -> set[str]:
    """Workload Identity principals (namespace/KSA) the stack grants anything to."""
    out = set()
    for _, _, _, member in _grants(rec):
        if "[" in member and member.endswith("]"):  # serviceAccount:PROJECT.svc.id.goog[ns/ksa]
            out.add(member[member.index("[") + 1 : -1])
        elif "/subject/ns/" in member:  # principal://.../subject/ns/<ns>/sa/<ksa>
            ns, ksa = member.split("/subject/ns/")[1].split("/sa/")
            out.add(f"{ns}/{ksa}")
    return out


@stacks
def test_two_stacks_of_one_project_share_no_grant_and_no_identity(path):
    # Workload Identity pools are per project: every cluster of a project shares PROJECT.svc.id.goog, so the same
    # namespace/KSA in two clusters is one principal ("identity sameness",
    # https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity#identity_sameness); and a
    # member-level grant is keyed by (resource, role, member), so two stacks' identical grants are one binding,
    # removed by whichever stack is destroyed first.
    from tooling.harness.offline import load_stack_file, run_program

    first = recorded(path, False)
    name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    second = run_program(load_stack_file(path), stack=f"{name}-b")
    assert _principals(first), "every shipped stack grants something to a Workload Identity principal"
    assert not _grants(first) & _grants(second)
    assert not _principals(first) & _principals(second)
    # the KSAs the pods run as are those principals
    for rec in (first, second):
        ksas = {
            f"{r.inputs['metadata']['namespace']}/{r.inputs['metadata']['name']}"
            for r in rec.of_type("kubernetes:core/v1:ServiceAccount")
        }
        assert _principals(rec) <= ksas


# ---- item 6: GKE never takes a serving slice down by itself in staging and prod -------------------------------


def hold(scope: str = "NO_MINOR_OR_NODE_UPGRADES") -> dict[str, Any]:
    return {
        "exclusionName": "tpu-serving-hold-minor-and-node-upgrades",
        "startTime": "2025-01-01T00:00:00Z",
        "exclusionOptions": {"scope": scope, "endTimeBehavior": "UNTIL_END_OF_SUPPORT"},
    }


HOLD = hold()


@stacks
def test_staging_and_prod_hold_every_node_pool_through_the_cluster_exclusion(path):
    # Scopes (GKE API MaintenanceExclusionOptions.Scope,
    # https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#scope):
    # NO_MINOR_OR_NODE_UPGRADES "excludes all minor upgrades for the cluster, and also exclude all node pool
    # upgrades. Only control plane patches are allowed". A node upgrade recreates a multi-host slice whole; the node
    # pool's own exclusion would hold only the TPU pools, but the provider sends it only on create (google-beta
    # resource_container_node_pool.go: nodePoolUpdate has no HasChange for maintenance_policy), so turning the hold
    # on for a live stack would leave them unheld. The cluster's exclusion is updated in place.
    # end_time_behavior UNTIL_END_OF_SUPPORT replaces end_time (pulumi_gcp container
    # ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs: exactly one of them). GoogleCloudPlatform/
    # cluster-toolkit blueprints hold upgrades with the wide scope (modules/scheduler/gke-cluster/main.tf).
    cfg = parse_stack_file(path)
    rec = recorded(path, False)
    policy = rec.one(CLUSTER).inputs.get("maintenancePolicy") or {}
    configured = cfg.cluster.maintenance.hold_minor_and_node_upgrades
    held = cfg.environment in ("staging", "prod") if configured is None else configured
    expected = [HOLD] if held else None
    assert policy.get("maintenanceExclusions") == expected
    for node_pool in rec.of_type(NODE_POOL):
        assert "maintenancePolicies" not in node_pool.inputs, node_pool.name


def test_maintenance_window_and_explicit_hold(run):
    window = {"start": "2025-01-04T03:00:00Z", "end": "2025-01-04T09:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
    rec = run(make_config(tpu_serving__cluster={"maintenance": {"window": window, "holdMinorAndNodeUpgrades": True}}))
    policy = rec.one(CLUSTER).inputs["maintenancePolicy"]
    assert policy == {
        "recurringWindow": {"startTime": window["start"], "endTime": window["end"], "recurrence": window["recurrence"]},
        "maintenanceExclusions": [HOLD],
    }
    # dev holds nothing and sets no policy unless asked
    assert "maintenancePolicy" not in run(make_config()).one(CLUSTER).inputs


def test_bad_maintenance_config_is_a_clear_error(run):
    bad = {"window": {"start": "2025-01-04T09:00:00Z", "end": "2025-01-04T03:00:00Z", "recurrence": "weekly"}}
    with pytest.raises(Exception) as err:
        run(make_config(tpu_serving__cluster={"maintenance": {**bad, "holdStart": "tomorrow"}}))
    message = str(err.value)
    assert "cluster.maintenance.window.end: '2025-01-04T03:00:00Z' is not after window.start" in message
    assert "cluster.maintenance.window.recurrence: 'weekly' is not an RFC 5545 RRULE" in message
    assert "cluster.maintenance.holdStart: 'tomorrow' is not an RFC 3339 time" in message
