"""Estimated hourly cost of a stack from public list prices: an estimate to compare configurations, not a bill.

Prices are USD per hour: on-demand and Spot list prices per TPU chip (from each generation's catalog entry), the
GKE Standard cluster fee, and the CPU machine types the system pool uses. Committed-use and reservation discounts, flex-start pricing, disks,
network, load balancers, storage and logging are not included; reservation and flex-start pools are priced
at on-demand rates (an upper bound).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from stacks.facts import catalog

if TYPE_CHECKING:
    from stacks.serving.pool_plan import PoolPlan
    from stacks.serving.workload_plan import WorkloadPlan
    from stacks.stack_config import StackConfig

PRICE_TABLE_DATE = catalog.PRICE_TABLE_DATE
# Source: https://cloud.google.com/compute/all-pricing (per VM-hour in US regions as of the date above; not
# re-verified from this offline environment, check the page before relying on a number). TPU chip prices are in
# the catalog.
# Regions where the table above is the published price; elsewhere the same numbers are used with a warning.
PRICED_REGIONS = ("us-central1", "us-central2", "us-east1", "us-east5", "us-south1", "us-west1", "us-west4")
GKE_CLUSTER_FEE = 0.10  # per cluster-hour, Standard (the free tier credit is not applied)
CPU_MACHINE_HOUR: dict[str, float] = {
    "e2-standard-2": 0.067,
    "e2-standard-4": 0.134,
    "e2-standard-8": 0.268,
    "e2-standard-16": 0.536,
    "n2-standard-4": 0.194,
    "n2-standard-8": 0.388,
    "n2-standard-32": 1.554,
    "n2-highmem-32": 2.096,
    "n2-standard-48": 2.331,
    "n2-standard-64": 3.108,
    "n4-standard-4": 0.190,
    "n4-standard-8": 0.380,
}


@dataclass
class Line:
    item: str
    baseline: float  # USD/hour with every autoscaled pool at its minimum
    peak: float  # USD/hour with every autoscaled pool at its maximum
    detail: str
    peak_by_priority: dict[str, float] = field(default_factory=dict)  # a capacity list: the peak on each capacity


@dataclass
class Estimate:
    lines: list[Line] = field(default_factory=list)
    workloads: dict[str, float] = field(default_factory=dict)  # peak USD/hour of the chips each workload uses
    warnings: list[str] = field(default_factory=list)  # a gap in the price table: the total leaves something out
    # about the estimate, not the stack (list prices of another region, a generation sold without a list price):
    # shown beside the estimate, never a warning, so a valid stack passes `render --strict`
    notes: list[str] = field(default_factory=list)
    paused: bool = False

    @property
    def baseline(self) -> float:
        return round(sum(line.baseline for line in self.lines), 2)

    @property
    def peak(self) -> float:
        return round(sum(line.peak for line in self.lines), 2)


def chip_price(generation: str, capacity: str) -> float | None:
    """USD per chip-hour of a generation at a capacity, or None when the generation has no public list price."""
    price = catalog.generation(generation).list_price
    if price is None:
        return None
    return price.spot if capacity == "spot" else price.on_demand


def workload_chip_price(plan: WorkloadPlan) -> float | None:
    """The list price of a chip-hour of the workload's pool (a capacity list at its first capacity)."""
    capacity = plan.pool.config.capacity
    return chip_price(plan.shape.generation.name, capacity if isinstance(capacity, str) else capacity[0])


def _price_text(price: float | None) -> str:
    return f"${price:.2f}/chip-hour" if price is not None else "no list price"


def pool_nodes(plan: PoolPlan, paused: bool = False) -> tuple[int, int]:
    """(minimum, maximum) nodes of all node pools of a TPU pool."""
    from stacks.serving.pool_sizing import sizing

    if plan.compute_class:  # GKE creates the node pools for pending pods and removes them when empty
        return 0, plan.capacity_hosts
    low = high = 0
    for index in range(len(plan.node_pool_names)):  # warm slices keep a higher minimum (pool_sizing.sizing)
        size = sizing(plan, paused, index)
        low += size.node_count if size.node_count is not None else size.min_nodes or 0
        high += size.node_count if size.node_count is not None else size.max_nodes or 0
    return low, high


def _warm_text(plan: PoolPlan, paused: bool) -> str:
    """The pool's warm slices, which its baseline pays for while idle (tpuPools[].warmSlices)."""
    warm = plan.config.warm_slices
    if not warm or paused:
        return ""
    return f"; baseline keeps {warm} warm slice{'s' if warm > 1 else ''} ({warm * plan.shape.hosts} nodes) idle"


def estimate(cfg: StackConfig, *, paused: bool | None = None) -> Estimate:
    paused = cfg.paused if paused is None else paused
    out = Estimate(paused=paused)
    if cfg.region not in PRICED_REGIONS:
        out.notes.append(
            f"no list prices for region {cfg.region!r} in the table of {PRICE_TABLE_DATE}; US prices used as the default"
        )
    out.lines.append(Line("GKE cluster fee", GKE_CLUSTER_FEE, GKE_CLUSTER_FEE, "Standard cluster"))
    system = cfg.cluster.system_pool
    machine = CPU_MACHINE_HOUR.get(system.machine_type)
    if machine is None:
        out.warnings.append(f"no price for system pool machine type {system.machine_type!r}; counted as 0")
        machine = 0.0
    # minNodes/maxNodes are totals over the pool's zones (stacks.serving.pool_sizing.system_pool_sizing)
    out.lines.append(
        Line(
            "system pool",
            round(machine * system.min_nodes, 4),
            round(machine * system.max_nodes, 4),
            f"{system.machine_type} x {system.min_nodes}-{system.max_nodes} nodes in total",
        )
    )
    for plan in cfg.pools:
        gen = plan.shape.generation
        # A capacity list is priced at its first priority, the one GKE tries first; the detail prices them all.
        assumed = plan.capacities[0]
        listed = chip_price(gen.name, assumed)
        if listed is None:
            out.notes.append(f"TPU pool {plan.name}: {gen.name} has {gen.price_note}; counted as 0")
        price = listed or 0.0
        low, high = (0, 0) if paused else pool_nodes(plan)  # paused: nothing left running once idle
        chips_per_node = plan.shape.chips_per_host
        priorities = ""
        by_priority: dict[str, float] = {}
        if plan.compute_class:
            each = ", ".join(f"{c} {_price_text(chip_price(gen.name, c))}" for c in plan.capacities)
            priorities = f"; ComputeClass {plan.compute_class}, priced at its first priority {assumed} ({each})"
            by_priority = {
                c: round(high * chips_per_node * (chip_price(gen.name, c) or 0.0), 4) for c in plan.capacities
            }
        out.lines.append(
            Line(
                f"TPU pool {plan.name}",
                round(low * chips_per_node * price, 4),
                round(high * chips_per_node * price, 4),
                f"{gen.name} {plan.shape.topology} {assumed}, {low}-{high} nodes x {chips_per_node} chips x "
                f"{_price_text(listed)}{priorities}{_warm_text(plan, paused)}" + (" (paused)" if paused else ""),
                by_priority,
            )
        )
    for workload in cfg.workloads:
        machine = getattr(workload, "head_machine", None)
        if machine is not None:  # a PathwaysJob head's CPU node pool: 0 nodes, 1 while the job runs
            price = CPU_MACHINE_HOUR[machine.name]
            out.lines.append(
                Line(
                    f"Pathways head pool {workload.name}",
                    0.0,
                    0.0 if paused else price,
                    f"{machine.name} x 0-1" + (" (paused)" if paused else ""),
                )
            )
    for workload in cfg.workloads:
        pool = workload.pool
        price = chip_price(pool.shape.generation.name, pool.capacities[0]) or 0.0
        out.workloads[workload.name] = 0.0 if paused else round(workload.chips_at_peak * price, 4)
    return out


def as_output(est: Estimate) -> dict[str, Any]:
    """The `estimatedHourlyCost` stack output."""
    return {
        "note": f"estimate from public list prices of {PRICE_TABLE_DATE}, USD per hour; not a bill",
        "paused": est.paused,
        "items": {
            line.item: {
                "baseline": line.baseline,
                "peak": line.peak,
                "detail": line.detail,
                **({"peakByPriority": line.peak_by_priority} if line.peak_by_priority else {}),
            }
            for line in est.lines
        },
        "workloads": est.workloads,
        "total": {"baseline": est.baseline, "peak": est.peak},
        "warnings": est.warnings,
        "notes": est.notes,
    }


def summary_lines(est: Estimate) -> list[str]:
    lines = [
        f"Estimate from public list prices of {PRICE_TABLE_DATE} (USD/hour; baseline = autoscaled pools at their "
        "minimum, peak = at their maximum)" + (". The stack is paused: TPU pools at zero." if est.paused else "."),
        "",
        "| item | baseline | peak | detail |",
        "|---|---|---|---|",
    ]
    lines += [f"| {line.item} | {line.baseline:.2f} | {line.peak:.2f} | {line.detail} |" for line in est.lines]
    lines.append(f"| **total** | **{est.baseline:.2f}** | **{est.peak:.2f}** | |")
    if est.workloads:
        lines += ["", "| workload | chips at peak, USD/hour |", "|---|---|"]
        lines += [f"| {name} | {value:.2f} |" for name, value in sorted(est.workloads.items())]
    lines += [f"- note: {n}" for n in est.notes]
    lines += [f"- warning: {w}" for w in est.warnings]
    return lines


@dataclass(frozen=True)
class ReleaseStep:
    """One step of a workload's release train (stacks/serving/release.py) and the TPU chips it holds."""

    step: str
    weight: int  # the candidate's share of the route
    current_chips: int
    candidate_chips: int
    extra_usd_per_hour: float | None  # the candidate set's chips at list price; None: no list price
    gate_chip_hours: float  # the candidate's chips over the gate benchmark's load alone (its minimum)


def release_steps(
    current: WorkloadPlan,
    candidate: WorkloadPlan,
    steps: list[int],
    gate_seconds: int,
    candidate_replicas: Callable[[int], int] | None = None,
) -> list[ReleaseStep]:
    """What each step of a canary (or a blue-green switch, steps [100]) holds: the current release's chips all along,
    the candidate's from its creation (weight 0, the first gate) to the full promotion, after which the old set's are
    released. The candidate's extra cost per hour is its chips at its pool's list price (`workload_chip_price`);
    each step lasts at least its gate's benchmark (`gate_seconds`), plus the servers' start at weight 0 and the
    review of the decision, which only the operator's pace sets. `candidate_replicas(weight)`: the candidate's
    replicas at each weight where they follow it (stacks/serving/release.py candidate_replicas); else its plan's."""
    price = workload_chip_price(candidate)
    cur = current.chips_at_peak

    def held(weight: int) -> ReleaseStep:
        # the candidate's chips at this weight: its replicas follow the weight where `candidate_replicas` says how
        cand = candidate.chips_at_peak
        if candidate_replicas is not None and candidate.chips_per_replica:
            cand = candidate.chips_per_replica * candidate_replicas(weight)
        extra = round(cand * price, 2) if price is not None else None
        return ReleaseStep("", weight, cur, cand, extra, round(cand * gate_seconds / 3600, 2))

    rows = [ReleaseStep("before: the current release alone", 0, cur, 0, 0.0, 0.0)]
    rows.append(replace(held(0), step="candidate created, gate at 0%"))
    rows += [replace(held(w), step=f"step {i + 1}") for i, w in enumerate(steps)]
    # promoted: the candidate's set is the current release, at the workload's replicas (not the canary's size)
    per_replica = candidate.chips_per_replica or 0
    replicas = cur // current.chips_per_replica if current.chips_per_replica else 0
    rows.append(ReleaseStep("promoted: the old set deleted", 100, per_replica * replicas, 0, 0.0, 0.0))
    return rows
