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


def sizing(plan: Any) -> Sizing:
    """Fixed pools get their whole size; autoscaled ones (and flex-start, which always starts empty) start at min."""
    auto = plan.config.autoscaling
    if plan.config.capacity == "flex-start" and auto is None:
        return Sizing(None, 0, plan.max_nodes_per_node_pool, 0)
    if auto is not None:
        return Sizing(None, auto.min_nodes, auto.max_nodes, auto.min_nodes)
    return Sizing(plan.shape.hosts, None, None, None)
