"""A Saxml multi-host serving workload (workloads/saxml/manifests.py, its examples workloads/saxml/commands.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from components.serving import ServingWorkload, WorkloadDeps
from workloads.saxml import manifests
from workloads.saxml.commands import curl_examples
from workloads.saxml.plan import HTTP_PORT, SaxmlPlan
from workloads.saxml.publication import LOAD_TIMEOUT_MINUTES, models_hash


def _address(status: Any, fallback: str) -> str:
    """The load balancer's IP from a Service status, once it has one."""
    try:
        ingress = status.load_balancer.ingress or []
        return f"{ingress[0].ip}:{HTTP_PORT}" if ingress and ingress[0].ip else fallback
    except AttributeError:
        return fallback


class Saxml(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: SaxmlPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:Saxml", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.http_service

        # Each server its own identity with the least it needs of the cell's prefixes (SaxmlPlan's grants):
        # the admin server writes the cell and its state, the HTTP server only reads the cell. The model servers
        # (host network) act as their pool's own node service account: read-only on the cell and the checkpoints.
        identity = self.identity(grants=plan.admin_grants())
        http_identity = self.identity(
            grants=plan.http_grants(),
            service_account=plan.http_service_account,
            role="http",
        )
        node_grants = self.node_grants(plan.node_grants())

        admin = manifests.admin_deployment(plan)
        admin_server = k8s.apps.v1.Deployment(
            f"{name}-admin", metadata=admin["metadata"], spec=admin["spec"], opts=self.k8s_opts(identity.ksa)
        )
        jobset = manifests.model_server_jobset(plan)
        model_servers = register_manifest(
            f"{name}-model-servers",
            jobset,
            # never before the JobSet CRD/webhook and the slices; after the admin server they register with.
            # JobSet's webhook refuses any change to spec.replicatedJobs (kubernetes-sigs/jobset@v0.10.1
            # pkg/webhooks/jobset_webhook.go ValidateUpdate: ValidateImmutableField on the replicated jobs; a
            # suspended JobSet may change only the pod template's scheduling fields), so a change there replaces
            # the JobSet, deleting first (same name)
            opts=self.k8s_opts(
                *deps.addon("jobset"),
                *deps.node_pools,
                *node_grants,
                identity.ksa,
                admin_server,
                replace_on_changes=["spec.replicatedJobs"],
                delete_before_replace=True,
            ),
        )
        policy = manifests.model_server_network_policy(plan)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-model-server-policy", metadata=policy["metadata"], spec=policy["spec"], opts=self.k8s_opts()
        )
        http = manifests.http_deployment(plan)
        http_server = k8s.apps.v1.Deployment(
            f"{name}-http", metadata=http["metadata"], spec=http["spec"], opts=self.k8s_opts(http_identity.ksa)
        )
        svc = manifests.http_service(plan)
        service = k8s.core.v1.Service(
            f"{name}-http-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts()
        )

        if plan.workload.models is not None and not plan.paused:
            self._publish_models(name, plan, model_servers, http_server, service)
        self.commands = commands(plan, service, deps.local_ports)
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})

    def _publish_models(
        self,
        name: str,
        plan: SaxmlPlan,
        model_servers: pulumi.Resource,
        http_server: pulumi.Resource,
        service: pulumi.Resource,
    ) -> None:
        """The Job that publishes the configured models through the HTTP server, named after their hash so a
        change runs a new one; `pulumi up` ends when the models are loaded (a large model takes many minutes)."""
        job = manifests.publish_job(plan)
        k8s.batch.v1.Job(
            f"{name}-models-{models_hash(plan)}",
            metadata=job["metadata"],
            spec=job["spec"],
            opts=self.k8s_opts(
                model_servers,
                http_server,
                service,
                custom_timeouts=pulumi.CustomTimeouts(
                    create=f"{LOAD_TIMEOUT_MINUTES}m", update=f"{LOAD_TIMEOUT_MINUTES}m"
                ),
            ),
        )


def commands(plan: SaxmlPlan, service: k8s.core.v1.Service, local_ports: Mapping[int, int]) -> dict[str, Any]:
    """The workload's outputs: its port-forward, the HTTP address (the load balancer's once it has one) and curl
    examples against it."""
    local_port = local_ports.get(HTTP_PORT, HTTP_PORT)
    port_forward = f"kubectl -n {plan.namespace} port-forward svc/{plan.http_service} {local_port}:{HTTP_PORT}"
    local = f"localhost:{local_port}"
    if plan.workload.http.exposure == "cluster":
        address: pulumi.Input[str] = local
        examples: Any = curl_examples(plan, local)
    else:
        address = service.status.apply(lambda s: _address(s, "(pending)"))
        examples = pulumi.Output.from_input(address).apply(
            lambda a: curl_examples(plan, a if a != "(pending)" else local)
        )
    return {"portForward": port_forward, "address": address, "cell": plan.cell, "examples": examples}
