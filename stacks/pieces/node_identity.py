"""The node identities piece: the dedicated, least-privilege Google service account GKE nodes run as (the
cluster's, and one per workload whose pods run on the host network and so act as their nodes' identity, used by its
pool). No key of its own: each account's id, display name and description are derived here, once, from the
cluster's name and the workloads' plans (components/node_identity.py builds each)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.pieces.context import Context, Findings
from stacks.problems import Problem

NAME = "node_identity"
CLUSTER_NODES_DESCRIPTION = "tpu-serving: node service account (logging, monitoring, image pulls only)"


@dataclass(frozen=True)
class NodeAccountPlan:
    """One node service account as the stack creates it: every name fitted to IAM's limits."""

    account_id: str
    project: str
    display_name: str
    """At most 100 UTF-8 bytes (naming.service_account_display_name)."""
    description: str
    """At most 256 UTF-8 bytes (naming.SERVICE_ACCOUNT_DESCRIPTION_BYTES)."""


def problems() -> list[Problem]:
    """None of its own: the names derive from keys checked where they are given (the cluster's and workloads')."""
    return []


def visit(ctx: Context, found: Findings) -> dict[str, NodeAccountPlan] | None:
    """By workload name: the node service account of each workload whose type runs it as its pool's identity (the
    cluster's own nodes' account is the cluster plan's)."""
    given = ctx.invocation
    if not found.clean or not given.gcp_project:
        return None
    exclusive = [w for w in ctx.workloads if ctx.workload_types[w.workload.type].exclusive_pool]
    return workload_nodes(given.stack, given.gcp_project, exclusive)


def plan(*, account_id: str, project: str, display_name: str, description: str) -> NodeAccountPlan:
    return NodeAccountPlan(
        account_id=account_id,
        project=project,
        display_name=naming.service_account_display_name(display_name),
        description=naming.fit_bytes(description, naming.SERVICE_ACCOUNT_DESCRIPTION_BYTES),
    )


def cluster_nodes(cluster_name: str, project: str) -> NodeAccountPlan:
    """The cluster's node service account: its system pool's and every TPU pool's without one of its own."""
    account_id = naming.node_service_account_id(cluster_name)
    return plan(
        account_id=account_id,
        project=project,
        display_name=f"GKE nodes of {account_id.removesuffix('-nodes')}",
        description=CLUSTER_NODES_DESCRIPTION,
    )


def workload_nodes(stack: str, project: str, workloads: Sequence[Any]) -> dict[str, NodeAccountPlan]:
    """By workload name: the node service account of each workload in `workloads` (those whose pods run on the host
    network), named after it, which its pool (and the nodes the workload adds) uses."""
    return {
        w.name: plan(
            account_id=naming.workload_service_account_id(stack, w.namespace, f"{w.name}-nodes"),
            project=project,
            display_name=f"{w.namespace}/{w.name} nodes ({stack})",
            description=f"tpu-serving: identity of workload {w.name}, the node service account of its pools",
        )
        for w in workloads
    }
