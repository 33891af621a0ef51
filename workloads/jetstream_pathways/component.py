"""A JetStream + MaxText + Pathways serving workload (manifests from workloads.jetstream_pathways.plan)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from components.monitoring import create_pod_monitoring
from components.serving import ServingWorkload, WorkloadDeps
from workloads.jetstream_pathways import plan as jp


class JetStreamPathways(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: jp.PathwaysPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:JetStreamPathways", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.service_name
        self.commands = jp.commands(plan, deps.local_ports)

        # Leader and workers write Pathways scratch under the workload's prefix and read the checkpoint.
        grants = plan.grants()
        identity = self.identity(grants=[g for g in grants if g.prefix])
        # A checkpoint in another bucket: that whole bucket, under the name and parent this grant always had
        # (stacks.security.bucket_access.read_grant `other_key`).
        self.bucket_grants(
            name, [g for g in grants if not g.prefix], identity.email.apply(lambda e: f"serviceAccount:{e}")
        )

        lws = jp.leader_worker_set(plan)
        register_manifest(
            f"{name}-lws",
            lws,
            # never before the LWS CRD/webhook, the slices it needs, and its identity
            opts=self.k8s_opts(*deps.addon("lws"), *deps.node_pools, identity.ksa),
        )
        svc = jp.service(plan)
        k8s.core.v1.Service(f"{name}-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts())
        create_pod_monitoring(
            f"{name}-podmonitoring",
            jp.pod_monitoring(plan),
            provider=deps.provider,
            parent=self,
            depends_on=self._namespace_deps,
        )
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
