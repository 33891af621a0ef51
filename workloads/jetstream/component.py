"""A single-host JetStream workload with an optional HPA (workloads/jetstream/manifests.py, its commands
workloads/jetstream/commands.py)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.serving import ServingWorkload, WorkloadDeps
from workloads.jetstream import manifests
from workloads.jetstream.commands import commands
from workloads.jetstream.plan import JetStreamPlan


class JetStream(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: JetStreamPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:JetStream", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.service_name
        self.commands = commands(plan, deps.local_ports)

        # The engine reads the checkpoint: objectViewer on its prefix, nothing else (JetStreamPlan.grants).
        identity = self.identity(grants=plan.grants())
        manifest = manifests.deployment(plan)
        deployment = k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            # awaited until it serves, for as long as a replica takes from no capacity, and deleted before a
            # replacement (ServingWorkload.server_opts)
            opts=self.server_opts(identity.ksa, *deps.node_pools),
        )
        svc = manifests.service(plan)
        # after the server (the provider awaits a Service until an endpoint is ready, provider/pkg/await/service.go)
        k8s.core.v1.Service(
            f"{name}-svc",
            metadata=svc["metadata"],
            spec=svc["spec"],
            opts=self.k8s_opts(deployment, custom_timeouts=self.server_timeouts()),
        )
        self.monitor_and_autoscale(manifests.pod_monitoring(plan), manifests.hpa(plan), deployment, deps.adapter)
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
