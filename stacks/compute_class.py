"""Capacity that falls back: a TPU pool whose `capacity` is a list becomes a GKE custom ComputeClass.

GKE tries the class's priorities in order when it creates nodes for pending pods (node pool auto-creation) and,
with active migration, moves workloads back to a higher priority when it has capacity again. The stack creates
no node pools for such a pool: GKE creates and removes them (auto-created node pools scale to zero and are
deleted when empty). Every TPU fact in a priority comes from the catalog's slice shape; the reservation from the
pool.

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

from typing import Any

from stacks.naming import POOL_LABEL

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


def priority(plan: Any, capacity: str, policy_name: Any | None) -> dict[str, Any]:
    """One priority: the pool's TPU slice shape on one capacity."""
    shape = plan.shape
    rule: dict[str, Any] = {
        "machineType": shape.machine_type,  # C2
        "tpu": {"type": shape.generation.accelerator, "count": shape.chips_per_host, "topology": shape.topology},
    }
    if policy_name is not None:  # a multi-host TPU7x slice: its workload policy (C1 placement.policyName)
        rule["placement"] = {"policyName": policy_name}
    if capacity == "spot":
        rule["spot"] = True
    elif capacity == "on-demand":
        rule["spot"] = False
    elif capacity == "reservation":
        rule["spot"] = False
        rule["reservations"] = {
            "affinity": "Specific",
            "specific": [split_reservation(plan.config.reservation)],
        }
    elif capacity == "flex-start":
        rule["flexStart"] = {"enabled": True}  # C2; flex-start VMs never consume a reservation
    else:  # pragma: no cover - the config model allows nothing else
        raise ValueError(capacity)
    return rule


def compute_class(plan: Any, *, node_service_account: Any, policy_name: Any | None = None) -> dict[str, Any]:
    """The ComputeClass object of a pool whose capacity is a list, in priority order."""
    name = class_name(plan.name)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": {POOL_LABEL: plan.name}},
        "spec": {
            "description": f"tpu-serving pool {plan.name}: {' > '.join(plan.capacities)}",
            "priorities": [priority(plan, c, policy_name) for c in plan.capacities],
            "priorityDefaults": {"location": {"zones": [plan.config.zone]}},
            # GKE creates the node pools; the class alone enables it (C4, 1.33.3-gke.1136000 and later).
            "nodePoolAutoCreation": {"enabled": True},
            # Move workloads back to a higher priority (e.g. off spot, back into the reservation) when it has room.
            "activeMigration": {"optimizeRulePriority": True},
            "nodePoolConfig": {
                "serviceAccount": node_service_account,  # the stack's node identity, never the default one
                "nodeLabels": {POOL_LABEL: plan.name},
            },
        },
    }
