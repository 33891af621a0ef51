"""A single-host JetStream workload with an optional HPA (manifests from workloads.jetstream.plan)."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.serving import ServingWorkload
from workloads.jetstream import plan as js


class JetStream(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: js.JetStreamPlan,
        project: str,
        stack: str,
        bucket: pulumi.Input[str],
        provider: k8s.Provider,
        namespace: pulumi.Resource | None,
        node_pools: Sequence[pulumi.Resource],
        adapter: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "tpu-serving:workloads:JetStream", name, plan=plan, provider=provider, namespace=namespace, opts=opts
        )
        self.service_name = plan.service_name
        self.commands = js.commands(plan)

        # The engine reads the checkpoint: objectViewer on its prefix, nothing else (JetStreamPlan.grants).
        identity = self.identity(project=project, stack=stack, bucket=bucket, grants=plan.grants())
        manifest = js.deployment(plan)
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=self.k8s_opts(identity.ksa, *node_pools),
        )
        svc = js.service(plan)
        k8s.core.v1.Service(f"{name}-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts())
        self.monitor_and_autoscale(
            js.pod_monitoring(plan), js.hpa(plan) if plan.autoscaled else None, deployment, adapter
        )
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
