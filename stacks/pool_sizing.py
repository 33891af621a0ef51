"""How many nodes each node pool of a TPU pool gets, and whether GKE's autoscaler owns that number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


def sizing(plan: Any, paused: bool = False) -> Sizing:
    """Node counts of each node pool of a TPU pool.

    Single-host pools have a fixed `node_count` or the configured autoscaling range. Multi-host slices are atomic:
    GKE creates, repairs and removes a slice as a whole and does not resize it, so their size always goes through
    the autoscaler, as 0 or the whole slice: a fixed slice is {min: hosts, max: hosts}. Pausing lowers every
    minimum to 0 (the idle slice is then removed whole) and keeps every definition; unpausing raises the minimum
    again, an in-place update, and the restored workloads bring the slices back.
    Flex-start pools always start empty and are autoscaled from 0.
    """
    auto = plan.config.autoscaling
    hosts = plan.shape.hosts
    if plan.config.capacity == "flex-start" and auto is None:
        return Sizing(None, 0, plan.max_nodes_per_node_pool, 0)
    if auto is not None:
        low = 0 if paused else auto.min_nodes
        return Sizing(None, low, auto.max_nodes, low)
    if plan.shape.multi_host:
        low = 0 if paused else hosts
        return Sizing(None, low, hosts, low)
    return Sizing(0 if paused else hosts, None, None, None)
