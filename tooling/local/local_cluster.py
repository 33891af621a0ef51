"""`make local-cluster STACK=...`: a real Kubernetes control plane for one stack, with kwok nodes mirroring the
stack's node pools as GKE makes them (issue 35; the design is docs/local-cluster.md).

Everything runs in a network namespace of its own, `tpu-<stack>-<checkout hash>`, whose only interface is its loopback
(127.0.0.1, plus LOCAL_ADDRESS on the same loopback device for the API server's Endpoints): etcd, kube-apiserver,
kube-controller-manager, kube-scheduler and kwok listen there, and an address outside it is unreachable (the kernel
answers "network is unreachable" at once, so nothing leaves the machine). Certificates, the kubeconfig, logs, pid
files and etcd's data are in .cache/local/<stack>/.

    python -m tooling.local.local_cluster up STACK       start (idempotent), nodes created and Ready
    python -m tooling.local.local_cluster check STACK    the smoke test: control plane, nodes, one TPU pod per pool Running
    python -m tooling.local.local_cluster down STACK     stop every process (pid files), remove the namespace and state
    python -m tooling.local.local_cluster exec STACK -- CMD ...   run CMD in the cluster's network namespace
    python -m tooling.local.local_cluster nodes STACK    print the Node objects nodes_for() derives (no cluster needed)

STACK: a stack name (Pulumi.<stack>.yaml here, or an example's examples/*/Pulumi.<stack>.yaml), an example folder
with one stack file, or a stack file. `nodes_for(config)` is pure and tested in `make test`; nothing here runs go.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stacks import naming
from stacks.facts import catalog, cpu_machines
from stacks.facts.versions import LOCAL_KUBERNETES, TOOLCHAIN
from stacks.pieces import tpu_pools as tpu_pools_piece
from stacks.serving import compute_class, pool_sizing
from stacks.serving.pool_plan import PoolPlan
from stacks.stack_config import StackConfig
from tooling.local import toolchain

ROOT = Path(__file__).resolve().parents[2]
STATE = ROOT / ".cache" / "local"

# The second address of the namespace's loopback device: not in 127.0.0.0/8, because the API server refuses
# Endpoints and EndpointSlices in the loopback range (kubernetes@v1.35.4 pkg/apis/core/validation/validation.go
# ValidateEndpointIP: "may not be in the loopback range"), and a webhook or APIService backed by a Service is reached
# through its Endpoints. 198.18.0.0/15 is the benchmarking range (RFC 2544), routed nowhere; it exists only in the
# namespace.
LOCAL_ADDRESS = "198.18.0.1"
# Pod IPs kwok hands out (its --cidr): in the same never-routed range, on no interface, so a connection to a pod IP
# fails at once inside the namespace.
POD_CIDR = "198.19.0.1/16"
SERVICE_CIDR = "10.96.0.0/16"  # ClusterIPs: allocated, never dialed (no kube-proxy; unreachable in the namespace)
FIRST_SERVICE_IP = "10.96.0.1"

APISERVER_PORT = 6443
ETCD_PORT = 2379
ETCD_PEER_PORT = 2380
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
KWOK_PORT = 10247  # kwok's own health/metrics server

# A node's local ephemeral storage (its boot disk) as GKE reports it, from the one example GKE documents: a node with
# a 100 GB boot disk shows capacity `ephemeral-storage: 98831908Ki` and allocatable `47060071478` (bytes)
# (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes, "Check allocatable resources on a
# node"). Both are scaled by the pool's boot disk size (GB) here: exact at GKE's default 100 GB (every TPU pool and
# the system pool by default), an approximation elsewhere (GKE's reservation is not linear in the disk size).
DEFAULT_BOOT_DISK_GB = 100  # GKE's default node boot disk (node_config.disk_size_gb unset)
_EPHEMERAL_CAPACITY_100GB = 98831908 * 1024
_EPHEMERAL_ALLOCATABLE_100GB = 47060071478


def ephemeral_storage(disk_gb: int) -> tuple[str, str]:
    """(capacity, allocatable) `ephemeral-storage` of a node with a boot disk of `disk_gb` GB, in bytes."""
    return (
        str(_EPHEMERAL_CAPACITY_100GB * disk_gb // DEFAULT_BOOT_DISK_GB),
        str(_EPHEMERAL_ALLOCATABLE_100GB * disk_gb // DEFAULT_BOOT_DISK_GB),
    )


# GKE Standard's default maximum Pods per node (https://cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr:
# "110 Pods per node" by default in Standard clusters); the stack sets no other.
MAX_PODS_PER_NODE = 110
TPU_TAINT_VALUE = "present"  # GKE taints TPU nodes google.com/tpu=present:NoSchedule (gke-tpu-facts.md rule 5)
SPOT_LABEL = "cloud.google.com/gke-spot"  # GKE labels Spot VM nodes cloud.google.com/gke-spot=true (GKE Spot VMs docs)
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Marks every node this module creates (and what `check` creates), so nothing else is ever touched.
LOCAL_LABEL = "tpu-serving.local/mirrored"

# Compute Engine general-purpose machine families whose memory follows from the vCPUs by the type's suffix
# (https://cloud.google.com/compute/docs/general-purpose-machines: E2, N2 and N2D standard 4 GB per vCPU, highmem 8,
# highcpu 1); the system pool's `e2-standard-4` is 4 vCPUs, 16 GB.
_GENERAL_PURPOSE = re.compile(r"(e2|n2|n2d)-(standard|highmem|highcpu)-([0-9]+)")
_GB_PER_VCPU = {"standard": 4, "highmem": 8, "highcpu": 1}


class LocalClusterError(RuntimeError):
    pass


# ---- the node pools GKE would make, as Node objects (pure) ------------------------------------------------------


@dataclass(frozen=True)
class MirroredPool:
    """One node pool as GKE would run it: its nodes' labels, taints and resources."""

    node_pool: str
    nodes: int
    machine_type: str
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...]
    cpu: float | None  # vCPUs of the machine; None: the catalog does not record them
    memory_bytes: int | None
    tpu_chips: int = 0
    owner: str = ""  # "system", "tpu:<pool>" or "workload:<name>": what the node pool belongs to
    disk_gb: int = DEFAULT_BOOT_DISK_GB  # the boot disk: the node's local ephemeral storage


def machine_resources(machine_type: str) -> tuple[float, int] | None:
    """(vCPUs, memory bytes) of a general-purpose CPU machine type, from its name; None if its family is not one
    whose size follows from the name."""
    match = _GENERAL_PURPOSE.fullmatch(machine_type)
    if not match:
        return None
    vcpus = int(match.group(3))
    return float(vcpus), vcpus * _GB_PER_VCPU[match.group(2)] * cpu_machines.GIB


def _pool_count(location: str) -> int:
    return pool_sizing.cluster_zones(location)


def tpu_mirrors(plan: PoolPlan, region: str) -> list[MirroredPool]:
    """The node pools of one TPU pool: its own (one per slice, or one single-host pool) or, for a capacity list,
    the ones GKE creates for its ComputeClass (one per slice, named here `<class>-nap-<i>`: GKE chooses the real
    names). Each at the most nodes it can reach (a slice whole; a single-host pool at its autoscaling maximum):
    the local cluster has no autoscaler."""
    shape = plan.shape
    base_labels = {
        catalog.ACCELERATOR_LABEL: shape.generation.accelerator,
        catalog.TOPOLOGY_LABEL: shape.topology,
        INSTANCE_TYPE_LABEL: shape.machine_type,
        ZONE_LABEL: plan.config.zone,
        REGION_LABEL: region,
    }
    taints: list[dict[str, str]] = [{"key": catalog.TPU_RESOURCE, "value": TPU_TAINT_VALUE, "effect": "NoSchedule"}]
    if plan.compute_class:
        cls = plan.compute_class
        manifest = tpu_pools_piece.compute_class_manifest(plan, node_service_account="")
        base_labels |= {compute_class.COMPUTE_CLASS_LABEL: cls, **manifest["spec"]["nodePoolConfig"]["nodeLabels"]}
        # GKE taints the nodes it creates for a class whose pods select and tolerate it (compute_class C3)
        taints.append({"key": compute_class.COMPUTE_CLASS_LABEL, "value": cls, "effect": "NoSchedule"})
        first = plan.capacities[0]
        names = [f"{cls}-nap-{i}" for i in range(plan.slices if shape.multi_host else 1)]
        slice_labels: list[dict[str, str]] = [{SPOT_LABEL: "true"} if first == "spot" else {} for _ in names]
    else:
        names = list(plan.node_pool_names)
        spot = {SPOT_LABEL: "true"} if plan.config.capacity == "spot" else {}
        # node_config.labels of each slice's node pool (components/tpu_pool.py node_pool_args)
        slice_labels = [{naming.POOL_LABEL: plan.name, naming.SLICE_LABEL: str(i), **spot} for i in range(len(names))]
    resources = shape.host_resources
    return [
        MirroredPool(
            node_pool=name,
            nodes=plan.max_nodes_per_node_pool,
            machine_type=shape.machine_type,
            labels={**base_labels, **extra, catalog.NODE_POOL_LABEL: name},
            taints=tuple(taints),
            cpu=float(resources[0]) if resources else None,
            memory_bytes=resources[1] * catalog.GB if resources else None,
            tpu_chips=shape.chips_per_host,
            owner=f"tpu:{plan.name}",
        )
        for name, extra in zip(names, slice_labels, strict=True)
    ]


def mirrors(config: StackConfig) -> list[MirroredPool]:
    """Every node pool of the stack: the system pool, each TPU pool's, and the CPU pools workloads add (a Pathways
    head pool: a workload plan with `head_machine`/`head_pool_name`/`head_selector`)."""
    cluster = config.cluster_plan
    system = cluster.config.system_pool
    location = cluster.location
    zonal = pool_sizing.ZONE.fullmatch(location) is not None
    system_labels = {
        # the labels the program gives the system pool's nodes (components/cluster.py node_config.labels): the
        # add-ons' controllers and adapters select the pool by them
        **naming.SYSTEM_POOL_SELECTOR,
        INSTANCE_TYPE_LABEL: system.machine_type,
        REGION_LABEL: config.region,
        catalog.NODE_POOL_LABEL: naming.SYSTEM_NODE_POOL,
    }
    if zonal:
        system_labels[ZONE_LABEL] = location
    resources = machine_resources(system.machine_type)
    out = [
        MirroredPool(
            node_pool=naming.SYSTEM_NODE_POOL,
            # initial_node_count per zone (components/cluster.py system_pool_args), over the cluster's zones
            nodes=cluster.system_pool.initial_per_zone * _pool_count(location),
            machine_type=system.machine_type,
            labels=system_labels,
            taints=(),
            cpu=resources[0] if resources else None,
            memory_bytes=resources[1] if resources else None,
            owner="system",
            disk_gb=system.disk_size_gb,
        )
    ]
    for plan in config.pools:
        out.extend(tpu_mirrors(plan, config.region))
    for workload in config.workloads:
        machine = getattr(workload, "head_machine", None)
        if isinstance(machine, cpu_machines.CpuMachine):
            head_pool: str = getattr(workload, "head_pool_name")  # noqa: B009 - a workload type's own field
            head_selector: dict[str, str] = getattr(workload, "head_selector")  # noqa: B009
            out.append(
                MirroredPool(
                    node_pool=head_pool,
                    nodes=1,  # autoscaling {min 0, max 1} (workloads/pathways_job/component.py)
                    machine_type=machine.name,
                    labels={
                        **head_selector,
                        INSTANCE_TYPE_LABEL: machine.name,
                        ZONE_LABEL: workload.pool.config.zone,
                        REGION_LABEL: config.region,
                        catalog.NODE_POOL_LABEL: head_pool,
                    },
                    taints=(),
                    cpu=float(machine.vcpus),
                    memory_bytes=machine.memory_gib * cpu_machines.GIB,
                    owner=f"workload:{workload.workload.name}",
                )
            )
    return out


def _allocatable(cpu: float, memory_bytes: int) -> tuple[str, str]:
    """What GKE leaves for pods of a node's CPU and memory (stacks/facts/cpu_machines.py: GKE's reservations)."""
    machine = cpu_machines.CpuMachine("", int(cpu), memory_bytes // cpu_machines.GIB)
    reserved_memory = machine.memory_gib * cpu_machines.GIB - machine.allocatable_memory_bytes
    return f"{int(machine.allocatable_cpu * 1000)}m", str(memory_bytes - reserved_memory)


def node_name(cluster: str, node_pool: str, index: int) -> str:
    """`gke-<cluster>-<node pool>-<index>`, as GKE names nodes after the cluster and node pool (GKE adds a hash)."""
    return naming.fit(naming.slug(f"gke-{cluster}-{node_pool}"), 60) + f"-{index}"


def nodes_for(config: StackConfig) -> list[dict[str, Any]]:
    """The Node objects of the stack's node pools, as GKE labels, taints and sizes them (the pure part of
    `make local-cluster`): capacity and allocatable from the catalog (TPU hosts) or the machine type (CPU pools),
    `google.com/tpu` = the chips of one host."""
    nodes = []
    for pool in mirrors(config):
        capacity: dict[str, str] = {"pods": str(MAX_PODS_PER_NODE)}
        allocatable = dict(capacity)
        if pool.cpu is not None and pool.memory_bytes is not None:
            capacity |= {"cpu": f"{int(pool.cpu * 1000)}m", "memory": str(pool.memory_bytes)}
            cpu, memory = _allocatable(pool.cpu, pool.memory_bytes)
            allocatable |= {"cpu": cpu, "memory": memory}
        capacity["ephemeral-storage"], allocatable["ephemeral-storage"] = ephemeral_storage(pool.disk_gb)
        if pool.tpu_chips:
            capacity[catalog.TPU_RESOURCE] = allocatable[catalog.TPU_RESOURCE] = str(pool.tpu_chips)
        for i in range(pool.nodes):
            name = node_name(config.cluster_plan.name, pool.node_pool, i)
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            **pool.labels,
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                            LOCAL_LABEL: pool.owner.replace(":", "."),
                        },
                        # kwok manages every node of this cluster (--manage-all-nodes); the annotation says so
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                    },
                    "spec": {"taints": [dict(t) for t in pool.taints]},
                    "status": {"capacity": capacity, "allocatable": allocatable},
                }
            )
    return nodes


# ---- which stack ------------------------------------------------------------------------------------------------


def stack_file(arg: str) -> Path:
    """A stack file, a stack here (Pulumi.<stack>.yaml), an example folder with one stack file, or an example's
    stack name (examples/*/Pulumi.<stack>.yaml)."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path.resolve()
    if (ROOT / f"Pulumi.{arg}.yaml").is_file():
        return ROOT / f"Pulumi.{arg}.yaml"
    folder = path if path.is_dir() else ROOT / "examples" / arg
    if folder.is_dir():
        found = sorted(folder.glob("Pulumi.*.yaml"))
        if len(found) == 1:
            return found[0].resolve()
        if found:
            names = ", ".join(stack_name(p) for p in found)
            raise LocalClusterError(f"{arg!r} has several stacks ({names}): name one")
    found = sorted((ROOT / "examples").glob(f"*/Pulumi.{arg}.yaml"))
    if len(found) == 1:
        return found[0]
    raise LocalClusterError(
        f"no stack {arg!r}: give a stack file, Pulumi.<stack>.yaml here, an example folder or an example's stack name"
    )


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def load_config(path: Path) -> StackConfig:
    """The stack's validated config, as the program validates it; a stack without a cluster of its own (a fleet
    stack) or with problems is a LocalClusterError saying so."""
    from stacks.problems import ConfigError
    from tooling.harness.offline import load_stack_file, parse_stack_file
    from tooling.review.fleet_render import is_fleet

    if is_fleet(load_stack_file(path)):
        raise LocalClusterError(f"{path.name} is a fleet stack: it has no cluster of its own (docs/fleet.md)")
    try:
        return parse_stack_file(path)
    except ConfigError as err:
        raise LocalClusterError(str(err)) from None


def netns_name(stack: str, root: Path = ROOT) -> str:
    """`tpu-<stack>-<checkout>`: network namespaces are the machine's, so two checkouts (a developer's worktrees, CI's
    clone) running a cluster for the same stack get their own (the checkout's path hashed)."""
    checkout = hashlib.sha256(str(root).encode()).hexdigest()[:8]
    return f"tpu-{naming.slug(stack)[:40]}-{checkout}"


# ---- state: certificates, kubeconfig, processes -----------------------------------------------------------------


@dataclass(frozen=True)
class Paths:
    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def kubeconfig(self) -> Path:
        """For you and the e2e, from this machine's loopback: through the forwarder into the namespace."""
        return self.root / "kubeconfig"

    @property
    def inner_kubeconfig(self) -> Path:
        """For the processes in the namespace: the API server's own port there."""
        return self.root / "kubeconfig-netns"

    @property
    def forward_port(self) -> Path:
        return self.root / "forward-port"

    @property
    def controllers(self) -> Path:
        """The controllers running for the stack: [{"name", "pid", "log", "started"}] (the e2e reads it)."""
        return self.root / "controllers.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"


def paths(stack: str) -> Paths:
    return Paths(STATE / stack)


def _openssl(*args: str, cwd: Path) -> None:
    result = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise LocalClusterError(f"openssl {' '.join(args)}: {result.stderr.strip()}")


def _cert(pki: Path, name: str, ca: str, subject: str, sans: list[str], usage: str) -> None:
    """<name>.key and <name>.crt signed by <ca>, for serving (`usage` serverAuth) or as a client (clientAuth)."""
    ext = pki / f"{name}.ext"
    lines = [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        f"extendedKeyUsage={usage}",
    ]
    if sans:
        lines.append("subjectAltName=" + ",".join(sans))
    ext.write_text("\n".join(lines) + "\n")
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=pki)
    _openssl("req", "-new", "-key", f"{name}.key", "-subj", subject, "-out", f"{name}.csr", cwd=pki)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key", "-CAcreateserial",
        "-days", "30", "-sha256", "-extfile", ext.name, "-out", f"{name}.crt", cwd=pki,
    )  # fmt: skip


def make_pki(pki: Path) -> None:
    """A cluster CA, the API server's serving certificate, the admin client, the front proxy (aggregated APIs) and
    the service-account signing key; made once per state folder."""
    if (pki / "done").exists():
        return
    pki.mkdir(parents=True, exist_ok=True)
    for ca, cn in (("ca", "tpu-serving-local-ca"), ("front-proxy-ca", "tpu-serving-local-front-proxy-ca")):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                 "-days", "30", "-subj", f"/CN={cn}", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", cwd=pki)  # fmt: skip
    sans = [f"IP:127.0.0.1,IP:{LOCAL_ADDRESS},IP:{FIRST_SERVICE_IP},DNS:localhost,DNS:kubernetes",
            "DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"]  # fmt: skip
    _cert(pki, "apiserver", "ca", "/CN=kube-apiserver", sans, "serverAuth")
    _cert(pki, "admin", "ca", "/O=system:masters/CN=tpu-serving-local-admin", [], "clientAuth")
    _cert(pki, "front-proxy-client", "front-proxy-ca", "/CN=front-proxy-client", [], "clientAuth")
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    (pki / "done").write_text("")


def write_kubeconfig(path: Path, p: Paths, stack: str, port: int) -> None:
    name = f"tpu-serving-local-{naming.slug(stack)}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority": str(p.pki / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {"client-certificate": str(p.pki / "admin.crt"), "client-key": str(p.pki / "admin.key")},
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": "admin"}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))


# ---- the network namespace ----------------------------------------------------------------------------------------

_CLONE_NEWNET = 0x40000000


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def create_netns(name: str) -> None:
    if not Path(f"/run/netns/{name}").exists():
        result = _ip("netns", "add", name)
        if result.returncode != 0:
            raise LocalClusterError(f"ip netns add {name}: {result.stderr.strip()} (the local cluster needs root)")
    for args in (("link", "set", "lo", "up"), ("addr", "replace", f"{LOCAL_ADDRESS}/32", "dev", "lo")):
        result = _ip("netns", "exec", name, "ip", *args)
        if result.returncode != 0:
            raise LocalClusterError(f"ip {' '.join(args)} in {name}: {result.stderr.strip()}")


def enter(stack: str) -> None:
    """Move this process (its calling thread, and every process it starts from now on) into the stack's network
    namespace: call before starting threads. The e2e runs the Pulumi CLI from a process that entered."""
    name = netns_name(stack)
    path = Path(f"/run/netns/{name}")
    if not path.exists():
        raise LocalClusterError(f"no network namespace {name}: run `make local-cluster STACK={stack}` first")
    libc = ctypes.CDLL(None, use_errno=True)
    with open(path) as handle:
        if libc.setns(handle.fileno(), _CLONE_NEWNET) != 0:
            raise LocalClusterError(f"setns {name}: {os.strerror(ctypes.get_errno())}")


def in_netns(stack: str) -> bool:
    """Whether this process is in the stack's namespace already."""
    try:
        return os.stat("/proc/self/ns/net").st_ino == os.stat(f"/run/netns/{netns_name(stack)}").st_ino
    except FileNotFoundError:
        return False


# ---- a small API client (the admin certificate, loopback only) ----------------------------------------------------


class Api:
    def __init__(self, p: Paths) -> None:
        self.base = f"https://127.0.0.1:{APISERVER_PORT}"
        self.context = ssl.create_default_context(cafile=str(p.pki / "ca.crt"))
        self.context.load_cert_chain(str(p.pki / "admin.crt"), str(p.pki / "admin.key"))

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", content_type)
        req.add_header("Accept", "application/json")
        with urllib.request.urlopen(req, context=self.context, timeout=10) as response:
            text = response.read().decode()
        return json.loads(text) if text.startswith(("{", "[")) else text

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
            return True
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return False
            raise

    def apply(self, collection: str, obj: dict[str, Any]) -> None:
        """Create `obj` (with its status); if it exists, merge everything but its status, then its status."""
        name = obj["metadata"]["name"]
        try:
            self.request("POST", collection, obj)
            return
        except urllib.error.HTTPError as err:
            if err.code != 409:
                raise
        merge = "application/merge-patch+json"
        body = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind", "status")}
        self.request("PATCH", f"{collection}/{name}", body, merge)
        if "status" in obj:
            self.request("PATCH", f"{collection}/{name}/status", {"status": obj["status"]}, merge)

    def delete(self, path: str) -> None:
        try:
            self.request("DELETE", path)
        except urllib.error.HTTPError as err:
            if err.code != 404:
                raise


def wait_for(what: str, probe: Any, timeout: float, interval: float = 0.5) -> Any:
    """Poll `probe()` until it returns a truthy value; LocalClusterError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = probe()
            if result:
                return result
        except (OSError, urllib.error.URLError, ssl.SSLError, json.JSONDecodeError) as err:
            last = err
        time.sleep(interval)
    raise LocalClusterError(
        f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last: {last})" if last else "")
    )


# ---- processes ---------------------------------------------------------------------------------------------------


def _binary(name: str) -> str:
    path = toolchain.binary_path(name)
    if not os.access(path, os.X_OK):
        raise LocalClusterError(f"{name} is not built ({path}): run `make toolchain`")
    return str(path)


# A JobSet's pods (Saxml's model servers, Pathways) are Job pods that serve until deleted; only a plain Job's pods
# (the stack's one-off staging Jobs, which Pulumi awaits) complete. JobSet labels every pod it creates with its name
# (jobset.sigs.k8s.io/jobset-name, sigs.k8s.io/jobset@v0.10.1 api/jobset/v1alpha2 JobSetNameKey).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"


def completion_stage(kwok_stage: dict[str, Any]) -> dict[str, Any]:
    """kwok's pod-complete stage, for pods that are not a JobSet's."""
    stage = json.loads(json.dumps(kwok_stage))
    expressions = stage["spec"]["selector"]["matchExpressions"]
    expressions.append({"key": f'.metadata.labels.["{JOBSET_NAME_LABEL}"]', "operator": "DoesNotExist"})
    return stage


# The namespaces whose Deployments a local process stands in for (tooling/local/local_controllers.py
# EVERY_CONTROLLER): there the kubelet's readiness probe, not kwok, decides when a pod is Ready.
def stand_in_namespaces() -> list[str]:
    from tooling.local import local_controllers  # it imports this module

    return sorted({controller.namespace for controller in local_controllers.EVERY_CONTROLLER})


_NOT_READY = (
    ('status: "True"\n  type: Ready\n', 'status: "False"\n  type: Ready\n'),
    ('status: "True"\n  type: ContainersReady\n', 'status: "False"\n  type: ContainersReady\n'),
    (
        "  ready: true\n  restartCount: 0\n  state:\n    running:",
        "  ready: false\n  restartCount: 0\n  state:\n    running:",
    ),
)


def readiness_stages(kwok_stage: dict[str, Any], namespaces: list[str]) -> list[dict[str, Any]]:
    """kwok's pod-ready stage (a Pending pod becomes Running and Ready at once), split in two. Outside `namespaces`
    it is kwok's. In them (the pods a local controller process stands in for) a pod becomes Running, its containers
    started but not ready, Ready and ContainersReady False: the supervisor (local_controllers.Supervisor.readiness)
    sets Ready once the process answers its readiness probe and its Services' ports, as the kubelet does on GKE
    from the Deployment's readinessProbe (kubernetes@v1.35.4 pkg/kubelet/prober). Helm's wait for the chart's
    Deployment and the Endpoints of its webhook Service wait for that, not for kwok."""
    stage = json.loads(json.dumps(kwok_stage))
    outside = {"key": ".metadata.namespace", "operator": "NotIn", "values": list(namespaces)}
    stage["spec"]["selector"]["matchExpressions"].append(outside)
    unready = json.loads(json.dumps(kwok_stage))
    unready["metadata"]["name"] = "pod-running-until-probed"
    unready["spec"]["selector"]["matchExpressions"].append({**outside, "operator": "In"})
    template = unready["spec"]["next"]["statusTemplate"]
    for ready, not_ready in _NOT_READY:
        if template.count(ready) != 1:
            raise LocalClusterError(f"kwok's pod-ready stage changed: {ready!r} is not in its status template once")
        template = template.replace(ready, not_ready)
    unready["spec"]["next"]["statusTemplate"] = template
    return [stage, unready]


def _kwok_stages(p: Paths) -> list[str]:
    """kwok's own stage files (kept beside its binary by the toolchain), pod-complete narrowed by completion_stage,
    pod-ready split by readiness_stages."""
    kwok = next(tool for tool in TOOLCHAIN if tool.name == "kwok")
    out = []
    for path in kwok.data:
        source = toolchain.data_path(kwok, path)
        if source.name == "pod-complete.yaml":
            target = p.root / "kwok-pod-complete.yaml"
            target.write_text(yaml.safe_dump(completion_stage(yaml.safe_load(source.read_text())), sort_keys=False))
            source = target
        elif source.name == "pod-ready.yaml":
            target = p.root / "kwok-pod-ready.yaml"
            stages = readiness_stages(yaml.safe_load(source.read_text()), stand_in_namespaces())
            target.write_text(yaml.safe_dump_all(stages, sort_keys=False))
            source = target
        out.append(str(source))
    return out


def commands(p: Paths) -> list[tuple[str, list[str]]]:
    """Each process of the control plane and its command line, in start order."""
    pki, kubeconfig = p.pki, str(p.inner_kubeconfig)
    return [
        ("etcd", [
            _binary("etcd"), "--name=local", f"--data-dir={p.etcd_data}",
            f"--listen-client-urls=http://127.0.0.1:{ETCD_PORT}", f"--advertise-client-urls=http://127.0.0.1:{ETCD_PORT}",
            f"--listen-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{ETCD_PEER_PORT}",
            f"--initial-cluster=local=http://127.0.0.1:{ETCD_PEER_PORT}",
            "--unsafe-no-fsync=true", "--log-level=warn", "--quota-backend-bytes=2147483648",
        ]),
        ("kube-apiserver", [
            _binary("kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}",
            "--bind-address=127.0.0.1", f"--secure-port={APISERVER_PORT}", f"--advertise-address={LOCAL_ADDRESS}",
            "--endpoint-reconciler-type=none",
            f"--tls-cert-file={pki / 'apiserver.crt'}", f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--service-account-key-file={pki / 'sa.pub'}", f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            # webhooks and APIServices are reached through their Service's Endpoints, never a ClusterIP
            "--enable-aggregator-routing=true",
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            "--profiling=false", "--v=1",
        ]),
        ("kube-controller-manager", [
            _binary("kube-controller-manager"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={CONTROLLER_MANAGER_PORT}", "--leader-elect=false",
            # Endpoints come from the local cluster for the Services it routes (docs/local-cluster.md), never
            # from kwok's fake pods
            "--controllers=*,-endpoints-controller,-endpointslice-controller,-endpointslice-mirroring-controller",
            f"--service-account-private-key-file={pki / 'sa.key'}", f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}", f"--cluster-signing-key-file={pki / 'ca.key'}",
            "--use-service-account-credentials=false", "--profiling=false", "--v=1",
        ]),
        ("kube-scheduler", [
            _binary("kube-scheduler"), f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={SCHEDULER_PORT}", "--leader-elect=false",
            "--profiling=false", "--v=1",
        ]),
        ("kwok", [
            _binary("kwok"), f"--kubeconfig={kubeconfig}", "--manage-all-nodes=true",
            f"--cidr={POD_CIDR}", "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{KWOK_PORT}",
            *(f"--config={stage}" for stage in _kwok_stages(p)),
        ]),
    ]  # fmt: skip


def _pid(p: Paths, name: str) -> int | None:
    """The running process of a pid file; None if there is none, or it exited (a zombie child is reaped)."""
    try:
        pid = int((p.pids / f"{name}.pid").read_text())
    except (FileNotFoundError, ValueError):
        return None
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return None
    return pid


def start(
    p: Paths,
    name: str,
    command: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    append: bool = False,
) -> int:
    """Start one process (in this process's network namespace), detached, logging to logs/<name>.log."""
    running = _pid(p, name)
    if running:
        return running
    p.logs.mkdir(parents=True, exist_ok=True)
    p.pids.mkdir(parents=True, exist_ok=True)
    with open(p.logs / f"{name}.log", "ab" if append else "wb") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cwd,
            env=env,
        )
    (p.pids / f"{name}.pid").write_text(str(process.pid))
    return process.pid


def stop(p: Paths, name: str, grace: float = 10.0) -> None:
    """SIGTERM the process of a pid file, SIGKILL after `grace` seconds, remove the pid file."""
    pid = _pid(p, name)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _pid(p, name):
            time.sleep(0.2)
        if _pid(p, name):
            os.kill(pid, signal.SIGKILL)
    (p.pids / f"{name}.pid").unlink(missing_ok=True)


def _log_tail(p: Paths, name: str, lines: int = 15) -> str:
    try:
        return "\n".join((p.logs / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def _alive(p: Paths, name: str) -> bool:
    """False while `name` runs (so a probe `_alive(...) or ready()` goes on to ready()); raise once it exited."""
    if _pid(p, name) is None:
        raise LocalClusterError(f"{name} exited; the end of {p.logs / (name + '.log')}:\n{_log_tail(p, name)}")
    return False


# ---- up / down / check -----------------------------------------------------------------------------------------


def target(stack_arg: str, stack_file_arg: str | None = None) -> tuple[str, Path]:
    """The stack's name and its stack file: STACK, and STACK_FILE when given (the e2e names both), else the file
    STACK resolves to."""
    if stack_file_arg:
        return stack_arg, Path(stack_file_arg).resolve()
    path = stack_file(stack_arg)
    return stack_name(path), path


def up(stack_arg: str, stack_file_arg: str | None = None) -> Paths:
    stack, path = target(stack_arg, stack_file_arg)
    config = load_config(path)
    nodes = nodes_for(config)
    p = paths(stack)
    p.root.mkdir(parents=True, exist_ok=True)
    (p.root / "stack").write_text(str(path) + "\n")
    make_pki(p.pki)
    write_kubeconfig(p.inner_kubeconfig, p, stack, APISERVER_PORT)
    create_netns(netns_name(stack))
    started = time.monotonic()
    # the forwarder first, from this machine's namespace: it listens here and connects into the cluster's
    start(p, "forwarder", [sys.executable, "-m", "tooling.local.local_cluster", "_forward", stack], cwd=ROOT)
    port = int(wait_for("the forwarder's port", lambda: _alive(p, "forwarder") or _read(p.forward_port), 30))
    write_kubeconfig(p.kubeconfig, p, stack, port)
    if not in_netns(stack):
        enter(stack)
    api = Api(p)
    for name, command in commands(p):
        start(p, name, command)
        if name == "etcd":
            wait_for("etcd", lambda: _alive(p, "etcd") or _etcd_healthy(), 60)
        if name == "kube-apiserver":
            wait_for("the API server's /readyz", lambda: _alive(p, "kube-apiserver") or api.get("/readyz") == "ok", 120)
    print(f"control plane ready in {time.monotonic() - started:.0f} s (network namespace {netns_name(stack)})")
    for node in nodes:
        api.apply("/api/v1/nodes", node)
    names = {node["metadata"]["name"] for node in nodes}
    stale = [
        item["metadata"]["name"]
        for item in api.get(f"/api/v1/nodes?labelSelector={LOCAL_LABEL}")["items"]
        if item["metadata"]["name"] not in names
    ]
    for name in stale:  # a node pool the stack no longer has
        api.delete(f"/api/v1/nodes/{name}")
    wait_for(f"{len(nodes)} nodes Ready", lambda: _alive(p, "kwok") or len(ready_nodes(api) & names) == len(names), 120)
    for name in ("kube-controller-manager", "kube-scheduler"):
        _alive(p, name)
    wait_for("the default ServiceAccount", lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"), 60)
    if not p.controllers.exists():
        p.controllers.write_text("[]\n")
    # the chart controllers, started as the stack installs their Deployments (tooling/local/local_controllers.py)
    start(p, "supervisor", [sys.executable, "-m", "tooling.local.local_controllers", stack], cwd=ROOT)
    print(
        f"{len(nodes)} nodes Ready in {time.monotonic() - started:.0f} s; kubeconfig {p.kubeconfig} (127.0.0.1:{port})"
    )
    return p


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except FileNotFoundError:
        return None


def _etcd_healthy() -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{ETCD_PORT}/health", timeout=2) as response:
        return bool(json.loads(response.read()).get("health") == "true")


def ready_nodes(api: Api) -> set[str]:
    out = set()
    for item in api.get("/api/v1/nodes")["items"]:
        conditions = {c["type"]: c["status"] for c in item.get("status", {}).get("conditions", [])}
        if conditions.get("Ready") == "True":
            out.add(item["metadata"]["name"])
    return out


PROCESS_ORDER = ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd", "forwarder")


def down(stack: str) -> None:
    """Stop every process of the stack's cluster (its pid files: the controllers' too), remove its network namespace,
    certificates, etcd data and kubeconfigs (other files in .cache/local/<stack>/, the e2e's, stay). Safe to run
    twice."""
    p = paths(stack)
    if p.pids.is_dir():
        stop(p, "supervisor", grace=20)  # first: it starts controllers (and stops them, 10 s at most)
        others = sorted(f.stem for f in p.pids.glob("*.pid") if f.stem not in PROCESS_ORDER)
        for name in (*others, *PROCESS_ORDER):
            stop(p, name)
    name = netns_name(stack)
    if Path(f"/run/netns/{name}").exists():
        _ip("netns", "delete", name)
    shutil.rmtree(Path("/etc/netns") / name, ignore_errors=True)  # its /etc/hosts (tooling/local/local_controllers.py)
    for item in (p.pki, p.etcd_data, p.pids):
        shutil.rmtree(item, ignore_errors=True)
    for item in (p.kubeconfig, p.inner_kubeconfig, p.forward_port, p.controllers, p.root / "stack"):
        item.unlink(missing_ok=True)
    print(f"local cluster of {stack} stopped and removed (its logs stay in {p.logs})")


def _pods_of(api: Api, namespace: str) -> list[dict[str, Any]]:
    return list(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"])


def check(stack_arg: str, stack_file_arg: str | None = None) -> int:
    """The smoke test: the control plane answers at the matrix's version, every mirrored node is Ready with its pool's
    labels and taints, and per TPU pool a pod requesting google.com/tpu (the pool's own placement) runs on one of
    its nodes. Prints one line per check; non-zero on any failure."""
    stack, path = target(stack_arg, stack_file_arg)
    config = load_config(path)
    p = paths(stack)
    if not in_netns(stack):
        enter(stack)
    api = Api(p)
    failures: list[str] = []

    def verdict(ok: bool, what: str) -> None:
        print(f"{'PASS' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    version = api.get("/version")
    verdict(
        version.get("gitVersion") == LOCAL_KUBERNETES,
        f"API server {version.get('gitVersion')} (matrix {LOCAL_KUBERNETES})",
    )
    verdict(api.get("/readyz") == "ok", "API server /readyz")
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        verdict(_pid(p, name) is not None, f"{name} running")
    live = {item["metadata"]["name"]: item for item in api.get("/api/v1/nodes")["items"]}
    ready = ready_nodes(api)
    for node in nodes_for(config):
        name = node["metadata"]["name"]
        have = live.get(name)
        labels_ok = have is not None and node["metadata"]["labels"].items() <= have["metadata"]["labels"].items()
        taints_ok = have is not None and all(t in (have["spec"].get("taints") or []) for t in node["spec"]["taints"])
        alloc = (have or {}).get("status", {}).get("allocatable", {})
        tpu_ok = alloc.get(catalog.TPU_RESOURCE) == node["status"]["allocatable"].get(catalog.TPU_RESOURCE)
        verdict(name in ready and labels_ok and taints_ok and tpu_ok, f"node {name} Ready, labels, taints, allocatable")
    namespace = "tpu-serving-local-check"
    api.delete(f"/api/v1/namespaces/{namespace}")
    wait_for(f"namespace {namespace} gone", lambda: not api.exists(f"/api/v1/namespaces/{namespace}"), 60)
    api.request(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    wait_for(
        "its default ServiceAccount", lambda: api.exists(f"/api/v1/namespaces/{namespace}/serviceaccounts/default"), 60
    )
    pool_nodes: dict[str, set[str]] = {}
    for mirror in mirrors(config):
        if mirror.owner.startswith("tpu:"):
            names = {node_name(config.cluster_plan.name, mirror.node_pool, i) for i in range(mirror.nodes)}
            pool_nodes.setdefault(mirror.owner.removeprefix("tpu:"), set()).update(names)
    for plan in config.pools:
        pod = _tpu_pod(plan)
        api.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        pod_path = f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}"
        try:
            running = wait_for(f"pod on pool {plan.name} Running", lambda path=pod_path: _running(api, path), 60)
            node = running["spec"].get("nodeName", "")
            verdict(
                node in pool_nodes[plan.name],
                f"pool {plan.name}: a pod requesting {plan.shape.tpu_request} {catalog.TPU_RESOURCE} Running on {node}",
            )
        except LocalClusterError as err:
            got = api.get(pod_path)
            why = [c.get("message", "") for c in got["status"].get("conditions", []) if c.get("status") == "False"]
            verdict(False, f"pool {plan.name}: {err}; {'; '.join(why)}")
    api.delete(f"/api/v1/namespaces/{namespace}")
    print(f"local-cluster-check {stack}: {len(failures)} failed")
    return 1 if failures else 0  # fmt: skip


def _running(api: Api, path: str) -> dict[str, Any] | None:
    pod = api.get(path)
    return pod if pod["status"].get("phase") == "Running" else None


def _tpu_pod(plan: PoolPlan) -> dict[str, Any]:
    """A pod placed as the stack places a TPU pod of `plan` (PoolPlan.placement), taking all chips of its node."""
    chips = str(plan.shape.tpu_request)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"tpu-{plan.name}"[:63], "labels": {LOCAL_LABEL: "check"}},
        "spec": {
            **plan.placement(),
            "containers": [
                {
                    "name": "tpu",
                    "image": "registry.k8s.io/pause:3.10",  # never pulled: kwok runs no container
                    "resources": {"requests": {catalog.TPU_RESOURCE: chips}, "limits": {catalog.TPU_RESOURCE: chips}},
                }
            ],
        },
    }


def exec_in(stack: str, argv: list[str]) -> int:
    """Run a command in the cluster's namespace (KUBECONFIG set: the kubeconfig of the processes there)."""
    enter(stack)
    env = {**os.environ, "KUBECONFIG": str(paths(stack).inner_kubeconfig)}
    return subprocess.run(argv, env=env).returncode


def forward(stack: str) -> None:
    """The forwarder process: listens on a free port of this machine's 127.0.0.1 (the socket is made before
    entering), then enters the cluster's namespace, where every connection it makes goes to the API server's port.
    Bytes are copied both ways untouched (TLS end to end)."""
    p = paths(stack)
    listener = socket.create_server(("127.0.0.1", 0))
    enter(stack)
    p.forward_port.write_text(f"{listener.getsockname()[1]}\n")
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_relay, args=(client,), daemon=True).start()


def _relay(client: socket.socket) -> None:
    try:
        upstream = socket.create_connection(("127.0.0.1", APISERVER_PORT), timeout=10)
    except OSError:
        client.close()
        return
    upstream.settimeout(None)

    def copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    threading.Thread(target=copy, args=(upstream, client), daemon=True).start()
    copy(client, upstream)
    client.close()
    upstream.close()


def _print_nodes(stack_arg: str) -> None:
    config = load_config(stack_file(stack_arg))
    print(yaml.safe_dump_all(nodes_for(config), sort_keys=False), end="")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.local.local_cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("up", "down", "check", "exec", "nodes", "_forward"))
    parser.add_argument("stack", nargs="?", default="dev")
    parser.add_argument("--stack-file", help="the stack file, when STACK is not a stack name it resolves to")
    # the command of `exec` after `--` (argparse.REMAINDER would swallow `--stack-file` given after STACK, as the
    # Makefile gives it: `make local-cluster STACK=gemma-hpa STACK_FILE=...` then resolved STACK alone, whose folder
    # has two stacks)
    parser.add_argument("command", nargs="*")
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        argv, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = parser.parse_args(argv)
    args.command = [*args.command, *command]
    try:
        if args.action == "up":
            up(args.stack, args.stack_file)
        elif args.action == "down":
            down(args.stack)
        elif args.action == "check":
            return check(args.stack, args.stack_file)
        elif args.action == "exec":
            return exec_in(args.stack, args.command or [os.environ.get("SHELL", "/bin/bash")])
        elif args.action == "_forward":
            forward(args.stack)
        else:
            _print_nodes(args.stack)
    except LocalClusterError as err:
        print(f"local-cluster: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
