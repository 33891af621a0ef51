"""The GKE Standard cluster: control plane, a small autoscaled CPU system pool, and the Kubernetes provider.

TPU node pools are separate components (`components.tpu_pool`); the default node pool is removed at creation.
Secure defaults: Workload Identity, GKE metadata server on every pool, shielded nodes with secure boot, private
nodes, Dataplane V2 (enforces NetworkPolicy), a dedicated node service account, and a control plane reached through
its IAM-gated DNS-based endpoint with the IP endpoint closed to the internet (`control_plane_access`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.network import Network
from components.node_identity import NodeAccountDeps, NodeServiceAccount
from stacks import naming
from stacks.facts import cpu_machines, kms
from stacks.model.config_model import ClusterConfig
from stacks.pieces import cluster as cluster_piece
from stacks.pieces.cluster import ClusterPlan
from stacks.security.kubeconfig import gke_kubeconfig

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
LOGGING_COMPONENTS = ["SYSTEM_COMPONENTS", "WORKLOADS"]
# kube-state metrics for the serving dashboard (replicas, HPA) need Managed Prometheus, which is on.
MONITORING_COMPONENTS = ["SYSTEM_COMPONENTS", "STORAGE", "POD", "DEPLOYMENT", "STATEFULSET", "DAEMONSET", "HPA"]


def node_pool_security(service_account: pulumi.Input[str]) -> dict:
    """Node config fields every pool shares: own service account, GKE metadata server, shielded VMs with secure
    boot, and no kubelet read-only port (10255 serves pod and node data without authentication; pulumi-gcp 10.2.0
    NodePoolNodeConfigKubeletConfigArgs.insecure_kubelet_readonly_port_enabled: "It is strongly recommended to set
    this to FALSE"; CIS GKE Benchmark 3.2.4)."""
    return dict(
        kubelet_config=gcp.container.NodePoolNodeConfigKubeletConfigArgs(
            insecure_kubelet_readonly_port_enabled="FALSE"
        ),
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],  # access is decided by IAM roles, not scopes
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
    )


def control_plane_access(plan: ClusterPlan) -> dict:
    """Cluster arguments deciding who reaches the control plane and how they authenticate.

    dns (default): the DNS-based endpoint takes user traffic (IAM checks container.clusters.connect before RBAC);
    the IP endpoint stays for the nodes but master authorized networks are enforced with only the listed CIDRs and
    no Google Cloud public addresses, and with private nodes and no CIDRs the public IP endpoint is off
    (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation; CIS GKE 5.6.4 "Use DNS based
    access or private GKE control plane endpoints"). ip (dev only): the public IP endpoint, open unless CIDRs are
    listed. Either way no client certificates and no legacy ABAC (GKE hardening guide); Dataplane V2 enforces
    NetworkPolicy itself, so the Calico `network_policy` setting and add-on stay off."""
    config, authorized = plan.config, plan.authorized_networks
    cidrs = [
        gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=cidr, display_name=display_name)
        for cidr, display_name in authorized
    ]
    dns = config.control_plane_endpoint == "dns"
    return dict(
        control_plane_endpoints_config=(
            gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True
                ),
                ip_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(enabled=True),
            )
            if dns
            else None
        ),
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=config.private_nodes,
            enable_private_endpoint=cluster_piece.private_endpoint(config),
        ),
        master_authorized_networks_config=(
            gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=cidrs or None, gcp_public_cidrs_access_enabled=False
            )
            if cluster_piece.authorized_networks_enforced(config)
            else None
        ),
        master_auth=gcp.container.ClusterMasterAuthArgs(
            client_certificate_config=gcp.container.ClusterMasterAuthClientCertificateConfigArgs(
                issue_client_certificate=False
            )
        ),
        enable_legacy_abac=False,
        network_policy=gcp.container.ClusterNetworkPolicyArgs(enabled=False, provider="PROVIDER_UNSPECIFIED"),
    )


# cluster-toolkit's blueprints hold minor and node upgrades the same way (exclusion "no-minor-or-node-upgrades-
# indefinite", scope NO_MINOR_OR_NODE_UPGRADES, end_time_behavior UNTIL_END_OF_SUPPORT; ClusterPlan.hold_scope says why
# no narrower scope). The name stays, so a stack that had the narrower scope is updated in place.
HOLD_EXCLUSION = "tpu-serving-hold-minor-and-node-upgrades"


def maintenance_policy(plan: ClusterPlan) -> gcp.container.ClusterMaintenancePolicyArgs | None:
    """The window, and the exclusion that keeps GKE from upgrading the minor version or any node pool (a node
    upgrade recreates a multi-host slice whole) until an operator upgrades deliberately. Sent only with a window:
    the provider refuses a maintenance_policy without exactly one of daily_maintenance_window, recurring_window and
    recurring_maintenance_window (each carries ExactlyOneOf over the three in
    hashicorp/terraform-provider-google-beta google-beta/services/container/resource_container_cluster.go, v7.45.0
    and the v8 line; pulumi-gcp 10.2.0 ClusterMaintenancePolicyArgs: "one of ... is required if a
    `maintenance_policy` block is supplied"); a preview fails before any call to Google otherwise."""
    maintenance = plan.config.maintenance
    window = plan.maintenance_window
    exclusions = (
        [
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=HOLD_EXCLUSION,
                start_time=maintenance.hold_start,
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=plan.hold_scope, end_time_behavior="UNTIL_END_OF_SUPPORT"
                ),
            )
        ]
        if plan.hold_minor_and_node_upgrades
        else None
    )
    if window is None:  # no hold either (ClusterPlan.maintenance_window): GKE's default, no policy
        return None
    return gcp.container.ClusterMaintenancePolicyArgs(
        recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=window.start, end_time=window.end, recurrence=window.recurrence
        ),
        maintenance_exclusions=exclusions,
    )


def dns_endpoint(endpoints) -> str:
    """The cluster's DNS endpoint (`gke-<id>.<location>.gke.goog`), from the computed endpoints config."""
    dns = endpoints.dns_endpoint_config if endpoints else None
    if dns is None or not dns.endpoint:
        raise ValueError("the cluster reports no DNS endpoint (controlPlaneEndpointsConfig.dnsEndpointConfig)")
    return dns.endpoint


def default_pool_node_config(service_account: pulumi.Input[str]) -> gcp.container.ClusterNodeConfigArgs:
    """The default node pool exists only while the cluster is created (it is removed, and `nodeConfig` ignored
    afterwards); it gets the same safe identity as every pool (`node_pool_security`)."""
    return gcp.container.ClusterNodeConfigArgs(
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(mode="GKE_METADATA"),
        shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        kubelet_config=gcp.container.ClusterNodeConfigKubeletConfigArgs(insecure_kubelet_readonly_port_enabled="FALSE"),
    )


def cluster_network_args(network: Network) -> dict:
    """VPC-native on the stack's subnet and its secondary ranges, with Dataplane V2 (which enforces NetworkPolicy)."""
    return dict(
        network=network.network,
        subnetwork=network.subnetwork,
        networking_mode="VPC_NATIVE",
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=network.pods_range_name,
            services_secondary_range_name=network.services_range_name,
        ),
        datapath_provider="ADVANCED_DATAPATH",
    )


def cluster_security_args(plan: ClusterPlan) -> dict:
    """Workload Identity, shielded nodes, Binary Authorization, intranode visibility and who reaches the control
    plane (`control_plane_access`)."""
    config = plan.config
    return dict(
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
            workload_pool=naming.workload_pool(plan.project)
        ),
        enable_shielded_nodes=True,
        # Binary Authorization: the project's singleton policy, enforced only when asked for (a policy that does
        # not admit the pinned images would block every pod)
        binary_authorization=gcp.container.ClusterBinaryAuthorizationArgs(
            evaluation_mode="PROJECT_SINGLETON_POLICY_ENFORCE" if config.binary_authorization else "DISABLED"
        ),
        # Pod-to-pod traffic on one node goes through the VPC (flow logs, firewall rules see it); on in prod.
        enable_intranode_visibility=plan.intranode_visibility,
        # Application-layer Secrets encryption with the configured key; explicitly off otherwise, so removing the
        # key decrypts rather than leaving the last state (pulumi-gcp container.ClusterDatabaseEncryptionArgs:
        # state ENCRYPTED or DECRYPTED, key_name)
        database_encryption=gcp.container.ClusterDatabaseEncryptionArgs(
            state="ENCRYPTED" if config.secrets_encryption_key else "DECRYPTED",
            key_name=config.secrets_encryption_key,
        ),
        **control_plane_access(plan),
    )


def secrets_key_access(
    name: str, config: ClusterConfig, project: str, parent: pulumi.Resource
) -> list[pulumi.Resource]:
    """GKE's service agent (service-<project number>@container-engine-robot) may use the Secrets encryption key:
    the cluster is created only after (https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets:
    grant the GKE service agent roles/cloudkms.cryptoKeyEncrypterDecrypter on the key). A member, not the key's
    policy. Empty without a key."""
    if not config.secrets_encryption_key:
        return []
    number = gcp.organizations.get_project_output(project_id=project).number
    return [
        gcp.kms.CryptoKeyIAMMember(
            name,
            gcp.kms.CryptoKeyIAMMemberArgs(
                crypto_key_id=config.secrets_encryption_key,
                role=kms.ENCRYPTER_DECRYPTER,
                member=number.apply(kms.gke_agent_member),
            ),
            opts=pulumi.ResourceOptions(parent=parent),
        )
    ]


def cluster_observability_args() -> dict:
    """Cloud Logging of system components and workloads; Cloud Monitoring with Managed Prometheus."""
    return dict(
        logging_config=gcp.container.ClusterLoggingConfigArgs(enable_components=LOGGING_COMPONENTS),
        monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
            enable_components=MONITORING_COMPONENTS,
            managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
        ),
    )


def cluster_addons_args(gateway_api: bool) -> dict:
    """GKE add-ons: no Calico (Dataplane V2 enforces NetworkPolicy), the GCS FUSE CSI driver, and with
    `gateway_api` the Gateway API and the HTTP load-balancing add-on the GKE Gateway controller needs."""
    return dict(
        addons_config=gcp.container.ClusterAddonsConfigArgs(
            network_policy_config=gcp.container.ClusterAddonsConfigNetworkPolicyConfigArgs(disabled=True),
            gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(enabled=True),
            http_load_balancing=(
                gcp.container.ClusterAddonsConfigHttpLoadBalancingArgs(disabled=False) if gateway_api else None
            ),
        ),
        # pulumi-gcp 10.2.0 container.ClusterGatewayApiConfigArgs(channel): CHANNEL_STANDARD installs the Gateway
        # API's standard-channel CRDs and GKE's GatewayClasses (gcloud --gateway-api=standard).
        gateway_api_config=(
            gcp.container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD") if gateway_api else None
        ),
    )


def autoscaling_and_images_args(plan: ClusterPlan) -> dict:
    """The HPA profile and the image-streaming default of node pools the cluster's own config does not describe.

    - `pod_autoscaling.hpa_profile` (google-beta v7.45.0 google-beta/services/container/resource_container_cluster.go:
      Required inside the block, StringInSlice NONE, PERFORMANCE; PERFORMANCE "support[s] a higher number of HPAs per
      cluster and faster metrics collection for workload autoscaling"). Null leaves the block out (GKE's default).
    - `node_pool_defaults.node_config_defaults.gcfs_config` (same file: the cluster's DesiredGcfsConfig, updated in
      place): image streaming for node pools created later, which GKE creates for a ComputeClass pool (none of the
      ComputeClass fields the stack relies on, stacks/serving/compute_class.py C1, is about image streaming; that GKE's
      auto-created pools take this default only a real deploy shows). The stack's own node pools set it themselves
      (components/tpu_pool.py gcfs_config)."""
    config = plan.config
    return dict(
        pod_autoscaling=(
            gcp.container.ClusterPodAutoscalingArgs(hpa_profile=config.hpa_profile) if config.hpa_profile else None
        ),
        node_pool_defaults=gcp.container.ClusterNodePoolDefaultsArgs(
            node_config_defaults=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsArgs(
                gcfs_config=gcp.container.ClusterNodePoolDefaultsNodeConfigDefaultsGcfsConfigArgs(
                    enabled=config.images.streaming
                )
            )
        ),
    )


def cluster_args(
    plan: ClusterPlan, *, network: Network, node_service_account: pulumi.Input[str]
) -> gcp.container.ClusterArgs:
    """The GKE cluster's arguments: each group of settings comes from its own function above."""
    config = plan.config
    return gcp.container.ClusterArgs(
        name=plan.name,
        location=plan.location,
        project=plan.project,
        description="tpu-serving: LLM serving on Cloud TPUs",
        **cluster_network_args(network),
        remove_default_node_pool=True,
        initial_node_count=1,
        node_config=default_pool_node_config(node_service_account),
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel=config.release_channel),
        maintenance_policy=maintenance_policy(plan),
        min_master_version=config.min_master_version,
        **cluster_security_args(plan),
        **cluster_observability_args(),
        **cluster_addons_args(plan.gateway_api),
        **autoscaling_and_images_args(plan),
        resource_labels=plan.labels,
        # GKE cost allocation (stacks/pieces/cost.py): the billing export by namespace and Kubernetes label
        cost_management_config=gcp.container.ClusterCostManagementConfigArgs(enabled=plan.cost_allocation),
        deletion_protection=plan.deletion_protection,
    )


def system_pool_args(
    plan: ClusterPlan, *, cluster: pulumi.Input[str], service_account: pulumi.Input[str]
) -> gcp.container.NodePoolArgs:
    """The autoscaled CPU pool controllers and adapters run on, labelled so they select it (never TPU nodes)."""
    system, size = plan.config.system_pool, plan.system_pool
    return gcp.container.NodePoolArgs(
        name=naming.SYSTEM_NODE_POOL,
        cluster=cluster,
        location=plan.location,
        project=plan.project,
        # Totals over the pool's zones, as configured (min/max_node_count would be per zone: x3 regional).
        autoscaling=gcp.container.NodePoolAutoscalingArgs(
            total_min_node_count=size.total_min, total_max_node_count=size.total_max, location_policy="BALANCED"
        ),
        initial_node_count=size.initial_per_zone,
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=system.machine_type,
            disk_size_gb=system.disk_size_gb,
            disk_type=cpu_machines.BOOT_DISK_TYPE,
            labels=naming.SYSTEM_POOL_SELECTOR,
            resource_labels=plan.labels,
            **node_pool_security(service_account),
        ),
        management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
        upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=1, max_unavailable=0),
    )


@dataclass(frozen=True)
class ClusterDeps:
    """What the cluster is built on, and the image repositories its nodes read (components/images.py)."""

    network: Network
    node_account: NodeAccountDeps = field(default_factory=NodeAccountDeps)


class Cluster(pulumi.ComponentResource):
    name: pulumi.Output[str]
    location: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """Secret. Authenticates with gke-gcloud-auth-plugin."""
    node_service_account: pulumi.Output[str]
    provider: k8s.Provider
    """The Kubernetes provider for this cluster; pass it to every Kubernetes resource."""
    gke: gcp.container.Cluster
    system_pool: gcp.container.NodePool
    """Controllers and adapters run here; depend on it so their rollouts do not wait on an empty cluster."""

    def __init__(
        self,
        name: str,
        *,
        plan: ClusterPlan,
        deps: ClusterDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The cluster `plan` says (stacks/pieces/cluster.py) on the network in `deps`. With `plan.gateway_api`, the
        Gateway API (standard channel) and the HTTP load-balancing add-on, which the GKE Gateway controller needs
        (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources: "Your cluster must have
        the HttpLoadBalancing add-on enabled")."""
        super().__init__("tpu-serving:cluster:Cluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        config, project, location = plan.config, plan.project, plan.location

        nodes = NodeServiceAccount(f"{name}-nodes", plan=plan.nodes, deps=deps.node_account, opts=child)
        self.gke = gcp.container.Cluster(
            f"{name}-gke",
            cluster_args(plan, network=deps.network, node_service_account=nodes.email),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=plan.protect,
                # An explicit name cannot exist twice: a replacement must delete first.
                delete_before_replace=True,
                ignore_changes=["nodeConfig"],  # the default pool's, which exists only during creation
                depends_on=secrets_key_access(f"{name}-secrets-key", config, project, self),
            ),
        )
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            system_pool_args(plan, cluster=self.gke.name, service_account=nodes.email),
            # initial_node_count is create-only; the autoscaler owns the size afterwards.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True, ignore_changes=["initialNodeCount"]),
        )
        self.name = self.gke.name
        self.location = self.gke.location
        self.node_service_account = nodes.email
        self._connect(name, project=project, location=location, dns=plan.dns_endpoint)
        self.register_outputs(
            {
                "name": self.name,
                "location": self.location,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "nodeServiceAccount": self.node_service_account,
            }
        )

    def _connect(self, name: str, *, project: str, location: str, dns: bool) -> None:
        """The control plane's endpoint, a kubeconfig for it (secret) and the Kubernetes provider that uses it."""
        if dns:
            # The DNS endpoint serves a publicly trusted certificate: no cluster CA in the kubeconfig.
            self.endpoint = self.gke.control_plane_endpoints_config.apply(dns_endpoint)
            ca = pulumi.Output.from_input(None)
        else:
            self.endpoint = self.gke.endpoint
            ca = self.gke.master_auth.cluster_ca_certificate
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(self.gke.name, self.endpoint, ca).apply(
                lambda args: gke_kubeconfig(f"gke_{project}_{location}_{args[0]}", args[1], args[2])
            )
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(kubeconfig=self.kubeconfig, enable_server_side_apply=True),
            opts=pulumi.ResourceOptions(parent=self),
        )
