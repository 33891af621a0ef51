"""A JetStream + MaxText + Pathways serving workload (manifests from stacks.workloads.jetstream_pathways)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.monitoring import create_pod_monitoring
from components.serving import ServingWorkload
from components.workload_identity import WorkloadIdentity
from stacks import metrics
from stacks.workloads import jetstream_pathways as jp


class JetStreamPathways(ServingWorkload):
    namespace: str
    service_name: str
    commands: dict[str, str]

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
        super().__init__("tpu-serving:workloads:JetStreamPathways", name, None, opts)
        ns_deps = [namespace] if namespace is not None else []
        self.namespace = plan.namespace
        self.service_name = plan.service_name
        self.commands = jp.commands(plan)

        # Leader and workers write Pathways scratch to the stack bucket and read the checkpoint.
        identity = WorkloadIdentity(
            f"{name}-identity",
            namespace=plan.namespace,
            service_account_name=plan.service_account,
            project=project,
            stack=stack,
            bucket=bucket,
            bucket_roles=["roles/storage.objectUser"],
            provider=provider,
            depends_on=ns_deps,
            opts=pulumi.ResourceOptions(parent=self),
        )
        source = jp.checkpoint_bucket(plan.workload.checkpoint)
        if plan.workload.grant_checkpoint_read and source != plan.bucket:
            gcp.storage.BucketIAMMember(
                f"{name}-checkpoint-reader",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=source,
                    role="roles/storage.objectViewer",
                    member=identity.email.apply(lambda e: f"serviceAccount:{e}"),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )

        lws = jp.leader_worker_set(plan)
        k8s.apiextensions.CustomResource(
            f"{name}-lws",
            api_version=lws["apiVersion"],
            kind=lws["kind"],
            metadata=lws["metadata"],
            spec=lws["spec"],
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=provider,
                # never before the LWS CRD/webhook, the slices it needs, and its identity
                depends_on=[*lws_release, *node_pools, identity.ksa, *ns_deps],
            ),
        )
        svc = jp.service(plan)
        k8s.core.v1.Service(
            f"{name}-svc",
            metadata=svc["metadata"],
            spec=svc["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=ns_deps),
        )
        create_pod_monitoring(
            f"{name}-podmonitoring",
            metrics.pod_monitoring(
                f"{plan.name}-jetstream",
                plan.namespace,
                plan.labels,
                "metrics",
                interval=plan.scrape_interval,
                path="/",
                target_labels=["pod", "container", "node"],
            ),
            provider=provider,
            parent=self,
            depends_on=ns_deps,
        )
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
