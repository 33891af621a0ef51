"""The base of every serving workload component: where it runs, how to reach it, and the set-up all share
(Kubernetes options with the cluster's provider and the namespace, and the workload's own identity)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from components.workload_identity import LegacyParent, WorkloadIdentity, register_grants
from stacks.security.bucket_access import Grant, gcs_location
from stacks.serving import benchmark
from stacks.serving.workload_plan import WorkloadPlan

CACHE_PLACEHOLDER = ".keep"  # the object that keeps a gs:// compile-cache directory present

# Every workload's component has this one type token, whatever its `type`: a resource's URN is
# `<stack>::<project>::<parent type>$...$<type>::<name>` (https://www.pulumi.com/docs/iac/concepts/resources/names/#urns,
# pulumi/pulumi sdk/go/common/resource/urn.go NewURN), so a type in the component's token would put the workload's
# type in every child's URN: changing `type` under the same name (jetstream -> jetstream-pathways, vllm ->
# jetstream) would register its Service, PDB, PodMonitoring, HPA and identity under new URNs while the old ones still
# exist, and the creates run first (AlreadyExists). With one token a child of the same name keeps its URN and is
# updated in place; the workload's type is data (the `workloadType` output).
SERVING_TYPE = "tpu-serving:workloads:Serving"
# The tokens components had when each type had its own (until issue 36) are aliases, so a stack created then keeps its
# resources (the engine matches a child through its parent's alias, pulumi/pulumi sdk/python/lib/pulumi/resource.py
# inherited child aliases). Every one of them on every workload: the code update and a type change may come in one
# `pulumi up`. Each type's registry entry names its own (WorkloadType.legacy_component; WorkloadDeps.legacy_types).


@dataclass(frozen=True)
class WorkloadDeps:
    """What the platform hands a workload type's component (stacks.serving.workload_type.WorkloadType.component)."""

    project: str
    stack: str
    bucket: pulumi.Output[str]
    """The stack bucket's name."""
    bucket_get_role: pulumi.Output[str]
    """The stack's custom role holding storage.buckets.get only (components.bucket.Bucket.bucket_get_role)."""
    provider: k8s.Provider
    """The cluster's Kubernetes provider."""
    namespace: pulumi.Resource | None
    """What creates the workload's namespace (None: a namespace every cluster has)."""
    node_pools: Sequence[pulumi.Resource]
    """The node pools of the TPU pool it runs on."""
    addon: Callable[[str], list[pulumi.Resource]]
    """An add-on's release and CRDs by its key (tpu-serving:addons), for custom resources to wait for."""
    adapter: Sequence[pulumi.Resource]
    """The metrics adapter serving the metrics APIs an HPA reads."""
    node_service_account: pulumi.Output[str] | None
    """The email of its own node service account (types whose pool serves them alone), else None."""
    cluster_name: pulumi.Output[str]
    location: str
    labels: dict[str, str]
    local_ports: Mapping[int, int] = field(default_factory=dict)
    """The local port of each Service port its port-forward commands forward: unique across the stack
    (StackConfig.local_ports); a port not in it is forwarded to itself."""
    legacy_types: Sequence[str] = ()
    """The component type tokens the registry's types once had (WorkloadRegistry.legacy_components): every workload's
    component is aliased to each."""
    cloud: bool = True
    """False in local mode (stacks/model/local_target.py): the workload's Kubernetes objects only; its Google identities,
    grants, bucket objects and node pools are stood in by their names."""


def _retyped(urn: str, type_: str) -> str:
    """`urn` (`urn:pulumi:<stack>::<project>::<type chain>::<name>`) with the last type of its chain `type_`."""
    head, project, types, name = urn.split("::", 3)
    chain = types.rsplit("$", 1)
    return "::".join((head, project, "$".join([*chain[:-1], type_]), name))


class ServingWorkload(pulumi.ComponentResource):
    namespace: str
    """Kubernetes namespace of the workload."""
    service_name: str | None
    """The Service clients use (None: the workload has none)."""
    commands: dict[str, Any]
    """Ready-to-run commands (port-forward, curl, ...), for the stack outputs."""

    def __init__(
        self,
        type_: str,
        name: str,
        *,
        plan: WorkloadPlan,
        deps: WorkloadDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        legacy_types = [t for t in dict.fromkeys((*deps.legacy_types, type_)) if t != SERVING_TYPE]
        aliases = [pulumi.Alias(type_=t) for t in legacy_types]
        self.workload_type = type_.rsplit(":", 1)[-1]
        """The component's own kind (the `type_` a workload type's component passes), as data: the component's
        `workloadType` property."""
        super().__init__(
            SERVING_TYPE,
            name,
            {"workloadType": self.workload_type},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(aliases=aliases)),
        )
        # (not _name/_provider: pulumi.Resource uses those itself)
        self._prefix = name
        self._plan = plan
        self._deps = deps
        self._k8s_provider = deps.provider
        self._namespace_deps: list[pulumi.Resource] = [deps.namespace] if deps.namespace is not None else []
        # Where a grant registered by the component itself was, until issue 36 #2 (Grant.legacy_outside): here, and
        # here under each type token the component once had.
        self._legacy = LegacyParent(
            name,
            (
                self,
                *(self.urn.apply(functools.partial(_retyped, type_=t)) for t in legacy_types),
            ),
        )
        self.namespace = plan.namespace
        self._disruption_budgets(plan)
        self._compile_cache_placeholder(plan)

    def _compile_cache_placeholder(self, plan: WorkloadPlan) -> None:
        """A JAX compile cache on gs:// (StartupPath.compile_cache "gcs") gets one small object in its directory
        before the server runs: JAX's file cache makes its directory at start (`mkdir(parents=True, exist_ok=True)`:
        jax-ml/jax@1e79d0a jax/_src/lru_cache.py for a local path; a gs:// path goes through etils epath, its
        "TODO: add support for cloud filesystems such as GCS"), and a file-system client asks whether each directory
        exists first (tensorflow tsl GcsFileSystem::RecursivelyCreateDir stops at the first that exists; gcsfs
        checks the bucket, which bucket_access.BUCKET_GET_PERMISSION covers). With an object under the cache's own
        prefix, that first check is a listing inside the identity's grant, never one of a parent it may not list."""
        startup = plan.startup
        if startup is None or startup.compile_cache != "gcs" or not startup.compile_cache_url or not self._deps.cloud:
            return
        bucket, prefix = gcs_location(startup.compile_cache_url)
        gcp.storage.BucketObject(
            f"{self._prefix}-compile-cache-keep",
            gcp.storage.BucketObjectArgs(
                bucket=self._deps.bucket if bucket == plan.bucket else bucket,
                name=f"{prefix}{CACHE_PLACEHOLDER}",
                content="tpu-serving: keeps this compile-cache directory present (components/serving.py)\n",
                content_type="text/plain",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _disruption_budgets(self, plan: WorkloadPlan) -> None:
        """A PodDisruptionBudget per set of its pods (WorkloadPlan.disruption_budgets): every type gets them here."""
        for pdb in plan.disruption_budgets():
            name = pdb["metadata"]["name"]
            suffix = "" if name == plan.name else f"-{name.removeprefix(plan.name + '-')}"
            k8s.policy.v1.PodDisruptionBudget(
                f"{self._prefix}{suffix}-pdb", metadata=pdb["metadata"], spec=pdb["spec"], opts=self.k8s_opts()
            )

    def server_timeouts(self) -> pulumi.CustomTimeouts | None:
        """The customTimeouts of what `up` awaits until the workload's TPU server serves (its Deployment or
        LeaderWorkerSet, and the Service that follows it): WorkloadPlan.server_timeouts, from the time-to-serve model.
        Past it the `up` fails and deletes nothing more (Pulumi stops at a failed step: the old server of a type swap
        or pool move, a resource of its own, keeps serving; a server replaced under its own resource is deleted
        first, server_opts), and the next `up` waits again. pulumi-kubernetes's own default is 10 minutes
        (provider/pkg/await deployment.go DefaultDeploymentTimeoutMins; await.go Creation for `waitFor`)."""
        timeouts = self._plan.server_timeouts()
        return pulumi.CustomTimeouts(**timeouts) if timeouts else None

    def server_opts(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        """Options of the workload's TPU server Deployment: k8s_opts, awaited until it serves (server_timeouts), and
        deleted before its replacement is created. The Kubernetes provider creates a replacement first when the
        name or namespace changes (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff asks for
        deleteBeforeReplace only when both stay), and a replacement beside the old server needs a second set of TPU
        hosts, which a pool sized for the workload lacks: its pods stay Pending and the `up` waits out the server's
        customTimeouts (seen on a local cluster, ironwood, docs/local.md). Deleted first, the workload does not serve
        from the delete until the new server is Ready, as its LeaderWorkerSet (components/manifests.py
        custom_resource) and its JobSet already do."""
        return self.k8s_opts(*depends_on, custom_timeouts=self.server_timeouts(), delete_before_replace=True)

    def k8s_opts(self, *depends_on: pulumi.Resource, **extra: Any) -> pulumi.ResourceOptions:
        """Options of a Kubernetes child: the cluster's provider, after the namespace and `depends_on`."""
        return pulumi.ResourceOptions(
            parent=self, provider=self._k8s_provider, depends_on=[*self._namespace_deps, *depends_on], **extra
        )

    def monitor_and_autoscale(
        self,
        pod_monitoring: dict[str, Any],
        hpa: dict[str, Any] | None,
        scaled: pulumi.Resource,
        adapter: Sequence[pulumi.Resource],
    ) -> None:
        """The workload's PodMonitoring, and its HPA after what it scales and the adapter serving the metrics APIs
        (the HPA would otherwise ask for metrics nothing serves yet)."""
        from components.monitoring import create_pod_monitoring

        create_pod_monitoring(
            f"{self._prefix}-podmonitoring",
            pod_monitoring,
            provider=self._k8s_provider,
            parent=self,
            depends_on=self._namespace_deps,
        )
        if hpa is not None:
            hpa = _targeting(hpa, scaled)
        if hpa is not None and hpa["kind"] == "ScaledObject":
            # KEDA's: after its CRDs, chart and trigger authentication (the adapter's serving parts)
            register_manifest(f"{self._prefix}-scaledobject", hpa, self.k8s_opts(scaled, *adapter))
        elif hpa is not None:
            k8s.autoscaling.v2.HorizontalPodAutoscaler(
                f"{self._prefix}-hpa",
                metadata=hpa["metadata"],
                spec=hpa["spec"],
                opts=self.k8s_opts(scaled, *adapter),
            )

    def release_gate(self, *after: pulumi.Resource) -> None:
        """The release gate's benchmark of a rollout's candidate set (stacks/serving/benchmark.py): its ConfigMap
        and Job, as the gate's own identity (read-write on the workload's benchmark prefix only), after the set's
        servers and Service. Nothing for any other set."""
        manifests = self._plan.gate_manifests()
        release = self._plan.release
        if not manifests or release is None:
            return
        identity = self.identity(
            grants=benchmark.grants(self._plan.bucket, release.route),
            service_account=self._plan.gate_service_account,
            role="gate",
        )
        config_map, job = manifests
        # named after the step as the objects are (a new step is a new Job and the last one's is deleted, a Job's pod
        # template being immutable), like the weights' staging Job
        step = job["metadata"]["name"].rsplit("-", 1)[1]
        config = k8s.core.v1.ConfigMap(
            f"{self._prefix}-gate-config-{step}",
            metadata=config_map["metadata"],
            data=config_map["data"],
            opts=self.k8s_opts(),
        )
        k8s.batch.v1.Job(
            f"{self._prefix}-gate-{step}",
            metadata=job["metadata"],
            spec=job["spec"],
            opts=self.k8s_opts(identity.ksa, config, *after),
        )

    def identity(
        self,
        *,
        grants: Sequence[Grant],
        service_account: str | None = None,
        role: str = "",
    ) -> WorkloadIdentity:
        """A Kubernetes ServiceAccount of the workload (its own by default; `service_account` for one of its
        servers, `role` naming it) with a Google identity holding `grants` (prefixes of the stack bucket)."""
        return WorkloadIdentity(
            f"{self._prefix}-{role + '-' if role else ''}identity",
            namespace=self._plan.namespace,
            service_account_name=service_account or self._plan.service_account,
            project=self._deps.project,
            stack=self._deps.stack,
            stack_bucket_name=self._plan.bucket,
            stack_bucket=self._deps.bucket,
            bucket_get_role=self._deps.bucket_get_role,
            grants=grants,
            provider=self._k8s_provider,
            depends_on=self._namespace_deps,
            cloud=self._deps.cloud,
            legacy=self._legacy,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def node_grants(self, grants: Sequence[Grant]) -> list[pulumi.Resource]:
        """`grants` for the node service account of the workload's own pool: its pods run on the host network, where
        GKE applies no Workload Identity (they act as their node)."""
        assert self._deps.node_service_account is not None, "a workload whose pool serves it alone has its own"
        member = self._deps.node_service_account.apply(lambda e: f"serviceAccount:{e}")
        return self.bucket_grants(f"{self._prefix}-nodes", grants, member)

    def bucket_grants(self, name: str, grants: Sequence[Grant], member: pulumi.Input[str]) -> list[pulumi.Resource]:
        """`grants` for `member` (components.workload_identity.register_grants, named `<name>-<key>`); none in local
        mode, where no Google identity exists."""
        if not self._deps.cloud:
            return []
        return list(
            register_grants(
                name,
                grants,
                member,
                stack_bucket_name=self._plan.bucket,
                stack_bucket=self._deps.bucket,
                bucket_get_role=self._deps.bucket_get_role,
                parent=self,
                legacy=self._legacy,
            )
        )


def _targeting(manifest: dict[str, Any], scaled: pulumi.Resource) -> dict[str, Any]:
    """`manifest` (an HPA or a ScaledObject) with its namespace read from the server's own output: the engine then
    counts the autoscaler among the server's dependents that a delete-first replacement of the server (a namespace
    change, ServingWorkload.server_opts) deletes first, instead of leaving it pointing at nothing until the end of the
    `up` (KEDA logged "target deployment doesn't exist" on a local cluster, make e2e vllm-single-host-keda).
    pulumi/pulumi pkg/v3@v3.274.1 resource/deploy/step_generator.go calculateDependentReplacements: a dependent is
    deleted first when, its inputs that read the replaced resource made unknown, its provider's Diff asks for a
    replacement, which the Kubernetes provider does for `metadata.namespace` (provider/pkg/provider/diff.go
    metadataForceNewProperties); a `dependsOn` edge alone does not."""
    metadata = getattr(scaled, "metadata", None)
    namespace = (manifest.get("metadata") or {}).get("namespace")
    if metadata is None or not namespace:
        return manifest
    read = pulumi.Output.from_input(metadata).apply(
        lambda m: (m.get("namespace") if isinstance(m, dict) else getattr(m, "namespace", None)) or namespace
    )
    return {**manifest, "metadata": {**manifest["metadata"], "namespace": read}}
