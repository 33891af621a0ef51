"""CPU machine types the stack may provision for pods that need a large CPU node, and what GKE leaves of them
for pods (allocatable), so a node pool is sized from what its pod requests rather than from a guess.

GKE reserves part of every Standard node for the kubelet and system daemons
(https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations):
memory 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of the next 8 GiB, 6% of the next 112 GiB and 2% of
anything above 128 GiB, plus 100 MiB for eviction; CPU 6% of the first core, 1% of the next, 0.5% of the next 2
and 0.25% of every core above 4. Pure Python, tested directly.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
MIB = 2**20
# The boot disk of every CPU node pool the stack creates (the system pool, a Pathways head pool).
BOOT_DISK_TYPE = "pd-balanced"

# (upper bound in GiB, share reserved) for each band of memory, in order
_MEMORY_BANDS = ((4, 0.25), (8, 0.20), (16, 0.10), (128, 0.06), (float("inf"), 0.02))
_EVICTION_BYTES = 100 * MIB
# (upper bound in cores, share reserved) for each band of cores, in order
_CPU_BANDS = ((1, 0.06), (2, 0.01), (4, 0.005), (float("inf"), 0.0025))


@dataclass(frozen=True)
class CpuMachine:
    name: str
    vcpus: int
    memory_gib: int

    @property
    def allocatable_cpu(self) -> float:
        return self.vcpus - _reserved(self.vcpus, _CPU_BANDS)

    @property
    def allocatable_memory_bytes(self) -> int:
        reserved = _reserved(self.memory_gib, _MEMORY_BANDS) * GIB + _EVICTION_BYTES
        return int(self.memory_gib * GIB - reserved)

    def fits(self, cpu: float, memory_bytes: int) -> bool:
        return self.allocatable_cpu >= cpu and self.allocatable_memory_bytes >= memory_bytes


def _reserved(total: float, bands: tuple[tuple[float, float], ...]) -> float:
    reserved, low = 0.0, 0.0
    for high, share in bands:
        if total <= low:
            break
        reserved += (min(total, high) - low) * share
        low = high
    return reserved


# Candidates, cheapest first by the list prices in stacks/reports/cost.py (Compute Engine machine type sizes:
# https://cloud.google.com/compute/docs/general-purpose-machines#n2_machine_types).
CANDIDATES = (
    CpuMachine("n2-standard-32", 32, 128),
    CpuMachine("n2-highmem-32", 32, 256),
    CpuMachine("n2-standard-48", 48, 192),
    CpuMachine("n2-standard-64", 64, 256),
)


def smallest_fitting(cpu: float, memory_bytes: int) -> CpuMachine | None:
    """The first candidate whose allocatable CPU and memory hold one pod requesting `cpu` and `memory_bytes`."""
    return next((m for m in CANDIDATES if m.fits(cpu, memory_bytes)), None)
