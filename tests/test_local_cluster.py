"""The local cluster's nodes (tooling/local/local_cluster.py nodes_for): every node pool of every stack mirrored as GKE
makes it, from the catalog and the pool plans; and every process of the local cluster bound to loopback. Pure: no
cluster and no go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stacks import naming
from stacks.facts import catalog
from stacks.serving import compute_class
from stacks.serving.pool_plan import PoolPlan
from stacks.stack_config import StackConfig
from tests.conftest import STACK_FILES, make_config
from tooling.harness.offline import parse_config, parse_stack_file
from tooling.local import local_cluster, toolchain
from tooling.local.local_cluster import nodes_for

GIB = 2**30


def _tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    """Kubernetes' toleration matching (k8s.io/api core/v1 Toleration.ToleratesTaint): key, effect, and value unless
    the operator is Exists."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _fits(plan: PoolPlan, node: dict[str, Any]) -> bool:
    """Whether a TPU pod of `plan` (PoolPlan.placement, the pod spec fields every workload type uses) may run on
    `node`: its selector matches, it tolerates every taint, the node has its chips."""
    placement = plan.placement()
    labels = node["metadata"]["labels"]
    return (
        placement["nodeSelector"].items() <= labels.items()
        and all(_tolerates(placement["tolerations"], taint) for taint in node["spec"]["taints"])
        and int(node["status"]["allocatable"].get(catalog.TPU_RESOURCE, "0")) >= plan.shape.tpu_request
    )


def _configs() -> list[tuple[str, StackConfig]]:
    return [(path.name, parse_stack_file(path)) for path in STACK_FILES]


CONFIGS = _configs()


def _generation_config(gen: catalog.Generation) -> StackConfig:
    """A stack with a single-host spot pool, a multi-host pool of two slices and a multi-host capacity-list pool of
    one generation, in the first zone the catalog lists for it: the rules hold for pools a test adds."""
    zone = gen.zones[0]
    single = next(iter(gen.single_host))
    pools: list[dict[str, Any]] = [
        {"name": f"{gen.name}-one", "tpu": gen.name, "topology": single, "zone": zone, "capacity": "spot"}
    ]
    multi = next((t for t in gen.multi_host_topologies if t not in gen.single_host), None)
    if multi:
        hosts = catalog.slice_shape(gen.name, multi, gen.multi_host_machine_type).hosts
        machine = gen.multi_host_machine_type
        pools.append({"name": f"{gen.name}-mh", "tpu": gen.name, "topology": multi, "zone": zone, "slices": 2,
                      "machineType": machine})  # fmt: skip
        pools.append({"name": f"{gen.name}-cc", "tpu": gen.name, "topology": multi, "zone": zone,
                      "machineType": machine, "capacity": ["spot", "on-demand"],
                      "autoscaling": {"minNodes": 0, "maxNodes": hosts}})  # fmt: skip
    config = make_config(
        gcp__region=zone.rsplit("-", 1)[0],
        tpu_serving__tpuPools=pools,
        tpu_serving__cluster={"minMasterVersion": "1.35"},
        tpu_serving__bucket={
            "location": "US"
        },  # v4's us-central2 has no Cloud Storage location  # above every generation's and ComputeClass's minimum
    )
    return parse_config(config, "dev")


ADDED = [(f"added-{name}", _generation_config(gen)) for name, gen in catalog.GENERATIONS.items()]


@pytest.mark.parametrize(("name", "config"), [*CONFIGS, *ADDED], ids=lambda v: v if isinstance(v, str) else "")
def test_every_tpu_pool_gets_its_hosts_labelled_tainted_and_sized_from_the_catalog(name: str, config: StackConfig):
    nodes = nodes_for(config)
    assert config.pools, name
    for plan in config.pools:
        shape = plan.shape
        own = [n for n in nodes if n["metadata"]["labels"].get(local_cluster.LOCAL_LABEL) == f"tpu.{plan.name}"]
        # every slice whole (multi-host), or the single-host pool at its autoscaling maximum
        assert len(own) == plan.capacity_hosts, plan.name
        pools = {n["metadata"]["labels"][catalog.NODE_POOL_LABEL] for n in own}
        assert len(pools) == (plan.slices if shape.multi_host else 1)
        if not plan.compute_class:
            assert pools == set(plan.node_pool_names)
        for node in own:
            labels = node["metadata"]["labels"]
            assert labels[catalog.ACCELERATOR_LABEL] == shape.generation.accelerator
            assert labels[catalog.TOPOLOGY_LABEL] == shape.topology
            assert labels[local_cluster.INSTANCE_TYPE_LABEL] == shape.machine_type
            assert labels[local_cluster.ZONE_LABEL] == plan.config.zone
            assert {"key": catalog.TPU_RESOURCE, "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]
            capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
            assert capacity[catalog.TPU_RESOURCE] == allocatable[catalog.TPU_RESOURCE] == str(shape.chips_per_host)
            if shape.host_resources:
                vcpus, memory_gb = shape.host_resources
                assert capacity["cpu"] == f"{vcpus * 1000}m" and capacity["memory"] == str(memory_gb * catalog.GB)
                assert int(allocatable["cpu"].removesuffix("m")) < vcpus * 1000
                assert int(allocatable["memory"]) < memory_gb * catalog.GB
            if plan.compute_class:
                assert labels[compute_class.COMPUTE_CLASS_LABEL] == plan.compute_class
                assert compute_class.toleration(plan.compute_class) | {"operator": "Equal"} == {
                    **next(t for t in node["spec"]["taints"] if t["key"] == compute_class.COMPUTE_CLASS_LABEL),
                    "operator": "Equal",
                }
                assert labels.get(local_cluster.SPOT_LABEL) == ("true" if plan.capacities[0] == "spot" else None)
            else:
                assert labels[naming.POOL_LABEL] == plan.name
                assert labels.get(local_cluster.SPOT_LABEL) == ("true" if plan.config.capacity == "spot" else None)


@pytest.mark.parametrize(("name", "config"), [*CONFIGS, *ADDED], ids=lambda v: v if isinstance(v, str) else "")
def test_a_tpu_pod_of_a_pool_fits_its_nodes_and_no_other(name: str, config: StackConfig):
    """The placement the workloads take from their pool (PoolPlan.placement) selects that pool's mirrored nodes,
    tolerates their taints, and fits their chips; it matches no node of another pool, and no TPU node is left
    without a pool that may use it."""
    nodes = nodes_for(config)
    for plan in config.pools:
        mine = {n["metadata"]["name"] for n in nodes if _fits(plan, n)}
        expected = {
            n["metadata"]["name"]
            for n in nodes
            if n["metadata"]["labels"].get(local_cluster.LOCAL_LABEL) == f"tpu.{plan.name}"
        }
        assert mine == expected, plan.name
    tpu_nodes = {n["metadata"]["name"] for n in nodes if catalog.TPU_RESOURCE in n["status"]["capacity"]}
    assert tpu_nodes == {n["metadata"]["name"] for plan in config.pools for n in nodes if _fits(plan, n)}


@pytest.mark.parametrize(("name", "config"), CONFIGS, ids=lambda v: v if isinstance(v, str) else "")
def test_the_system_pool_starts_as_gke_creates_it(name: str, config: StackConfig):
    cluster = config.cluster_plan
    system = [
        n for n in nodes_for(config) if n["metadata"]["labels"][catalog.NODE_POOL_LABEL] == naming.SYSTEM_NODE_POOL
    ]
    zones = 1 if "-" in cluster.location.removeprefix(config.region) else 3
    assert len(system) == cluster.system_pool.initial_per_zone * zones
    for node in system:
        assert node["spec"]["taints"] == []  # system pods and the controllers run here
        labels = node["metadata"]["labels"]
        assert labels[local_cluster.INSTANCE_TYPE_LABEL] == cluster.config.system_pool.machine_type
        # the program's node_config.labels of the system pool (components/cluster.py), which every add-on's
        # nodeSelector names: without them the first `pulumi up` waited on a Pending metrics adapter
        assert naming.SYSTEM_POOL_SELECTOR.items() <= labels.items()
        assert catalog.TPU_RESOURCE not in node["status"]["capacity"]


def test_node_names_are_unique_and_valid() -> None:
    for _, config in [*CONFIGS, *ADDED]:
        names = [n["metadata"]["name"] for n in nodes_for(config)]
        assert len(names) == len(set(names))
        assert all(len(n) <= 63 and n == naming.slug(n) for n in names), names


def test_general_purpose_machine_sizes_follow_their_names() -> None:
    assert local_cluster.machine_resources("e2-standard-4") == (4.0, 16 * GIB)
    assert local_cluster.machine_resources("n2-highmem-8") == (8.0, 64 * GIB)
    assert local_cluster.machine_resources("ct6e-standard-4t") is None


def test_a_pathways_head_pool_is_mirrored_beside_its_slices() -> None:
    path = next(p for p in STACK_FILES if p.parent.name == "pathways-job")
    config = parse_stack_file(path)
    heads = [w for w in config.workloads if getattr(w, "head_machine", None) is not None]
    assert heads
    nodes = nodes_for(config)
    for workload in heads:
        (node,) = [n for n in nodes if n["metadata"]["labels"][catalog.NODE_POOL_LABEL] == workload.head_pool_name]
        assert workload.head_selector.items() <= node["metadata"]["labels"].items()
        assert node["metadata"]["labels"][local_cluster.ZONE_LABEL] == workload.pool.config.zone


def test_stack_names_resolve_to_stack_files(tmp_path: Path) -> None:
    root = local_cluster.ROOT
    assert local_cluster.stack_file("dev") == root / "Pulumi.dev.yaml"
    assert local_cluster.stack_file("ironwood").parent.name == "ironwood"  # an example folder with one stack
    assert local_cluster.stack_file("vllm-single-host-keda").name == "Pulumi.vllm-single-host-keda.yaml"
    with pytest.raises(local_cluster.LocalClusterError, match="no stack"):
        local_cluster.stack_file("no-such-stack")


def test_every_process_listens_and_connects_on_loopback_only(tmp_path, monkeypatch) -> None:
    """The issue's rule: traffic stays on 127.0.0.1 (and the namespace's own address, on its loopback device)."""
    monkeypatch.setattr(toolchain, "binary_path", lambda name, cache=None: tmp_path / name)
    monkeypatch.setattr(local_cluster, "_kwok_stages", lambda p: [])
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        (tmp_path / name).write_text("")
        (tmp_path / name).chmod(0o755)
    allowed = {"127.0.0.1", local_cluster.LOCAL_ADDRESS}
    address_flags = ("address", "urls", "servers", "initial-cluster", "node-ip")
    for _, command in local_cluster.commands(local_cluster.paths("unit")):
        for arg in command[1:]:
            flag, _, value = arg.partition("=")
            if any(word in flag for word in address_flags):
                hosts = {part.split("//")[-1].rsplit(":", 1)[0] for part in value.replace("local=", "").split(",")}
                assert hosts <= allowed, arg


def test_a_fleet_stack_or_a_broken_one_is_a_clear_error(tmp_path: Path) -> None:
    fleet = next(p for p in (local_cluster.ROOT / "examples" / "fleet").glob("Pulumi.fleet.yaml"))
    with pytest.raises(local_cluster.LocalClusterError, match="fleet stack"):
        local_cluster.load_config(fleet)
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text("config:\n  gcp:project: p-123456\n  gcp:region: us-east5\n  tpu-serving:tpuPools: 3\n")
    with pytest.raises(local_cluster.LocalClusterError, match="tpuPools"):
        local_cluster.load_config(broken)


def test_a_jobsets_pods_serve_until_deleted_and_a_plain_jobs_complete() -> None:
    """kwok's pod-complete stage (a Job's Running pod becomes Succeeded) narrowed to pods no JobSet created."""
    kwok_stage = {
        "kind": "Stage",
        "metadata": {"name": "pod-complete"},
        "spec": {"selector": {"matchExpressions": [{"key": ".status.phase", "operator": "In", "values": ["Running"]}]}},
    }
    stage = local_cluster.completion_stage(kwok_stage)
    assert stage["spec"]["selector"]["matchExpressions"] == [
        {"key": ".status.phase", "operator": "In", "values": ["Running"]},
        {"key": '.metadata.labels.["jobset.sigs.k8s.io/jobset-name"]', "operator": "DoesNotExist"},
    ]
    assert len(kwok_stage["spec"]["selector"]["matchExpressions"]) == 1  # kwok's own is not changed


def test_each_checkout_gets_its_own_network_namespace(tmp_path: Path) -> None:
    """Network namespaces are the machine's: a developer's worktrees and CI's clone must not share one."""
    here = local_cluster.netns_name("dev")
    assert here.startswith("tpu-dev-") and here == local_cluster.netns_name("dev")
    assert local_cluster.netns_name("dev", tmp_path) != here
    assert local_cluster.netns_name("gemma-hpa") != here


def test_every_node_has_the_boot_disks_ephemeral_storage_as_gke_reports_it() -> None:
    # GKE's documented node (plan-node-sizes, "Check allocatable resources on a node"): 100 GB boot disk
    assert local_cluster.ephemeral_storage(100) == (str(98831908 * 1024), "47060071478")
    for _, config in CONFIGS:
        disk = config.cluster_plan.config.system_pool.disk_size_gb
        for node in nodes_for(config):
            capacity, allocatable = node["status"]["capacity"], node["status"]["allocatable"]
            system = node["metadata"]["labels"][catalog.NODE_POOL_LABEL] == naming.SYSTEM_NODE_POOL
            expected = local_cluster.ephemeral_storage(disk if system else local_cluster.DEFAULT_BOOT_DISK_GB)
            assert (capacity["ephemeral-storage"], allocatable["ephemeral-storage"]) == expected


def test_a_staging_job_asking_for_ephemeral_storage_fits_a_system_node() -> None:
    # the vLLM weights staging Job asks 40Gi of ephemeral storage (workloads/vllm/staging.py): without the
    # resource on the mirrored nodes the scheduler left it Pending ("Insufficient ephemeral-storage") and the
    # first `pulumi up` of every vLLM example waited on the Job until its deadline
    from workloads.vllm import staging

    asked = staging.STAGE_RESOURCES["requests"]["ephemeral-storage"]
    assert asked.endswith("Gi")
    assert int(asked.removesuffix("Gi")) * 2**30 <= int(local_cluster.ephemeral_storage(100)[1])


def test_the_stack_file_given_after_the_stack_is_read(monkeypatch) -> None:
    # `make local-cluster STACK=gemma-hpa STACK_FILE=...` runs `up gemma-hpa --stack-file FILE`; with the exec
    # command as argparse.REMAINDER the option was swallowed and gemma-hpa's folder (two stacks) refused
    seen = {}
    monkeypatch.setattr(local_cluster, "up", lambda stack, stack_file: seen.update(up=(stack, stack_file)))
    monkeypatch.setattr(local_cluster, "exec_in", lambda stack, command: seen.update(exec=(stack, command)) or 0)
    assert local_cluster.main(["up", "gemma-hpa", "--stack-file", "/x/Pulumi.gemma-hpa.yaml"]) == 0
    assert seen["up"] == ("gemma-hpa", "/x/Pulumi.gemma-hpa.yaml")
    assert local_cluster.main(["exec", "dev", "--", "ls", "-la"]) == 0
    assert seen["exec"] == ("dev", ["ls", "-la"])
