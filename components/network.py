"""The cluster's network: a VPC with one subnet (Pod and Service secondary ranges) and Cloud NAT, or existing ones.

Private nodes have no public IPs, so Cloud NAT is what lets them pull images from registries outside Google
and reach model hubs. Private Google Access lets them reach GCS and Artifact Registry without NAT.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks.pieces.network import NetworkPlan


class Network(pulumi.ComponentResource):
    network: pulumi.Output[str]
    """Self link of the VPC, for the cluster's `network`."""
    subnetwork: pulumi.Output[str]
    """Self link of the subnet, for the cluster's `subnetwork`."""
    pods_range_name: str
    services_range_name: str
    proxy_subnet: gcp.compute.Subnetwork | None
    """The proxy-only subnet of a regional gateway, when the stack creates it; the Gateway depends on it."""

    def __init__(
        self,
        name: str,
        *,
        plan: NetworkPlan,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The network `plan` says (stacks/pieces/network.py); with `plan.proxy_subnet_cidr`, the proxy-only subnet a
        regional gateway needs in this VPC. It depends on nothing else the stack builds."""
        super().__init__("tpu-serving:network:Network", name, None, opts)
        config, default_name, project, region = plan.config, plan.name, plan.project, plan.region
        proxy_subnet_cidr, flow_logs = plan.proxy_subnet_cidr, plan.flow_logs
        child = pulumi.ResourceOptions(parent=self)
        self.pods_range_name = config.pods_range_name
        self.services_range_name = config.services_range_name
        self.proxy_subnet = None

        if not config.create:
            self.network = pulumi.Output.from_input(_self_link(project, "global", "networks", plan.network_name))
            self.subnetwork = pulumi.Output.from_input(
                _self_link(project, f"regions/{region}", "subnetworks", plan.subnetwork_name)
            )
            if plan.nat:
                self._nat(name, default_name, project, region, self.network, self.subnetwork)
            if proxy_subnet_cidr:
                self._proxy_subnet(name, default_name, project, region, self.network, proxy_subnet_cidr)
            self.register_outputs({"network": self.network, "subnetwork": self.subnetwork})
            return

        vpc = gcp.compute.Network(
            f"{name}-vpc",
            gcp.compute.NetworkArgs(
                name=plan.network_name,
                project=project,
                auto_create_subnetworks=False,
                routing_mode="REGIONAL",
                description="tpu-serving cluster network",
            ),
            opts=child,
        )
        subnet = gcp.compute.Subnetwork(
            f"{name}-subnet",
            gcp.compute.SubnetworkArgs(
                name=plan.subnetwork_name,
                project=project,
                region=region,
                network=vpc.id,
                ip_cidr_range=config.nodes_cidr,
                private_ip_google_access=True,
                # VPC flow logs (pulumi-gcp 10.2.0 compute.SubnetworkLogConfigArgs; a log_config block enables them)
                log_config=(
                    gcp.compute.SubnetworkLogConfigArgs(
                        aggregation_interval="INTERVAL_5_SEC", flow_sampling=0.5, metadata="INCLUDE_ALL_METADATA"
                    )
                    if flow_logs
                    else None
                ),
                secondary_ip_ranges=[
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(
                        range_name=config.pods_range_name, ip_cidr_range=config.pods_cidr
                    ),
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(
                        range_name=config.services_range_name, ip_cidr_range=config.services_cidr
                    ),
                ],
            ),
            opts=child,
        )
        if plan.nat:
            self._nat(name, default_name, project, region, vpc.id, subnet.id)
        if proxy_subnet_cidr:
            self._proxy_subnet(name, default_name, project, region, vpc.id, proxy_subnet_cidr)
        self.network = vpc.self_link
        self.subnetwork = subnet.self_link
        self.register_outputs({"network": self.network, "subnetwork": self.subnetwork})

    def _proxy_subnet(
        self, name: str, default_name: str, project: str, region: str, network: pulumi.Input[str], cidr: str
    ) -> None:
        """The proxy-only subnet: the Envoy proxies of the regional (internal or external) Application Load
        Balancer GKE builds for a regional Gateway take their addresses from it. GKE's Gateway requirements:
        "If you are using the regional or cross-region GatewayClasses, you must enable a proxy-only subnet"
        (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources); one ACTIVE
        REGIONAL_MANAGED_PROXY subnet per region and VPC (https://cloud.google.com/load-balancing/docs/proxy-only-subnets).
        """
        self.proxy_subnet = gcp.compute.Subnetwork(
            f"{name}-proxy-only",
            gcp.compute.SubnetworkArgs(
                name=f"{default_name}-proxy-only",
                project=project,
                region=region,
                network=network,
                ip_cidr_range=cidr,
                purpose="REGIONAL_MANAGED_PROXY",
                role="ACTIVE",
                description="tpu-serving: proxy-only subnet of the inference gateway's regional load balancer",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _nat(
        self,
        name: str,
        default_name: str,
        project: str,
        region: str,
        network: pulumi.Input[str],
        subnetwork: pulumi.Input[str],
    ) -> None:
        """A Cloud Router and NAT for all ranges of the cluster's subnet (created or existing), and only that one."""
        child = pulumi.ResourceOptions(parent=self)
        router = gcp.compute.Router(
            f"{name}-router",
            gcp.compute.RouterArgs(name=f"{default_name}-router", project=project, region=region, network=network),
            opts=child,
        )
        gcp.compute.RouterNat(
            f"{name}-nat",
            gcp.compute.RouterNatArgs(
                name=f"{default_name}-nat",
                project=project,
                region=region,
                router=router.name,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[
                    gcp.compute.RouterNatSubnetworkArgs(name=subnetwork, source_ip_ranges_to_nats=["ALL_IP_RANGES"])
                ],
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
            ),
            opts=child,
        )


def _self_link(project: str, scope: str, kind: str, name: str) -> str:
    """A name or a full path/link as given; a bare name becomes a project-relative path."""
    if "/" in name:
        return name
    return f"projects/{project}/{scope}/{kind}/{name}"
