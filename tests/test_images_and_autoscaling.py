"""Issue 26 levers 1 and 5: image streaming on every pool that runs a server, and the autoscaling loop (GKE's HPA
profile, a scale-down window for multi-host slices, warm slices priced in the cost estimate).

Sources: hashicorp/terraform-provider-google-beta@v7.45.0 (tooling/data/provider_rules.json, read from it):
google-beta/services/container/node_config.go schemaGcfsConfig, resource_container_cluster.go pod_autoscaling and
node_pool_defaults; kubernetes pkg/apis/autoscaling/validation/validation.go (MaxStabilizationWindowSeconds 3600);
https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming (Requirements)."""

from __future__ import annotations

import json

import pytest

from stacks.reports import cost
from stacks.serving.workload_plan import MULTI_HOST_SCALE_DOWN_WINDOW_S
from tests.conftest import STACK_FILES, make_config, pool, recorded
from tests.test_gateway import parse_config as parse
from tooling.oracles import provider_schema as ps

NODE_POOL = "gcp:container/nodePool:NodePool"
CLUSTER = "gcp:container/cluster:Cluster"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


def rules(resource: str) -> dict:
    data = json.loads(ps.DATA.read_text())
    return data["resources"][resource]["fields"]


def tpu_node_pools(rec):
    """Every node pool but the system pool: the TPU pools' and those a workload adds (a Pathways head's)."""
    return [r for r in rec.of_type(NODE_POOL) if r.inputs["name"] != "system"]


GKE_VERSION = "1.34.0-gke.2201000"  # TPU7x's minimum (catalog), above a capacity list's


# ---- image streaming -----------------------------------------------------------------------------------------


def test_the_provider_takes_gcfs_config_where_the_stack_sends_it():
    """gcfs_config {enabled (Required bool)} on node pools and as the cluster's node pool default (provider rules)."""
    pool_fields, cluster_fields = rules(NODE_POOL), rules(CLUSTER)
    assert pool_fields["node_config.gcfs_config.enabled"]["type"] == "TypeBool"
    assert pool_fields["node_config.gcfs_config.enabled"].get("required")
    field = "node_pool_defaults.node_config_defaults.gcfs_config.enabled"
    assert cluster_fields[field]["type"] == "TypeBool" and cluster_fields[field].get("required")


EVERY_CAPACITY = [
    pool(name="od", tpu="v6e", topology="2x4", autoscaling={"minNodes": 0, "maxNodes": 2}),
    pool(name="mh", tpu="v6e", topology="4x4", slices=2, capacity="spot"),
    pool(name="res", tpu="v5e", topology="4x8", capacity="reservation", reservation="r1"),
    pool(name="flex", tpu="v6e", topology="2x2", capacity="flex-start"),
    pool(name="ix", tpu="tpu7x", topology="2x2x2"),
]


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.parent.name or p.name)
def test_every_tpu_node_pool_of_every_shipped_stack_streams_images(path):
    rec = recorded(path, preview=False)
    pools = tpu_node_pools(rec)
    for node_pool in pools:
        assert node_pool.inputs["nodeConfig"]["gcfsConfig"] == {"enabled": True}, node_pool.name
    cluster = rec.one(CLUSTER)
    assert cluster.inputs["nodePoolDefaults"]["nodeConfigDefaults"]["gcfsConfig"] == {"enabled": True}


def test_every_pool_a_test_adds_streams_and_its_plan_says_so(run):
    """Every capacity, single- and multi-host, TPU7x with its workload policy: each node pool streams; the plan the
    time-to-serve estimate reads agrees; `cluster.images.streaming: false` turns it off everywhere."""
    for streaming in (True, False):
        cluster = {"images": {"streaming": streaming}, "minMasterVersion": GKE_VERSION}
        config = make_config(tpu_serving__tpuPools=EVERY_CAPACITY, tpu_serving__cluster=cluster)
        rec = run(config)
        pools = tpu_node_pools(rec)
        assert {p.inputs["name"] for p in pools} >= {"od", "mh-s0", "mh-s1", "res-s0", "flex", "ix-s0"}
        for node_pool in pools:
            assert node_pool.inputs["nodeConfig"]["gcfsConfig"] == {"enabled": streaming}, node_pool.name
        defaults = rec.one(CLUSTER).inputs["nodePoolDefaults"]["nodeConfigDefaults"]
        assert defaults["gcfsConfig"] == {"enabled": streaming}
        assert [p.image_streaming for p in parse(config).pools] == [streaming] * len(EVERY_CAPACITY)


def test_a_capacity_list_pool_streams_through_the_cluster_default(run):
    """A ComputeClass pool has no node pools of its own: GKE creates them, with the cluster's default."""
    config = make_config(
        tpu_serving__tpuPools=[pool(name="cc", tpu="v6e", topology="2x4", capacity=["spot", "on-demand"])],
        tpu_serving__cluster={"minMasterVersion": GKE_VERSION},
    )
    rec = run(config)
    assert not tpu_node_pools(rec)
    assert rec.one(CLUSTER).inputs["nodePoolDefaults"]["nodeConfigDefaults"]["gcfsConfig"] == {"enabled": True}


# ---- the HPA profile -------------------------------------------------------------------------------------------


def test_the_hpa_profile_is_one_the_provider_allows():
    """pod_autoscaling.hpa_profile: Required, StringInSlice NONE, PERFORMANCE (provider rules)."""
    field = rules(CLUSTER)["pod_autoscaling.hpa_profile"]
    assert field.get("required") and field["type"] == "TypeString"
    assert set(field["enum"]) == {"NONE", "PERFORMANCE"}


@pytest.mark.parametrize("given,sent", [(None, "PERFORMANCE"), ("NONE", "NONE"), ("unset", None)])
def test_the_cluster_asks_for_the_performance_hpa_profile(run, given, sent):
    cluster = {} if given is None else {"hpaProfile": None if given == "unset" else given}
    rec = run(make_config(tpu_serving__cluster=cluster))
    inputs = rec.one(CLUSTER).inputs
    if sent is None:
        assert "podAutoscaling" not in inputs
    else:
        assert inputs["podAutoscaling"] == {"hpaProfile": sent}


# ---- the HPA's scale-down window ---------------------------------------------------------------------------------

VLLM_POOLS = [
    pool(name="single", tpu="v6e", topology="2x4", autoscaling={"minNodes": 0, "maxNodes": 2}),
    pool(name="multi", tpu="v6e", topology="4x4", slices=2),
]
AUTO = {"minReplicas": 1, "maxReplicas": 2, "metrics": [{"name": "vllm:num_requests_waiting", "target": 5}]}


def vllm(pool_name: str, **auto) -> dict:
    return {
        "type": "vllm",
        "name": "llm",
        "pool": pool_name,
        "model": "meta-llama/Llama-3.1-8B",
        "autoscaling": {**AUTO, **auto},
    }


def hpa_spec(run, workload) -> dict:
    rec = run(make_config(tpu_serving__tpuPools=VLLM_POOLS, tpu_serving__workloads=[workload]))
    (hpa,) = rec.of_type(HPA)
    return hpa.inputs["spec"]


def test_a_multi_host_hpa_waits_out_a_lull_before_it_lets_a_slice_go(run):
    assert 300 < MULTI_HOST_SCALE_DOWN_WINDOW_S <= 3600  # above Kubernetes' default, within its limit
    spec = hpa_spec(run, vllm("multi"))
    assert spec["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": MULTI_HOST_SCALE_DOWN_WINDOW_S}}


def test_a_single_host_hpa_keeps_kubernetes_defaults(run):
    assert "behavior" not in hpa_spec(run, vllm("single"))


def test_a_users_behavior_wins_and_keeps_the_default_window_where_it_sets_none(run):
    policy = {"type": "Pods", "value": 1, "periodSeconds": 600}
    own = vllm("multi", behavior={"scaleDown": {"stabilizationWindowSeconds": 120}})
    assert hpa_spec(run, own)["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 120}}
    partial = vllm(
        "multi", behavior={"scaleUp": {"stabilizationWindowSeconds": 0}, "scaleDown": {"policies": [policy]}}
    )
    assert hpa_spec(run, partial)["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0},
        "scaleDown": {"policies": [policy], "stabilizationWindowSeconds": MULTI_HOST_SCALE_DOWN_WINDOW_S},
    }


# ---- warm slices ---------------------------------------------------------------------------------------------


def test_warm_slices_keep_whole_slices_up_and_are_priced(run):
    warm = pool(name="mh", tpu="v6e", topology="4x4", slices=3, warmSlices=1)
    rec = run(make_config(tpu_serving__tpuPools=[warm]))
    by_name = {p.inputs["name"]: p.inputs for p in tpu_node_pools(rec)}
    assert by_name["mh-s0"]["autoscaling"] == {"minNodeCount": 4, "maxNodeCount": 4}
    # on-demand: created empty (a create waits for capacity and fails on a stockout); the minimum holds the slice
    # once pending pods have brought it up (kubernetes/autoscaler cluster-autoscaler/FAQ.md: the autoscaler does not
    # raise a node group to its minimum by itself, only --enforce-node-group-min-size does; it never goes below it)
    assert by_name["mh-s0"]["initialNodeCount"] == 0
    for cold in ("mh-s1", "mh-s2"):
        assert by_name[cold]["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4}
    line = rec.outputs["estimatedHourlyCost"]["items"]["TPU pool mh"]
    price = cost.chip_price("v6e", "on-demand")
    assert line["baseline"] == pytest.approx(4 * 4 * price)  # one warm slice: 4 hosts x 4 chips, all the time
    assert line["peak"] == pytest.approx(12 * 4 * price)
    assert "1 warm slice" in line["detail"]


def test_only_a_reservation_warm_slice_is_created_by_up_and_on_demand_says_so(run):
    reserved = pool(
        name="mh", tpu="v6e", topology="4x4", slices=2, warmSlices=1, capacity="reservation", reservation="r1"
    )
    rec = run(make_config(tpu_serving__tpuPools=[reserved]))
    by_name = {p.inputs["name"]: p.inputs for p in tpu_node_pools(rec)}
    assert by_name["mh-s0"]["initialNodeCount"] == 4
    assert not any("warmSlices" in w for w in rec.warnings)
    on_demand = run(make_config(tpu_serving__tpuPools=[pool(name="mh", tpu="v6e", topology="4x4", warmSlices=1)]))
    assert any(
        "tpuPools[0].warmSlices: 1 on on-demand capacity: `pulumi up` creates no slice" in w for w in on_demand.warnings
    )


def test_a_paused_stack_keeps_no_warm_slice(run):
    warm = pool(name="mh", tpu="v6e", topology="4x4", slices=2, warmSlices=2)
    rec = run(make_config(tpu_serving__tpuPools=[warm], tpu_serving__paused=True))
    for node_pool in tpu_node_pools(rec):
        assert node_pool.inputs["autoscaling"]["minNodeCount"] == 0


@pytest.mark.parametrize(
    "fields,why",
    [
        ({"topology": "2x4", "warmSlices": 1}, "1 on single-host 2x4: keep warm nodes with autoscaling.minNodes"),
        ({"slices": 2, "warmSlices": 3}, "3 is above slices 2"),
        ({"capacity": ["spot", "on-demand"], "warmSlices": 1}, "1 with a capacity list"),
        ({"capacity": "flex-start", "warmSlices": 1}, "1 with flex-start"),
    ],
)
def test_warm_slices_the_pool_cannot_keep_are_refused(fields, why):
    from stacks.problems import ConfigError

    config = make_config(tpu_serving__tpuPools=[pool(name="mh", tpu="v6e", **{"topology": "4x4", **fields})])
    with pytest.raises(ConfigError) as err:
        parse(config)
    assert any(str(p).startswith(f"tpu-serving:tpuPools[0].warmSlices: {why}") for p in err.value.problems), str(
        err.value
    )
