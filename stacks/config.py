"""Load and validate the stack config before any resource is registered.

`load_stack_config()` reads Pulumi config, parses each key with the models in `stacks.model.config_model`, applies
the cross-field rules below, and raises one `pulumi.RunError` that lists every problem with its key path
(`tpu-serving:tpuPools[1].topology`), the bad value and what is allowed. `parse_stack_config()` does the same
from a plain dict, without Pulumi, so the rules are tested directly.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

from stacks import naming, workload_checks
from stacks.addons import AddonsConfig
from stacks.facts.images import ImageMirror
from stacks.model.config_model import (
    AlertsConfig,
    BucketConfig,
    ClusterConfig,
    CostConfig,
    GatewayConfig,
    MonitoringConfig,
    TpuPoolConfig,
    WorkloadConfig,
)
from stacks.model.config_parse import parse, section
from stacks.model.local_target import LocalConfig
from stacks.model.profiles import Profile
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
from stacks.pieces.rules import NS
from stacks.problems import ConfigError, Problem
from stacks.reports import cost, time_to_serve
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadContext, WorkloadRegistry
from stacks.stack_config import StackConfig

# Keys this version of the program understands under `tpu-serving:`; anything else is a typo.
KNOWN_KEYS = tuple(
    "environment cluster bucket tpuPools addons monitoring gateway cost alerts workloads paused decommission hfToken local".split()
)
# Secret keys: read only as Pulumi secrets by the components that need them, never parsed into the config.
SECRET_KEYS = ("hfToken",)


@dataclass(frozen=True)
class _Sections:
    """The stack config's keys parsed by their models (None: the key has problems, reported already)."""

    environment: Any  # as given (reported at its key when it is not a profile name)
    cluster: ClusterConfig | None
    bucket: BucketConfig | None
    pools: list[TpuPoolConfig | None]
    addons: AddonsConfig | None
    monitoring: MonitoringConfig | None
    gateway: GatewayConfig | None
    cost: CostConfig | None
    alerts: AlertsConfig | None
    workloads: list[tuple[int, WorkloadConfig]]
    paused: bool
    decommission: bool


def _parse_sections(raw: dict[str, Any], types: WorkloadRegistry, problems: list[Problem]) -> _Sections:
    """Each section in one visit, in key order: parsed by its model, and a piece whose rules read only its own
    section (environment, add-ons, alerts) checks it there; the rules that need other sections run after."""
    environment = raw.get("environment")
    problems.extend(environment_piece.problems(environment))
    return _Sections(  # keyword arguments run in order: the problems come in key order
        environment=environment,
        cluster=parse(f"{NS}:cluster", ClusterConfig, section(raw, "cluster"), problems),
        bucket=parse(f"{NS}:bucket", BucketConfig, section(raw, "bucket"), problems),
        pools=tpu_pools.parse(raw.get("tpuPools"), problems),
        addons=addons_piece.section(raw.get("addons"), problems),
        monitoring=parse(f"{NS}:monitoring", MonitoringConfig, section(raw, "monitoring"), problems),
        gateway=parse(f"{NS}:gateway", GatewayConfig, section(raw, "gateway"), problems),
        alerts=alerts_piece.section(raw.get("alerts"), problems),
        cost=parse(f"{NS}:cost", CostConfig, section(raw, "cost"), problems),
        workloads=workload_checks.parse(raw.get("workloads"), types, problems),
        paused=parse(f"{NS}:paused", bool, raw.get("paused", False), problems) or False,
        decommission=parse(f"{NS}:decommission", bool, raw.get("decommission", False), problems) or False,
    )


def _check_pieces(
    sections: _Sections,
    region: str | None,
    names: tuple[str | None, str | None],
    problems: list[Problem],
) -> list[PoolPlan]:
    """Each platform piece's own rules (whenever its own section parses), then the checks between pieces (when
    both parse): the gateway against the network it runs in, minMasterVersion against what the pools and the
    gateway need. Returns the pools' plans."""
    cluster_name, bucket_name = names
    cluster, gateway = sections.cluster, sections.gateway
    if gateway is not None:
        problems.extend(gateway_piece.problems(gateway, sections.environment))
    if cluster is not None:
        assert cluster_name is not None
        problems.extend(
            cluster_piece.problems(cluster, cluster_name=cluster_name, environment=sections.environment, region=region)
        )
        if gateway is not None:
            problems.extend(gateway_piece.cluster_problems(gateway, cluster))
    if sections.bucket is not None:
        problems.extend(bucket_piece.problems(sections.bucket, bucket_name=bucket_name, region=region))
    protect = environment_piece.protect(sections.environment, sections.decommission)
    streaming = cluster.images.streaming if cluster is not None else False
    pools, pool_problems = tpu_pools.plans(sections.pools, region, protect=protect, image_streaming=streaming)
    problems.extend(pool_problems)
    if cluster is not None:
        needs = tpu_pools.version_needs(pools) + (gateway_piece.version_needs(gateway) if gateway is not None else [])
        problems.extend(cluster_piece.version_problems(cluster, needs))
    return pools


def _workload_context(
    sections: _Sections,
    names: tuple[str | None, str | None],
    where: tuple[str | None, str, str],
    hf_token: str | None,
    image_mirror: ImageMirror | None,
    workload_types: WorkloadRegistry,
) -> WorkloadContext:
    """What a workload type reads of the platform: `names` are the cluster's and the bucket's, `where` is (gcp
    project, pulumi project, stack); the time-to-serve estimate of a wait from zero, with the stack's types."""
    cluster, monitoring, addons = sections.cluster, sections.monitoring, sections.addons
    (cluster_name, bucket_name), (project, pulumi_project, stack) = names, where
    return WorkloadContext(
        adapter=monitoring.adapter if monitoring is not None else "none",
        min_master_version=cluster.min_master_version if cluster is not None else None,
        scrape_interval=monitoring.scrape_interval if monitoring is not None else "15s",
        bucket=bucket_name or "",
        paused=sections.paused,
        cluster_name=cluster_name or "",
        identity_suffix=naming.stack_identity_suffix(pulumi_project, stack),
        lws_enabled=addons.of("lws").enabled if addons is not None else False,
        hf_token=hf_token == "secret",
        environment=sections.environment if isinstance(sections.environment, str) else "",
        image_mirror=image_mirror,
        project=project or "",
        gateway_enabled=sections.gateway is not None and sections.gateway.enabled,
        from_zero=functools.partial(time_to_serve.from_zero, workload_types),
    )


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
    problems: list[Problem] = []
    region = environment_piece.invocation_problems(gcp_project, region, extra_keys, KNOWN_KEYS, hf_token, problems)
    sections = _parse_sections(raw, workload_types, problems)
    environment_piece.name_problems(sections.environment, stack, gcp_project, problems)
    problems.extend(environment_piece.placeholder_problems(gcp_project) if refuse_placeholder else [])
    cluster_name = cluster_piece.name(sections.cluster, pulumi_project, stack) if sections.cluster else None
    bucket_name = (
        bucket_piece.name(sections.bucket, gcp_project, pulumi_project, stack)
        if sections.bucket and gcp_project
        else None
    )
    pools = _check_pieces(sections, region, (cluster_name, bucket_name), problems)
    warnings = environment_piece.placeholder_warnings(gcp_project) + tpu_pools.warnings(sections.pools, pools)
    mirror = cluster_piece.image_mirror(sections.cluster, gcp_project, region)
    context = _workload_context(
        sections, (cluster_name, bucket_name), (gcp_project, pulumi_project, stack), hf_token, mirror, workload_types
    )
    workload_plans = workload_checks.check(
        sections.workloads,
        {p.name: p for p in pools},
        workload_checks.declared_pool_names(raw.get("tpuPools")),
        sections.addons,
        workload_types,
        context,
        problems,
        warnings,
        pools_complete=isinstance(raw.get("tpuPools", []), list) and None not in sections.pools,
    )
    index = workload_checks.indexes(sections.workloads)
    problems.extend(alerts_piece.slo_problems([(index[w.name], w) for w in workload_plans]))
    local = parse(f"{NS}:local", LocalConfig, raw["local"], problems) if raw.get("local") is not None else None
    if problems:
        raise ConfigError(stack, problems)
    assert gcp_project and region and cluster_name and bucket_name
    config = _stack_config(
        sections,
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        names=(cluster_name, bucket_name),
        pools=pools,
        workloads=workload_plans,
        workload_types=workload_types,
        warnings=warnings,
        image_mirror=mirror,
    )
    return replace(config, local=local) if local is not None else config


def _stack_config(
    sections: _Sections,
    *,
    stack: str,
    pulumi_project: str,
    gcp_project: str,
    region: str,
    names: tuple[str, str],
    pools: list[PoolPlan],
    workloads: list[WorkloadPlan],
    workload_types: WorkloadRegistry,
    warnings: list[str],
    image_mirror: ImageMirror | None = None,
) -> StackConfig:
    """The validated config: each piece's plan, resolved once with the environment's profile, and the warnings a
    user should read."""
    cluster, bucket, environment = sections.cluster, sections.bucket, sections.environment
    addons, monitoring, gateway = sections.addons, sections.monitoring, sections.gateway
    assert cluster is not None and bucket is not None and environment
    assert addons is not None and monitoring is not None and gateway is not None and sections.cost is not None
    profile, decommission_warnings = environment_piece.profile(environment, sections.decommission)
    warnings.extend(decommission_warnings)
    if sections.paused:
        warnings.append(f"{NS}:paused=true: workloads are at zero and TPU pools scale to zero nodes")
    labels = {"app": "tpu-serving", "stack": naming.label_value(stack), "environment": environment, **cluster.labels}
    plans = _plans(sections, profile, labels, (gcp_project, region, pulumi_project, stack), names, pools, workloads)
    warnings.extend(gateway_piece.warnings(gateway, plans.gateway, workloads))
    return StackConfig(
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        environment=environment,
        cluster=cluster,
        bucket=bucket,
        pools=tuple(pools),
        labels=labels,
        addons=addons,
        monitoring=monitoring,
        gateway=gateway,
        cost=sections.cost,
        cost_plan=plans.cost,
        workloads=tuple(workloads),
        warnings=tuple(
            bucket_piece.warnings(bucket, profile) + cluster_piece.warnings(cluster, environment) + warnings
        ),
        paused=sections.paused,
        decommission=sections.decommission,
        workload_types=workload_types,
        cluster_plan=plans.cluster,
        network_plan=plans.network,
        bucket_plan=plans.bucket,
        addons_plan=plans.addons,
        monitoring_plan=plans.monitoring,
        gateway_plan=plans.gateway,
        namespaces_plan=plans.namespaces,
        alerts_plan=plans.alerts,
        workload_node_accounts=node_identity_piece.workload_nodes(
            stack, gcp_project, [w for w in workloads if workload_types[w.workload.type].exclusive_pool]
        ),
        image_mirror=replace(image_mirror, labels=labels) if image_mirror is not None else None,
    )


@dataclass(frozen=True)
class _Plans:
    """Each platform piece's plan, resolved once."""

    cluster: cluster_piece.ClusterPlan
    network: network_piece.NetworkPlan
    bucket: bucket_piece.BucketPlan
    addons: addons_piece.AddonsPlan
    monitoring: monitoring_piece.MonitoringPlan
    gateway: gateway_piece.GatewayPlan
    namespaces: namespaces_piece.NamespacesPlan
    cost: cost_piece.CostPlan
    alerts: alerts_piece.AlertsPlan


def _plans(
    sections: _Sections,
    profile: Profile,
    labels: dict[str, str],
    where: tuple[str, str, str, str],
    names: tuple[str, str],
    pools: list[PoolPlan],
    workloads: list[WorkloadPlan],
) -> _Plans:
    """Each piece's plan (the pools' are made with their checks): `where` is (gcp project, region, pulumi project,
    stack), `names` the cluster's and the bucket's."""
    cluster, bucket, gateway = sections.cluster, sections.bucket, sections.gateway
    addons, monitoring, alerts = sections.addons, sections.monitoring, sections.alerts
    assert cluster and bucket and gateway and addons and monitoring and alerts
    project, region, pulumi_project, stack = where
    cluster_name, bucket_name = names
    minor = cluster_piece.kubernetes_minor(cluster)
    proxy_cidr = gateway.proxy_subnet_cidr if gateway_piece.proxy_subnet_created(gateway) else None
    gateway_plan = gateway_piece.plan(
        gateway,
        project=project,
        region=region,
        resource_prefix=cluster_name,
        kubernetes_minor=minor,
        workloads=workloads,
        paused=sections.paused,
    )
    return _Plans(
        cluster=cluster_piece.plan(
            cluster,
            name=cluster_name,
            region=region,
            project=project,
            profile=profile,
            labels=labels,
            gateway_api=gateway.enabled,
            cost_allocation=sections.cost.allocation if sections.cost else True,
        ),
        network=network_piece.plan(
            cluster.network,
            name=cluster_name,
            project=project,
            region=region,
            profile=profile,
            proxy_subnet_cidr=proxy_cidr,
        ),
        bucket=bucket_piece.plan(
            bucket, name=bucket_name, region=region, project=project, profile=profile, labels=labels
        ),
        addons=addons_piece.plan(addons, kubernetes_minor=minor),
        monitoring=monitoring_piece.plan(
            monitoring,
            project=project,
            cluster_name=cluster_name,
            identity_suffix=naming.stack_identity_suffix(pulumi_project, stack),
            kubernetes_minor=minor,
            has_tpu_pools=bool(pools),
            workloads=workloads,
            gateway=bool(gateway_plan.backends),
            chip_prices={w.name: cost.workload_chip_price(w) for w in workloads},
        ),
        gateway=gateway_plan,
        namespaces=namespaces_piece.plan(workloads, gateway_plan=gateway_plan, kubernetes_minor=minor),
        cost=cost_piece.plan(sections.cost or CostConfig(), project=project, stack=stack, workloads=workloads),
        alerts=alerts_piece.plan(
            alerts,
            profile=profile,
            project=project,
            cluster_name=cluster_name,
            paused=sections.paused,
            tpu_metrics=monitoring.tpu_metrics,
            tpu_zones=sorted({p.config.zone for p in pools}),
            workloads=workloads,
            gateway_workloads=[b.name for b in gateway_plan.backends],
        ),
    )
