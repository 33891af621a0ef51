"""A regional stack's export switch (tpu-serving:gateway.fleetExport): its gateway-served workloads' InferencePools
join a fleet stack's multi-cluster Inference Gateway (GKE, Preview; stacks/fleets/fleet.py, docs/fleet.md). The settings
that cannot join a fleet are refused here, every one at once: the stack's own VPC, a regional proxy-only subnet
where the fleet's global one goes, a public exposure, a release channel GKE does not document the metric export on,
and (as a version need of the cluster) a GKE version below the minimum. Sources: stacks/fleets/fleet.py F1, G1, G2."""

from __future__ import annotations

from stacks.fleets import fleet
from stacks.fleets.fleet import NS
from stacks.model.config_model import ClusterConfig, GatewayConfig, NetworkConfig
from stacks.problems import Problem, fmt

PATH = f"{NS}:gateway"
EXPORT_NEEDS = "gateway.fleetExport"


def gateway_problems(gateway: GatewayConfig) -> list[Problem]:
    """The switch needs the gateway on, and leaves who reaches the model to the fleet's internal Gateway."""
    if not gateway.fleet_export:
        return []
    found: list[Problem] = []
    if not gateway.enabled:
        found.append(
            Problem(f"{PATH}.fleetExport", "needs gateway.enabled: true (the pools it exports are the gateway's)")
        )
    if gateway.exposure != "internal":
        found.append(
            Problem(
                f"{PATH}.exposure",
                f"{fmt(gateway.exposure)} with fleetExport: the fleet's Gateway ({fleet.GATEWAY_CLASS}) is internal; "
                "leave exposure internal",
            )
        )
    return found


def network_problems(gateway: GatewayConfig, network: NetworkConfig) -> list[Problem]:
    """An exporting stack runs in the fleet's shared VPC and creates or relies on no proxy-only subnet: the region's
    one proxy-only subnet per VPC is the fleet's GLOBAL_MANAGED_PROXY subnet (F1)."""
    found: list[Problem] = []
    if network.create:
        found.append(
            Problem(
                f"{NS}:cluster.network.create",
                "true (the stack's own VPC) with gateway.fleetExport: every cluster of a fleet is in one shared VPC; "
                "set create: false and name the shared VPC and this region's subnet in cluster.network",
            )
        )
    if gateway.proxy_subnet is not None:
        found.append(
            Problem(
                f"{PATH}.proxySubnet",
                f"{fmt(gateway.proxy_subnet)} with fleetExport: a REGIONAL_MANAGED_PROXY subnet in this region makes "
                f"the fleet's {fleet.PROXY_PURPOSE} one fail (one proxy-only subnet per region and VPC); remove it, "
                "the fleet stack creates the region's proxy-only subnet",
            )
        )
    return found


def cluster_problems(gateway: GatewayConfig, cluster: ClusterConfig) -> list[Problem]:
    """An exporting stack's cluster runs the performance HPA profile: F1 creates the fleet's clusters with
    `--hpa-profile=performance`, and GKE exports a custom metric such as the KV-cache gauge the fleet balances on
    only with it (stacks/fleets/fleet.py G1); and is on the release channel GKE documents that export on
    (stacks/fleets/fleet.py EXPORT_CHANNEL: G1, G2). Its version is a version need (`needs_version`)."""
    if not gateway.fleet_export:
        return []
    found = []
    if cluster.hpa_profile != fleet.HPA_PROFILE:
        found.append(
            Problem(
                f"{NS}:cluster.hpaProfile",
                f"{fmt(cluster.hpa_profile or 'null')} with gateway.fleetExport: set it to {fleet.HPA_PROFILE} (the "
                "fleet's KV-cache metric is exported only with the performance HPA profile)",
            )
        )
    if cluster.release_channel != fleet.EXPORT_CHANNEL:
        found.append(
            Problem(
                f"{NS}:cluster.releaseChannel",
                f"{fmt(cluster.release_channel)} with gateway.fleetExport: set it to {fleet.EXPORT_CHANNEL}; GKE "
                "documents exporting a Pod's metric (the KV-cache gauge the fleet balances on) to the load balancer "
                f"only on clusters in the {fleet.EXPORT_CHANNEL.title()} channel",
            )
        )
    return found


def needs_version(gateway: GatewayConfig) -> bool:
    """The cluster must run MIN_VERSION or later (the gateway piece adds it to the cluster's version needs)."""
    return gateway.enabled and gateway.fleet_export


MIN_VERSION = fleet.EXPORT_MIN_GKE_VERSION
WHAT = "the minimum GKE version of the multi-cluster Inference Gateway and of exporting a metric to its load balancer"


def version_problem(cluster: ClusterConfig) -> list[Problem]:
    given = fmt(cluster.min_master_version) if cluster.min_master_version else "unset"
    return [
        Problem(
            f"{NS}:cluster.minMasterVersion",
            f"{given} with gateway.fleetExport: set it to {MIN_VERSION} or later, {WHAT}",
        )
    ]
