"""The measured time to serve of a real rollout, from `kubectl get pods/nodes/events -o json`: what `make smoke` prints
beside the model's estimate (stacks/reports/time_to_serve.py), so a deploy calibrates the model's assumptions.

Pure: functions of the parsed JSON, tested on recorded output (tests/fixtures/kubectl/time-to-serve/). The fields read, as the
Kubernetes API reference documents them (https://kubernetes.io/docs/reference/kubernetes-api/):
- Pod (core/v1): metadata.creationTimestamp; spec.nodeName; spec.nodeSelector; status.conditions[] PodCondition
  {type: PodScheduled | Ready, status, lastTransitionTime}; status.containerStatuses[].state.running.startedAt;
  status.initContainerStatuses[].state.terminated {startedAt, finishedAt} (init containers run one after the other,
  each to completion, before the app containers start:
  https://kubernetes.io/docs/concepts/workloads/pods/init-containers/);
- Node (core/v1): metadata.creationTimestamp;
- Event (core/v1, what `kubectl get events -o json` lists): involvedObject {kind, name}, reason, firstTimestamp,
  lastTimestamp, eventTime (events recorded through events.k8s.io/v1 carry eventTime and null legacy timestamps).
  The kubelet records reason `Pulled` once an image is there, pulled or already present (kubernetes/kubernetes
  pkg/kubelet/events/event.go PulledImage; pkg/kubelet/images/image_manager.go). The API server keeps events for an
  hour by default (kube-apiserver --event-ttl, default 1h0m0s), so run `make smoke` within the hour of the rollout.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stacks.facts import catalog
from stacks.reports.time_to_serve import Estimate, assumed, duration

MEASURED = ("capacity", "image", "init (compile cache)", "container start", "to Ready", "total")


def timestamp(text: str | None) -> datetime | None:
    """An RFC 3339 time as the API serves it (`2026-11-26T10:00:05Z`, or with fractional seconds), or None."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _condition_time(pod: dict[str, Any], kind: str) -> datetime | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == kind and c.get("status") == "True":
            return timestamp(c.get("lastTransitionTime"))
    return None


def _pulled(pod_name: str, events: dict[str, Any]) -> datetime | None:
    """When the pod's last image was there: the latest `Pulled` event of the pod."""
    times = [
        timestamp(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp"))
        for e in events.get("items", [])
        if e.get("reason") == "Pulled" and (e.get("involvedObject") or {}).get("name") == pod_name
    ]
    found = [t for t in times if t]
    return max(found) if found else None


def _started(pod: dict[str, Any]) -> datetime | None:
    times = [
        timestamp(((s.get("state") or {}).get("running") or {}).get("startedAt"))
        for s in pod.get("status", {}).get("containerStatuses") or []
    ]
    found = [t for t in times if t]
    return max(found) if found else None


def _init_seconds(pod: dict[str, Any]) -> float:
    """How long the pod's init containers ran (the vLLM compile cache's copy to local disk), each from its
    terminated state's startedAt to finishedAt."""
    total = 0.0
    for s in pod.get("status", {}).get("initContainerStatuses") or []:
        done = (s.get("state") or {}).get("terminated") or {}
        start, end = timestamp(done.get("startedAt")), timestamp(done.get("finishedAt"))
        if start and end:
            total += (end - start).total_seconds()
    return total


@dataclass(frozen=True)
class Measured:
    """One pod's way to Ready, seconds per phase; `new_node`: its node was created after the pod (no capacity)."""

    pod: str
    phases: dict[str, float]
    new_node: bool


def measure_pod(pod: dict[str, Any], nodes: dict[str, Any], events: dict[str, Any]) -> Measured | None:
    """The phases of one Ready pod: capacity (created to scheduled), image (scheduled to its last `Pulled`, less the
    init containers' run, which falls between the init image's pull and the app image's), init (its init
    containers' run: the compile cache copied to local disk), container start (to the last container's start), to
    Ready (to the Ready condition). None for a pod not yet Ready."""
    created = timestamp(pod["metadata"].get("creationTimestamp"))
    scheduled, ready, started = _condition_time(pod, "PodScheduled"), _condition_time(pod, "Ready"), _started(pod)
    if not (created and scheduled and ready and started):
        return None
    pulled = _pulled(pod["metadata"]["name"], events) or scheduled
    node_name = pod.get("spec", {}).get("nodeName")
    node = next((n for n in nodes.get("items", []) if n["metadata"]["name"] == node_name), None)
    node_created = timestamp(node["metadata"].get("creationTimestamp")) if node else None
    init = _init_seconds(pod)
    phases = {
        "capacity": (scheduled - created).total_seconds(),
        "image": max((pulled - scheduled).total_seconds() - init, 0.0),
        "init (compile cache)": init,
        "container start": (started - pulled).total_seconds(),
        "to Ready": (ready - started).total_seconds(),
        "total": (ready - created).total_seconds(),
    }
    return Measured(pod["metadata"]["name"], phases, bool(node_created and node_created > created))


def tpu_pods(pods: dict[str, Any]) -> list[dict[str, Any]]:
    """The pods that run on TPU nodes: they select a TPU accelerator (catalog.ACCELERATOR_LABEL)."""
    return [
        p for p in pods.get("items", []) if catalog.ACCELERATOR_LABEL in (p.get("spec", {}).get("nodeSelector") or {})
    ]


def slowest(pods: dict[str, Any], nodes: dict[str, Any], events: dict[str, Any]) -> Measured | None:
    """The TPU pod that took longest to Ready: the one a replica waits for (a multi-host replica serves when its
    last pod does). None when no TPU pod is Ready."""
    found = [m for m in (measure_pod(p, nodes, events) for p in tpu_pods(pods)) if m]
    return max(found, key=lambda m: m.phases["total"]) if found else None


def modelled(estimate: Estimate, new_node: bool) -> dict[str, float]:
    """The model's figures for the measured phases: capacity is node provisioning on a new node, else scheduling;
    the compile phase's copy of the cache to local disk (Estimate.compile_copy) is the init containers'; the rest of
    start, weights, compile and readiness falls between the container's start and Ready."""
    capacity = estimate.phases["capacity"] + assumed("schedule") if new_node else assumed("schedule")
    to_ready = sum(estimate.phases[p] for p in ("start", "weights", "compile", "readiness")) - estimate.compile_copy
    return {
        "capacity": capacity,
        "image": estimate.phases["image"],
        "init (compile cache)": estimate.compile_copy,
        "container start": 0.0,
        "to Ready": to_ready,
        "total": estimate.cold if new_node else estimate.warm,
    }


def report(rows: list[tuple[str, Measured | None, Estimate | None]]) -> str:
    """The Markdown table `make smoke` prints: per workload, each phase measured / modelled."""
    lines = [
        "| workload | pod | " + " | ".join(MEASURED) + " |",
        "|" + "---|" * (len(MEASURED) + 2),
    ]
    for workload, measured, estimate in rows:
        if measured is None:
            lines.append(f"| {workload} | no TPU pod Ready |" + " |" * len(MEASURED))
            continue
        model = modelled(estimate, measured.new_node) if estimate else {}
        cells = [duration(measured.phases[p]) + (f" / {duration(model[p])}" if p in model else "") for p in MEASURED]
        where = " (new node)" if measured.new_node else ""
        lines.append(f"| {workload} | {measured.pod}{where} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
