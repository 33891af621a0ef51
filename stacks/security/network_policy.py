"""Ingress NetworkPolicies: every namespace the stack serves from denies ingress by default and allows only what
serving needs (GKE hardening guide "Restrict traffic among Pods with a network policy"; CIS GKE Benchmark 5.6.7;
checkov CKV2_K8S_6). Dataplane V2 enforces them.

Per namespace: `default-deny-ingress` (empty pod selector, no rule) and `allow-same-namespace` (the workload's own
pods to each other: Pathways leader and workers, the Sax cell, ...). Per workload, `WorkloadPlan.ingress_allows`
adds port-level rules: its Service's clients to the serving ports (no `from`: clients are in-cluster pods,
internal load balancers and, with `exposure: external`, the source ranges the load balancer admits), and Managed
Prometheus (`gmp-system` collectors) to the metrics port.

A rule without `from` is used wherever the client is not a pod of the cluster (load balancers, host-network pods,
the control plane): Dataplane V2 (Cilium) does not match node or host-network sources with `ipBlock`.
Pods on the host network are not subject to NetworkPolicy at all (Kubernetes leaves it undefined; GKE does not
filter them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stacks.naming import MANAGED_BY_LABELS, NAMESPACE_NAME_LABEL

API = "networking.k8s.io/v1"
GMP_NAMESPACE = "gmp-system"  # GKE Managed Prometheus collectors


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY_LABELS)},
        "spec": spec,
    }


def _ports(ports: Sequence[int]) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def namespace_baseline(namespace: str) -> list[dict[str, Any]]:
    """Deny all ingress, then allow the namespace's own pods to each other."""
    return [
        _policy("default-deny-ingress", namespace, {"podSelector": {}, "policyTypes": ["Ingress"]}),
        _policy(
            "allow-same-namespace",
            namespace,
            {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]},
        ),
    ]


def allow_clients(name: str, namespace: str, pod_labels: dict[str, str], ports: Sequence[int]) -> dict[str, Any]:
    """Any client (in-cluster, load balancer, node) to `ports` of the pods labelled `pod_labels`."""
    return _policy(
        f"allow-{name}-clients",
        namespace,
        {
            "podSelector": {"matchLabels": dict(pod_labels)},
            "policyTypes": ["Ingress"],
            "ingress": [{"ports": _ports(ports)}],
        },
    )


def allow_metrics(name: str, namespace: str, pod_labels: dict[str, str], port: int) -> dict[str, Any]:
    """Managed Prometheus collectors to the metrics port."""
    return _policy(
        f"allow-{name}-metrics",
        namespace,
        {
            "podSelector": {"matchLabels": dict(pod_labels)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: GMP_NAMESPACE}}}],
                    "ports": _ports([port]),
                }
            ],
        },
    )
