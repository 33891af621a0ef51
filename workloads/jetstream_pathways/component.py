"""A JetStream + MaxText + Pathways serving workload (workloads/jetstream_pathways/manifests.py, its commands
workloads/jetstream_pathways/commands.py)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from components.monitoring import create_pod_monitoring
from components.serving import ServingWorkload, WorkloadDeps
from workloads.jetstream_pathways import manifests
from workloads.jetstream_pathways.commands import commands
from workloads.jetstream_pathways.plan import PathwaysPlan


class JetStreamPathways(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: PathwaysPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:JetStreamPathways", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.service_name
        self.commands = commands(plan, deps.local_ports)

        # Leader and workers write Pathways scratch under the workload's prefix and read the checkpoint.
        # (a checkpoint in another bucket: the whole bucket, aliased to where the component itself registered it
        # until issue 36 #2, PathwaysPlan.grants)
        identity = self.identity(grants=plan.grants())

        lws = manifests.leader_worker_set(plan)
        lws_resource = register_manifest(
            f"{name}-lws",
            lws,
            # never before the LWS CRD/webhook, the slices it needs, and its identity; awaited until every group is
            # ready (LWS_AVAILABLE), for as long as a group takes from no capacity (ServingWorkload.server_timeouts)
            opts=self.k8s_opts(
                *deps.addon("lws"), *deps.node_pools, identity.ksa, custom_timeouts=self.server_timeouts()
            ),
        )
        svc = manifests.service(plan)
        k8s.core.v1.Service(
            f"{name}-svc",
            metadata=svc["metadata"],
            spec=svc["spec"],
            opts=self.k8s_opts(lws_resource, custom_timeouts=self.server_timeouts()),
        )
        create_pod_monitoring(
            f"{name}-podmonitoring",
            manifests.pod_monitoring(plan),
            provider=deps.provider,
            parent=self,
            depends_on=self._namespace_deps,
        )
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
