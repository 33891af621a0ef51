"""The gateway piece (tpu-serving:gateway): the Inference Gateway, who may reach it and where its load balancer's
proxies get their addresses. Its rules, checked against the network it runs in, and the GKE version it needs
(components/gateway.py builds it)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from stacks import guardrails, naming
from stacks.facts import gke_managed
from stacks.fleets import fleet_export as fleet_piece
from stacks.model.config_model import ClusterConfig, GatewayConfig, NetworkConfig
from stacks.pieces import network as network_piece
from stacks.pieces.cluster import VersionNeed
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, check_cidr, check_path_region, parse_section
from stacks.problems import Problem
from stacks.serving.gateway import BACKEND_TIMEOUT_S, GatewayBackend
from stacks.serving.workload_type import WorkloadRegistry, either

if TYPE_CHECKING:
    from stacks.serving.workload_plan import WorkloadPlan

NAME = "gateway"
KEYS = ("gateway",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    return {"gateway": parse_section(raw, "gateway", GatewayConfig, found.problems_at("gateway"))}


PATH = f"{NS}:gateway"
GATEWAY_NEEDS = "gateway.enabled"
# A proxy-only subnet is /26 or larger; GKE's Gateway guide creates a /23 ("Configure a proxy-only subnet",
# https://cloud.google.com/load-balancing/docs/proxy-only-subnets#proxy_only_subnet_size).
PROXY_SUBNET_PREFIX_MAX = 26
# A regional Cloud Armor security policy: a name (RFC 1035) or its projects/<p>/regions/<r>/securityPolicies/ path.
SECURITY_POLICY_RE = re.compile(
    r"(projects/[a-z][-a-z0-9.:]*/regions/[a-z0-9-]+/securityPolicies/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)


def visit(ctx: Context, found: Findings) -> GatewayPlan | None:
    """Its own rules, then those against the cluster's network; the proxy-only subnet it asks the network for; its
    plan, with the workloads it serves, and its warnings."""
    given, sections = ctx.invocation, ctx.sections
    gateway, cluster = sections.gateway, sections.cluster
    if gateway is None:
        return None
    found.problems_at("gateway.rules").extend(problems(gateway, sections.environment))
    if cluster is not None:
        found.problems_at("gateway.cluster").extend(cluster_problems(gateway, cluster))
    ctx.proxy_subnet_cidr = gateway.proxy_subnet_cidr if proxy_subnet_created(gateway) else None
    if not found.clean or not (given.gcp_project and ctx.region and ctx.cluster_name and ctx.kubernetes_minor):
        return None
    gateway_plan = plan(
        gateway,
        project=given.gcp_project,
        region=ctx.region,
        resource_prefix=ctx.cluster_name,
        kubernetes_minor=ctx.kubernetes_minor,
        workloads=ctx.workloads,
        paused=sections.paused,
    )
    found.warnings_at("gateway").extend(
        warnings(gateway, gateway_plan, ctx.workloads, ctx.workload_types.gateway_types)
    )
    return gateway_plan


def proxy_subnet_mode(gateway: GatewayConfig) -> str:
    """gateway.proxySubnet, else create (a network the stack creates has no proxy-only subnet of its own)."""
    return gateway.proxy_subnet or "create"


def proxy_subnet_created(gateway: GatewayConfig) -> bool:
    """The stack creates the proxy-only subnet the regional gateway needs (an exporting stack has no Gateway of
    its own: the fleet creates the region's proxy-only subnet)."""
    return gateway.enabled and not gateway.fleet_export and proxy_subnet_mode(gateway) == "create"


def problems(gateway: GatewayConfig, environment: str | None = None) -> list[Problem]:
    """The gateway's own rules: who may reach it, and (enabled, the stack creating it) its proxy-only subnet's
    range. Checked whenever tpu-serving:gateway parses, whatever else has problems; what depends on the network
    it runs in is `network_problems`."""
    found: list[Problem] = fleet_piece.gateway_problems(gateway)
    for i, cidr in enumerate(gateway.source_ranges):
        parsed = check_cidr(f"{PATH}.sourceRanges[{i}]", cidr, found)
        # as Saxml's HTTP API: the model endpoint has no authentication, so the whole internet only where the policy
        # pack's no-public-endpoint does not refuse (guardrails.level; guardrails.whole_internet reads the ranges)
        if (
            parsed is not None
            and guardrails.whole_internet(cidr)
            and gateway.exposure == "external"
            and guardrails.level(guardrails.PUBLIC_ENDPOINT, environment) == guardrails.MANDATORY
        ):
            found.append(
                Problem(
                    f"{PATH}.sourceRanges[{i}]",
                    f"{cidr!r} opens the external gateway's model endpoint (no authentication) to the whole "
                    f"internet; allowed only in {', '.join(guardrails.allowed_in(guardrails.PUBLIC_ENDPOINT))} "
                    f"(environment is {environment!r}): list the CIDRs of its clients",
                )
            )
    check_path_region(f"{PATH}.cloudArmorPolicy", gateway.cloud_armor_policy, found)
    if gateway.cloud_armor_policy is not None and not SECURITY_POLICY_RE.fullmatch(gateway.cloud_armor_policy):
        found.append(
            Problem(
                f"{PATH}.cloudArmorPolicy",
                f"{gateway.cloud_armor_policy!r} is not a security policy name (RFC 1035, at most 63 characters) or "
                "projects/<project>/regions/<region>/securityPolicies/<name> path",
            )
        )
    if gateway.exposure == "external":
        if not gateway.source_ranges and gateway.cloud_armor_policy is None:
            found.append(
                Problem(
                    f"{PATH}.exposure",
                    "external needs sourceRanges (client CIDRs; every other source is denied) or cloudArmorPolicy "
                    "(an existing regional Cloud Armor policy); the gateway is never open to the internet by default",
                )
            )
        elif gateway.source_ranges and gateway.cloud_armor_policy is not None:
            found.append(
                Problem(
                    f"{PATH}.cloudArmorPolicy",
                    "give sourceRanges or cloudArmorPolicy, not both (a backend has one security policy)",
                )
            )
    else:
        for key, given in (("sourceRanges", gateway.source_ranges), ("cloudArmorPolicy", gateway.cloud_armor_policy)):
            if given:
                found.append(
                    Problem(
                        f"{PATH}.{key}",
                        "only for exposure: external (an internal gateway is reachable from the VPC only)",
                    )
                )
    if proxy_subnet_created(gateway):
        proxy = check_cidr(f"{PATH}.proxySubnetCidr", gateway.proxy_subnet_cidr, found)
        if proxy is not None and proxy.prefixlen > PROXY_SUBNET_PREFIX_MAX:
            found.append(
                Problem(
                    f"{PATH}.proxySubnetCidr",
                    f"{gateway.proxy_subnet_cidr} is smaller than /{PROXY_SUBNET_PREFIX_MAX}; a proxy-only subnet "
                    "needs /26 or larger (/23 recommended)",
                )
            )
    return found


def cluster_problems(gateway: GatewayConfig, cluster: ClusterConfig) -> list[Problem]:
    """The cross-checks with the cluster: the network the gateway runs in, then an exporting stack's HPA profile."""
    return network_problems(gateway, cluster.network) + fleet_piece.cluster_problems(gateway, cluster)


def network_problems(gateway: GatewayConfig, network: NetworkConfig) -> list[Problem]:
    """The cross-check with the network the gateway runs in (cluster.network, checked when the cluster parses):
    where an enabled gateway's load balancer proxies get their addresses, a proxy-only subnet, existing or created
    with a range disjoint from the cluster's."""
    if not gateway.enabled:
        return []
    if gateway.fleet_export:
        return fleet_piece.network_problems(gateway, network)
    found: list[Problem] = []
    if network.create and gateway.proxy_subnet == "existing":
        found.append(
            Problem(
                f"{PATH}.proxySubnet",
                "'existing' needs cluster.network.create: false; a network the stack creates has no proxy-only "
                "subnet unless the stack creates it (create)",
            )
        )
    if not network.create and gateway.proxy_subnet is None:
        found.append(
            Problem(
                f"{PATH}.proxySubnet",
                "required when cluster.network.create is false: existing (the network already has an ACTIVE "
                "REGIONAL_MANAGED_PROXY subnet in gcp:region; a region holds one) or create (the stack adds one "
                "with proxySubnetCidr)",
            )
        )
    if proxy_subnet_mode(gateway) != "create":
        return found
    # an invalid range is the gateway's own problem (problems), reported there
    proxy = check_cidr(f"{PATH}.proxySubnetCidr", gateway.proxy_subnet_cidr, [])
    if proxy is not None and network.create:
        for key, other in network_piece.created_ranges(network):
            if proxy.overlaps(other):
                found.append(
                    Problem(
                        f"{PATH}.proxySubnetCidr",
                        f"{proxy} overlaps cluster.network.{key} {other}; the ranges must be disjoint",
                    )
                )
    return found


def version_needs(gateway: GatewayConfig) -> list[VersionNeed]:
    """An enabled gateway's InferencePools need the InferencePool CRD, which GKE installs (stacks/facts/gke_managed.py)
    and the stack therefore never applies: the control plane must be at least the version GKE installs it from."""
    if not gateway.enabled:
        return []
    settings = gke_managed.stack_settings(gateway_api=True)
    need = gke_managed.required_version(None, gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, settings)
    assert need is not None  # required_version returns the version when none is given
    what = "the version GKE installs the InferencePool CRD from"
    needs = [VersionNeed(need, what, GATEWAY_NEEDS, message=_version_problem, always_required=True)]
    if fleet_piece.needs_version(gateway):
        needs.append(
            VersionNeed(
                fleet_piece.MIN_VERSION,
                fleet_piece.WHAT,
                fleet_piece.EXPORT_NEEDS,
                message=fleet_piece.version_problem,
                always_required=True,
            )
        )
    return needs


def _version_problem(cluster: ClusterConfig) -> list[Problem]:
    need = gke_managed.required_version(
        cluster.min_master_version,
        gke_managed.CRD,
        gke_managed.INFERENCE_POOL_CRD,
        gke_managed.stack_settings(gateway_api=True),
    )
    if need is None:
        return []
    given = "unset (the release channel's default version, unknown before the cluster exists)"
    if cluster.min_master_version:
        given = f"{cluster.min_master_version!r}"
    return [
        Problem(
            f"{NS}:cluster.minMasterVersion",
            f"{given} with gateway.enabled: set it to {need} or later, a version the {cluster.release_channel} "
            f"channel offers; GKE installs the InferencePool CRD ({gke_managed.INFERENCE_POOL_CRD}) from {need} "
            "and the stack never applies a CRD GKE manages",
        )
    ]


@dataclass(frozen=True)
class GatewayPlan:
    """The Inference Gateway as the stack builds it, with the workloads it serves."""

    config: GatewayConfig
    project: str
    region: str
    resource_prefix: str
    """What its Cloud Armor policy is named after: the cluster's name."""
    kubernetes_minor: str
    backends: tuple[GatewayBackend, ...]
    """One per workload served through it (its InferencePool, endpoint picker and route)."""
    paused: bool
    """Paused: the Gateway stays and routes nothing."""
    system_selector: dict[str, str] = field(default_factory=lambda: dict(naming.SYSTEM_POOL_SELECTOR))
    fleet_metrics: dict[str, str] = field(default_factory=dict)
    """Per backend: the KV-cache gauge its server reports, exported for a fleet's spill-over (gateway.fleetExport)."""

    @property
    def route_namespaces(self) -> list[str]:
        return [b.namespace for b in self.backends]

    @property
    def body_router(self) -> bool:
        """The stack's Gateway routes by the request body (stacks/serving/gateway.py BBR_NAME): whenever it serves a
        workload and is not paused (an exporting stack has no Gateway: the fleet's routes)."""
        return bool(self.backends) and not self.paused and not self.config.fleet_export

    @property
    def namespace_level(self) -> str:
        """The Pod Security level of the Gateway's namespace: restricted while it holds no pod; baseline with the
        body-based router, whose container the chart renders without a securityContext and offers no value for one
        (gateway-api-inference-extension@v1.5.0:config/charts/body-based-routing/templates/bbr.yaml), which the
        restricted level refuses (runAsNonRoot, allowPrivilegeEscalation, capabilities, seccompProfile unset) and
        baseline admits."""
        return "baseline" if self.body_router else "restricted"


def served(gateway: GatewayConfig, workloads: Sequence[WorkloadPlan]) -> list[WorkloadPlan]:
    """Workloads served through the Inference Gateway: those whose plan offers a gateway backend (a type that declares
    WorkloadType.gateway_served, unless the workload opts out), and only when tpu-serving:gateway is enabled."""
    if not gateway.enabled:
        return []
    return [w for w in workloads if w.gateway_backend() is not None]


def warnings(
    gateway: GatewayConfig, plan: GatewayPlan, workloads: Sequence[WorkloadPlan], gateway_types: Sequence[str]
) -> list[str]:
    """What a user should read about the gateway: waits from zero beyond its timeout, and a gateway routing nothing."""
    found = from_zero_warnings(gateway, workloads)
    if gateway.enabled and gateway.fleet_export:
        found += [
            f"{NS}:workloads {w.release.route}: a rollout candidate on a stack exporting to a fleet "
            "(gateway.fleetExport) is exported as a backend of its own: the fleet's route does not weigh it against "
            'the current release (docs/operations.md "Release train"); promote it on a stack with its own Gateway'
            for w in served(gateway, workloads)
            if w.release is not None and w.release.candidate
        ]
    if gateway.enabled and not plan.backends:
        found.append(
            f"{NS}:gateway.enabled=true but no workload is served through it (only {either(gateway_types)} workloads "
            "are, unless they opt out): the Gateway routes nothing"
        )
    return found


def from_zero_warnings(gateway: GatewayConfig, workloads: Sequence[WorkloadPlan]) -> list[str]:
    """A workload KEDA scales to zero behind the gateway whose wait from zero outlasts the load balancer's timeout
    (stacks.serving.gateway.BACKEND_TIMEOUT_S, which no chart value sets): its first requests are cut, and clients retry."""
    return [
        f"{NS}:workloads {w.name}: scales to zero behind the gateway and its first request waits about "
        f"{round(w.from_zero_s / 60)} min for a replica (summary.md, Time to serve), beyond the load balancer's "
        f"{BACKEND_TIMEOUT_S} s timeout (the endpoint picker chart's GCPBackendPolicy): the load balancer ends the "
        "first requests with an error, and clients must retry until the replica is Ready (docs/autoscaling.md)"
        for w in served(gateway, workloads)
        if w.from_zero_s is not None and w.from_zero_s > BACKEND_TIMEOUT_S
    ]


def plan(
    gateway: GatewayConfig,
    *,
    project: str,
    region: str,
    resource_prefix: str,
    kubernetes_minor: str,
    workloads: Sequence[WorkloadPlan],
    paused: bool,
) -> GatewayPlan:
    return GatewayPlan(
        config=gateway,
        project=project,
        region=region,
        resource_prefix=resource_prefix,
        kubernetes_minor=kubernetes_minor,
        backends=tuple(
            replace(
                b,
                queue_ttl_s=w.from_zero_budget_s,
                route=w.release.route if w.release is not None else "",
                weight=w.release.weight if w.release is not None and w.release.paired else None,
            )
            for w in served(gateway, workloads)
            if (b := w.gateway_backend()) is not None
        ),
        paused=paused,
        fleet_metrics={
            w.name: b.kv_cache_metric for w in served(gateway, workloads) if (b := w.gateway_backend()) is not None
        },
    )
