"""How many nodes each node pool gets (TPU pools and the system pool), and whether GKE's autoscaler owns that number."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stacks.serving.pool_plan import PoolPlan

# GKE spreads a regional cluster's node pools over three zones of its region unless node locations are given.
REGIONAL_CLUSTER_ZONES = 3
ZONE = re.compile(r"[a-z]+-[a-z]+[0-9]+-[a-z]")


def cluster_zones(location: str) -> int:
    """How many zones a node pool of a cluster at `location` (a region or a zone) spans by default."""
    return 1 if ZONE.fullmatch(location) else REGIONAL_CLUSTER_ZONES


@dataclass(frozen=True)
class SystemPoolSizing:
    """The system pool's autoscaling limits for the whole pool, and its node count per zone at creation."""

    total_min: int
    total_max: int
    initial_per_zone: int


def system_pool_sizing(min_nodes: int, max_nodes: int, zones: int) -> SystemPoolSizing:
    """`minNodes`/`maxNodes` are totals over the pool's zones (GKE's `min/max_node_count` are per zone, its
    `total_min/total_max_node_count` for the whole pool). `initial_node_count` is per zone, so creation starts
    with at least one node per zone (the first controllers need one) and the autoscaler keeps the total within
    the limits afterwards."""
    return SystemPoolSizing(min_nodes, max_nodes, max(1, math.ceil(min_nodes / zones)))


@dataclass(frozen=True)
class Sizing:
    """How many nodes one node pool of the plan gets, and who owns that number afterwards."""

    node_count: int | None  # fixed size (None when autoscaled)
    min_nodes: int | None
    max_nodes: int | None
    initial_node_count: int | None

    @property
    def autoscaled(self) -> bool:
        return self.max_nodes is not None


def sizing(plan: PoolPlan, paused: bool = False, index: int = 0) -> Sizing:
    """Node counts of each node pool of a TPU pool.

    Only capacity a reservation guarantees is created whole: `pulumi up` then waits for every TPU host of each
    slice (single-host pools at a fixed `node_count`, multi-host slices at {min: hosts, max: hosts}). On-demand,
    spot and flex-start capacity can stock out, and a node pool create that waits for it fails the whole run, so
    those pools are created empty ({min: 0, max: the slice}) and GKE's cluster autoscaler brings each slice up,
    whole, when the workload's pending pods ask for it. `autoscaling` chooses either behaviour explicitly
    ({minNodes: hosts} creates whole, {minNodes: 0} starts empty).
    Multi-host slices are atomic: GKE creates, repairs and removes a slice as a whole and does not resize it, so
    their size always goes through the autoscaler, as 0 or the whole slice. Pausing lowers every minimum to 0 (an
    idle slice is then removed whole) and keeps every definition; unpausing restores the configured minimum, an
    in-place update, and the restored workloads' pending pods bring the slices back.
    The first `warmSlices` slices (`index` is the slice's) of a multi-host pool keep the whole slice as their
    minimum, so an idle pool still holds them (warm capacity, priced in the cost estimate's baseline). Only a
    reservation's warm slice is created whole by `up`; on on-demand or spot capacity it starts empty like any other
    (a create that waits for capacity fails the run on a stockout, as above): the first pending pods bring it up, and
    the minimum then holds it (tpu_pools.warm_slice_warnings says so).
    """
    size = _sizing(plan, paused)
    if index < plan.config.warm_slices and not paused and size.autoscaled:
        hosts = plan.shape.hosts
        return Sizing(None, hosts, hosts, hosts if plan.config.capacity == "reservation" else 0)
    return size


def _sizing(plan: PoolPlan, paused: bool) -> Sizing:
    """The configured (or capacity's default) size of every node pool of the pool."""
    auto = plan.config.autoscaling
    hosts = plan.shape.hosts
    if auto is not None:
        low = 0 if paused else auto.min_nodes
        return Sizing(None, low, auto.max_nodes, low)
    if plan.config.capacity != "reservation":
        return Sizing(None, 0, plan.max_nodes_per_node_pool, 0)
    if plan.shape.multi_host:
        low = 0 if paused else hosts
        return Sizing(None, low, hosts, low)
    return Sizing(0 if paused else hosts, None, None, None)


def waits_for_capacity(plan: PoolPlan) -> bool:
    """Whether `pulumi up` creates the pool's nodes (and so waits for TPU capacity) rather than leaving them to
    the autoscaler and the workload's pending pods."""
    size = sizing(plan)
    return bool(size.node_count or size.initial_node_count)
