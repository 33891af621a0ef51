"""Capacity that falls back: a pool whose capacity is a list becomes a GKE ComputeClass (stacks/serving/compute_class.py).

Field names are checked against the strict schema of the documented ComputeClass fields in
tooling/oracles/documented_schemas.py (sources C1-C2), since GKE publishes the CRD only as a reference page.
"""

import pytest

from stacks.reports import cost
from tests.conftest import make_config, pool
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.oracles.schemas import validate_objects

COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
NODE_POOL = "gcp:container/nodePool:NodePool"
RECENT = {"minMasterVersion": "1.34.0-gke.2201000"}


def assert_valid(obj):
    report = validate_objects([obj], "1.34")
    assert report.errors == [] and report.unchecked == [] and report.checked == 1


def test_documented_schema_rejects_misspelt_fields():
    """The ComputeClass is checked against tooling/oracles/documented_schemas.py (fields from GKE's CRD reference)."""
    bad = {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "x"},
        "spec": {"priorities": [{"tpu": {"type": "tpu7x", "count": 4, "topology": "2x2x1"}, "flex_start": {}}]},
    }
    errors = validate_objects([bad], "1.34").errors
    assert any("flex_start" in e for e in errors), errors


def classes(rec):
    return {o["metadata"]["name"]: o for o in kubernetes_objects(rec) if o["kind"] == "ComputeClass"}


def test_capacity_list_pool_is_a_compute_class_with_one_priority_per_entry(run):
    config = make_config(
        tpu_serving__cluster=RECENT,
        tpu_serving__tpuPools=[
            pool(
                name="v6e",
                topology="4x4",
                capacity=["reservation", "spot", "on-demand", "flex-start"],
                reservation="projects/shared-proj/reservations/v6e-res",
                slices=2,
            )
        ],
    )
    rec = run(config)
    (cc,) = classes(rec).values()
    assert_valid(cc)
    tpu = {"type": "tpu-v6e-slice", "count": 4, "topology": "4x4"}  # from the catalog: accelerator, chips per VM
    base = {"machineType": "ct6e-standard-4t", "tpu": tpu}
    assert cc["metadata"] == {"name": "tpu-v6e", "labels": {"tpu-serving/pool": "v6e"}}
    assert cc["spec"]["priorities"] == [
        {
            **base,
            "spot": False,
            "reservations": {"affinity": "Specific", "specific": [{"name": "v6e-res", "project": "shared-proj"}]},
        },
        {**base, "spot": True},
        {**base, "spot": False},
        {**base, "flexStart": {"enabled": True}},
    ]
    spec = cc["spec"]
    assert spec["nodePoolAutoCreation"] == {"enabled": True}
    assert spec["activeMigration"] == {"optimizeRulePriority": True}
    assert spec["priorityDefaults"] == {"location": {"zones": ["us-east5-b"]}}
    # auto-created nodes run as the stack's node identity, never the Compute Engine default account
    assert spec["nodePoolConfig"]["serviceAccount"].startswith("tpu-serving-dev-nodes@")
    # GKE creates the node pools: the stack creates none for this pool
    assert [r.inputs["name"] for r in rec.of_type(NODE_POOL)] == ["system"]
    assert rec.outputs["tpuPools"]["v6e"]["computeClass"] == "tpu-v6e"
    assert rec.outputs["tpuPools"]["v6e"]["nodePools"] == []


def test_a_plain_reservation_name_is_this_projects(run):
    rec = run(
        make_config(
            tpu_serving__cluster=RECENT,
            tpu_serving__tpuPools=[pool(topology="2x4", capacity=["reservation", "spot"], reservation="mine")],
        )
    )
    (cc,) = classes(rec).values()
    assert cc["spec"]["priorities"][0]["reservations"]["specific"] == [{"name": "mine"}]


def test_single_value_and_list_of_one_keep_node_pools(run):
    for capacity in ("spot", ["spot"]):
        rec = run(make_config(tpu_serving__tpuPools=[pool(capacity=capacity)]))
        assert classes(rec) == {}
        assert rec.one(NODE_POOL, "tpu-p-s0").inputs["nodeConfig"]["spot"] is True
        assert "computeClass" not in rec.outputs["tpuPools"]["p"]


def test_tpu7x_multi_host_priorities_name_the_workload_policy(run):
    rec = run(
        make_config(
            tpu_serving__cluster=RECENT,
            tpu_serving__tpuPools=[pool(tpu="tpu7x", topology="2x4x4", capacity=["spot", "flex-start"])],
        )
    )
    policy = rec.one("gcp:compute/resourcePolicy:ResourcePolicy")
    (cc,) = classes(rec).values()
    assert_valid(cc)
    for rule in cc["spec"]["priorities"]:
        assert rule["tpu"] == {"type": "tpu7x", "count": 4, "topology": "2x4x4"}
        assert rule["placement"] == {"policyName": policy.inputs["name"]}
    cc_reg = rec.one(COMPUTE_CLASS)
    assert policy.urn in cc_reg.dependencies  # the policy exists before the class names it


def test_workloads_on_the_pool_select_the_class_and_wait_for_it(run):
    rec = run(
        make_config(
            tpu_serving__cluster=RECENT,
            tpu_serving__tpuPools=[
                pool(
                    name="v5e",
                    tpu="v5e",
                    topology="2x4",
                    zone="us-east5-b",
                    capacity=["spot", "on-demand"],
                    autoscaling={"minNodes": 0, "maxNodes": 3},
                )
            ],
            tpu_serving__workloads=[
                {
                    "type": "jetstream",
                    "name": "gemma",
                    "pool": "v5e",
                    "model": "gemma-7b",
                    "checkpoint": "gs://my-bucket/gemma-7b/items",
                    "replicas": 3,
                }
            ],
        )
    )
    deployment = next(
        o for o in kubernetes_objects(rec) if o["kind"] == "Deployment" and "gemma" in o["metadata"]["name"]
    )
    pod = deployment["spec"]["template"]["spec"]
    # the pool's own ComputeClass is what selects the pool (one class per pool); no custom label beside it, since GKE
    # documents node auto-creation for the class selector, not for a label only the class's nodeLabels set
    assert pod["nodeSelector"] == {
        "cloud.google.com/compute-class": "tpu-v5e",
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    assert {
        "key": "cloud.google.com/compute-class",
        "operator": "Equal",
        "value": "tpu-v5e",
        "effect": "NoSchedule",
    } in pod["tolerations"]
    cc = rec.one(COMPUTE_CLASS)
    reg = next(
        r
        for r in rec.resources
        if r.type == "kubernetes:apps/v1:Deployment" and r.inputs["metadata"]["name"] == deployment["metadata"]["name"]
    )
    assert cc.urn in reg.dependencies


@pytest.mark.parametrize("paused", [False, True])
def test_cost_prices_every_priority_and_says_which_it_assumes(run, paused):
    rec = run(
        make_config(
            tpu_serving__cluster=RECENT,
            tpu_serving__paused=paused,
            tpu_serving__tpuPools=[pool(capacity=["spot", "on-demand"], slices=2)],
        )
    )
    item = rec.outputs["estimatedHourlyCost"]["items"]["TPU pool p"]
    chips = 2 * 16  # two 4x4 slices; GKE creates them only for pending pods, so the baseline is 0
    from stacks.facts import catalog

    price = catalog.generation("v6e").list_price
    assert item["baseline"] == 0
    if paused:
        assert item["peak"] == 0 and "(paused)" in item["detail"]
    else:
        assert item["peak"] == round(chips * price.spot, 4)
        assert item["peakByPriority"] == {
            "spot": round(chips * price.spot, 4),
            "on-demand": round(chips * price.on_demand, 4),
        }
        assert "priced at its first priority spot" in item["detail"]
    assert rec.one(COMPUTE_CLASS)  # pausing keeps the class; the workloads at zero leave GKE nothing to create
    assert cost.PRICE_TABLE_DATE == catalog.PRICE_TABLE_DATE
