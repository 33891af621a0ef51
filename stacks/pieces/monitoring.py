"""The monitoring piece (tpu-serving:monitoring): TPU metrics scraping, the one metrics adapter for HPAs and the
serving dashboard. Its plan gathers, once, what the workloads ask of it: the dashboard's panels, the namespaces
whose HPAs read the adapter (components/monitoring.py builds it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stacks import naming
from stacks.facts import versions
from stacks.model.config_model import MonitoringConfig
from stacks.monitoring import alerts, dashboard, metrics
from stacks.monitoring.metrics import HpaMetric
from stacks.pieces.context import Context, Findings
from stacks.pieces.gateway import GatewayPlan
from stacks.pieces.rules import parse_section
from stacks.serving import benchmark_metrics
from stacks.serving.workload_type import WorkloadRegistry

if TYPE_CHECKING:
    from stacks.serving.workload_plan import WorkloadPlan

NAME = "monitoring"
KEYS = ("monitoring",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    return {"monitoring": parse_section(raw, "monitoring", MonitoringConfig, found.problems_at("monitoring"))}


Panel = tuple[str, str, str]


@dataclass(frozen=True)
class MonitoringPlan:
    """Monitoring as the stack builds it, with what the validated workloads ask of it."""

    config: MonitoringConfig
    project: str
    cluster_name: str
    identity_suffix: str
    kubernetes_minor: str
    has_tpu_pools: bool
    dashboard_panels: tuple[Panel, ...]
    """The workloads' own panels, in order, each once, above the stack's."""
    hpa_namespaces: tuple[str, ...]
    """Namespaces of autoscaled workloads: their HPAs read the metrics adapter."""
    server_metrics: tuple[tuple[HpaMetric, tuple[str, ...]], ...]
    """The workload types' own server metrics (vLLM's, say), each with the namespaces of the autoscaled workloads
    whose HPA may scale on it: the metrics adapter serves them there."""
    gate_panels: tuple[dashboard.FilterPanel, ...] = ()
    """The release gate's tiles, below the stack's (stacks/serving/benchmark_metrics.py): while a workload rolls out."""
    gate_metrics: tuple[dict[str, Any], ...] = ()
    """The log-based metrics those tiles chart (gcp.logging.Metric inputs), with the dashboard."""


def visit(ctx: Context, found: Findings) -> MonitoringPlan | None:
    """Its plan: what the workloads, the pools and the gateway ask of it (no rules beyond its model's)."""
    given, monitoring = ctx.invocation, ctx.sections.monitoring
    gateway_plan = ctx.plan("gateway", GatewayPlan)
    if not found.clean or monitoring is None or gateway_plan is None:
        return None
    if not (given.gcp_project and ctx.cluster_name and ctx.kubernetes_minor):
        return None
    return plan(
        monitoring,
        project=given.gcp_project,
        cluster_name=ctx.cluster_name,
        identity_suffix=naming.stack_identity_suffix(given.pulumi_project, given.stack),
        kubernetes_minor=ctx.kubernetes_minor,
        has_tpu_pools=bool(ctx.pools),
        workloads=ctx.workloads,
        gateway=bool(gateway_plan.backends),
        chip_prices={w.name: ctx.chip_price(w) for w in ctx.workloads},
    )


def plan(
    monitoring: MonitoringConfig,
    *,
    project: str,
    cluster_name: str,
    identity_suffix: str,
    kubernetes_minor: str,
    has_tpu_pools: bool,
    workloads: Sequence[WorkloadPlan],
    gateway: bool = False,
    chip_prices: Mapping[str, float | None] | None = None,
) -> MonitoringPlan:
    """`gateway`: an Inference Gateway serves some workload (its pickers' tiles join the dashboard); `chip_prices`:
    by workload, the list price of one chip-hour of its pool (stacks/reports/cost.py chip_price), for its cost tile."""
    prices = chip_prices or {}
    autoscaled = [w for w in workloads if w.autoscaled]
    rolling = monitoring.dashboard and any(w.release is not None for w in workloads)
    panels = [p for w in workloads for p in w.dashboard_panels(cluster_name)]
    panels += [p for w in workloads if (p := cost_panel(w, cluster_name, prices.get(w.name))) is not None]
    panels += dashboard.gateway_panels(cluster_name) if gateway else []
    return MonitoringPlan(
        config=monitoring,
        project=project,
        cluster_name=cluster_name,
        identity_suffix=identity_suffix,
        kubernetes_minor=kubernetes_minor,
        has_tpu_pools=has_tpu_pools,
        dashboard_panels=tuple(dict.fromkeys(panels)),
        hpa_namespaces=tuple(sorted({w.namespace for w in autoscaled})),
        server_metrics=own_server_metrics(autoscaled),
        # the gate's numbers on the dashboard while a workload has a release train (whether or not a candidate runs
        # now: its last runs stay charted, and the metrics do not come and go with each release)
        gate_panels=tuple(benchmark_metrics.panels(cluster_name)) if rolling else (),
        gate_metrics=tuple(benchmark_metrics.log_metrics(cluster_name)) if rolling else (),
    )


def own_server_metrics(autoscaled: Sequence[WorkloadPlan]) -> tuple[tuple[HpaMetric, tuple[str, ...]], ...]:
    """The server metrics the workloads' plans offer their HPAs (WorkloadPlan.hpa_metrics) beyond the shared ones
    (stacks.monitoring.metrics.HPA_METRICS, served to every autoscaled workload), in the order the workloads and their
    registries list them, each with the namespaces of the workloads that offer it."""
    found: dict[str, tuple[HpaMetric, set[str]]] = {}
    for w in autoscaled:
        for m in (w.hpa_metrics or {}).values():
            if m.origin == "server" and m.name not in metrics.HPA_METRICS:
                found.setdefault(m.name, (m, set()))[1].add(w.namespace)
    return tuple((m, tuple(sorted(namespaces))) for m, namespaces in found.values())


def cost_panel(w: WorkloadPlan, cluster: str, price: float | None) -> Panel | None:
    """The workload's cost per million output tokens, where its server counts them and its chips have a list price
    (`price` per chip-hour)."""
    signals, chips = w.signals, w.chips_per_replica
    if signals.output_tokens is None or signals.queue is None or chips is None or price is None:
        return None
    return dashboard.cost_panel(
        cluster,
        w.namespace,
        alerts.pods_of(w.disruption_units())[1:],
        price * chips,
        signals.queue,
        signals.output_tokens,
    )


def pinned_chart(name: str) -> versions.ChartVersion:
    """The pinned release of a chart installed outside the add-on registry (prometheusAdapter): the matrix's
    default. An add-on's release is its registry entry's (`stacks.addons`), from its `version` setting."""
    return versions.CHARTS[name][versions.default_version(name)]
