"""The TPU catalog: the one place that knows Cloud TPU facts on GKE.

Everything else (node pools, their placement, node selectors, `google.com/tpu` requests, LeaderWorkerSet
sizes, JobSet parallelism, HBM sizing, list prices) asks this module, so a user never
types the same fact twice (what one workload type calls a generation, its own package says per generation:
workloads/jetstream_pathways/plan.py INSTANCE_TYPES, workloads/saxml/plan.py PLATFORM_CHIPS, workloads/vllm/checks.py
TPU_SUPPORT). One `Generation` entry carries every fact about a generation; a test checks that
each entry is complete. Facts come from `../shared/reference/gke-tpu-facts.md`; the source ids in comments
(S2, R1, ...) are the ones that file uses.

Pure Python: no Pulumi import, so it is tested directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import reduce

GB = 10**9
GIB = 2**30

ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
# The node label GKE gives every node with its node pool's name: the topology key that keeps one multi-host
# replica (a JobSet job, an LWS group) on one slice, since each slice is its own node pool.
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"
TPU_RESOURCE = "google.com/tpu"
# Every TPU pod tolerates the TPU nodes' taint (facts rule 5).
TPU_TOLERATION = {"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}

# How GKE places the VMs of a multi-host slice:
# - COMPACT_TOPOLOGY: the node pool's placement_policy {type: COMPACT, tpu_topology} (v4 .. v6e; R1, S14).
# - WORKLOAD_POLICY: a Compute Engine workload policy (a regional ResourcePolicy with workload_policy
#   {type: HIGH_THROUGHPUT, accelerator_topology}) named by the node pool's placement_policy.policy_name, which
#   replaces tpu_topology (S7: "This policy replaces the --tpu-topology flag used by other TPU versions").
#   Single-host pools get no policy (xpk requires_workload_policy = ... and vms_per_slice > 1; xpk #825).
COMPACT_TOPOLOGY = "compact-topology"
WORKLOAD_POLICY = "workload-policy"
PLACEMENTS = (COMPACT_TOPOLOGY, WORKLOAD_POLICY)

# Date of the list prices below. Source: https://cloud.google.com/tpu/pricing (USD per chip-hour, on-demand and
# Spot, US regions, as of this date; not re-verified from this offline environment: check the page before
# relying on a number).
PRICE_TABLE_DATE = "2025-06-01"

# Zones that offer each generation, as Google's TPU regions and zones page lists them ("You can create TPU VMs in the
# zones shown in the following table"), read through the search corpus on ZONES_READ in several editions of the page:
# - the German edition (cloud-dot-devsite-v2-prod.appspot.com/tpu/docs/types-zones?hl=de), the one whose excerpt shows
#   the US rows marked single-tenant ("Einzelmandant"), e.g. v5e us-east5-a/b/c, v5p us-east5-b/c and us-south1-a,
#   v6e us-east5-c, us-east4-a/b and us-west1-c ("single-tenant, except Spot quota");
# - the English page and its Markdown (docs.cloud.google.com/tpu/docs/regions-zones.md.txt) for TPU7x and the AI
#   zones (us-central1-ai1a, us-south1-ai1b) and Europe's first row (v6e europe-west4-a);
# - an earlier German edition for v5e in europe-west4-b.
# No excerpt reached past the first rows of Europe; the rest of Europe, Asia Pacific and South America (v5p
# europe-west4-b, v6e asia-northeast1-b and southamerica-east1-c) are as the issue 23 review read them from the page.
# A region the page may list that is not here (other Asia Pacific rows) is a warning, never an error, and
# `tpuPools[].zoneConfirmed` acknowledges it (stacks/pieces/tpu_pools.py); a zone outside gcp:region is an error.
ZONES_SOURCE = "https://cloud.google.com/tpu/docs/regions-zones"
ZONES_READ = "2026-11-26"


@dataclass(frozen=True)
class ChipPrice:
    """Public list price of one chip-hour, USD."""

    on_demand: float
    spot: float


@dataclass(frozen=True)
class Generation:
    """One TPU generation as GKE exposes it: every fact about it, each with its source."""

    name: str
    accelerator: str  # value of the cloud.google.com/gke-tpu-accelerator node label
    hbm_bytes_per_chip: int
    min_gke_version: str  # GKE Standard
    # topology -> machine type, for slices that fit on one VM
    single_host: dict[str, str]
    multi_host_machine_type: str
    multi_host_chips_per_vm: int
    multi_host_topologies: tuple[str, ...]
    # TensorCores per chip (facts file, per generation).
    cores_per_chip: int
    # Megacore: JAX presents the chip's TensorCores as one device (v4, v5p), so a chip is one device; otherwise
    # each TensorCore is a device (TPU7x: 2 per chip). JAX's chip table, jax.experimental.pallas.tpu.ChipVersion
    # (https://docs.jax.dev/en/latest/_autosummary/jax.experimental.pallas.tpu.ChipVersion.html: "Megacore
    # support" Yes for v4 and v5p only; jax-ml/jax discussion #36155: "On TPU v4, a JAX logical device is normally
    # configured as a Megacore containing two physical TensorCores"). tpu-inference@v0.27.0's
    # tpu_info.get_num_cores_per_chip answers 2 for v4/v5p too, but it counts physical cores (chips to hand each
    # data-parallel rank), not the jax.devices() a tensor-parallel mesh is cut from (tpu_inference/worker/
    # tpu_worker.py: self.devices = jax.devices()[:total_devices]).
    megacore: bool
    placement: str  # COMPACT_TOPOLOGY or WORKLOAD_POLICY, for multi-host slices
    list_price: ChipPrice | None  # None: no public list price (why in `price_note`)
    price_note: str = ""
    boot_disk_type: str | None = None  # None: GKE's default boot disk type for the machine type
    # zones that offer this generation per `zones_source` (see ZONES_SOURCE); not a complete list
    zones: tuple[str, ...] = ()
    # zones the source marks single-tenant: reserved capacity only. zone -> the capacities it names as the exception
    # (v6e us-west1-c: "single-tenant, except Spot quota" -> ("spot",)); usually none.
    single_tenant_zones: dict[str, tuple[str, ...]] = field(default_factory=dict)
    zones_source: str = ZONES_SOURCE
    # machine type -> (vCPUs, memory in GB) of one VM, as the TPU docs list them
    host_resources: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Data-center network bandwidth per chip, Gbit/s: the generation page's per-host NIC configuration divided by
    # its chips per host, or its per-chip DCN figure (see each entry). None: the page states none. A VM's NIC is
    # its chips times this (SliceShape.host_nic_gbps), which assumes a VM with part of a host's chips gets that share.
    dcn_gbps_per_chip: float | None = None

    @property
    def devices_per_chip(self) -> int:
        """JAX devices per chip: one on a megacore chip, else one per TensorCore."""
        return 1 if self.megacore else self.cores_per_chip


@dataclass(frozen=True)
class SliceShape:
    """A topology on a machine type: what one slice of a node pool is."""

    generation: Generation
    topology: str
    machine_type: str
    chips_per_host: int

    @property
    def chips(self) -> int:
        return topology_chips(self.topology)

    @property
    def hosts(self) -> int:
        """Nodes (VMs) in one slice; also the pod count of one slice, one TPU pod per node."""
        return self.chips // self.chips_per_host

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def host_resources(self) -> tuple[int, int] | None:
        """(vCPUs, memory GB) of one node of this shape, when the catalog records them."""
        return self.generation.host_resources.get(self.machine_type)

    @property
    def host_nic_gbps(self) -> float | None:
        """Network bandwidth of one node (VM) of this shape, Gbit/s: its chips' share of the host NIC (None: the
        generation page states no figure). What a node reads its weights from the bucket at, at most."""
        per_chip = self.generation.dcn_gbps_per_chip
        return per_chip * self.chips_per_host if per_chip is not None else None

    @property
    def tpu_request(self) -> int:
        """`google.com/tpu` per pod: every TPU pod takes all chips of its node (facts rule 2)."""
        return self.chips_per_host

    @property
    def devices(self) -> int:
        """JAX devices of one slice (`len(jax.devices())` across its hosts): vLLM's tensor-parallel size."""
        return self.chips * self.generation.devices_per_chip

    @property
    def hbm_bytes(self) -> int:
        return self.chips * self.generation.hbm_bytes_per_chip

    @property
    def uses_workload_policy(self) -> bool:
        """A multi-host slice of a generation placed by a workload policy (single-host pools get none)."""
        return self.multi_host and self.generation.placement == WORKLOAD_POLICY

    @property
    def node_selector(self) -> dict[str, str]:
        return {ACCELERATOR_LABEL: self.generation.accelerator, TOPOLOGY_LABEL: self.topology}


def _cube_topologies(max_cubes: int) -> tuple[str, ...]:
    """Multi-host 3D topologies as xpk generates them (R1 `generate_tpu_topologies`): 2x2x2, 2x2x4, 2x4x4, then
    every AxBxC with 4 <= A <= B <= C <= 256, each a multiple of 4 (a 4x4x4 cube), at most `max_cubes` cubes."""
    found = ["2x2x2", "2x2x4", "2x4x4"]
    for a in range(4, 257, 4):
        for b in range(a, 257, 4):
            for c in range(b, 257, 4):
                if (a // 4) * (b // 4) * (c // 4) <= max_cubes:
                    found.append(f"{a}x{b}x{c}")
    return tuple(found)


GENERATIONS: dict[str, Generation] = {
    g.name: g
    for g in (
        Generation(
            name="v4",
            cores_per_chip=2,
            megacore=True,
            accelerator="tpu-v4-podslice",  # R1, R2
            hbm_bytes_per_chip=32 * GIB,  # S5
            min_gke_version="1.26.1-gke.1500",  # [U] in the facts file
            single_host={"2x2x1": "ct4p-hightpu-4t"},  # S8
            multi_host_machine_type="ct4p-hightpu-4t",
            # https://cloud.google.com/tpu/docs/v4 (system architecture: 240 vCPUs, 407 GB per host); not in
            # gke-tpu-facts.md, so unverified offline
            host_resources={"ct4p-hightpu-4t": (240, 407)},
            multi_host_chips_per_vm=4,
            multi_host_topologies=(
                "2x2x2",
                "2x2x4",
                "2x4x4",
                "4x4x4",
                "4x4x8",
                "4x8x8",
                "8x8x8",
                "8x8x12",
                "8x8x16",
                "8x16x16",
            ),  # R1 default topologies
            placement=COMPACT_TOPOLOGY,
            zones=("us-central2-b",),  # ZONES_SOURCE, North America
            list_price=ChipPrice(on_demand=3.22, spot=0.97),
        ),
        Generation(
            name="v5e",
            cores_per_chip=1,
            megacore=False,
            accelerator="tpu-v5-lite-podslice",  # R1, R2, R3
            hbm_bytes_per_chip=16 * GB,  # S3
            min_gke_version="1.27.2-gke.2100",  # [U]
            # S3: serving types v5litepod-1/4/8 = ct5lp-hightpu-1t/4t/8t; S12: 1x1 = ct5lp-hightpu-1t
            single_host={"1x1": "ct5lp-hightpu-1t", "2x2": "ct5lp-hightpu-4t", "2x4": "ct5lp-hightpu-8t"},
            multi_host_machine_type="ct5lp-hightpu-4t",
            # S3 (gke-tpu-facts.md, v5e VM types)
            host_resources={
                "ct5lp-hightpu-1t": (24, 48),
                "ct5lp-hightpu-4t": (112, 192),
                "ct5lp-hightpu-8t": (224, 384),
            },
            multi_host_chips_per_vm=4,  # GKE multi-host v5e pools use 4-chip VMs: nodes = chips / 4 (R1, R3)
            multi_host_topologies=("2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
            placement=COMPACT_TOPOLOGY,
            zones=("us-central1-a", "us-south1-a", "us-west1-c", "us-west4-a", "europe-west4-b"),  # ZONES_SOURCE
            single_tenant_zones={"us-east5-a": (), "us-east5-b": (), "us-east5-c": ()},
            list_price=ChipPrice(on_demand=1.20, spot=0.48),
            # https://cloud.google.com/tpu/docs/v5e (key specifications): "Per-host NIC configuration 2 x 100 Gbps
            # NIC", "Chips per host 8": 200 / 8 Gbps per chip
            dcn_gbps_per_chip=200 / 8,
        ),
        Generation(
            name="v5p",
            cores_per_chip=2,
            megacore=True,
            accelerator="tpu-v5p-slice",  # R1, R2
            hbm_bytes_per_chip=95 * GIB,  # S4
            min_gke_version="1.28.3-gke.1024000",  # [U]
            single_host={"2x2x1": "ct5p-hightpu-4t"},  # S4: 4 chips, 1 host
            multi_host_machine_type="ct5p-hightpu-4t",
            host_resources={"ct5p-hightpu-4t": (208, 448)},  # S4 (gke-tpu-facts.md: 4-chip VM, 208 vCPU / 448 GB)
            multi_host_chips_per_vm=4,
            multi_host_topologies=(
                "2x2x2",
                "2x2x4",
                "2x4x4",
                "4x4x4",
                "4x4x8",
                "4x8x8",
                "8x8x8",
                "8x8x16",
                "8x16x16",
                "16x16x16",
                "16x16x24",
            ),  # S4 "Hosts" column, plus 2x2x4 from R1
            placement=COMPACT_TOPOLOGY,
            zones=("us-central1-a", "us-east5-a", "europe-west4-b"),  # ZONES_SOURCE
            single_tenant_zones={"us-east5-b": (), "us-east5-c": (), "us-south1-a": ()},
            list_price=ChipPrice(on_demand=4.20, spot=1.89),
            # https://cloud.google.com/tpu/docs/v5p (key specifications): "Data center network (DCN) bandwidth per
            # chip (Gbps) 50"
            dcn_gbps_per_chip=50,
        ),
        Generation(
            name="v6e",
            cores_per_chip=1,
            megacore=False,
            accelerator="tpu-v6e-slice",  # R1, R2, R3
            hbm_bytes_per_chip=32 * GB,  # S2
            min_gke_version="1.31.2-gke.1115000",  # S10
            single_host={"1x1": "ct6e-standard-1t", "2x2": "ct6e-standard-4t", "2x4": "ct6e-standard-8t"},
            multi_host_machine_type="ct6e-standard-4t",
            # S2 (gke-tpu-facts.md, v6e VM types)
            host_resources={
                "ct6e-standard-1t": (44, 176),
                "ct6e-standard-4t": (180, 720),
                "ct6e-standard-8t": (180, 1440),
            },
            multi_host_chips_per_vm=4,
            # S2: "2x4 on 2 VMs is only supported when using the GKE API"; 16x16 from R1
            multi_host_topologies=("2x4", "4x4", "4x8", "8x8", "8x16", "16x16"),
            placement=COMPACT_TOPOLOGY,
            zones=(
                "us-central1-b",
                "us-east1-d",
                "us-east5-a",
                "us-east5-b",
                "us-south1-ai1b",
                "europe-west4-a",
                "asia-northeast1-b",
                "southamerica-east1-c",
            ),  # ZONES_SOURCE
            single_tenant_zones={"us-east5-c": (), "us-east4-a": (), "us-east4-b": (), "us-west1-c": ("spot",)},
            list_price=ChipPrice(on_demand=2.70, spot=1.08),
            # https://cloud.google.com/tpu/docs/v6e (system architecture): "Per-host NIC configuration 4 x 200 Gbps
            # NIC", "Chips per host 8": 800 / 8 Gbps per chip
            dcn_gbps_per_chip=800 / 8,
        ),
        Generation(
            name="tpu7x",  # Ironwood
            accelerator="tpu7x",  # R1 gke_accelerator='tpu7x'
            hbm_bytes_per_chip=192 * GIB,  # S6
            min_gke_version="1.34.0-gke.2201000",  # S7: Standard 1.34.0-gke.2201000 and later
            # R1: tpu7x-standard-1t for 1x1x1, tpu7x-standard-4t (4 chips per VM, also S7) for 2x2x1;
            # xpk #825: the one-VM 2x2x1 slice needs no workload policy.
            single_host={"1x1x1": "tpu7x-standard-1t", "2x2x1": "tpu7x-standard-4t"},
            multi_host_machine_type="tpu7x-standard-4t",  # R1; cluster-toolkit examples/gke-tpu-7x
            host_resources={"tpu7x-standard-4t": (224, 960)},  # S6 (gke-tpu-facts.md: 4-chip VM, 224 vCPU / 960 GB)
            multi_host_chips_per_vm=4,  # S7: "Each Ironwood (TPU7x) VM contains four chips"
            multi_host_topologies=_cube_topologies(max_cubes=144),  # R1 generate_tpu_topologies(max_cubes=144)
            cores_per_chip=2,  # S6: 2 TensorCores per chip
            megacore=False,  # ChipVersion TPU_7X: no megacore, each TensorCore is a JAX device
            placement=WORKLOAD_POLICY,  # S7; R1 tpu_type_requires_workload_policy=True; cluster-toolkit
            zones=(
                "us-central1-ai1a",
                "us-central1-c",
            ),  # ZONES_SOURCE (docs.cloud.google.com/tpu/docs/regions-zones.md.txt), North America
            list_price=None,
            price_note="no public list price: TPU7x is sold through the Google Cloud account team (S6)",
            # cluster-toolkit@v1.95.0 examples/gke-tpu-7x/gke-tpu-7x.yaml and the flex-start variant:
            # disk_type: hyperdisk-balanced for tpu7x-standard-4t pools
            boot_disk_type="hyperdisk-balanced",
        ),
    )
}


class CatalogError(ValueError):
    """A lookup the catalog cannot answer; the message says what is allowed."""


def topology_chips(topology: str) -> int:
    dims = parse_topology(topology)
    return reduce(lambda a, b: a * b, dims, 1)


def parse_topology(topology: str) -> tuple[int, ...]:
    parts = topology.split("x")
    if len(parts) not in (2, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise CatalogError(f"topology {topology!r} is not of the form AxB or AxBxC")
    return tuple(int(p) for p in parts)


def generation(name: str) -> Generation:
    try:
        return GENERATIONS[name]
    except KeyError:
        raise CatalogError(f"unknown TPU generation {name!r}; allowed: {', '.join(GENERATIONS)}") from None


def topologies(gen: Generation) -> list[str]:
    """Every topology of a generation, smallest first, each once."""
    seen = dict.fromkeys([*gen.single_host, *gen.multi_host_topologies])
    return sorted(seen, key=lambda t: (topology_chips(t), t))


def shapes(gen: Generation, topology: str) -> list[SliceShape]:
    """The machine types a topology can run on; the first is the default (single-host when possible)."""
    found: list[SliceShape] = []
    if topology in gen.single_host:
        found.append(SliceShape(gen, topology, gen.single_host[topology], topology_chips(topology)))
    if topology in gen.multi_host_topologies:
        found.append(SliceShape(gen, topology, gen.multi_host_machine_type, gen.multi_host_chips_per_vm))
    if not found:
        raise CatalogError(f"topology {topology!r} is not valid for {gen.name}; allowed: {allowed_topologies(gen)}")
    return found


def allowed_topologies(gen: Generation, shown: int = 16) -> str:
    """The topologies of a generation for an error message, smallest first; long lists end with a count."""
    every = topologies(gen)
    if len(every) <= shown:
        return ", ".join(every)
    return f"{', '.join(every[:shown])}, ... ({len(every)} in all; see docs/configuration.md, tpuPools[].topology)"


def slice_shape(tpu: str, topology: str, machine_type: str | None = None) -> SliceShape:
    """Resolve a pool's (generation, topology, optional machine type) to one slice shape."""
    options = shapes(generation(tpu), topology)
    if machine_type is None:
        return options[0]
    for shape in options:
        if shape.machine_type == machine_type:
            return shape
    raise CatalogError(
        f"machine type {machine_type!r} does not fit {tpu} {topology}; "
        f"allowed: {', '.join(s.machine_type for s in options)}"
    )


def machine_types(gen: Generation) -> list[str]:
    return sorted({*gen.single_host.values(), gen.multi_host_machine_type})


def zone_warning(tpu: str, zone: str, capacities: tuple[str, ...] = (), confirmed: bool = False) -> str | None:
    """Why `zone` may not serve a pool of generation `tpu` taking `capacities` (None when the source lists the zone, or
    marks it single-tenant and the pool can use reserved capacity or the zone's exception): the source, what it
    lists and how to check, since the list changes. `confirmed` (tpuPools[].zoneConfirmed) acknowledges a zone the
    source does not list; it does not make a single-tenant zone serve on-demand or Spot capacity."""
    gen = generation(tpu)
    if zone in gen.zones:
        return None
    if zone in gen.single_tenant_zones:
        return _single_tenant_warning(gen, zone, capacities)
    if confirmed:
        return None
    listed = ", ".join(gen.zones) or "none"
    return (
        f"{gen.name} is not listed in {zone} by {gen.zones_source} (read {ZONES_READ}; it lists {listed}); the list "
        f"changes, so confirm before `up`, e.g. gcloud compute tpus accelerator-types list --zone={zone}, then set "
        "zoneConfirmed: true on the pool"
    )


def _single_tenant_warning(gen: Generation, zone: str, capacities: tuple[str, ...]) -> str | None:
    """A single-tenant zone serves reserved capacity (and its named exception); a pool taking neither gets no nodes."""
    allowed = ("reservation", *gen.single_tenant_zones[zone])
    if any(c in allowed for c in capacities):
        return None
    taking = ", ".join(capacities) or "on-demand"
    return (
        f"{gen.name} in {zone} is single-tenant (reserved capacity) only per {gen.zones_source} (read {ZONES_READ}"
        f"{'; except ' + ', '.join(allowed[1:]) if allowed[1:] else ''}): a pool taking {taking} gets no nodes "
        f"there; consume a reservation (capacity: reservation, or a capacity list that names it) or use a zone it "
        f"lists for everyone: {', '.join(gen.zones)}"
    )


def version_tuple(version: str) -> tuple[int, ...]:
    """'1.31.2-gke.1115000' -> (1, 31, 2, 1115000), for ordering GKE versions."""
    base, _, gke = version.partition("-gke.")
    parts = [int(p) for p in base.split(".") if p.isdigit()]
    return (*parts, *([int(gke)] if gke.isdigit() else []))


# ---- sizing -------------------------------------------------------------------------------------------


def weight_bytes(params_billion: float, weight_bits: int) -> int:
    """Bytes the weights alone take: N billion parameters at 16 bits is 2N GB (the Saxml tutorial's rule)."""
    return math.ceil(params_billion * 1e9 * weight_bits / 8)


def chips_needed(params_billion: float, weight_bits: int, gen: Generation) -> int:
    """Chips whose HBM holds the weights. 175B at 16 bits on v5e (16 GB chips) needs 22 (21.9)."""
    return math.ceil(weight_bytes(params_billion, weight_bits) / gen.hbm_bytes_per_chip)


def smallest_fitting_shape(params_billion: float, weight_bits: int, tpu: str) -> SliceShape | None:
    """The smallest valid topology of a generation whose HBM holds the weights, or None if none does."""
    gen = generation(tpu)
    need = chips_needed(params_billion, weight_bits, gen)
    for topo in topologies(gen):
        if topology_chips(topo) >= need:
            return shapes(gen, topo)[0]
    return None


def fits(params_billion: float, weight_bits: int, shape: SliceShape) -> bool:
    return weight_bytes(params_billion, weight_bits) <= shape.hbm_bytes


def sizing_warning(params_billion: float, weight_bits: int, shape: SliceShape, where: str) -> str | None:
    """A warning text when the weights do not fit one slice of `shape`, with the smallest topology that does."""
    if fits(params_billion, weight_bits, shape):
        return None
    need_gb = weight_bytes(params_billion, weight_bits) / GB
    have_gb = shape.hbm_bytes / GB
    best = smallest_fitting_shape(params_billion, weight_bits, shape.generation.name)
    hint = (
        f"the smallest {shape.generation.name} topology that holds them is {best.topology} ({best.chips} chips)"
        if best
        else f"no single {shape.generation.name} slice holds them"
    )
    return (
        f"{where}: a {params_billion:g}B model at {weight_bits}-bit needs about {need_gb:.0f} GB of HBM for its "
        f"weights, but one {shape.generation.name} {shape.topology} slice has {have_gb:.0f} GB; {hint}"
    )
