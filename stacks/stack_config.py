"""The validated stack config (`stacks.config.parse_stack_config`): each piece's config and plan, the workloads'
plans, and what the composition derives from them (namespaces, network policies, local ports)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stacks import addons as addon_registry
from stacks import gateway, local_ports, naming, network_policy, pod_security
from stacks.addons import AddonsConfig
from stacks.config_model import BucketConfig, ClusterConfig, GatewayConfig, MonitoringConfig
from stacks.pieces import addons as addons_piece
from stacks.pieces import bucket as bucket_piece
from stacks.pieces import cluster as cluster_piece
from stacks.pieces import gateway as gateway_piece
from stacks.pieces import monitoring as monitoring_piece
from stacks.pieces import network as network_piece
from stacks.pool_plan import PoolPlan
from stacks.workload_checks import PREEXISTING_NAMESPACES
from stacks.workload_plan import WorkloadPlan
from stacks.workload_type import WorkloadRegistry


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
    pools: tuple[PoolPlan, ...]
    labels: dict[str, str]
    addons: AddonsConfig = field(default_factory=lambda: addon_registry.settings_model()())
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    workloads: tuple[WorkloadPlan, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    workload_types: WorkloadRegistry = field(default_factory=WorkloadRegistry)
    """The workload types the config was parsed with (workloads/registry.py): what builds each workload."""
    paused: bool = False
    """Workloads at zero and TPU pools allowed to shrink to zero nodes; everything else stays."""
    decommission: bool = False
    """Protection lifted on purpose so that `pulumi destroy` can run on a staging/prod stack."""

    @property
    def local_ports(self) -> dict[str, dict[int, int]]:
        """Per workload: the local port of each Service port its port-forward commands forward, of its own across
        the stack (stacks/local_ports.py), from the plans as validated."""
        return local_ports.allocate([(w.name, w.forwarded_ports) for w in self.workloads])

    @property
    def identity_suffix(self) -> str:
        """naming.stack_identity_suffix of this stack: on every KSA that holds Google access."""
        return naming.stack_identity_suffix(self.pulumi_project, self.stack)

    @property
    def namespaces(self) -> list[str]:
        """Namespaces the stack creates for its workloads (never the ones every cluster has)."""
        return sorted({w.namespace for w in self.workloads} - PREEXISTING_NAMESPACES)

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
    def namespace_levels(self) -> dict[str, str]:
        """Pod Security level each workload namespace enforces: the strictest one all of its pods pass."""
        return {
            ns: pod_security.strictest_level(m for w in self.workloads if w.namespace == ns for m in w.pod_manifests())
            for ns in self.namespaces
        }

    @property
    def network_policies(self) -> dict[str, list[dict[str, Any]]]:
        """Per workload namespace: default-deny ingress, its own pods to each other, and each workload's allows."""
        return {
            ns: [
                *network_policy.namespace_baseline(ns),
                *(p for w in self.workloads if w.namespace == ns for p in w.ingress_allows()),
                *(p for w in self.gateway_workloads if w.namespace == ns for p in self._gateway_allows(w)),
            ]
            for ns in self.namespaces
        }

    def _gateway_allows(self, plan: WorkloadPlan) -> list[dict[str, Any]]:
        """The gateway's load balancer (its proxies and health checks are not pods of the cluster, so no `from`,
        as stacks/network_policy.py explains) to the serving pods' port and to the endpoint picker's ext-proc and
        gRPC health ports; paused, nothing is routed and nothing is opened."""
        if self.paused:
            return []
        backend = plan.gateway_backend()
        assert backend is not None  # gateway_workloads: only the workloads with a backend
        return [
            network_policy.allow_clients(
                f"{backend.name}-gateway", backend.namespace, backend.selector, [backend.port]
            ),
            network_policy.allow_clients(
                gateway.epp_name(backend.name),
                backend.namespace,
                gateway.epp_pod_labels(backend.name),
                [gateway.EPP_EXT_PROC_PORT, gateway.EPP_HEALTH_PORT],
            ),
        ]

    @property
    def kubernetes_minor(self) -> str:
        """The minor version objects are validated against (ClusterPlan.kubernetes_minor)."""
        return self.cluster_plan.kubernetes_minor

    @property
    def regional(self) -> bool:
        return self.cluster_location == self.region

    def pool(self, name: str) -> PoolPlan | None:
        return next((p for p in self.pools if p.name == name), None)
