"""The validated stack config (`stacks.config.parse_stack_config`): each piece's config and plan (the workloads'
namespaces, their network policies and local ports are the namespaces piece's), and the workloads' plans."""

from __future__ import annotations

from dataclasses import dataclass, field

from stacks import addons as addon_registry
from stacks import naming
from stacks.addons import AddonsConfig
from stacks.facts.images import ImageMirror
from stacks.model.config_model import BucketConfig, ClusterConfig, CostConfig, GatewayConfig, MonitoringConfig
from stacks.model.local_target import LocalConfig
from stacks.pieces import addons as addons_piece
from stacks.pieces import alerts as alerts_piece
from stacks.pieces import bucket as bucket_piece
from stacks.pieces import cluster as cluster_piece
from stacks.pieces import cost as cost_piece
from stacks.pieces import gateway as gateway_piece
from stacks.pieces import monitoring as monitoring_piece
from stacks.pieces import namespaces as namespaces_piece
from stacks.pieces import network as network_piece
from stacks.pieces import node_identity as node_identity_piece
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadRegistry


@dataclass(frozen=True)
class StackConfig:
    stack: str
    pulumi_project: str
    gcp_project: str
    region: str
    environment: str
    cluster: ClusterConfig
    cluster_plan: cluster_piece.ClusterPlan
    network_plan: network_piece.NetworkPlan
    bucket: BucketConfig
    bucket_plan: bucket_piece.BucketPlan
    monitoring_plan: monitoring_piece.MonitoringPlan
    gateway_plan: gateway_piece.GatewayPlan
    addons_plan: addons_piece.AddonsPlan
    namespaces_plan: namespaces_piece.NamespacesPlan
    alerts_plan: alerts_piece.AlertsPlan
    workload_node_accounts: dict[str, node_identity_piece.NodeAccountPlan]
    """By workload name: the node service account of each workload whose pods run on the host network (its pool's)."""
    pools: tuple[PoolPlan, ...]
    labels: dict[str, str]
    addons: AddonsConfig = field(default_factory=lambda: addon_registry.settings_model()())
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    cost_plan: cost_piece.CostPlan = field(default_factory=cost_piece.CostPlan)
    """Cost allocation, the workload labels of each TPU pool's node pools, the budget (stacks/pieces/cost.py)."""
    workloads: tuple[WorkloadPlan, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    workload_types: WorkloadRegistry = field(default_factory=WorkloadRegistry)
    """The workload types the config was parsed with (workloads/registry.py): what builds each workload."""
    paused: bool = False
    """Workloads at zero and TPU pools allowed to shrink to zero nodes; everything else stays."""
    decommission: bool = False
    """Protection lifted on purpose so that `pulumi destroy` can run on a staging/prod stack."""
    image_mirror: ImageMirror | None = None
    """cluster.images.mirror: the remote repositories pods pull the pinned public images through."""
    local: LocalConfig | None = None
    """tpu-serving:local: only the Kubernetes layer, applied to a cluster of the user's own, Google Cloud stood in
    (stacks/model/local_target.py); None: the whole stack on GKE."""

    @property
    def on_local_cluster(self) -> bool:
        """Local mode (tpu-serving:local): only the Kubernetes layer, on the user's own cluster."""
        return self.local is not None

    @property
    def local_ports(self) -> dict[str, dict[int, int]]:
        """Per workload: the local port of each Service port its port-forward commands forward (NamespacesPlan)."""
        return self.namespaces_plan.local_ports

    @property
    def identity_suffix(self) -> str:
        """naming.stack_identity_suffix of this stack: on every KSA that holds Google access."""
        return naming.stack_identity_suffix(self.pulumi_project, self.stack)

    @property
    def namespaces(self) -> list[str]:
        """Namespaces the stack creates for its workloads (never the ones every cluster has)."""
        return self.namespaces_plan.names

    @property
    def gateway_workloads(self) -> list[WorkloadPlan]:
        """Workloads served through the Inference Gateway: those whose plan offers a gateway backend (vllm, unless
        the workload opts out), and only when tpu-serving:gateway is enabled."""
        return gateway_piece.served(self.gateway, self.workloads)

    @property
    def proxy_subnet_created(self) -> bool:
        """The stack creates the proxy-only subnet the regional gateway needs."""
        return gateway_piece.proxy_subnet_created(self.gateway)

    @property
    def cluster_name(self) -> str:
        return self.cluster_plan.name

    @property
    def cluster_location(self) -> str:
        return self.cluster_plan.location

    @property
    def bucket_name(self) -> str:
        return self.bucket_plan.name

    @property
    def bucket_force_destroy(self) -> bool:
        return self.bucket_plan.force_destroy

    @property
    def kubernetes_minor(self) -> str:
        """The minor version objects are validated against (ClusterPlan.kubernetes_minor)."""
        return self.cluster_plan.kubernetes_minor

    @property
    def regional(self) -> bool:
        return self.cluster_location == self.region

    def pool(self, name: str) -> PoolPlan | None:
        return next((p for p in self.pools if p.name == name), None)
