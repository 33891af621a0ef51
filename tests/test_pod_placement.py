"""Where every TPU pod of every workload type lands, over the whole workload registry (workloads/registry.py) and a
type a test adds: its own pool, the pool's ComputeClass when its capacity is a list, and one slice per replica on a
multi-host pool. Checked on what the program registers, for every shipped stack file and the same stacks with each
pool's capacity turned into a list.

Outside rules relied on, each cited where it is checked:
- GKE labels a node with its node pool's `node_config.labels` (components/tpu_pool.py puts `tpu-serving/pool`
  there) and nodes it creates for a ComputeClass with `nodePoolConfig.nodeLabels` (stacks/serving/compute_class.py C1);
  GKE creates node pools for a ComputeClass only for pods that select `cloud.google.com/compute-class: <class>`,
  and taints them for pods that also tolerate that key (stacks/serving/compute_class.py C3).
- Exclusive placement: kubernetes-sigs/lws@v0.7.0 (and v0.10.0) reads `leaderworkerset.sigs.k8s.io/exclusive-
  topology` (and `subgroup-exclusive-topology` with a subGroupPolicy) from the LeaderWorkerSet's annotations
  (pkg/controllers/leaderworkerset_controller.go); kubernetes-sigs/jobset@v0.10.1 (and v0.12.0) reads
  `alpha.jobset.sigs.k8s.io/exclusive-topology` from the JobSet's or a replicated job template's annotations
  (pkg/controllers/jobset_controller.go). Each slice is its own node pool, so the key is
  `cloud.google.com/gke-nodepool`, as GKE's Pathways and Saxml samples set it.
- PathwaysJob (google/pathways-job@v0.1.4 internal/controller/pathwaysjob_controller.go): the controller builds
  the TPU pods; makeTPUNodeSelector gives the workers (and a colocated head) `workers[0].nodeSelector` plus the
  accelerator and topology labels, and MakeWorkerJob annotates each worker job exclusive per node pool itself.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from stacks import naming
from stacks.facts import catalog
from stacks.security.pod_security import pod_specs
from stacks.serving import compute_class
from stacks.serving.workload_plan import JOBSET_EXCLUSIVE, LWS_EXCLUSIVE, LWS_SUBGROUP_EXCLUSIVE
from tests.conftest import STACK_FILES, make_config, pool, session_run
from tests.test_workload_registry import ECHO_CONFIG, echo_registered  # noqa: F401 (a fixture)
from tooling.harness.k8s_objects import is_object, to_object
from tooling.harness.offline import Recording, load_stack_file
from tooling.review.render import stack_name
from tooling.scans.fuzz import parse
from workloads import registry

NODE_POOL_KEY = catalog.NODE_POOL_LABEL
FALLBACK = ["spot", "on-demand"]  # a capacity list: the pool becomes a ComputeClass
RECENT_GKE = "1.34.0-gke.2201000"  # at least compute_class.MIN_GKE_VERSION and the newest generation's minimum


# ---- what the program registered, per workload ------------------------------------------------------------


def workload_objects(rec: Recording, name: str) -> list[dict[str, Any]]:
    """The Kubernetes objects registered under the workload's component `workload-<name>` (components/platform.py)."""
    by_urn = {r.urn: r for r in rec.resources}
    component = f"workload-{name}"

    def under(reg) -> bool:
        while reg is not None:
            if not reg.custom and reg.name == component:
                return True
            reg = by_urn.get(reg.parent)
        return False

    return [to_object(r) for r in rec.resources if is_object(r) and under(r)]


def is_tpu_pod(spec: dict[str, Any]) -> bool:
    """A pod that runs on TPU nodes: it asks for chips, or selects a TPU slice, or tolerates the TPU taint."""
    wants_chips = any(
        catalog.TPU_RESOURCE in (c.get("resources") or {}).get(kind, {})
        for c in spec.get("containers", [])
        for kind in ("requests", "limits")
    )
    selects_tpu = catalog.ACCELERATOR_LABEL in (spec.get("nodeSelector") or {})
    return wants_chips or selects_tpu or catalog.TPU_TOLERATION in (spec.get("tolerations") or [])


def tpu_pods(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every TPU pod spec an object makes: its pod templates, or for a PathwaysJob the pods its controller builds."""
    if obj["kind"] == "PathwaysJob":
        yield from pathways_controller_pods(obj)
        return
    for spec in pod_specs(obj.get("spec", {})):
        if is_tpu_pod(dict(spec)):
            yield dict(spec)


def pathways_controller_pods(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The node selectors the PathwaysJob controller gives its TPU pods (makeTPUNodeSelector), from the rendered
    spec; the accelerator value comes from the machine type (the catalog's for the same machine type)."""
    spec = obj["spec"]
    (workers,) = spec["workers"]
    shape = next(
        s
        for g in catalog.GENERATIONS.values()
        if g.multi_host_machine_type == workers["type"] or workers["type"] in g.single_host.values()
        for s in catalog.shapes(g, workers["topology"])
        if s.machine_type == workers["type"]
    )
    selector = {**(workers.get("nodeSelector") or {}), **shape.node_selector}
    yield {"nodeSelector": selector, "tolerations": []}
    template = spec["controller"].get("template")
    if spec["controller"]["deploymentMode"] == "colocate_head_with_workers" and template:
        yield {**template["spec"], "nodeSelector": selector}


def exclusive_per_slice(obj: dict[str, Any], hosts: int) -> bool:
    """The object keeps each multi-host replica on one slice (one node pool) and no two replicas on one."""
    annotations = obj["metadata"].get("annotations") or {}
    if obj["kind"] == "LeaderWorkerSet":
        if annotations.get(LWS_EXCLUSIVE) == NODE_POOL_KEY:
            return True
        # a group over several slices: one sub-group per slice, each exclusive to its node pool
        sub = obj["spec"]["leaderWorkerTemplate"].get("subGroupPolicy") or {}
        return annotations.get(LWS_SUBGROUP_EXCLUSIVE) == NODE_POOL_KEY and sub.get("subGroupSize") == hosts
    if obj["kind"] == "JobSet":
        jobs = [job for job in obj["spec"]["replicatedJobs"] if any(is_tpu_pod(dict(p)) for p in pod_specs(job))]
        on_jobs = all(
            ((job["template"].get("metadata") or {}).get("annotations") or {}).get(JOBSET_EXCLUSIVE) == NODE_POOL_KEY
            for job in jobs
        )
        return annotations.get(JOBSET_EXCLUSIVE) == NODE_POOL_KEY or on_jobs
    if obj["kind"] == "PathwaysJob":
        return True  # the controller annotates every worker job (MakeWorkerJob), the stack cannot change it
    return False  # a Deployment or anything else spreads its pods over every node that matches


def placement_problems(config: dict[str, Any], stack: str, rec: Recording, types: set[str]) -> list[str]:
    """Every way a TPU pod of a workload of one of `types` could land outside its own pool, or a multi-host
    replica over two slices."""
    parsed = parse(config, stack)
    classes = {
        o["metadata"]["labels"][naming.POOL_LABEL]: o["metadata"]["name"]
        for o in (to_object(r) for r in rec.resources if is_object(r))
        if o["kind"] == "ComputeClass"
    }
    out: list[str] = []
    if len(set(classes.values())) != len(classes):
        out.append(f"two pools share a ComputeClass, so selecting one does not select a pool: {classes}")
    for plan in parsed.workloads:
        kind = next(k for k in parsed.workload_types.values() if isinstance(plan.workload, k.config))
        if kind.name not in types:
            continue
        objects = workload_objects(rec, plan.name)
        pods = [(obj, pod) for obj in objects for pod in tpu_pods(obj)]
        where = f"{kind.name} {plan.name!r} on pool {plan.pool.name!r}"
        if not pods:
            out.append(f"{where}: no TPU pod found")
        for obj, pod in pods:
            what = f"{where}: {obj['kind']} {obj['metadata']['name']}"
            selector = pod.get("nodeSelector") or {}
            # its own pool: its node pools' label, or on a capacity list its own ComputeClass (one per pool: a
            # custom label only the class's nodeLabels would set is not something GKE documents creating nodes for)
            if not plan.pool.compute_class and selector.get(naming.POOL_LABEL) != plan.pool.name:
                out.append(f"{what} does not select {naming.POOL_LABEL}={plan.pool.name}: {selector}")
            if plan.pool.compute_class and naming.POOL_LABEL in selector:
                out.append(f"{what} selects {naming.POOL_LABEL} beside its ComputeClass: {selector}")
            if {k: selector.get(k) for k in plan.shape.node_selector} != plan.shape.node_selector:
                out.append(f"{what} does not select its slice shape {plan.shape.node_selector}: {selector}")
            cls = classes.get(plan.pool.name)
            if plan.pool.compute_class:
                taint = {"key": compute_class.COMPUTE_CLASS_LABEL, "operator": "Equal", "value": cls}
                if cls is None or selector.get(compute_class.COMPUTE_CLASS_LABEL) != cls:
                    out.append(f"{what} does not select its pool's ComputeClass {cls}: {selector}")
                if not any(taint.items() <= t.items() for t in pod.get("tolerations") or []):
                    out.append(f"{what} does not tolerate its ComputeClass's taint {taint}")
            if plan.shape.multi_host and not exclusive_per_slice(obj, plan.shape.hosts):
                out.append(f"{what} can put a replica over two slices: no exclusive placement per node pool")
    return out


# ---- the stacks the rules are checked on ------------------------------------------------------------------


def with_capacity_lists(config: dict[str, Any]) -> dict[str, Any]:
    """The same stack with every pool whose workloads can run on a ComputeClass given a capacity list."""
    config = copy.deepcopy(config)
    refused = {
        w["pool"]
        for w in config.get("tpu-serving:workloads") or []
        if registry.WORKLOAD_TYPES[w["type"]].no_compute_class
    }
    for p in config.get("tpu-serving:tpuPools") or []:
        if p["name"] in refused:
            continue
        p["capacity"] = list(FALLBACK)
        p.pop("reservation", None)
        p.pop("warmSlices", None)  # refused with a capacity list (GKE removes the node pools it creates when empty)
        if p.get("autoscaling"):  # GKE creates the node pools of a capacity list: they start at zero
            p["autoscaling"]["minNodes"] = 0
    cluster = config.get("tpu-serving:cluster") or {}
    given = cluster.get("minMasterVersion") or RECENT_GKE  # a fleet-exporting stack needs a later one (docs/fleet.md)
    config["tpu-serving:cluster"] = {**cluster, "minMasterVersion": max(RECENT_GKE, given, key=catalog.version_tuple)}
    return config


def stacks_with(type_name: str) -> list[tuple[str, dict[str, Any], str]]:
    """(id, config, stack) of every shipped stack file that runs the type, as shipped and with capacity lists."""
    out = []
    for path in STACK_FILES:
        config = load_stack_file(path)
        if any(w.get("type") == type_name for w in config.get("tpu-serving:workloads") or []):
            out.append((path.name, config, stack_name(path)))
            out.append((f"{path.name} with capacity lists", with_capacity_lists(config), stack_name(path)))
    return out


@pytest.mark.parametrize("type_name", list(registry.WORKLOAD_TYPES))
def test_every_tpu_pod_of_every_type_lands_on_its_own_pool(type_name):
    cases = stacks_with(type_name)
    assert cases, f"no shipped stack file runs workload type {type_name!r}: add an example"
    for case, config, stack in cases:
        rec = session_run(config, stack=stack)
        assert placement_problems(config, stack, rec, {type_name}) == [], case


@pytest.mark.parametrize("type_name", list(registry.WORKLOAD_TYPES))
def test_every_type_is_checked_on_a_capacity_list_pool_unless_it_refuses_one(type_name):
    """The capacity-list variants do put each type that allows a ComputeClass on one (the check above is not
    vacuous), and a type that refuses one says why."""
    kind = registry.WORKLOAD_TYPES[type_name]
    variants = [config for case, config, _ in stacks_with(type_name) if case.endswith("with capacity lists")]
    on_list = [
        p
        for config in variants
        for p in config["tpu-serving:tpuPools"]
        for w in config["tpu-serving:workloads"]
        if w["type"] == type_name and w["pool"] == p["name"] and isinstance(p.get("capacity"), list)
    ]
    assert bool(on_list) is not bool(kind.no_compute_class), type_name


def test_a_type_added_to_the_registry_gets_the_same_placement(run, echo_registered):  # noqa: F811
    """The registry as the program sees it, with a type only this test adds: its pods use WorkloadPlan.tpu_placement
    like every type's, and pass the same rules on a pool of node pools and on a capacity list."""
    assert "echo" in registry.WORKLOAD_TYPES
    echo_pool = pool(
        name="echo-pool", tpu="v5e", topology="2x4", zone="us-east5-a", autoscaling={"minNodes": 0, "maxNodes": 2}
    )
    for capacity in ("spot", FALLBACK):
        config = make_config(
            tpu_serving__cluster={"minMasterVersion": RECENT_GKE},
            tpu_serving__tpuPools=[{**echo_pool, "capacity": capacity}, {**echo_pool, "name": "twin"}],
            tpu_serving__workloads=[{**ECHO_CONFIG, "pool": "echo-pool"}],
        )
        rec = run(config)
        assert placement_problems(config, "dev", rec, set(registry.WORKLOAD_TYPES)) == [], capacity


def test_two_pools_of_one_shape_keep_their_workloads_apart(run):
    """Spot for batch, on-demand for serving, the same slice shape: each workload's pods select only its pool, so
    the scheduler never mixes them and the autoscaler grows only the pool whose pods are pending."""
    shape = {"tpu": "v6e", "topology": "2x4", "zone": "us-east5-b", "autoscaling": {"minNodes": 0, "maxNodes": 2}}
    vllm = {"type": "vllm", "model": "meta-llama/Llama-3.1-8B"}
    rec = run(
        make_config(
            tpu_serving__tpuPools=[
                pool(name="batch", capacity="spot", **shape),
                pool(name="online", capacity="on-demand", **shape),
            ],
            tpu_serving__workloads=[
                {**vllm, "name": "batch", "pool": "batch"},
                {**vllm, "name": "online", "pool": "online"},
            ],
        )
    )
    for name in ("batch", "online"):
        (deployment,) = [o for o in workload_objects(rec, name) if o["kind"] == "Deployment"]
        assert deployment["spec"]["template"]["spec"]["nodeSelector"][naming.POOL_LABEL] == name
    node_pools = {
        r.inputs["nodeConfig"]["labels"][naming.POOL_LABEL]
        for r in rec.of_type("gcp:container/nodePool:NodePool")
        if naming.POOL_LABEL in r.inputs["nodeConfig"].get("labels", {})
    }
    assert {"batch", "online"} <= node_pools  # the label the pods select is on each pool's nodes


def test_a_capacity_list_pool_gives_vllm_nodes(run):
    """Issue 22 item 3: vLLM on a capacity-list pool selects the pool's ComputeClass and tolerates its taint (GKE
    creates node pools for a class only for pods that select it), single-host and multi-host."""
    config = make_config(
        tpu_serving__cluster={"minMasterVersion": RECENT_GKE},
        tpu_serving__tpuPools=[
            pool(name="single", topology="2x4", capacity=FALLBACK, autoscaling={"minNodes": 0, "maxNodes": 2}),
            pool(name="multi", topology="4x4", capacity=FALLBACK, slices=2),
        ],
        tpu_serving__workloads=[
            {"type": "vllm", "name": "one", "pool": "single", "model": "meta-llama/Llama-3.1-8B"},
            {"type": "vllm", "name": "two", "pool": "multi", "model": "meta-llama/Llama-3.1-70B", "replicas": 2},
        ],
    )
    rec = run(config)
    assert placement_problems(config, "dev", rec, {"vllm"}) == []
    (lws,) = [o for o in workload_objects(rec, "two") if o["kind"] == "LeaderWorkerSet"]
    assert lws["metadata"]["annotations"][LWS_EXCLUSIVE] == NODE_POOL_KEY
    for role in ("leaderTemplate", "workerTemplate"):
        spec = lws["spec"]["leaderWorkerTemplate"][role]["spec"]
        assert spec["nodeSelector"][compute_class.COMPUTE_CLASS_LABEL] == "tpu-multi"
