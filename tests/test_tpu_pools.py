"""TPU node pools: one per slice, everything derived from the catalog and the pool config."""

import pytest

from stacks.facts.catalog import GENERATIONS, WORKLOAD_POLICY
from tests.conftest import STACK_FILES, make_config, pool, recorded
from tooling.harness.offline import parse_stack_file

NODE_POOL = "gcp:container/nodePool:NodePool"


def tpu_pools(rec):
    return {r.inputs["name"]: r for r in rec.of_type(NODE_POOL) if r.name != "cluster-system"}


def test_multi_host_pool_is_one_node_pool_per_slice(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(name="sax", tpu="v5e", topology="4x8", slices=3)]))
    pools = tpu_pools(rec)
    assert sorted(pools) == ["sax-s0", "sax-s1", "sax-s2"]
    for index, name in enumerate(sorted(pools)):
        inputs = pools[name].inputs
        assert inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x8"}
        # hosts per slice (32 chips / 4 per VM); a slice is sized through the autoscaler as 0 or whole, and
        # on-demand capacity starts empty (brought up by pending pods; see test_stockout_safe_sizing)
        assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 8}
        assert inputs["initialNodeCount"] == 0 and "nodeCount" not in inputs
        assert pools[name].ignore_changes == ["maintenancePolicies", "initialNodeCount"]  # CREATE_ONLY first
        assert inputs["nodeLocations"] == ["us-east5-b"]
        assert inputs["nodeConfig"]["machineType"] == "ct5lp-hightpu-4t"
        assert inputs["nodeConfig"]["labels"] == {"tpu-serving/pool": "sax", "tpu-serving/slice": str(index)}
        assert inputs["cluster"] == "tpu-serving-dev"
        assert inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
        assert inputs["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
        assert pools[name].delete_before_replace
    summary = rec.outputs["tpuPools"]["sax"]
    assert summary == {
        "tpu": "v5e",
        "topology": "4x8",
        "machineType": "ct5lp-hightpu-4t",
        "zone": "us-east5-b",
        "capacity": "on-demand",
        "slices": 3,
        "hostsPerSlice": 8,
        "chipsPerHost": 4,
        "chipsPerSlice": 32,
        "totalChips": 96,
        "nodePools": ["sax-s0", "sax-s1", "sax-s2"],
    }


@pytest.mark.parametrize(
    "tpu,topology,machine_type,hosts",
    [
        ("v6e", "2x4", "ct6e-standard-4t", 2),
        ("v6e", "4x4", None, 4),
        ("v6e", "4x8", None, 8),
        ("v5e", "4x8", None, 8),
        ("v5p", "2x4x4", None, 8),
        ("v4", "2x2x4", None, 4),
    ],
)
def test_topology_drives_node_count_and_machine_type(run, tpu, topology, machine_type, hosts):
    extra = {"machineType": machine_type} if machine_type else {}
    rec = run(make_config(tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology, **extra)]))
    (node_pool,) = tpu_pools(rec).values()
    assert node_pool.inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": hosts}
    assert node_pool.inputs["initialNodeCount"] == 0
    assert node_pool.inputs["placementPolicy"]["tpuTopology"] == topology
    assert node_pool.inputs["nodeConfig"]["machineType"].endswith("-4t")


def test_single_host_pool_has_no_placement_policy_and_autoscales(run):
    rec = run(make_config())
    node_pool = tpu_pools(rec)["v5e-2x4"]
    inputs = node_pool.inputs
    assert "placementPolicy" not in inputs
    assert inputs["nodeConfig"]["machineType"] == "ct5lp-hightpu-8t"
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 3}
    assert inputs["initialNodeCount"] == 0 and "nodeCount" not in inputs
    assert node_pool.ignore_changes == ["maintenancePolicies", "initialNodeCount"]  # CREATE_ONLY first


def test_multi_host_scale_to_zero(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(autoscaling={"minNodes": 0, "maxNodes": 4})]))
    inputs = tpu_pools(rec)["p-s0"].inputs
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4}
    assert "nodeCount" not in inputs


def test_single_host_fixed_pool_has_a_node_count(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(topology="2x4", capacity="reservation", reservation="r")]))
    inputs = tpu_pools(rec)["p"].inputs
    assert inputs["nodeCount"] == 1 and "autoscaling" not in inputs
    # capacity that can stock out starts empty instead
    inputs = tpu_pools(run(make_config(tpu_serving__tpuPools=[pool(topology="2x4")])))["p"].inputs
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 1} and inputs["initialNodeCount"] == 0


def test_capacity_modes(run):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[
                pool(name="od"),
                pool(name="spot", capacity="spot"),
                pool(name="res", capacity="reservation", reservation="projects/shared/reservations/v6e-res"),
                pool(name="flex", capacity="flex-start"),
                pool(name="flex1", topology="2x4", capacity="flex-start"),
            ]
        )
    )
    pools = tpu_pools(rec)
    od = pools["od-s0"].inputs["nodeConfig"]
    assert "spot" not in od and "reservationAffinity" not in od and "flexStart" not in od
    assert pools["spot-s0"].inputs["nodeConfig"]["spot"] is True
    assert pools["res-s0"].inputs["nodeConfig"]["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/shared/reservations/v6e-res"],
    }
    for name, max_nodes in (("flex-s0", 4), ("flex1", 1)):
        flex = pools[name].inputs
        assert flex["nodeConfig"]["flexStart"] is True
        assert flex["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
        assert flex["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": max_nodes}
        assert flex["initialNodeCount"] == 0
        assert flex["management"]["autoRepair"] is False
        # Plain flex-start, never queued provisioning: GKE does not require it for flex-start TPUs, multi-host
        # included (GoogleCloudPlatform/cluster-toolkit@3d6360a examples/gke-consumption-options/dws-flex-start/
        # gke-tpu-7x: a 2x2x2 tpu7x flex-start pool without it), and queued-provisioning nodes are tainted
        # cloud.google.com/gke-queued and come up only for pods admitted through a ProvisioningRequest
        # (cluster-toolkit@58a864a .../dws-flex-start-queued-provisioning/gke-tpu-7x/README.md), which no serving
        # workload of this stack creates: it would wait forever.
        assert "queuedProvisioning" not in flex


def test_tpu_pools_never_get_system_labels_and_system_pool_has_no_tpu(run):
    rec = run(make_config())
    for node_pool in tpu_pools(rec).values():
        assert "tpu-serving/role" not in node_pool.inputs["nodeConfig"]["labels"]
        assert (
            node_pool.inputs["nodeConfig"]["resourceLabels"]["tpu-pool"]
            == node_pool.inputs["nodeConfig"]["labels"]["tpu-serving/pool"]
        )


# ---- TPU7x (Ironwood): a workload policy places multi-host slices ------------------------------------

RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
TPU7X_CLUSTER = {"minMasterVersion": "1.34.0-gke.2201000"}


def test_tpu7x_multi_host_slices_share_one_workload_policy(run):
    """S7 (GKE Ironwood docs): a High throughput workload policy replaces --tpu-topology for multi-host pools;
    xpk@367c838 nodepool.py: `resource-policies create workload-policy --type=HIGH_THROUGHPUT
    --accelerator-topology=<topology> --region=<zone's region>`."""
    config = make_config(
        tpu_serving__cluster=TPU7X_CLUSTER,
        tpu_serving__tpuPools=[pool(name="iw", tpu="tpu7x", topology="2x4x4", zone="us-east5-b", slices=2)],
    )
    for preview in (False, True):
        rec = run(config, preview=preview)
        policy = rec.one(RESOURCE_POLICY)
        assert policy.name == "tpu-iw-placement"
        assert policy.inputs == {
            "name": "tpu-serving-dev-iw-2x4x4",
            "project": "tpu-test-project",
            "region": "us-east5",
            "description": "tpu-serving: placement of the 2x4x4 slices of TPU pool iw",
            "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "2x4x4"},
        }
        pools = tpu_pools(rec)
        assert sorted(pools) == ["iw-s0", "iw-s1"]
        for node_pool in pools.values():
            inputs = node_pool.inputs
            assert "tpuTopology" not in inputs["placementPolicy"]
            assert inputs["placementPolicy"]["type"] == "COMPACT"
            assert policy.urn in node_pool.dependencies  # the policy exists before a slice names it
            assert inputs["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
            assert inputs["nodeConfig"]["diskType"] == "hyperdisk-balanced"
            assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 8}  # 32 chips / 4 per VM
        if not preview:
            assert pools["iw-s0"].inputs["placementPolicy"]["policyName"] == "tpu-serving-dev-iw-2x4x4"
    assert rec.outputs["tpuPools"]["iw"]["hostsPerSlice"] == 8


@pytest.mark.parametrize("topology,machine_type", [("2x2x1", "tpu7x-standard-4t"), ("1x1x1", "tpu7x-standard-1t")])
def test_tpu7x_single_host_pool_has_no_placement(run, topology, machine_type):
    """xpk #825: a one-VM tpu7x slice needs no workload policy."""
    rec = run(
        make_config(tpu_serving__cluster=TPU7X_CLUSTER, tpu_serving__tpuPools=[pool(tpu="tpu7x", topology=topology)])
    )
    assert rec.of_type(RESOURCE_POLICY) == []
    (node_pool,) = tpu_pools(rec).values()
    assert "placementPolicy" not in node_pool.inputs
    assert node_pool.inputs["nodeConfig"]["machineType"] == machine_type


def test_workload_policy_is_protected_with_its_pool(run):
    config = make_config(
        tpu_serving__environment="prod",
        tpu_serving__cluster=TPU7X_CLUSTER,
        tpu_serving__tpuPools=[pool(tpu="tpu7x", topology="2x2x4")],
    )
    rec = run(config, stack="prod")
    assert rec.one(RESOURCE_POLICY).protect and tpu_pools(rec)["p-s0"].protect


def test_node_pool_args_directly():
    """components.tpu_pool.node_pool_args without a Pulumi program: each slice's node pool is labelled with its
    pool and slice, and flex-start nodes are not repaired in place (a failed VM returns its capacity)."""
    from components.tpu_pool import node_pool_args
    from stacks import naming
    from stacks.facts import catalog
    from stacks.model.config_model import TpuPoolConfig
    from stacks.serving.pool_plan import PoolPlan
    from stacks.serving.pool_sizing import sizing

    def args(capacity: str, index: int):
        config = TpuPoolConfig.model_validate(pool(name="mh", slices=2, capacity=capacity))
        shape = catalog.slice_shape("v6e", "4x4")
        plan = PoolPlan(
            config=config,
            shape=shape,
            node_pool_names=tuple(naming.slice_node_pool_names("mh", 2, True)),
            protect=False,
        )
        return node_pool_args(
            plan,
            index,
            cluster_name="c",
            location="us-east5",
            project="p",
            size=sizing(plan),
            policy_name=None,
            node_service_account="sa",
            labels={"stack": "dev"},
        )

    second = args("on-demand", 1)
    assert second.name == "mh-s1" and second.node_locations == ["us-east5-b"]
    assert second.node_config.labels == {naming.POOL_LABEL: "mh", naming.SLICE_LABEL: "1"}
    assert second.node_config.resource_labels == {"stack": "dev", "tpu-pool": "mh", "tpu-slice": "1"}
    assert second.placement_policy.tpu_topology == "4x4" and second.management.auto_repair is True
    assert args("flex-start", 0).management.auto_repair is False


# ---- issue 22 item 11: a workload-policy pool never diffs against what GKE stores -------------------------

# GKE stored a tpu7x pool placed by a workload policy with policyName and tpuTopology and no type
# (vllm-project/ci-infra#547); the provider reads placement_policy.{type,tpu_topology} back verbatim
# (hashicorp/terraform-provider-google-beta@v7.45.0 resource_container_node_pool.go flattenNodePool), while
# cluster-toolkit@v1.95.0 sends COMPACT with the policy name. The sources conflict, so those two fields are left to
# GKE; every other pool keeps its placement checked (COMPACT + tpuTopology is what GKE reports for those).
PLACEMENT_DRIFT = {"placementPolicy.type", "placementPolicy.tpuTopology"}


def _placement_ignores(rec) -> list[tuple[dict, set[str]]]:
    return [
        (node_pool.inputs.get("placementPolicy") or {}, set(node_pool.ignore_changes or []))
        for node_pool in tpu_pools(rec).values()
    ]


def _check_placement_ignores(rec) -> int:
    """Workload-policy pools ignore exactly PLACEMENT_DRIFT of their placement; others nothing of it. Returns how
    many workload-policy pools there were."""
    placed = 0
    for placement, ignored in _placement_ignores(rec):
        own = {field for field in ignored if field.startswith("placementPolicy")}
        if "policyName" in placement:
            placed += 1
            assert own == PLACEMENT_DRIFT, (placement, ignored)
        else:
            assert not own, (placement, ignored)
    return placed


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name.removeprefix("Pulumi.").removesuffix(".yaml"))
def test_every_shipped_pool_ignores_only_gkes_placement_drift(path):
    cfg = parse_stack_file(path)
    expected = sum(len(plan.node_pool_names) for plan in cfg.pools if plan.shape.uses_workload_policy)
    assert _check_placement_ignores(recorded(path, False)) == expected


@pytest.mark.parametrize("tpu", sorted(GENERATIONS))
def test_every_generation_multi_host_pool_ignores_drift_only_with_a_workload_policy(run, tpu):
    gen = GENERATIONS[tpu]
    topology = gen.multi_host_topologies[0]
    rec = run(
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.35"},
            tpu_serving__tpuPools=[pool(name="mh", tpu=tpu, topology=topology, zone="us-east5-b")],
        )
    )
    assert _check_placement_ignores(rec) == (1 if gen.placement == WORKLOAD_POLICY else 0)


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_tpu_node_pool_is_replaced_not_moved_when_its_zone_changes(path):
    """google-beta resource_container_node_pool.go nodePoolUpdate sends a changed node_locations as an in-place
    UpdateNodePool (GKE creates nodes in the new zone and removes the old zone's: container v1
    UpdateNodePoolRequest.locations). For a TPU slice that deletes the serving hosts behind `protect`'s back, so every
    TPU node pool replaces on a zone change instead: protected pools then stop at `pulumi up` and the review says
    what the move needs (issue 23 item 9)."""
    slices = [r for r in tpu_pools(recorded(path, True)).values() if "tpu-serving:tpu:TpuSlicePool$" in r.urn]
    for reg in slices:  # none on a stack of capacity-list pools only
        assert "nodeLocations" in reg.inputs, reg.name
        assert "nodeLocations" in reg.replace_on_changes, reg.name
