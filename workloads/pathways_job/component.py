"""A PathwaysJob workload (manifest from workloads.pathways_job.manifests): the job, the CPU node pool its head needs
in `default` mode, and its identity's access to its prefix of the stack bucket.

The controller runs every pod of the job on the host network, and GKE does not apply Workload Identity to
host-network pods (they get the node's identity). So the workload's own Google service account is the node
service account of the nodes that run it: its TPU pool (which serves it alone) and its head pool. The stack
creates that account before the pools (`components.platform`); here it gets `objectUser` on the bucket, limited by an
IAM condition to the workload's prefix.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.cluster import node_pool_security
from components.manifests import register_manifest
from components.serving import ServingWorkload, WorkloadDeps
from components.tpu_pool import gcfs_config
from stacks.facts import cpu_machines
from workloads.pathways_job import plan as pj
from workloads.pathways_job.commands import commands
from workloads.pathways_job.manifests import pathways_job


class PathwaysJob(ServingWorkload):
    head_pool: gcp.container.NodePool | None
    """The CPU node pool of the head pod (default mode)."""

    def __init__(
        self,
        name: str,
        *,
        plan: pj.PathwaysJobPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:PathwaysJob", name, plan=plan, deps=deps, opts=opts)
        self.service_name = None
        self.commands = commands(plan, deps.local_ports)
        node_service_account = deps.node_service_account
        assert node_service_account is not None, "its pool serves it alone, as an account of its own"
        grants = self.node_grants(plan.grants())

        self.head_pool = None
        machine = plan.head_machine
        if machine is not None and deps.cloud:  # local mode: the local cluster's nodes stand in
            self.head_pool = gcp.container.NodePool(
                f"{name}-head",
                gcp.container.NodePoolArgs(
                    name=plan.head_pool_name,
                    cluster=deps.cluster_name,
                    location=deps.location,
                    project=deps.project,
                    node_locations=[plan.pool.config.zone],  # beside the TPU slices
                    # from zero: the autoscaler adds the node while the head pod is pending, removes it after
                    autoscaling=gcp.container.NodePoolAutoscalingArgs(min_node_count=0, max_node_count=1),
                    initial_node_count=0,
                    node_config=gcp.container.NodePoolNodeConfigArgs(
                        machine_type=machine.name,
                        disk_type=cpu_machines.BOOT_DISK_TYPE,
                        labels=plan.head_selector,
                        # a batch job's head pool is its head's alone (PathwaysJobPlan.head_taint); in place
                        taints=[
                            gcp.container.NodePoolNodeConfigTaintArgs(
                                key=taint["key"], value=taint["value"], effect=pj.GKE_TAINT_EFFECTS[taint["effect"]]
                            )
                        ]
                        if (taint := plan.head_taint)
                        else None,
                        resource_labels={**deps.labels, "workload": plan.name},
                        **node_pool_security(node_service_account),
                        gcfs_config=gcfs_config(plan.pool),  # streams the head's images, as its TPU pool's nodes do
                    ),
                    management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
                    # a CPU machine is usually available for a surge node
                    upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(
                        strategy="SURGE", max_surge=1, max_unavailable=0
                    ),
                ),
                opts=pulumi.ResourceOptions(
                    parent=self, delete_before_replace=True, ignore_changes=["initialNodeCount"]
                ),
            )

        if not plan.paused:
            # Paused: no PathwaysJob, so its JobSet and pods are garbage-collected and the pools drain.
            job = pathways_job(plan)
            nodes = [*deps.node_pools, *([self.head_pool] if self.head_pool is not None else [])]
            register_manifest(
                f"{name}-job",
                job,
                # the CRD makes the spec immutable: a change replaces the job (same name, so delete first);
                # never before the controller, the nodes it runs on and its access to the bucket
                opts=self.k8s_opts(
                    *deps.addon("pathwaysJob"), *nodes, *grants, replace_on_changes=["spec"], delete_before_replace=True
                ),
            )
        self.register_outputs({"namespace": self.namespace, **self.commands})
