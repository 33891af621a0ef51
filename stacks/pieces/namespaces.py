"""The namespaces piece: the namespaces the stack's workloads live in (never the ones every cluster has), each with
the Pod Security level of the strictest one all of its pods pass (stacks/security/pod_security.py) and its ingress
NetworkPolicies (stacks/security/network_policy.py), and the local port each workload's port-forward commands use. It has no
key of its own and no rules (a workload's namespace is checked with the workload, stacks/workload_checks.py): its
plan is derived, once, from the workloads' plans and the gateway's (components/namespaces.py builds it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.pieces.context import Context, Findings
from stacks.pieces.gateway import GatewayPlan
from stacks.problems import Problem
from stacks.security import network_policy, pod_security
from stacks.serving import gateway, local_ports
from stacks.serving.gateway import GatewayBackend

NAME = "namespaces"


@dataclass(frozen=True)
class NamespacesPlan:
    """The workloads' namespaces as the stack builds them."""

    kubernetes_minor: str
    """The minor version the Pod Security labels are pinned to."""
    levels: dict[str, str]
    """Namespace -> the Pod Security level it enforces (warn and audit are always restricted)."""
    network_policies: dict[str, tuple[dict[str, Any], ...]]
    """Namespace -> default-deny ingress, its own pods to each other, and each workload's allows (the gateway's
    load balancer to the workloads it serves)."""
    local_ports: dict[str, dict[int, int]]
    """Per workload: the local port of each Service port its port-forward commands forward, of its own across the
    stack (stacks/serving/local_ports.py)."""

    @property
    def names(self) -> list[str]:
        return sorted(self.levels)


def problems() -> list[Problem]:
    """None of its own: each workload's namespace is checked with the workload (stacks/workload_checks.py)."""
    return []


def visit(ctx: Context, found: Findings) -> NamespacesPlan | None:
    """Its plan, from the workloads' plans and the gateway's (no key, no rules of its own)."""
    gateway_plan = ctx.plan("gateway", GatewayPlan)
    if not found.clean or gateway_plan is None or ctx.kubernetes_minor is None:
        return None
    return plan(ctx.workloads, gateway_plan=gateway_plan, kubernetes_minor=ctx.kubernetes_minor)


def plan(workloads: Sequence[Any], *, gateway_plan: GatewayPlan, kubernetes_minor: str) -> NamespacesPlan:
    names = sorted({w.namespace for w in workloads} - naming.PREEXISTING_NAMESPACES)
    return NamespacesPlan(
        kubernetes_minor=kubernetes_minor,
        levels={
            ns: pod_security.strictest_level(m for w in workloads if w.namespace == ns for m in w.pod_manifests())
            for ns in names
        },
        network_policies={
            ns: (
                *network_policy.namespace_baseline(ns),
                *(p for w in workloads if w.namespace == ns for p in w.ingress_allows()),
                *(p for b in gateway_plan.backends if b.namespace == ns for p in _gateway_allows(b, gateway_plan)),
            )
            for ns in names
        },
        local_ports=local_ports.allocate([(w.name, w.forwarded_ports) for w in workloads]),
    )


def _gateway_allows(backend: GatewayBackend, gateway_plan: GatewayPlan) -> list[dict[str, Any]]:
    """The gateway's load balancer (its proxies and health checks are not pods of the cluster, so no `from`, as
    stacks/security/network_policy.py explains) to the serving pods' port and to the endpoint picker's ext-proc and gRPC
    health ports, and Managed Prometheus to the picker's metrics port; paused, nothing is routed and nothing is
    opened."""
    if gateway_plan.paused:
        return []
    return [
        network_policy.allow_clients(f"{backend.name}-gateway", backend.namespace, backend.selector, [backend.port]),
        network_policy.allow_clients(
            gateway.epp_name(backend.name),
            backend.namespace,
            gateway.epp_pod_labels(backend.name),
            [gateway.EPP_EXT_PROC_PORT, gateway.EPP_HEALTH_PORT],
        ),
        # Managed Prometheus's collectors to the picker's metrics (its chart's PodMonitoring)
        network_policy.allow_metrics(
            gateway.epp_name(backend.name),
            backend.namespace,
            gateway.epp_pod_labels(backend.name),
            gateway.EPP_METRICS_PORT,
        ),
    ]
