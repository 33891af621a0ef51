"""The stack's GKE Inference Gateway: its namespace and one Gateway, and per served workload its route.

The objects are built by stacks/serving/gateway.py; this component registers them in order: the Gateway waits for the
cluster's system pool (GKE installs the Gateway API CRDs, its GatewayClasses and, from the version the config
requires, the InferencePool CRD with the cluster: stacks/facts/gke_managed.py; the stack applies none of them) and for the
proxy-only subnet its regional load balancer takes proxy addresses from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components import fleet_export
from components.addons import release_args
from components.manifests import register_manifest
from stacks import naming
from stacks.facts.versions import BODY_BASED_ROUTER, INFERENCE_OBJECTIVE_CRDS, LLM_D_ROUTER
from stacks.model.local_target import REGISTRY, Sources
from stacks.pieces.gateway import GatewayPlan
from stacks.security import network_policy, pod_security
from stacks.serving import gateway
from stacks.serving.gateway import GatewayBackend

# Cloud Armor: at most 10 source IP ranges per rule (basic match condition, srcIpRanges),
# https://cloud.google.com/armor/docs/security-policy-overview#match_conditions ; the default rule has the lowest
# priority, 2147483647.
RANGES_PER_RULE = 10
DEFAULT_RULE_PRIORITY = 2147483647


@dataclass(frozen=True)
class GatewayDeps:
    """The cluster the Gateway goes into: its Kubernetes provider, what the Gateway waits for (the system pool and
    the proxy-only subnet the stack creates), and what creates each served workload's namespace."""

    provider: k8s.Provider
    after: Sequence[pulumi.Resource]
    namespace: Callable[[str], pulumi.Resource]
    cloud: bool = True
    """False in local mode (stacks/model/local_target.py): no Cloud Armor policy; its name stands in."""
    sources: Sources = REGISTRY
    """Where the endpoint picker's chart comes from."""


class InferenceGateway(pulumi.ComponentResource):
    gateway: pulumi.CustomResource | None
    body_router: pulumi.Resource | None = None
    _objective_crd: list[pulumi.Resource] = []
    _armor: list[pulumi.Resource]
    _releases: dict[str, pulumi.Resource]
    """Per backend: the router release that creates its InferencePool (its route waits for it)."""

    def __init__(
        self,
        name: str,
        *,
        plan: GatewayPlan,
        deps: GatewayDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The Gateway `plan` says (stacks/pieces/gateway.py) and a route for each of its backends. `sourceRanges`:
        an external gateway's allowed clients (a regional Cloud Armor policy); `cloudArmorPolicy`: an existing one."""
        super().__init__("tpu-serving:gateway:InferenceGateway", name, None, opts)
        config, provider, after = plan.config, deps.provider, list(deps.after)
        self._name = name
        self._provider = provider
        self._after = after
        self._sources = deps.sources
        self._system_selector = plan.system_selector
        self._fleet_metrics = plan.fleet_metrics if config.fleet_export else None
        self.security_policy: pulumi.Input[str] | None = None
        self._armor, self._releases = [], {}
        self.commands: dict[str, dict[str, str]] = {}
        """Per served workload: its gateway commands (the `gateway.routes` output)."""
        if self._fleet_metrics is not None:  # exported to a fleet's Gateway: no Gateway here (docs/fleet.md)
            self.gateway = None
            self.commands = {
                b.name: self.serve(b, namespace=deps.namespace(b.namespace), paused=plan.paused) for b in plan.backends
            }
            self.register_outputs({"fleetExport": True})
            return
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=after)
        namespace = self._namespace(name, plan, child)
        self.security_policy = config.cloud_armor_policy
        # What uses the stack's Cloud Armor policy (the Gateway, each route, router release and backend policy
        # patch: GKE builds the load balancer's backend services from them) depends on it, so a `pulumi up` that
        # drops the policy deletes them, or updates them away from it, first: deletes run last, dependents before
        # their dependencies (pulumi/pulumi pkg/resource/deploy step generation), and Compute refuses to delete a
        # policy a backend service still uses (resourceInUseByAnotherResource).
        if config.source_ranges and not deps.cloud:
            self.security_policy = f"{plan.resource_prefix}-gateway"  # the name the policy would have
        elif config.source_ranges:
            policy = self._allow_only(
                f"{plan.resource_prefix}-gateway",
                project=plan.project,
                region=plan.region,
                ranges=list(config.source_ranges),
            )
            self.security_policy, self._armor = policy.name, [policy]
        manifest = gateway.gateway_manifest(config.exposure, plan.route_namespaces)
        self.gateway = register_manifest(
            f"{name}-gateway",
            manifest,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace, *self._armor])),
        )
        self._extensions(
            name, plan, deps, pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        )
        self.commands = {
            backend.name: self.serve(backend, namespace=deps.namespace(backend.namespace), paused=plan.paused)
            for backend in plan.backends
        }
        self._routes(plan, provider)
        self.register_outputs(
            {"gateway": gateway.GATEWAY_NAME, "gatewayClassName": manifest["spec"]["gatewayClassName"]}
        )

    def _namespace(self, name: str, plan: GatewayPlan, child: pulumi.ResourceOptions) -> pulumi.Resource:
        """The Gateway's namespace (Pod Security: GatewayPlan.namespace_level) and its ingress policies."""
        namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=gateway.GATEWAY_NAMESPACE,
                labels={
                    **naming.MANAGED_BY_LABELS,
                    **pod_security.namespace_labels(plan.namespace_level, plan.kubernetes_minor),
                },
            ),
            opts=child,
        )
        # Like every namespace of the stack it denies ingress by default; the body-based router, its only pod, takes
        # the load balancer's ext_proc calls and gRPC health checks (not pods of the cluster: no `from`).
        policies = network_policy.namespace_baseline(gateway.GATEWAY_NAMESPACE)[:1]
        if plan.body_router:
            policies.append(
                network_policy.allow_clients(
                    gateway.BBR_NAME,
                    gateway.GATEWAY_NAMESPACE,
                    gateway.body_router_pod_labels(),
                    [gateway.BBR_PORT, gateway.BBR_HEALTH_PORT],
                )
            )
        for policy in policies:
            k8s.networking.v1.NetworkPolicy(
                f"{name}-{policy['metadata']['name']}",
                metadata=policy["metadata"],
                spec=policy["spec"],
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace])),
            )
        return namespace

    def _extensions(self, name: str, plan: GatewayPlan, deps: GatewayDeps, child: pulumi.ResourceOptions) -> None:
        """The body-based router in front of the Gateway's routes, and the InferenceObjective CRD the pickers with
        objectives need."""
        assert self.gateway is not None
        self.body_router = None
        if plan.body_router:
            # One per Gateway (the chart's README): the GCPRoutingExtension in front of every route of the Gateway
            self.body_router = k8s.helm.v3.Release(
                f"{name}-body-router",
                release_args(
                    BODY_BASED_ROUTER, gateway.body_router_values(), create_namespace=False, sources=deps.sources
                ),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[self.gateway, *self._armor])
                ),
            )
        # The InferenceObjective CRD, which GKE does not install, before any picker that has objectives starts
        # (stacks/facts/versions.py INFERENCE_OBJECTIVE_CRDS)
        self._objective_crd = []
        if any(b.objectives for b in plan.backends) and not plan.paused:
            self._objective_crd = [
                k8s.yaml.v2.ConfigGroup(
                    f"{name}-inference-objective-crd",
                    files=list(deps.sources.crd_files(INFERENCE_OBJECTIVE_CRDS, LLM_D_ROUTER)),
                    opts=child,
                )
            ]

    def _routes(self, plan: GatewayPlan, provider: k8s.Provider) -> None:
        """One HTTPRoute per workload, after the releases that create its InferencePools: a rollout's two server sets
        share their workload's (stacks/serving/release.py). Paused: none (the Gateway routes nothing)."""
        assert self.gateway is not None
        for route, backends in gateway.routes(plan.backends).items():
            if plan.paused:
                continue
            register_manifest(
                f"{self._name}-{route}-route",
                gateway.http_route_manifest(*backends),
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=provider,
                    depends_on=[*(self._releases[b.name] for b in backends), self.gateway, *self._armor],
                ),
            )

    def _allow_only(self, policy_name: str, *, project: str, region: str, ranges: list[str]):
        """A regional Cloud Armor policy that lets `ranges` through and denies every other source (403)."""
        chunks = [ranges[i : i + RANGES_PER_RULE] for i in range(0, len(ranges), RANGES_PER_RULE)]

        def rule(priority: int, action: str, src: list[str], description: str):
            return gcp.compute.RegionSecurityPolicyRuleArgs(
                priority=priority,
                action=action,
                description=description,
                match=gcp.compute.RegionSecurityPolicyRuleMatchArgs(
                    versioned_expr="SRC_IPS_V1",
                    config=gcp.compute.RegionSecurityPolicyRuleMatchConfigArgs(src_ip_ranges=src),
                ),
            )

        return gcp.compute.RegionSecurityPolicy(
            f"{self._name}-armor",
            gcp.compute.RegionSecurityPolicyArgs(
                name=policy_name,
                project=project,
                region=region,
                type="CLOUD_ARMOR",
                description="tpu-serving: clients allowed through the inference gateway (tpu-serving:gateway.sourceRanges)",
                rules=[
                    *(
                        rule(1000 + i, "allow", chunk, "tpu-serving:gateway.sourceRanges")
                        for i, chunk in enumerate(chunks)
                    ),
                    rule(DEFAULT_RULE_PRIORITY, "deny(403)", ["*"], "every other source"),
                ],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )

    def serve(self, backend: GatewayBackend, *, namespace: pulumi.Resource, paused: bool) -> dict[str, str]:
        """Route one workload through the Gateway: the endpoint picker chart (its InferencePool, picker and GKE
        policies) and the Cloud Armor policy on its backend (its HTTPRoute follows, `_routes`). Paused: nothing (the
        Gateway stays and routes nothing). Returns the workload's gateway commands."""
        if paused:
            return {}
        prefix = f"{self._name}-{backend.name}"
        opts = pulumi.ResourceOptions(parent=self, provider=self._provider)
        chart = dataclasses.replace(LLM_D_ROUTER, namespace=backend.namespace, release_name=backend.name)
        release = k8s.helm.v3.Release(
            f"{prefix}-router",
            release_args(
                chart,
                gateway.router_values(backend, self._system_selector),
                create_namespace=False,
                sources=self._sources,
                postrender=gateway.FIX_HEALTH_CHECK_PORT,
            ),
            # after the system pool: the InferencePool CRD and GKE's HealthCheckPolicy/GCPBackendPolicy CRDs are
            # GKE's, installed with the control plane (stacks/facts/gke_managed.py)
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    depends_on=[
                        namespace,
                        *self._after,
                        *self._armor,
                        *(self._objective_crd if backend.objectives else []),
                    ]
                ),
            ),
        )
        if self._fleet_metrics is not None:
            return fleet_export.export(prefix, backend, self._fleet_metrics.get(backend.name, ""), release, opts)
        self._releases[backend.name] = release
        if self.security_policy is not None:
            # The chart's GCPBackendPolicy (named after the release, targeting the InferencePool) gets the policy:
            # GCPBackendPolicy spec.default.securityPolicy (https://googlecloudplatform.github.io/gke-gateway-api).
            # The patch names the chart's targetRef too, at the chart's values (server-side apply: managers setting
            # a field to the same value share it, no conflict, https://kubernetes.io/docs/reference/using-api/
            # server-side-apply/#conflicts), so the policy pack's no-public-endpoint sees which backend it guards.
            k8s.apiextensions.CustomResourcePatch(
                f"{prefix}-armor",
                api_version="networking.gke.io/v1",
                kind="GCPBackendPolicy",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=backend.name, namespace=backend.namespace),
                spec={"targetRef": gateway.pool_ref(backend), "default": {"securityPolicy": self.security_policy}},
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release])),
            )
        if self.body_router is not None:
            # the names the body-based router maps to this workload's model (and so to its route)
            register_manifest(
                f"{prefix}-models",
                gateway.model_config_map(backend),
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[self.body_router])),
            )
        commands = {
            "gatewayCurl": gateway.curl_command(backend),
            "models": ", ".join(backend.model_names),
        }
        if backend.objectives:
            commands["objectives"] = ", ".join(
                f"{gateway.OBJECTIVE_HEADER}: {n} (priority {p})" for n, p in backend.objectives
            )
        in_cluster = gateway.in_cluster_command(backend)
        if in_cluster is not None:
            commands["gatewayRequestInCluster"] = in_cluster
        return commands
