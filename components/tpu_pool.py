"""One configured TPU pool: a GKE node pool per slice, everything derived from the catalog's slice shape.

Multi-host slices are atomic (GKE creates, repairs and deletes a slice as a unit), so each slice is its own
node pool, sized to the slice's host count and placed as the catalog says: COMPACT with the slice topology
(v4 .. v6e), or a workload policy shared by the pool's slices (TPU7x).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.cluster import node_pool_security
from stacks import naming
from stacks.pieces import tpu_pools
from stacks.pieces.cluster import ClusterPlan
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.pool_sizing import Sizing, sizing

POOL_LABEL = naming.POOL_LABEL
SLICE_LABEL = naming.SLICE_LABEL
RESERVATION_KEY = "compute.googleapis.com/reservation-name"
TYPE_TOKEN = "tpu-serving:tpu:TpuSlicePool"


def capacity_args(plan: PoolPlan) -> dict:
    """node_config fields of the pool's capacity mode."""
    pool = plan.config
    if pool.capacity == "spot":
        return {"spot": True}
    if pool.capacity == "reservation":
        assert pool.reservation  # validated in stacks/pieces/tpu_pools.py
        return {
            "reservation_affinity": gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="SPECIFIC_RESERVATION", key=RESERVATION_KEY, values=[pool.reservation]
            )
        }
    if pool.capacity == "flex-start":
        # Flex-start VMs come from Dynamic Workload Scheduler capacity, never from a reservation.
        return {
            "flex_start": True,
            "reservation_affinity": gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="NO_RESERVATION"
            ),
        }
    return {}


def gcfs_config(plan: PoolPlan) -> gcp.container.NodePoolNodeConfigGcfsConfigArgs:
    """GKE image streaming on the pool's nodes (`cluster.images.streaming`), sent either way so turning it off is a
    change the provider makes (google-beta v7.45.0 google-beta/services/container/node_config.go schemaGcfsConfig:
    `gcfs_config {enabled}`, enabled Required; node_pool updates send it in place). GKE streams only images in
    Artifact Registry, on Container-Optimized OS with containerd, the TPU node image
    (https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming "Requirements"); other images are pulled
    whole. That GKE streams images onto TPU VMs is not stated there: only a real deploy shows it (docs/deploying.md)."""
    return gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=plan.image_streaming)


def gke_sets_upgrade_strategy(plan: PoolPlan) -> bool:
    """GKE forces the SHORT_LIVED upgrade strategy on flex-start (and queued-provisioning) node pools."""
    return plan.config.capacity == "flex-start"


def upgrade_settings(plan: PoolPlan) -> gcp.container.NodePoolUpgradeSettingsArgs | None:
    """How GKE replaces the pool's nodes on upgrade; None where GKE decides (flex-start: SHORT_LIVED)."""
    if gke_sets_upgrade_strategy(plan):
        return None
    # A surge node would need spare TPU capacity (for multi-host, a whole second slice) that on-demand quota,
    # reservations and spot rarely have: replace in place instead.
    return gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=0, max_unavailable=1)


# The node pool's own upgrade exclusion (maintenance_policy.exclusion_until_end_of_support) is create-only in the
# provider: hashicorp/terraform-provider-google-beta@v7.45.0 (and @93c65b2d60, after the 8.0.0 merge):
# google-beta/services/container/resource_container_node_pool.go reads maintenance_policy only in expandNodePool
# (create); nodePoolUpdate has no HasChange for it, and resourceContainerNodePoolUpdate ends with a read of GKE's
# value. A change to it would plan as an update that does nothing and diff again on every preview. The stack no longer
# sends it (the cluster's exclusion holds every node pool, components/cluster.py, ClusterPlan.hold_scope); a pool
# created with it by an earlier version keeps it (the GKE API can update it, UpdateNodePoolRequest.maintenancePolicy,
# the provider does not), so the field is ignored rather than diffed forever (docs/operations.md "GKE upgrades").
CREATE_ONLY = ("maintenancePolicies",)
# The slice's shape: what the provider would update in place on a live pool (see TpuSlicePool), replaced instead.
REPLACED_ON = ("nodeConfig.machineType",)


# What GKE stores for a pool placed by a workload policy differs from what the stack sends, and the sources do not
# settle it. The provider flattens placement_policy.{type,tpu_topology} from GKE's answer verbatim, with no diff
# suppression (hashicorp/terraform-provider-google-beta v7.45.0 google-beta/services/container/
# resource_container_node_pool.go: schema "placement_policy", flattenNodePool). cluster-toolkit@v1.95.0 sends
# type COMPACT with the policy's name (modules/compute/resource-policy/outputs.tf); vllm-project/ci-infra#547 saw GKE
# store such a pool with policyName and tpuTopology but no type. So both fields are left to GKE after creation:
# neither is ForceNew there (only the block's presence and policy_name are), nodePoolUpdate never sends them, and
# the placement itself, the policy's name (which carries the topology, naming.workload_policy_name), still replaces
# the pool when it changes. The bridge drops the ignored attributes from the provider's diff
# (pulumi/pulumi-terraform-bridge pkg/tfshim/sdk-v2/instance_diff.go processIgnoreChanges).
WORKLOAD_POLICY_DRIFT = ("placementPolicy.type", "placementPolicy.tpuTopology")


def ignored_changes(plan: PoolPlan, autoscaled: bool) -> list[str]:
    """Fields GKE owns after creation, or the provider never updates (CREATE_ONLY), so a preview never proposes to
    change them back."""
    out = list(CREATE_ONLY)
    if autoscaled:
        out.append("initialNodeCount")  # create-only; the autoscaler owns the size afterwards
    if gke_sets_upgrade_strategy(plan):
        out.append("upgradeSettings")  # GKE reports SHORT_LIVED, which we do not send
    if plan.shape.uses_workload_policy:  # placed by a workload policy (placement_args)
        out.extend(WORKLOAD_POLICY_DRIFT)
    return out


def workload_policy_args(plan: PoolPlan, name: str, project: str) -> gcp.compute.ResourcePolicyArgs:
    """The regional workload policy that places a multi-host TPU7x slice.

    S7 (https://docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood): TPU7x multi-host node pools
    use a High throughput workload policy, applied as the node pool's placement policy, instead of a TPU
    topology. xpk@367c838 src/xpk/core/nodepool.py `ensure_resource_policy_exists`: `gcloud compute
    resource-policies create workload-policy --type=HIGH_THROUGHPUT --accelerator-topology=<topology>` in the
    zone's region. Field names: pulumi_gcp 10.2.0 compute.ResourcePolicyWorkloadPolicyArgs.
    """
    return gcp.compute.ResourcePolicyArgs(
        name=name,
        project=project,
        region=naming.region_of_zone(plan.config.zone),
        description=f"tpu-serving: placement of the {plan.shape.topology} slices of TPU pool {plan.name}",
        workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
            type="HIGH_THROUGHPUT", accelerator_topology=plan.shape.topology
        ),
    )


def placement_args(
    plan: PoolPlan, policy_name: pulumi.Input[str] | None
) -> gcp.container.NodePoolPlacementPolicyArgs | None:
    """A node pool's placement: none for one VM; COMPACT with the topology; or COMPACT naming a workload policy.

    pulumi_gcp requires `type`; cluster-toolkit@v1.95.0 modules/compute/resource-policy/outputs.tf sets COMPACT
    with a workload policy's name. tpu_topology is left out with a workload policy (S7: the policy replaces it;
    xpk passes neither --placement-type nor --tpu-topology then).
    """
    if not plan.shape.multi_host:
        return None
    if plan.shape.uses_workload_policy:
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", policy_name=policy_name)
    return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=plan.shape.topology)


def node_pool_args(
    plan: PoolPlan,
    index: int,
    *,
    cluster_name: pulumi.Input[str],
    location: str,
    project: str,
    size: Sizing,
    policy_name: pulumi.Input[str] | None,
    node_service_account: pulumi.Input[str],
    labels: dict[str, str],
) -> gcp.container.NodePoolArgs:
    """The GKE node pool of slice `index` of the pool: sized (`pool_sizing.sizing`), placed and secured."""
    shape = plan.shape
    return gcp.container.NodePoolArgs(
        name=plan.node_pool_names[index],
        cluster=cluster_name,
        location=location,
        project=project,
        node_locations=[plan.config.zone],
        node_count=size.node_count,
        initial_node_count=size.initial_node_count,
        autoscaling=(
            gcp.container.NodePoolAutoscalingArgs(min_node_count=size.min_nodes, max_node_count=size.max_nodes)
            if size.autoscaled
            else None
        ),
        placement_policy=placement_args(plan, policy_name),
        node_config=gcp.container.NodePoolNodeConfigArgs(
            machine_type=shape.machine_type,
            disk_type=shape.generation.boot_disk_type,
            labels={POOL_LABEL: plan.name, SLICE_LABEL: str(index)},
            resource_labels={**labels, "tpu-pool": plan.name, "tpu-slice": str(index)},
            **capacity_args(plan),
            **node_pool_security(node_service_account),
            gcfs_config=gcfs_config(plan),
        ),
        # Flex-start nodes cannot be repaired in place: a failed VM returns its capacity.
        management=gcp.container.NodePoolManagementArgs(
            auto_repair=plan.config.capacity != "flex-start", auto_upgrade=True
        ),
        upgrade_settings=upgrade_settings(plan),
    )


@dataclass(frozen=True)
class TpuPoolDeps:
    """What a TPU pool is built in: the cluster (its plan: name, location, project, labels; its created name and
    Kubernetes provider), the node service account its nodes run as, and whether
    the stack is paused (the pool may shrink to zero)."""

    cluster: ClusterPlan
    cluster_name: pulumi.Input[str]
    node_service_account: pulumi.Input[str]
    k8s_provider: k8s.Provider | None
    paused: bool = False
    resource_labels: dict[str, str] = field(default_factory=dict)
    """The pool's own resource labels on its node pools: the workloads on it (stacks/pieces/cost.py)."""
    cloud: bool = True
    """False in local mode (stacks/model/local_target.py): no node pools or workload policy (the local cluster's nodes
    stand in for them), only the pool's in-cluster objects (its ComputeClass)."""


class TpuSlicePool(pulumi.ComponentResource):
    node_pool_names: list[str]
    node_pools: list[gcp.container.NodePool]
    workload_policy: gcp.compute.ResourcePolicy | None
    """The workload policy of a multi-host TPU7x pool, shared by its slices; None otherwise."""
    compute_class: k8s.apiextensions.CustomResource | None
    """The ComputeClass of a pool whose capacity is a list (GKE creates its node pools); None otherwise."""

    def __init__(
        self,
        name: str,
        *,
        plan: PoolPlan,
        deps: TpuPoolDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The pool `plan` says (stacks/pieces/tpu_pools.py) in the cluster of `deps`, with its protection."""
        super().__init__(TYPE_TOKEN, name, None, opts)
        cluster, node_service_account = deps.cluster, deps.node_service_account
        protect, project = plan.protect, cluster.project
        self.node_pool_names = list(plan.node_pool_names)
        self.workload_policy = None
        policy_name: pulumi.Input[str] | None = None
        if plan.shape.uses_workload_policy and not deps.cloud:  # the name the policy would have
            policy_name = naming.workload_policy_name(cluster.name, plan.name, plan.shape.topology)
        elif plan.shape.uses_workload_policy:
            self.workload_policy = gcp.compute.ResourcePolicy(
                f"{name}-placement",
                workload_policy_args(
                    plan, naming.workload_policy_name(cluster.name, plan.name, plan.shape.topology), project
                ),
                opts=pulumi.ResourceOptions(parent=self, protect=protect),
            )
            policy_name = self.workload_policy.name
        self.compute_class = None
        if plan.compute_class:
            self.compute_class = self._compute_class(
                name, plan, node_service_account, policy_name, deps.k8s_provider, protect
            )
        # Pulumi names follow the GKE names' rule (naming.slice_node_pool_names), from the component's name; a
        # pool with a ComputeClass has no node pools of its own.
        own = (
            naming.slice_node_pool_names(name, plan.slices, plan.shape.multi_host)
            if plan.node_pool_names and deps.cloud
            else []
        )
        sizes = [sizing(plan, deps.paused, index) for index in range(len(own))]  # warm slices: a higher minimum
        self.node_pools = [
            gcp.container.NodePool(
                resource_name,
                node_pool_args(
                    plan,
                    index,
                    cluster_name=deps.cluster_name,
                    location=cluster.location,
                    project=project,
                    size=sizes[index],
                    policy_name=policy_name,
                    node_service_account=node_service_account,
                    labels={**cluster.labels, **deps.resource_labels},
                ),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    protect=protect,
                    delete_before_replace=True,
                    ignore_changes=ignored_changes(plan, sizes[index].autoscaled),
                    # not ForceNew, and never updated in place: without this a new topology on a pool that keeps
                    # its name would resize the slice and keep its old placement (google-beta v7.45.0
                    # resource_container_node_pool.go reads placement_policy only on create).
                    # nodeLocations is not ForceNew either: nodePoolUpdate sends a new zone as an in-place
                    # UpdateNodePool{Locations}, and GKE then creates nodes in the new zone and removes the old
                    # zone's ("Changing the locations for a node pool will result in nodes being either created or
                    # removed", container v1 UpdateNodePoolRequest.locations). For a TPU pool that deletes the
                    # serving hosts, and a slice lives in one zone with its own capacity there, so the stack treats
                    # a zone change as a new pool: a replacement, which `protect` refuses in staging and prod and
                    # the review explains (docs/operations.md "Moving a serving TPU pool").
                    # nodeConfig.machineType is not ForceNew either (Optional, Computed): nodePoolNodeConfigUpdate
                    # sends it (with the disk fields) as one UpdateNodePool (google-beta v7.45.0 and 93c65b2d60
                    # node_config.go, "updating GKE node pool disk_size_gb/disk_type/machine_type/..."), a machine
                    # type migration GKE runs node by node on the live pool. A single-host pool's new generation,
                    # topology or machine type would be that, not the replacement docs/operations.md describes,
                    # the review would count no recreation and `protect` would not stop it. So it is a replacement.
                    replace_on_changes=[*REPLACED_ON, "placementPolicy", "nodeLocations"],
                ),
            )
            for index, resource_name in enumerate(own)
        ]
        self.register_outputs({"nodePoolNames": self.node_pool_names, "computeClass": plan.compute_class})

    def _compute_class(
        self,
        name: str,
        plan: PoolPlan,
        node_service_account: pulumi.Input[str],
        policy_name: pulumi.Input[str] | None,
        k8s_provider: k8s.Provider | None,
        protect: bool,
    ) -> k8s.apiextensions.CustomResource:
        """The pool's ComputeClass (`stacks.pieces.tpu_pools.compute_class_manifest`): GKE creates its node pools for pending pods."""
        if k8s_provider is None:
            raise ValueError(f"TPU pool {plan.name}: a capacity list needs the cluster's Kubernetes provider")
        manifest = tpu_pools.compute_class_manifest(
            plan, node_service_account=node_service_account, policy_name=policy_name
        )
        return k8s.apiextensions.CustomResource(
            f"{name}-class",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=k8s_provider, protect=protect),
        )

    @property
    def capacity(self) -> list[pulumi.Resource]:
        """What a workload on this pool waits for: its node pools, or its ComputeClass."""
        return [*self.node_pools, *([self.compute_class] if self.compute_class is not None else [])]
