"""A configured TPU pool resolved against the catalog: what its node pools and the workloads on it are built from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.model.config_model import TpuPoolConfig
from stacks.serving import compute_class


@dataclass(frozen=True)
class PoolPlan:
    """A configured TPU pool resolved against the catalog: everything its node pools and workloads need."""

    config: TpuPoolConfig
    shape: catalog.SliceShape
    node_pool_names: tuple[str, ...]
    protect: bool
    """Pulumi protection of its node pools, workload policy and ComputeClass: the environment profile's."""
    streaming: bool = False
    """GKE image streaming on its nodes: `cluster.images.streaming` (its node pools' gcfsConfig, or the cluster's
    default for the node pools GKE creates for its ComputeClass)."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def slices(self) -> int:
        return self.config.slices

    @property
    def total_chips(self) -> int:
        return self.shape.chips * self.slices

    @property
    def capacity_hosts(self) -> int:
        """TPU hosts (nodes) the pool reaches at most: every slice whole, or the single-host autoscaling maximum."""
        return self.max_nodes_per_node_pool * (self.slices if self.shape.multi_host else 1)

    @property
    def capacities(self) -> tuple[str, ...]:
        """The pool's capacity types in priority order (one for a pool of node pools)."""
        capacity = self.config.capacity
        return tuple(capacity) if isinstance(capacity, list) else (capacity,)

    @property
    def compute_class(self) -> str | None:
        """The ComputeClass of a pool whose capacity is a list; None for a pool of node pools."""
        return compute_class.class_name(self.name) if len(self.capacities) > 1 else None

    @property
    def pool_selector(self) -> dict[str, str]:
        """The label only this pool's nodes carry. A pool of its own node pools: `tpu-serving/pool`, set in their
        `node_config.labels` (components/tpu_pool.py). A capacity-list pool: its own ComputeClass (one per pool,
        stacks/serving/compute_class.py), the selector GKE creates node pools for (compute_class C3); GKE documents no
        auto-creation for a pod that also selects a custom label only the class's nodeLabels would set, so such
        pods select the class alone. Without this a pod would land on any pool of the same slice shape, and the
        cluster autoscaler could grow either pool for it."""
        if self.compute_class:
            return {compute_class.COMPUTE_CLASS_LABEL: self.compute_class}
        return {naming.POOL_LABEL: self.name}

    @property
    def node_selector(self) -> dict[str, str]:
        """What a TPU pod of this pool selects: the pool itself (pool_selector) and the slice shape."""
        return {**self.pool_selector, **self.shape.node_selector}

    def tolerations(self) -> list[dict[str, str]]:
        """What a TPU pod of this pool tolerates: the TPU taint, and its ComputeClass's taint."""
        out = [dict(catalog.TPU_TOLERATION)]
        if self.compute_class:
            out.append(compute_class.toleration(self.compute_class))
        return out

    def placement(self) -> dict[str, Any]:
        """The pod spec fields that put a TPU pod on this pool and nowhere else: `nodeSelector` and `tolerations`.
        Every workload type's TPU pods take them from here (WorkloadPlan.tpu_placement)."""
        return {"nodeSelector": self.node_selector, "tolerations": self.tolerations()}

    @property
    def image_streaming(self) -> bool:
        """GKE image streaming on this pool's nodes (issue 26); read by the time-to-serve estimate. Only images in
        Artifact Registry stream (stacks/facts/images.py serves the pinned public ones from there)."""
        return self.streaming

    @property
    def preloaded_images(self) -> tuple[str, ...]:
        """Images already on the pool's nodes (a secondary boot disk), pulled by no pod; read by the estimate."""
        return ()

    @property
    def max_nodes_per_node_pool(self) -> int:
        """Nodes one node pool can reach: the whole slice (multi-host) or the autoscaling maximum."""
        if self.shape.multi_host:
            return self.shape.hosts
        return self.config.autoscaling.max_nodes if self.config.autoscaling else 1
