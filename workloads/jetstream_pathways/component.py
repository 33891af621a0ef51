"""A JetStream + MaxText + Pathways serving workload (manifests from workloads.jetstream_pathways.plan)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.monitoring import create_pod_monitoring
from components.serving import ServingWorkload
from components.workload_identity import register_grants
from workloads.jetstream_pathways import plan as jp


class JetStreamPathways(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: jp.PathwaysPlan,
        project: str,
        stack: str,
        bucket: pulumi.Input[str],
        provider: k8s.Provider,
        namespace: pulumi.Resource | None,
        lws_release: Sequence[pulumi.Resource],
        node_pools: Sequence[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "tpu-serving:workloads:JetStreamPathways",
            name,
            plan=plan,
            provider=provider,
            namespace=namespace,
            opts=opts,
        )
        self.service_name = plan.service_name
        self.commands = jp.commands(plan)

        # Leader and workers write Pathways scratch under the workload's prefix and read the checkpoint.
        grants = plan.grants()
        identity = self.identity(project=project, stack=stack, bucket=bucket, grants=[g for g in grants if g.prefix])
        # A checkpoint in another bucket: that whole bucket, under the name and parent this grant always had
        # (stacks.bucket_access.read_grant `other_key`).
        register_grants(
            name,
            [g for g in grants if not g.prefix],
            identity.email.apply(lambda e: f"serviceAccount:{e}"),
            stack_bucket_name=plan.bucket,
            stack_bucket=bucket,
            parent=self,
        )

        lws = jp.leader_worker_set(plan)
        k8s.apiextensions.CustomResource(
            f"{name}-lws",
            api_version=lws["apiVersion"],
            kind=lws["kind"],
            metadata=lws["metadata"],
            spec=lws["spec"],
            # never before the LWS CRD/webhook, the slices it needs, and its identity
            opts=self.k8s_opts(*lws_release, *node_pools, identity.ksa),
        )
        svc = jp.service(plan)
        k8s.core.v1.Service(f"{name}-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts())
        create_pod_monitoring(
            f"{name}-podmonitoring",
            jp.pod_monitoring(plan),
            provider=provider,
            parent=self,
            depends_on=self._namespace_deps,
        )
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
