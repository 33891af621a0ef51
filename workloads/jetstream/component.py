"""A single-host JetStream workload with an optional HPA (manifests from workloads.jetstream.plan)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.serving import ServingWorkload, WorkloadDeps
from workloads.jetstream import plan as js


class JetStream(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: js.JetStreamPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:JetStream", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.service_name
        self.commands = js.commands(plan, deps.local_ports)

        # The engine reads the checkpoint: objectViewer on its prefix, nothing else (JetStreamPlan.grants).
        identity = self.identity(grants=plan.grants())
        manifest = js.deployment(plan)
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=self.k8s_opts(identity.ksa, *deps.node_pools),
        )
        svc = js.service(plan)
        k8s.core.v1.Service(f"{name}-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts())
        self.monitor_and_autoscale(js.pod_monitoring(plan), js.hpa(plan), deployment, deps.adapter)
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
