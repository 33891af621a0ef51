"""A vLLM workload on TPU: a Deployment (single-host pool) or a LeaderWorkerSet + Ray (multi-host pool), its
Service, PodMonitoring, optional HPA and Hugging Face token Secret (workloads/vllm/manifests.py, its commands workloads/vllm/commands.py)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from components.serving import ServingWorkload, WorkloadDeps
from workloads.vllm import manifests
from workloads.vllm.commands import commands
from workloads.vllm.plan import HTTP_PORT, VllmPlan
from workloads.vllm.staging import STAGE_TIMEOUT_MINUTES


class Vllm(ServingWorkload):
    serving_selector: dict[str, str]
    """Labels of the pods that serve HTTP (leaders only on a multi-host pool), e.g. for an InferencePool."""
    http_port: int
    """The container port of the OpenAI-compatible API."""

    def __init__(
        self,
        name: str,
        *,
        plan: VllmPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:Vllm", name, plan=plan, deps=deps, opts=opts)
        self.service_name = plan.service_name
        self.serving_selector = plan.serving_selector
        self.http_port = HTTP_PORT
        self.commands = commands(plan, deps.local_ports)

        # Read-write on the workload's own prefix of the stack bucket, read-only on the weights (VllmPlan.grants).
        identity = self.identity(grants=plan.grants())

        after: list[pulumi.Resource] = [identity.ksa, *deps.node_pools]
        if plan.stage_items:
            after.append(self._stage_weights(name, plan))
        # The server is awaited ready (WorkloadPlan.tpu_metadata) for as long as a replica takes from no capacity
        # (WorkloadPlan.server_await_minutes); a workload moved between a single-host and a multi-host pool gets the
        # other kind of server under its own resource name, awaited before Pulumi deletes the old one, last (its pods
        # carry the same serving labels, so both serve meanwhile: docs/workloads/vllm.md "Moving between a
        # single-host and a multi-host pool").
        awaited = self.server_timeouts()
        if plan.multi_host:
            manifest = manifests.leader_worker_set(plan)
            server: pulumi.Resource = register_manifest(
                f"{name}-lws",
                manifest,
                opts=self.k8s_opts(*after, *deps.addon("lws"), custom_timeouts=awaited),
            )
        else:
            # A disaggregated workload's two roles are Deployments of their own (VllmPlan.role_name), the decode
            # one the server the Service follows.
            decode_role = "decode" if plan.disaggregated else None
            manifest = manifests.deployment(plan, decode_role)
            server = k8s.apps.v1.Deployment(
                f"{name}-decode-deployment" if plan.disaggregated else f"{name}-deployment",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=self.server_opts(*after),
            )
            if plan.disaggregated:
                prefill = manifests.deployment(plan, "prefill")
                k8s.apps.v1.Deployment(
                    f"{name}-prefill-deployment",
                    metadata=prefill["metadata"],
                    spec=prefill["spec"],
                    opts=self.server_opts(*after),
                )
        svc = manifests.service(plan)
        # after the server: a change of its selector follows the server's rollout where that is awaited
        service = k8s.core.v1.Service(
            f"{name}-svc",
            metadata=svc["metadata"],
            spec=svc["spec"],
            opts=self.k8s_opts(server, custom_timeouts=awaited),
        )
        self.release_gate(server, service)
        self.monitor_and_autoscale(manifests.pod_monitoring(plan), manifests.hpa(plan), server, deps.adapter)
        self.register_outputs(
            {
                "namespace": self.namespace,
                "service": self.service_name,
                "servingSelector": self.serving_selector,
                "httpPort": self.http_port,
                **self.commands,
            }
        )

    def _stage_weights(self, name: str, plan: VllmPlan) -> pulumi.Resource:
        """The Job that stages the Hugging Face model into the stack bucket, as its own identity (objectUser on the
        staged prefix only) with the stack's token when set. pulumi-kubernetes awaits a Job until its Complete
        condition (pulumi_kubernetes 4.34.2 batch/v1 Job: "waits until its status is ready", default timeout 10
        minutes, `customTimeouts` overrides), so the server, registered after it, never starts before the weights
        are there; `pulumi up` lasts as long as the first copy."""
        stage_identity = self.identity(
            grants=plan.stage_grants(), service_account=plan.stage_service_account, role="stage"
        )
        after: list[pulumi.Resource] = [stage_identity.ksa]
        if plan.uses_token:
            token = pulumi.Config("tpu-serving").require_secret("hfToken")
            secret = manifests.token_secret(plan, token)
            after.append(
                k8s.core.v1.Secret(
                    f"{name}-hf-token",
                    metadata=secret["metadata"],
                    type=secret["type"],
                    string_data=secret["stringData"],
                    opts=self.k8s_opts(),
                )
            )
        job = manifests.stage_job(plan)
        timeout = f"{STAGE_TIMEOUT_MINUTES}m"
        return k8s.batch.v1.Job(
            f"{name}-weights-{plan.stage_job_name.rsplit('-', 1)[1]}",
            metadata=job["metadata"],
            spec=job["spec"],
            opts=self.k8s_opts(*after, custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout)),
        )
