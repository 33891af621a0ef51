"""Capacity that falls back: a TPU pool whose `capacity` is a list becomes a GKE custom ComputeClass.

GKE tries the class's priorities in order when it creates nodes for pending pods (node pool auto-creation) and,
with active migration, moves workloads back to a higher priority when it has capacity again. The stack creates
no node pools for such a pool: GKE creates and removes them (auto-created node pools scale to zero and are
deleted when empty). Every TPU fact in a priority comes from the catalog's slice shape; the reservation from the
pool. The ComputeClass object of a pool (a `PoolPlan`) is built by `stacks.pieces.tpu_pools.compute_class_manifest`, from
the facts here (this module sits below `stacks.serving.pool_plan`, which uses its names and toleration).

Sources (the ComputeClass CRD is not published as a file; its fields are checked against these):
- C1 https://docs.cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass: `cloud.google.com/v1`
  `ComputeClass`; spec.activeMigration.optimizeRulePriority, spec.nodePoolAutoCreation.enabled,
  spec.description, spec.nodePoolConfig.{serviceAccount,nodeLabels}, spec.priorityDefaults.location.zones,
  spec.priorities[].{machineType,spot,placement.policyName,reservations.{affinity: Specific,
  specific[].{name,project}}}.
- C2 GKE's TPU ComputeClass samples (code corpus; ComputeClass `tpu-v6e-2x4`, `tpu-v5p-2x2x1`, ...):
  priorities[].tpu.{type,count,topology} with type = the gke-tpu-accelerator value, count = chips per node,
  priorities[].machineType with tpu, and priorities[].flexStart.enabled.
- C3 https://docs.cloud.google.com/kubernetes-engine/docs/concepts/node-auto-provisioning: GKE labels nodes it
  creates for a ComputeClass `cloud.google.com/compute-class: <name>`, and taints them when pods carry a toleration
  and a node selector for the same label; auto-created node pools have no minimum size (empty pools are removed).
- C4 https://docs.cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes: custom
  ComputeClasses need GKE 1.30.3-gke.1451000; per-class node pool auto-creation (nodePoolAutoCreation) without
  cluster-level node auto-provisioning needs 1.33.3-gke.1136000 (as summarised from that page; below it, enable
  cluster-level node auto-provisioning with TPU resource limits).
"""

from __future__ import annotations

COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"  # C3
API_VERSION = "cloud.google.com/v1"  # C1
KIND = "ComputeClass"
MIN_GKE_VERSION = "1.33.3-gke.1136000"  # C4: nodePoolAutoCreation per class, no cluster-level auto-provisioning


def class_name(pool: str) -> str:
    """The ComputeClass of a pool; GKE reserves names starting with `gke` or `autopilot`, a `tpu-` prefix never is."""
    return f"tpu-{pool}"


def toleration(name: str) -> dict[str, str]:
    """Pods select the class and tolerate its taint, so GKE taints the nodes it creates for it (C3) and nothing
    else lands on them."""
    return {"key": COMPUTE_CLASS_LABEL, "operator": "Equal", "value": name, "effect": "NoSchedule"}


def split_reservation(reservation: str) -> dict[str, str]:
    """`name` (this project's) or `projects/<p>/reservations/<name>` (shared) -> C1 reservations.specific[]."""
    parts = reservation.split("/")
    if len(parts) == 4 and parts[0] == "projects" and parts[2] == "reservations":
        return {"name": parts[3], "project": parts[1]}
    return {"name": reservation}
