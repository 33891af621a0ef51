"""`make maintenance STACK=<stack>`: upcoming host maintenance on each TPU slice of the stack.

Where the answer comes from (scripts/maintenance.py calls gcloud through one runner, as tooling/operations/preflight.py does):
- `gcloud compute instances list --filter=labels.goog-k8s-cluster-name=<cluster>` returns compute v1 `Instance`s;
  `resourceStatus.upcomingMaintenance` is an `UpcomingMaintenance` {type SCHEDULED/UNSCHEDULED/..., maintenanceStatus
  PENDING/ONGOING, windowStartTime, windowEndTime, latestWindowStartTime, canReschedule} (google-api-python-client
  2.202.0 googleapiclient/discovery_cache/documents/compute.v1.json; the same fields the Cloud TPU page lists:
  https://cloud.google.com/tpu/docs/view-maintenance-notifications).
- GKE labels each node VM with its cluster and node pool, `goog-k8s-cluster-name` and `goog-k8s-node-pool-name`
  (https://cloud.google.com/kubernetes-engine/docs/how-to/cost-allocations: "Filter cluster resources by node pool").
- A host event on one VM of a TPU slice interrupts the whole slice, and host events bypass GKE maintenance policies
  and exclusions (https://cloud.google.com/kubernetes-engine/docs/concepts/handle-disruption-gpu-tpu): so a slice is
  listed with the earliest window of any of its hosts. GKE also puts the time on the node as the label
  `cloud.google.com/scheduled-maintenance-time` (Unix seconds; same page), for `kubectl get nodes -L`.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stacks.stack_config import StackConfig

CLUSTER_LABEL = "goog-k8s-cluster-name"
NODE_POOL_LABEL = "goog-k8s-node-pool-name"
NODE_LABEL = "cloud.google.com/scheduled-maintenance-time"  # the same time on the Kubernetes node
SOON = datetime.timedelta(days=1)  # the alert's horizon (issue 27: maintenance on a serving slice within a day)


@dataclass(frozen=True)
class Window:
    host: str
    type: str
    status: str
    start: str
    end: str
    latest_start: str
    can_reschedule: bool


@dataclass(frozen=True)
class Slice:
    pool: str  # the tpuPools entry, or "" for a node pool no plan names (a ComputeClass pool's)
    node_pool: str
    multi_host: bool  # one slice: maintenance on any host stops it whole
    hosts: list[str]
    windows: list[Window]

    @property
    def first(self) -> Window | None:
        return min(self.windows, key=lambda w: w.start) if self.windows else None


def instances_command(cfg: StackConfig) -> list[str]:
    return [
        "compute",
        "instances",
        "list",
        f"--project={cfg.gcp_project}",
        f"--filter=labels.{CLUSTER_LABEL}={cfg.cluster_name}",
    ]


def _window(instance: dict[str, Any]) -> Window | None:
    upcoming = (instance.get("resourceStatus") or {}).get("upcomingMaintenance")
    if not upcoming:
        return None
    return Window(
        host=instance.get("name", ""),
        type=upcoming.get("type", "UNKNOWN_TYPE"),
        status=upcoming.get("maintenanceStatus", "UNKNOWN"),
        start=upcoming.get("windowStartTime", ""),
        end=upcoming.get("windowEndTime", ""),
        latest_start=upcoming.get("latestWindowStartTime", ""),
        can_reschedule=bool(upcoming.get("canReschedule", False)),
    )


def slices(cfg: StackConfig, instances: list[dict[str, Any]]) -> list[Slice]:
    """Every node pool of every TPU pool (in plan order, with no hosts when scaled to zero), then any other
    node pool of the cluster on a TPU machine type (the node pools GKE creates for a ComputeClass)."""
    by_pool: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for instance in instances:
        by_pool[(instance.get("labels") or {}).get(NODE_POOL_LABEL, "")].append(instance)
    out = []
    planned = set()
    for plan in cfg.pools:
        for node_pool in plan.node_pool_names:
            planned.add(node_pool)
            out.append(_slice(plan.name, node_pool, by_pool.get(node_pool, []), plan.shape.multi_host))
    tpu_machines = {plan.shape.machine_type for plan in cfg.pools}
    for node_pool, members in sorted(by_pool.items()):
        machines = {str(m.get("machineType", "")).rsplit("/", 1)[-1] for m in members}
        if node_pool not in planned and machines & tpu_machines:
            out.append(_slice("", node_pool, members, False))
    return out


def _slice(pool: str, node_pool: str, members: list[dict[str, Any]], multi_host: bool) -> Slice:
    windows = [w for w in (_window(m) for m in members) if w is not None]
    return Slice(pool, node_pool, multi_host, sorted(m.get("name", "") for m in members), windows)


def _parse(text: str) -> datetime.datetime | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def lines(found: list[Slice], now: datetime.datetime) -> list[str]:
    out = []
    for item in found:
        name = f"pool {item.pool} node pool {item.node_pool}" if item.pool else f"node pool {item.node_pool}"
        first = item.first
        if first is None:
            state = "no hosts (scaled to zero)" if not item.hosts else "no maintenance scheduled"
            out.append(f"{name}: {len(item.hosts)} host(s), {state}")
            continue
        start = _parse(first.start)
        soon = start is not None and start - now <= SOON
        out.append(
            f"{name}: {len(item.hosts)} host(s); {'WITHIN A DAY: ' if soon else ''}{first.type} maintenance "
            f"{first.status} {first.start} to {first.end} (latest start {first.latest_start or '-'}) on "
            f"{len(item.windows)} host(s): {', '.join(w.host for w in item.windows)}"
            + ("; the whole slice stops" if item.multi_host else "")
            + ("; can be started early: gcloud compute instances perform-maintenance" if first.can_reschedule else "")
        )
    return out


Runner = Callable[[list[str]], Any]
