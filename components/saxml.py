"""A Saxml multi-host serving workload (manifests from stacks.workloads.saxml)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.serving import ServingWorkload
from stacks.bucket_access import prefix_condition
from stacks.workloads import saxml


def _address(status: Any, fallback: str) -> str:
    """The load balancer's IP from a Service status, once it has one."""
    try:
        ingress = status.load_balancer.ingress or []
        return f"{ingress[0].ip}:{saxml.HTTP_PORT}" if ingress and ingress[0].ip else fallback
    except AttributeError:
        return fallback


class Saxml(ServingWorkload):
    def __init__(
        self,
        name: str,
        *,
        plan: saxml.SaxmlPlan,
        project: str,
        stack: str,
        bucket: pulumi.Input[str],
        provider: k8s.Provider,
        namespace: pulumi.Resource | None,
        jobset_release: Sequence[pulumi.Resource],
        node_pools: Sequence[pulumi.Resource],
        node_service_account: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__(
            "tpu-serving:workloads:Saxml", name, plan=plan, provider=provider, namespace=namespace, opts=opts
        )
        self.service_name = plan.http_service

        # Admin, model and HTTP servers read and write the cell state under sax-root in the stack bucket.
        identity = self.identity(project=project, stack=stack, bucket=bucket, bucket_roles=["roles/storage.objectUser"])

        # The model servers (host network) act as their pool's own node service account: it gets SAX_ROOT's prefix
        # and the models' checkpoints, nothing else (stacks.workloads.saxml.SaxmlPlan.node_grants).
        member = pulumi.Output.from_input(node_service_account).apply(lambda e: f"serviceAccount:{e}")
        node_grants = []
        for grant_bucket, role, prefix in plan.node_grants():
            target = grant_bucket or plan.bucket
            suffix = role.split(".")[-1].lower() + (f"-{prefix.strip('/').replace('/', '-')}" if prefix else "")
            node_grants.append(
                gcp.storage.BucketIAMMember(
                    f"{name}-nodes-{grant_bucket + '-' if grant_bucket else ''}{suffix}",
                    gcp.storage.BucketIAMMemberArgs(
                        bucket=grant_bucket or bucket,
                        role=role,
                        member=member,
                        condition=(
                            gcp.storage.BucketIAMMemberConditionArgs(**prefix_condition(target, prefix))
                            if prefix
                            else None
                        ),
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )

        admin = saxml.admin_deployment(plan)
        admin_server = k8s.apps.v1.Deployment(
            f"{name}-admin", metadata=admin["metadata"], spec=admin["spec"], opts=self.k8s_opts(identity.ksa)
        )
        jobset = saxml.model_server_jobset(plan)
        model_servers = k8s.apiextensions.CustomResource(
            f"{name}-model-servers",
            api_version=jobset["apiVersion"],
            kind=jobset["kind"],
            metadata=jobset["metadata"],
            spec=jobset["spec"],
            # never before the JobSet CRD/webhook and the slices; after the admin server they register with
            opts=self.k8s_opts(*jobset_release, *node_pools, *node_grants, identity.ksa, admin_server),
        )
        policy = saxml.model_server_network_policy(plan)
        k8s.networking.v1.NetworkPolicy(
            f"{name}-model-server-policy", metadata=policy["metadata"], spec=policy["spec"], opts=self.k8s_opts()
        )
        http = saxml.http_deployment(plan)
        http_server = k8s.apps.v1.Deployment(
            f"{name}-http", metadata=http["metadata"], spec=http["spec"], opts=self.k8s_opts(identity.ksa)
        )
        svc = saxml.http_service(plan)
        service = k8s.core.v1.Service(
            f"{name}-http-svc", metadata=svc["metadata"], spec=svc["spec"], opts=self.k8s_opts()
        )

        if plan.workload.models is not None and not plan.paused:
            job = saxml.publish_job(plan)
            k8s.batch.v1.Job(
                f"{name}-models-{saxml.models_hash(plan)}",
                metadata=job["metadata"],
                spec=job["spec"],
                # `pulumi up` ends when the models are loaded; loading a large model takes many minutes.
                opts=self.k8s_opts(
                    model_servers,
                    http_server,
                    service,
                    custom_timeouts=pulumi.CustomTimeouts(
                        create=f"{saxml.LOAD_TIMEOUT_MINUTES}m", update=f"{saxml.LOAD_TIMEOUT_MINUTES}m"
                    ),
                ),
            )

        local_port = plan.local_port(saxml.HTTP_PORT)
        port_forward = (
            f"kubectl -n {plan.namespace} port-forward svc/{plan.http_service} {local_port}:{saxml.HTTP_PORT}"
        )
        local = f"localhost:{local_port}"
        if plan.workload.http.exposure == "cluster":
            address: pulumi.Input[str] = local
            examples: Any = saxml.curl_examples(plan, local)
        else:
            address = service.status.apply(lambda s: _address(s, "(pending)"))
            examples = pulumi.Output.from_input(address).apply(
                lambda a: saxml.curl_examples(plan, a if a != "(pending)" else local)
            )
        self.commands = {"portForward": port_forward, "address": address, "cell": plan.cell, "examples": examples}
        self.register_outputs({"namespace": self.namespace, "service": self.service_name, **self.commands})
