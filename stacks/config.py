"""Load and validate the stack config before any resource is registered.

`load_stack_config()` reads Pulumi config and `parse_stack_config()` does the rest from a plain dict, without Pulumi,
so the rules are tested directly: every key parsed in one pass by the piece that owns it (its `KEYS` and `parse`), then each
piece visited once, in the order of what it reads (`PIECES`: each `visit` runs the piece's rules, its own and those
against the pieces visited before it, and resolves its plan), and one `pulumi.RunError` that lists every problem
with its key path (`tpu-serving:tpuPools[1].topology`), the bad value and what is allowed; else the StackConfig.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, TypeVar

from stacks import workload_checks
from stacks.pieces import addons as addons_piece
from stacks.pieces import alerts as alerts_piece
from stacks.pieces import bucket as bucket_piece
from stacks.pieces import cluster as cluster_piece
from stacks.pieces import cost as cost_piece
from stacks.pieces import environment as environment_piece
from stacks.pieces import gateway as gateway_piece
from stacks.pieces import monitoring as monitoring_piece
from stacks.pieces import namespaces as namespaces_piece
from stacks.pieces import network as network_piece
from stacks.pieces import node_identity as node_identity_piece
from stacks.pieces import tpu_pools
from stacks.pieces.context import Context, Findings, Invocation, Piece, Sections, keys_of
from stacks.pieces.rules import NS as NS  # the namespace of the keys, for the modules that read them
from stacks.problems import ConfigError
from stacks.reports import cost, time_to_serve
from stacks.serving.workload_type import WorkloadRegistry
from stacks.stack_config import StackConfig

# Keys this version of the program understands under `tpu-serving:`; anything else is a typo.
KNOWN_KEYS = tuple(
    "environment cluster bucket tpuPools addons monitoring gateway cost alerts workloads paused decommission hfToken local".split()
)
# Secret keys: read only as Pulumi secrets by the components that need them, never parsed into the config.
SECRET_KEYS = ("hfToken",)
T = TypeVar("T")

# The pieces, each visited once, in the order of what it reads: the environment (the region, the profile) first; the
# cluster (its name, labels, Kubernetes minor), the bucket and the pools (their plans, which the workloads run on);
# the add-ons; the workloads (stacks/workload_checks.py), against all of those; then the pieces whose plans serve
# the workloads: the gateway, the network (the gateway's proxy-only subnet), monitoring, cost, alerts, namespaces,
# the nodes' identities. A piece added here is visited once, in its place (tests/test_config_visits.py).
PIECES: tuple[Piece, ...] = (
    environment_piece,
    cluster_piece,
    bucket_piece,
    tpu_pools,
    addons_piece,
    workload_checks,
    gateway_piece,
    network_piece,
    monitoring_piece,
    cost_piece,
    alerts_piece,
    namespaces_piece,
    node_identity_piece,
)

# Where problems are reported, whichever piece finds them: first what comes from outside the keys, then each key's
# shape problems in key order (with the rules that read its own section alone), then the rules between keys.
PROBLEM_SLOTS = (
    "invocation",
    *("environment", "cluster", "bucket", "tpuPools", "addons", "monitoring", "gateway", "alerts", "cost"),
    *("workloads", "paused", "decommission"),
    *("environment.rules", "gateway.rules"),
    *("cluster.rules", "network.rules", "cluster.endpoint", "network.flowLogs", "cluster.settings"),
    *("gateway.cluster", "bucket.rules", "tpuPools.rules"),
    *("workloads.rules", "alerts.rules", "local"),
)
# The warnings' order: the bucket's and the cluster's settings, the project, the pools, the workloads, the profile
# (decommission, paused), the gateway.
WARNING_SLOTS = ("bucket", "cluster", "environment", "tpuPools", "workloads", "profile", "gateway")


def known_keys(pieces: Sequence[Piece] | None = None) -> tuple[str, ...]:
    """KNOWN_KEYS, then the keys a piece added to `pieces` (config.PIECES) parses that are not among them."""
    listed = PIECES if pieces is None else pieces
    return (*KNOWN_KEYS, *dict.fromkeys(k for p in listed for k in keys_of(p) if k not in KNOWN_KEYS))


def problem_slots(pieces: Sequence[Piece]) -> tuple[str, ...]:
    """PROBLEM_SLOTS, with the shape problems of a key only a piece added to `pieces` knows after the others'."""
    added = tuple(k for k in known_keys(pieces) if k not in PROBLEM_SLOTS and k not in SECRET_KEYS)
    at = PROBLEM_SLOTS.index("environment.rules")
    return (*PROBLEM_SLOTS[:at], *added, *PROBLEM_SLOTS[at:])


def parse_sections(raw: dict[str, Any], types: WorkloadRegistry, found: Findings, pieces: Sequence[Piece]) -> Sections:
    """Every key parsed once, by the piece that owns it (its `parse`: None where a key does not parse, its problems
    filed at its slot), before any piece is visited."""
    parsed: dict[str, Any] = {}
    for piece in pieces:
        parse_keys = getattr(piece, "parse", None)
        if parse_keys is not None:
            parsed.update(parse_keys(raw, types, found))
    return Sections.of(parsed)


def visit_pieces(ctx: Context, found: Findings, pieces: Sequence[Piece]) -> None:
    """Each piece visited once, in order; its plan filed under its name for the pieces after it."""
    for piece in pieces:
        ctx.plans[piece.NAME] = piece.visit(ctx, found)


def parse_stack_config(
    raw: dict[str, Any],
    *,
    stack: str,
    pulumi_project: str,
    gcp_project: str | None,
    region: str | None,
    workload_types: WorkloadRegistry,
    extra_keys: tuple[str, ...] = (),
    hf_token: str | None = None,
    refuse_placeholder: bool = False,
) -> StackConfig:
    """Validate a stack config given as `{key without namespace: value}`; raise ConfigError with every problem.

    `workload_types` are the types the program serves (workloads/registry.py). `hf_token` says how
    tpu-serving:hfToken is set: None (not set), "secret", or "plain" (refused: it would be stored in plain text in
    the stack file). `refuse_placeholder`: the examples' gcp:project is a problem (a real deployment), not a
    warning (the offline render and tests)."""
    pieces = PIECES
    found = Findings(problem_slots(pieces), WARNING_SLOTS)
    known = known_keys(pieces)
    given = Invocation(stack, pulumi_project, gcp_project, region, extra_keys, known, hf_token, refuse_placeholder)
    ctx = Context(
        invocation=given,
        raw=raw,
        sections=parse_sections(raw, workload_types, found, pieces),
        workload_types=workload_types,
        from_zero=functools.partial(time_to_serve.from_zero, workload_types),
        server_await=functools.partial(time_to_serve.server_await, workload_types),
        chip_price=cost.workload_chip_price,
    )
    visit_pieces(ctx, found, pieces)
    if not found.clean:
        raise ConfigError(stack, found.problems())
    return _stack_config(ctx, found.warnings())


def _stack_config(ctx: Context, warnings: list[str]) -> StackConfig:
    """The validated config: each piece's config and plan (every piece resolved its plan: nothing has a problem)."""
    given, sections = ctx.invocation, ctx.sections
    cluster, bucket, environment = sections.cluster, sections.bucket, sections.environment
    addons, monitoring, gateway, cost_config = sections.addons, sections.monitoring, sections.gateway, sections.cost
    assert cluster is not None and bucket is not None and isinstance(environment, str) and ctx.labels is not None
    assert addons is not None and monitoring is not None and gateway is not None and cost_config is not None
    assert given.gcp_project and ctx.region
    config = StackConfig(
        stack=given.stack,
        pulumi_project=given.pulumi_project,
        gcp_project=given.gcp_project,
        region=ctx.region,
        environment=environment,
        cluster=cluster,
        bucket=bucket,
        pools=tuple(ctx.pools),
        labels=ctx.labels,
        addons=addons,
        monitoring=monitoring,
        gateway=gateway,
        cost=cost_config,
        cost_plan=_plan(ctx, cost_piece, cost_piece.CostPlan),
        workloads=tuple(ctx.workloads),
        warnings=tuple(warnings),
        paused=sections.paused,
        decommission=sections.decommission,
        workload_types=ctx.workload_types,
        cluster_plan=_plan(ctx, cluster_piece, cluster_piece.ClusterPlan),
        network_plan=_plan(ctx, network_piece, network_piece.NetworkPlan),
        bucket_plan=_plan(ctx, bucket_piece, bucket_piece.BucketPlan),
        addons_plan=_plan(ctx, addons_piece, addons_piece.AddonsPlan),
        monitoring_plan=_plan(ctx, monitoring_piece, monitoring_piece.MonitoringPlan),
        gateway_plan=_plan(ctx, gateway_piece, gateway_piece.GatewayPlan),
        namespaces_plan=_plan(ctx, namespaces_piece, namespaces_piece.NamespacesPlan),
        alerts_plan=_plan(ctx, alerts_piece, alerts_piece.AlertsPlan),
        workload_node_accounts=_plan(ctx, node_identity_piece, dict),
        image_mirror=replace(ctx.image_mirror, labels=ctx.labels) if ctx.image_mirror is not None else None,
    )
    return replace(config, local=sections.local) if sections.local is not None else config


def _plan(ctx: Context, piece: Piece, kind: type[T]) -> T:
    """A visited piece's plan, resolved (nothing has a problem)."""
    found = ctx.plan(piece.NAME, kind)
    assert found is not None, piece.NAME
    return found
