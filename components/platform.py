"""The composition of the one stack: network, cluster, TPU pools, bucket, add-ons, monitoring, gateway, the
workloads (each built by its type's registry entry, carried by the config), and the stack outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi

from components.addons import Addons, AddonsDeps
from components.alerts import Alerts
from components.bucket import Bucket
from components.cluster import Cluster, ClusterDeps
from components.cost import CostAttribution
from components.gateway import GatewayDeps, InferenceGateway
from components.images import ImageRepositories
from components.local import LocalCluster, StandInBucket
from components.monitoring import Monitoring, MonitoringDeps
from components.namespaces import Namespaces, NamespacesDeps
from components.network import Network
from components.node_identity import NodeAccountDeps, NodeServiceAccount
from components.serving import ServingWorkload, WorkloadDeps
from components.tpu_pool import TpuPoolDeps, TpuSlicePool
from stacks import addons as addon_registry
from stacks.config import StackConfig
from stacks.fleets import fleet
from stacks.model import local_target
from stacks.model.local_target import REGISTRY, LocalSources, Sources
from stacks.reports import cost, fleet_output
from stacks.security.kubeconfig import get_credentials_command
from stacks.serving import gateway
from stacks.serving.workload_plan import WorkloadPlan


@dataclass
class Platform:
    """What later layers (add-ons, workloads) build on."""

    config: StackConfig
    network: Network | None
    """None in local mode."""
    cluster: Cluster | LocalCluster
    pools: dict[str, TpuSlicePool]
    bucket: Bucket | StandInBucket
    addons: Addons
    monitoring: Monitoring
    workloads: dict[str, ServingWorkload]
    gateway: InferenceGateway | None = None
    alerts: Alerts | None = None


@dataclass
class GoogleLayer:
    """What the in-cluster layer reads from the Google Cloud layer: built on GKE (`google_layer`), or stood in by a
    cluster of the user's own with the names Google would return (`local_layer`, tpu-serving:local)."""

    network: Network | None
    cluster: Cluster | LocalCluster
    bucket: Bucket | StandInBucket
    own_nodes: dict[str, pulumi.Output[str]]
    """By pool name: the email of the node service account of a pool that serves one workload alone."""
    cloud: bool
    """True: the Google Cloud resources are this stack's (GKE); False: stood in (local mode)."""
    sources: Sources
    """Where charts, CRD files and release manifests come from."""


def google_layer(cfg: StackConfig) -> GoogleLayer:
    images = _image_repositories(cfg)
    network, cluster = _network_and_cluster(cfg, images)
    own_nodes = {pool: account.email for pool, account in _own_node_accounts(cfg, images).items()}
    bucket = Bucket("bucket", plan=cfg.bucket_plan)
    return GoogleLayer(network, cluster, bucket, own_nodes, cloud=True, sources=REGISTRY)


def local_layer(cfg: StackConfig, base: Path) -> GoogleLayer:
    """Local mode: no Google Cloud resource; the cluster the config's kubeconfig names, and stand-ins for the rest."""
    local = cfg.local
    assert local, "local mode needs tpu-serving:local"
    cluster = LocalCluster("cluster", plan=cfg.cluster_plan, config=local, base=base)
    own_nodes = {
        plan.pool.name: pulumi.Output.from_input(
            local_target.service_account_email(cfg.workload_node_accounts[plan.name].account_id, cfg.gcp_project)
        )
        for plan in cfg.workloads
        if plan.name in cfg.workload_node_accounts
    }
    sources = LocalSources.of(local, base)
    return GoogleLayer(None, cluster, StandInBucket.of(cfg.bucket_plan), own_nodes, cloud=False, sources=sources)


def pool_summary(cfg: StackConfig) -> dict[str, dict]:
    return {
        plan.name: {
            "tpu": plan.shape.generation.name,
            "topology": plan.shape.topology,
            "machineType": plan.shape.machine_type,
            "zone": plan.config.zone,
            "capacity": plan.config.capacity,
            **({"computeClass": plan.compute_class} if plan.compute_class else {}),
            "slices": plan.slices,
            "hostsPerSlice": plan.shape.hosts,
            "chipsPerHost": plan.shape.chips_per_host,
            "chipsPerSlice": plan.shape.chips,
            "totalChips": plan.total_chips,
            "nodePools": list(plan.node_pool_names),
        }
        for plan in cfg.pools
    }


def addon_summary(cfg: StackConfig) -> dict[str, dict]:
    return addon_registry.summary(cfg.addons)


# Where a gateway (e.g. an InferencePool) finds a workload's serving pods, for the workload types that say so.
SERVING_ENDPOINT = {"servingSelector": "serving_selector", "httpPort": "http_port"}


def workload_summary(platform: Platform) -> dict[str, dict]:
    out = {}
    for plan in platform.config.workloads:
        component = platform.workloads[plan.name]
        out[plan.name] = {
            "type": plan.workload.type,
            "pool": plan.pool.name,
            "namespace": component.namespace,
            "service": component.service_name,
            **{k: getattr(component, a) for k, a in SERVING_ENDPOINT.items() if hasattr(component, a)},
            **component.commands,
        }
    return out


def build_platform(cfg: StackConfig, base: Path | None = None) -> Platform:
    """The stack: its Google Cloud layer (or, with tpu-serving:local, its stand-ins; `base` is the folder the local
    paths are relative to, the program's), then the same in-cluster layer either way."""
    base = base or Path.cwd()
    if not cfg.on_local_cluster:
        return _build_platform(cfg, google_layer(cfg))
    try:
        return _build_platform(cfg, local_layer(cfg, base))
    except local_target.SourceMissingError as err:
        raise pulumi.RunError(
            f"{err}. A local run reads every chart, CRD file and manifest from these folders, never a registry: "
            "point tpu-serving:local.sources at a copy laid out as ../shared/reference"
        ) from None


def _build_platform(cfg: StackConfig, layer: GoogleLayer) -> Platform:
    cluster, bucket = layer.cluster, layer.bucket
    pools = _tpu_pools(cfg, layer)
    addons = Addons(
        "addons",
        plan=cfg.addons_plan,
        deps=AddonsDeps(
            provider=cluster.provider, kubeconfig=cluster.kubeconfig, after=[cluster.system_pool], sources=layer.sources
        ),
    )
    monitoring = Monitoring(
        "monitoring",
        plan=cfg.monitoring_plan,
        deps=MonitoringDeps(
            provider=cluster.provider, system_pool=cluster.system_pool, cloud=layer.cloud, sources=layer.sources
        ),
    )
    namespaces = Namespaces(
        "namespaces",
        plan=cfg.namespaces_plan,
        deps=NamespacesDeps(provider=cluster.provider, after=[cluster.system_pool], admission=addons.admission),
    )
    inference_gateway = _gateway(cfg, layer, namespaces) if cfg.gateway.enabled else None
    if cfg.cost_plan.budgeted and layer.cloud:
        CostAttribution("cost", plan=cfg.cost_plan)
    deps = _WorkloadDepsFactory(cfg, layer, pools, addons, monitoring, namespaces)
    workloads: dict[str, ServingWorkload] = {
        plan.name: cfg.workload_types[plan.workload.type].component(
            f"workload-{plan.name}", plan=plan, deps=deps.of(plan)
        )
        for plan in cfg.workloads
    }
    alerts = Alerts("alerts", plan=cfg.alerts_plan) if cfg.alerts_plan.enabled and layer.cloud else None
    return Platform(
        config=cfg,
        network=layer.network,
        cluster=cluster,
        pools=pools,
        bucket=bucket,
        addons=addons,
        monitoring=monitoring,
        workloads=workloads,
        gateway=inference_gateway,
        alerts=alerts,
    )


def _network_and_cluster(cfg: StackConfig, images: NodeAccountDeps) -> tuple[Network, Cluster]:
    network = Network("network", plan=cfg.network_plan)
    cluster = Cluster("cluster", plan=cfg.cluster_plan, deps=ClusterDeps(network=network, node_account=images))
    return network, cluster


def _image_repositories(cfg: StackConfig) -> NodeAccountDeps:
    """The stack's remote repositories (cluster.images.mirror), which every node identity reads."""
    mirror = cfg.image_mirror
    if mirror is None or not mirror.remotes:  # off: images are pulled as pinned, with project-level reader
        return NodeAccountDeps()
    return NodeAccountDeps(ImageRepositories("images", plan=mirror).repositories)


def _own_node_accounts(cfg: StackConfig, images: NodeAccountDeps) -> dict[str, NodeServiceAccount]:
    """Workloads whose pods run on the host network act as their nodes' identity: each gets its own node service
    account (by its pool's name; the node identities piece plans it), used by its pool (and the nodes the
    workload adds), before any of those pools exist."""
    return {
        plan.pool.name: NodeServiceAccount(
            f"workload-{plan.name}-nodes", plan=cfg.workload_node_accounts[plan.name], deps=images
        )
        for plan in cfg.workloads
        if plan.name in cfg.workload_node_accounts
    }


def _tpu_pools(cfg: StackConfig, layer: GoogleLayer) -> dict[str, TpuSlicePool]:
    cluster = layer.cluster
    return {
        plan.name: TpuSlicePool(
            f"tpu-{plan.name}",
            plan=plan,
            deps=TpuPoolDeps(
                cluster=cfg.cluster_plan,
                cluster_name=cluster.name,
                node_service_account=layer.own_nodes.get(plan.name, cluster.node_service_account),
                k8s_provider=cluster.provider,
                paused=cfg.paused,
                resource_labels=cfg.cost_plan.pool_labels.get(plan.name, {}),
                cloud=layer.cloud,
            ),
        )
        for plan in cfg.pools
    }


def _gateway(cfg: StackConfig, layer: GoogleLayer, namespaces: Namespaces) -> InferenceGateway:
    """The Inference Gateway and, for each workload served through it, its InferencePool and route."""
    cluster, network = layer.cluster, layer.network
    proxy_subnet = [network.proxy_subnet] if network is not None and network.proxy_subnet else []
    return InferenceGateway(
        "gateway",
        plan=cfg.gateway_plan,
        deps=GatewayDeps(
            provider=cluster.provider,
            after=[cluster.system_pool, *proxy_subnet],
            # A workload in a namespace every cluster has (default) waits for the system pool directly.
            namespace=lambda ns: namespaces.by_name.get(ns, cluster.system_pool),
            cloud=layer.cloud,
            sources=layer.sources,
        ),
    )


@dataclass
class _WorkloadDepsFactory:
    """What the platform hands each workload's component (components.serving.WorkloadDeps)."""

    cfg: StackConfig
    layer: GoogleLayer
    pools: dict[str, TpuSlicePool]
    addons: Addons
    monitoring: Monitoring
    namespaces: Namespaces

    def of(self, plan: WorkloadPlan) -> WorkloadDeps:
        cluster, bucket = self.layer.cluster, self.layer.bucket
        return WorkloadDeps(
            project=self.cfg.gcp_project,
            stack=self.cfg.stack,
            bucket=bucket.name,
            bucket_get_role=bucket.bucket_get_role,
            provider=cluster.provider,
            # A workload in a namespace every cluster has (default) waits for the system pool directly.
            namespace=self.namespaces.by_name.get(plan.namespace, cluster.system_pool),
            node_pools=self.pools[plan.pool.name].capacity,
            addon=self.addons.dependency,
            adapter=self.monitoring.adapter_resources,
            node_service_account=self.layer.own_nodes.get(plan.pool.name),
            cluster_name=cluster.name,
            location=self.cfg.cluster_location,
            labels=self.cfg.labels,
            local_ports=self.cfg.local_ports[plan.name],
            legacy_types=self.cfg.workload_types.legacy_components,
            cloud=self.layer.cloud,
        )


def build_stack(cfg: StackConfig) -> Platform:
    platform = build_platform(cfg)
    cluster = platform.cluster
    pulumi.export("environment", cfg.environment)
    pulumi.export("paused", cfg.paused)
    pulumi.export("clusterName", cluster.name)
    pulumi.export("clusterLocation", cluster.location)
    pulumi.export("clusterEndpoint", cluster.endpoint)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export(
        "getCredentialsCommand",
        get_credentials_command(cfg.cluster_name, cfg.cluster_location, cfg.gcp_project, cfg.cluster_plan.dns_endpoint),
    )
    pulumi.export("nodeServiceAccount", cluster.node_service_account)
    pulumi.export("bucketName", platform.bucket.name)
    pulumi.export("bucketUrl", platform.bucket.url)
    pulumi.export("tpuPools", pool_summary(cfg))
    pulumi.export("addons", addon_summary(cfg))
    pulumi.export("metricsAdapter", cfg.monitoring.adapter)
    pulumi.export("workloads", workload_summary(platform))
    estimate = cost.estimate(cfg)
    for warning in estimate.warnings:
        pulumi.log.warn(f"cost estimate: {warning}")
    for note in estimate.notes:  # about the estimate, not the stack: not a warning (stacks/reports/cost.py)
        pulumi.log.info(f"cost estimate: note: {note}")
    pulumi.export("estimatedHourlyCost", cost.as_output(estimate))
    if cfg.gateway.enabled and cfg.gateway.fleet_export:  # no Gateway here: the fleet stack's (docs/fleet.md)
        assert platform.gateway is not None
        pulumi.export("gateway", {"fleetExport": True, "routes": platform.gateway.commands})
        pulumi.export(fleet.OUTPUT, fleet_output.regional_output(cfg))
    elif cfg.gateway.enabled:
        assert platform.gateway is not None
        pulumi.export(
            "gateway",
            {
                **gateway.gateway_summary(cfg.gateway.exposure, [w.namespace for w in cfg.gateway_workloads]),
                "routes": platform.gateway.commands,
            },
        )
    if platform.alerts is not None:
        pulumi.export("alertPolicies", {key: p.id for key, p in platform.alerts.policies.items()})
    if platform.monitoring.dashboard_url is not None:
        pulumi.export("dashboardUrl", platform.monitoring.dashboard_url)
    if cfg.local:  # only the Kubernetes layer, on the cluster this kubeconfig names (docs/local.md)
        pulumi.export("local", {"kubeconfig": cfg.local.kubeconfig, "googleCloud": "stood in, nothing created"})
    return platform
