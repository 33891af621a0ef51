"""The fleet stack kind (`tpu-serving:fleet`): one model served from several regional stacks through GKE's
multi-cluster Inference Gateway (Preview), as plain data: what a regional stack exports to a fleet (the `fleet`
stack output), the fleet's config, every rule a fleet is checked against before anything is registered, and the
objects the fleet applies in its config cluster. components/fleet.py registers them.

Every kind, field, class name, version and limit below comes from these sources (docs/fleet.md cites them too):
- F1 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/setup-multicluster-inference-gateway (Preview):
  GKE 1.34.1-gke.1127000 or later; every cluster of the fleet, the config cluster included, in the same VPC;
  "Multiport and NEG limits": each port in each zone is one NEG, a backend service holds at most 50 NEGs;
  memberships registered with `--location=global`; `gcloud container fleet ingress enable --config-membership=
  projects/<p>/locations/global/memberships/<name>`; one proxy-only subnet per region and VPC, purpose
  GLOBAL_MANAGED_PROXY, role ACTIVE (a REGIONAL_MANAGED_PROXY one in the region makes its creation fail); the
  InferencePool annotation `networking.gke.io/export: "True"`; in the config cluster a Gateway of class
  gke-l7-cross-regional-internal-managed-mc with one `networking.gke.io/ephemeral-ipv4-address/<region>` address
  per region, an HTTPRoute whose backendRef is group networking.gke.io kind GCPInferencePoolImport (named after
  the exported pool), a HealthCheckPolicy and a GCPBackendPolicy targeting the import (balancingMode
  CUSTOM_METRICS, trafficDuration LONG, customMetrics gke.named_metrics.kv-cache maxUtilizationPercent, start at
  60); the KV-cache metric exported per cluster by an AutoscalingMetric (autoscaling.gke.io/v1beta1,
  vllm:kv_cache_usage_perc -> exportName kv-cache, vLLM v0.10.2 and later); a multi-node replica's pool selector
  matching only its leader pods.
- F2 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/customize-backend-multicluster-inference-gateway:
  GCPBackendPolicy `default.scopes[].selector` on cluster labels such as `gke.io/region`, per-scope
  backendPreference PREFERRED/DEFAULT and capacity scalers; the first matching scope wins; a backend-level field
  set both in `default` and in a scope makes the policy rejected.
- F3 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/enabling-multi-cluster-gateways: the multi-cluster
  GatewayClasses, gke-l7-cross-regional-internal-managed-mc among them.
- F4 https://cloud.google.com/compute/docs/reference/rest/beta/backendServices (Backend.preference, capacityScaler):
  PREFERRED backends fill to capacity first, then DEFAULT ones; a capacity scaler is 0 (drained) or 0.1-1.0, and
  not 0 on a backend service's only backend.
- F5 llm-d/llm-d-router@v0.10.0:config/charts/llm-d-router-gateway/templates/gke.yaml: GCPBackendPolicy
  `default.capacityScalerPercent` and `backendPreference` as GKE spells them.
- G1 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling "Requirements":
  pod label selectors of an AutoscalingMetric with keys of letters, digits, hyphen and underscore only; HPA with
  the performance profile; "GKE 1.35.1-gke.1396000 or later with clusters in the Rapid channel".
- G2 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-load-balancer
  "Requirements" (an AutoscalingMetric exporting a Pod's metric to the load balancer, what the fleet's
  CUSTOM_METRICS balancing reads): "GKE 1.35.1-gke.1396000 or later", the Gateway API, the performance HPA profile;
  the page's earlier revision (https://cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics):
  "GKE 1.34.1-gke.1127000 or later with clusters in the Rapid channel".
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from stacks import naming
from stacks.facts import catalog, storage_locations
from stacks.model import config_parse
from stacks.model.config_model import CamelModel
from stacks.problems import Problem, fmt
from stacks.serving.gateway import MODEL_HEADER, route_namespace_selector
from stacks.serving.workload_type import either

NS = "tpu-serving"
PATH = f"{NS}:fleet"
PREVIEW = "GKE multi-cluster Inference Gateway is in Preview (Pre-GA Offerings Terms)"

MIN_GKE_VERSION = "1.34.1-gke.1127000"  # F1 Requirements
# Where GKE documents exporting a Pod's metric through an AutoscalingMetric, each page's own condition
# (GKE version or later, and the release channel where it names one): the export is admitted only where every one
# of them holds (G2 and its earlier revision, G1; the module docstring quotes them).
CUSTOM_METRICS_DOCUMENTED: tuple[tuple[str, str, str | None], ...] = (
    (
        "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-load-balancer",
        "1.35.1-gke.1396000",
        None,
    ),
    ("https://cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics", "1.34.1-gke.1127000", "RAPID"),
    (
        "https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling",
        "1.35.1-gke.1396000",
        "RAPID",
    ),
)
EXPORT_CHANNEL = "RAPID"  # every page that names a channel names this one
# The lowest version every page admits, F1's included.
EXPORT_MIN_GKE_VERSION = max(
    [MIN_GKE_VERSION, *(v for _, v, _ in CUSTOM_METRICS_DOCUMENTED)], key=catalog.version_tuple
)


def export_problems(version: str, channel: str) -> list[str]:
    """Why a cluster whose minMasterVersion is `version` ('' unset) on release channel `channel` is not one GKE
    documents for the fleet: each unmet part, in words (F1, G1, G2); [] when it is."""
    out = []
    if not version or catalog.version_tuple(version) < catalog.version_tuple(EXPORT_MIN_GKE_VERSION):
        out.append(
            f"cluster.minMasterVersion {fmt(version or 'unset')} is below {EXPORT_MIN_GKE_VERSION} (F1; G1 and G2: "
            "exporting the KV-cache metric to the load balancer)"
        )
    if channel != EXPORT_CHANNEL:
        out.append(
            f"cluster.releaseChannel {fmt(channel or 'unset')} is not {EXPORT_CHANNEL}: GKE documents exporting a Pod's "
            f"metric to the load balancer only on clusters in the {EXPORT_CHANNEL.title()} channel (G1, G2)"
        )
    return out


GATEWAY_CLASS = "gke-l7-cross-regional-internal-managed-mc"  # F1 mcig.yaml, F3
ADDRESS_TYPE = "networking.gke.io/ephemeral-ipv4-address/"  # + region (F1 mcig.yaml)
EXPORT_ANNOTATION = "networking.gke.io/export"  # F1 "Mark the InferencePool resources as exported"
EXPORT_VALUE = "True"
GKE_NETWORKING = "networking.gke.io"
IMPORT_KIND = "GCPInferencePoolImport"  # F1, F2: what the config cluster sees of the exported pools
IMPORT_RESOURCE = "gcpinferencepoolimports.networking.gke.io"
MEMBERSHIP_LOCATION = "global"  # F1 `gcloud container fleet memberships register ... --location=global`
INGRESS_FEATURE = "multiclusteringress"  # pulumi-gcp 10.2.0 gkehub.Feature example "Multi Cluster Ingress"
PROXY_PURPOSE = "GLOBAL_MANAGED_PROXY"  # F1 "Create proxy-only subnets"
PROXY_ROLE = "ACTIVE"
NEGS_PER_BACKEND_SERVICE = 50  # F1 "Multiport and NEG limits"
REGION_LABEL = "gke.io/region"  # F2 scope selector
KV_CACHE_EXPORT = "kv-cache"  # F1 AutoscalingMetric exportName
KV_CACHE_POLICY_METRIC = f"gke.named_metrics.{KV_CACHE_EXPORT}"  # F1 GCPBackendPolicy customMetrics[].name
AUTOSCALING_METRIC_API = "autoscaling.gke.io/v1beta1"
# Labels that select only the leader pods of a multi-host LeaderWorkerSet, whatever its replicas: this project's
# leader template label (workloads/vllm/plan.py leader_labels), and the label LWS puts on every group's leader
# (kubernetes-sigs/lws@v0.10.0 charts/lws/crds/disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml:
# "matching one pod per LWS group (the leader) ... leaderworkerset.sigs.k8s.io/worker-index=0"). A pod index
# (apps.kubernetes.io/pod-index: "0") is not one: it matches group 0's leader only.
LEADER_ONLY_LABELS: dict[str, str] = {"role": "leader", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
# G1 https://docs.cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics-autoscaling "Requirements":
# "Label names in Pod label selectors must not contain special characters. Only a-z letters (lowercase or
# uppercase), numbers, hyphen, and underscore are supported"; and "Using horizontal Pod autoscaling with the
# performance profile" (F1 creates its clusters with --hpa-profile=performance).
METRIC_SELECTOR_KEY = r"^[A-Za-z0-9_-]+$"
HPA_PROFILE = "PERFORMANCE"
# The APIs a fleet needs enabled in its project (docs/fleet.md step 0; the fleet stack enables none, as the
# regional stacks enable none): F1 "Before you begin" (Compute Engine, Kubernetes Engine, Network Services,
# Autoscaling), fleet membership (GKE Hub), F3 "Multi-cluster Gateway requirements" (Cloud Service Mesh,
# Multi-cluster Services, Multi Cluster Ingress, GKE Hub). F1 also lists Model Armor, which only its optional
# AI security checks use: this fleet configures none.
REQUIRED_APIS: tuple[str, ...] = (
    "compute.googleapis.com",
    "container.googleapis.com",
    "gkehub.googleapis.com",
    "autoscaling.googleapis.com",
    "networkservices.googleapis.com",
    "trafficdirector.googleapis.com",
    "multiclusterservicediscovery.googleapis.com",
    "multiclusteringress.googleapis.com",
)
OPTIONAL_APIS: tuple[str, ...] = ("modelarmor.googleapis.com",)
# F3 "Grant IAM permissions required by the Gateway controller": the Multi Cluster Ingress service agent gets
# roles/container.admin on the fleet's project.
INGRESS_AGENT_ROLE = "roles/container.admin"


def ingress_service_agent(project_number: str) -> str:
    """The Multi Cluster Ingress service agent of a project, as an IAM member (F3)."""
    return f"serviceAccount:service-{project_number}@gcp-sa-multiclusteringress.iam.gserviceaccount.com"


OUTPUT = "fleet"  # the regional stack output the fleet reads
SCHEMA_VERSION = 1


# ---- the regional side: what a stack exports to a fleet ----------------------------------------------


def network_path(project: str, network: str) -> str:
    """A VPC as `projects/<p>/global/networks/<name>`, whether given as a name, that path or a self-link."""
    if "/" not in network:
        return f"projects/{project}/global/networks/{network}"
    return network[network.index("projects/") :] if "projects/" in network else network


# ---- the fleet's config -------------------------------------------------------------------------------


class FleetRegionConfig(CamelModel):
    """One regional stack of the fleet."""

    stack: str = Field(
        description="The regional stack, as `pulumi.StackReference` names it: <organization>/<project>/<stack>."
    )
    capacity_percent: int = Field(
        100,
        ge=0,
        le=100,
        description="Per-cluster limit: the share of this region's serving capacity the load balancer may fill "
        "(GCPBackendPolicy capacityScalerPercent): 0 drains the region, otherwise 10-100.",
    )
    proxy_subnet_cidr: str | None = Field(
        None,
        description="Range of the GLOBAL_MANAGED_PROXY proxy-only subnet the fleet creates in this region's VPC "
        "(/26 or larger; the GKE guide uses /23). Set this or existingProxySubnet.",
    )
    existing_proxy_subnet: str | None = Field(
        None,
        description="The GLOBAL_MANAGED_PROXY proxy-only subnet this region's VPC already has (one per region and "
        "VPC: another fleet's or one made by hand), by name or as projects/<p>/regions/<region>/subnetworks/<name>; "
        "the fleet uses it and creates none here. Set this or proxySubnetCidr.",
    )


class SpilloverConfig(CamelModel):
    """When the home region's pools are loaded enough that requests go to the other regions."""

    kv_cache_utilization_percent: int = Field(
        60,
        ge=1,
        le=100,
        description="Target KV-cache utilisation per endpoint (customMetrics maxUtilizationPercent): above it a "
        "region is full and requests spill over to the next one; GKE suggests starting at 60.",
    )


class FleetConfig(CamelModel):
    """tpu-serving:fleet: the regional stacks served behind one multi-cluster Inference Gateway (Preview)."""

    regions: list[FleetRegionConfig] = Field(min_length=2, description="Two or more regional stacks.")
    config_cluster: str | None = Field(
        None,
        description="The regions[].stack whose cluster is the config cluster (holds the Gateway, routes and "
        "policies); default: the first region.",
    )
    home_region: str | None = Field(
        None,
        description="The GCP region whose pools are PREFERRED (filled first); the others are DEFAULT (spill-over). "
        "Default: the config cluster's region.",
    )
    spillover: SpilloverConfig = Field(default_factory=SpilloverConfig)
    timeout_sec: int = Field(
        600,
        ge=1,
        le=3600,
        description="Load balancer request timeout: at least twice the P99 request latency (GKE: up to 3600 for "
        "long-context inference).",
    )


def parse_config(raw: Any, other_keys: tuple[str, ...] = ()) -> tuple[FleetConfig | None, list[Problem]]:
    """tpu-serving:fleet as the model, and every problem: its own, and each other `tpu-serving:` key the stack sets
    (`other_keys`), which a fleet stack does not read (refused, as the JSON Schema refuses them)."""
    problems = [
        Problem(
            f"{NS}:{key}",
            f"a fleet stack ({PATH} is set) reads no other {NS}: key; remove it, or move it to a regional stack's "
            "file (docs/fleet.md)",
        )
        for key in other_keys
    ]
    cfg = config_parse.parse(PATH, FleetConfig, raw, problems)
    return (None if problems else cfg), problems


# ---- validation of the regional stacks the fleet joins ---------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One regional stack as the fleet sees it: its config entry, its index and its `fleet` output."""

    index: int
    config: FleetRegionConfig
    output: dict[str, Any]

    @property
    def path(self) -> str:
        return f"{PATH}.regions[{self.index}]"


def members(cfg: FleetConfig, outputs: dict[str, Any]) -> tuple[list[Member], list[Problem]]:
    """The regional stacks with their `fleet` outputs (by stack name); a stack without one is a problem."""
    found, problems = [], []
    for i, region in enumerate(cfg.regions):
        out = outputs.get(region.stack)
        if not isinstance(out, dict) or out.get("schemaVersion") != SCHEMA_VERSION:
            problems.append(
                Problem(
                    f"{PATH}.regions[{i}].stack",
                    f"{region.stack!r} exports no `{OUTPUT}` output of schema {SCHEMA_VERSION}: set "
                    "tpu-serving:gateway.fleetExport: true in that stack and `pulumi up` it before the fleet",
                )
            )
            continue
        found.append(Member(i, region, out))
    return found, problems


def problems(
    cfg: FleetConfig, members_: list[Member], fleet_project: str | None, gateway_types: Sequence[str]
) -> list[Problem]:
    """Every rule the fleet is held to (F1, F2, F4), all at once, before anything is registered. `gateway_types`:
    the workload types the gateway serves (WorkloadRegistry.gateway_types), named when a member exports none."""
    found = _config_problems(cfg, members_)
    for member in members_:
        found += _member_problems(member, fleet_project, gateway_types)
    found += _shared_problems(members_)
    found += _pool_problems(members_)
    return found


def _config_problems(cfg: FleetConfig, members_: list[Member]) -> list[Problem]:
    found: list[Problem] = []
    stacks = [r.stack for r in cfg.regions]
    for i, stack in enumerate(stacks):
        if stacks.index(stack) != i:
            found.append(Problem(f"{PATH}.regions[{i}].stack", f"{stack!r} is listed twice"))
    if cfg.config_cluster is not None and cfg.config_cluster not in stacks:
        found.append(Problem(f"{PATH}.configCluster", f"{cfg.config_cluster!r} is not one of regions[].stack"))
    regions = [m.output["region"] for m in members_]
    listed = storage_locations.region_problem(cfg.home_region) if cfg.home_region is not None else None
    if listed:
        found.append(Problem(f"{PATH}.homeRegion", listed))
    elif cfg.home_region is not None and members_ and cfg.home_region not in regions:
        found.append(Problem(f"{PATH}.homeRegion", f"{cfg.home_region!r} is not a region of the fleet: {regions}"))
    if all(r.capacity_percent == 0 for r in cfg.regions):
        found.append(Problem(f"{PATH}.regions", "every region has capacityPercent 0: nothing would serve (F4)"))
    found += [
        Problem(f"{PATH}.regions[{i}].capacityPercent", f"{r.capacity_percent} is not 0 (drained) or 10-100 (F4)")
        for i, r in enumerate(cfg.regions)
        if 0 < r.capacity_percent < 10
    ]
    return found + _proxy_subnet_problems(cfg)


SUBNET_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"  # a Compute Engine resource name (RFC 1035)
SUBNET_PATH = rf"^(?:.*/)?projects/(?P<project>[^/]+)/regions/(?P<region>[^/]+)/subnetworks/(?P<name>{SUBNET_NAME})$"


def _proxy_subnet_problems(cfg: FleetConfig) -> list[Problem]:
    """Per region, one proxy-only subnet: a range the fleet creates it with, or an existing one (F1: one
    GLOBAL_MANAGED_PROXY subnet per region and VPC); created ranges /26 or larger and disjoint."""
    found: list[Problem] = []
    ranges: list[tuple[str, ipaddress.IPv4Network]] = []
    for i, region in enumerate(cfg.regions):
        path = f"{PATH}.regions[{i}]"
        existing = region.existing_proxy_subnet
        if (region.proxy_subnet_cidr is None) == (existing is None):
            found.append(
                Problem(
                    path,
                    "set exactly one of proxySubnetCidr (the fleet creates the region's GLOBAL_MANAGED_PROXY subnet) "
                    "and existingProxySubnet (the region's VPC has one: one per region and VPC, F1)",
                )
            )
        in_path = re.match(SUBNET_PATH, existing or "")
        listed = storage_locations.region_problem(in_path["region"]) if in_path else None
        if listed:
            found.append(Problem(f"{path}.existingProxySubnet", f"its region: {listed}"))
        if existing is not None and not (re.fullmatch(SUBNET_NAME, existing) or in_path):
            found.append(
                Problem(
                    f"{path}.existingProxySubnet",
                    f"{existing!r} is neither a subnet name nor projects/<p>/regions/<region>/subnetworks/<name>",
                )
            )
        if region.proxy_subnet_cidr is None:
            continue
        try:
            net = ipaddress.IPv4Network(region.proxy_subnet_cidr, strict=True)
        except ValueError as err:
            found.append(
                Problem(f"{path}.proxySubnetCidr", f"{region.proxy_subnet_cidr!r} is not an IPv4 CIDR ({err})")
            )
            continue
        if net.prefixlen > 26:
            found.append(
                Problem(f"{path}.proxySubnetCidr", f"{net} is smaller than /26; a proxy-only subnet needs /26+")
            )
        found += [
            Problem(f"{path}.proxySubnetCidr", f"{net} overlaps {other_path}.proxySubnetCidr {other}")
            for other_path, other in ranges
            if net.overlaps(other)
        ]
        ranges.append((path, net))
    return found


def _member_problems(member: Member, fleet_project: str | None, gateway_types: Sequence[str]) -> list[Problem]:
    """What makes one regional stack unfit to join: its own VPC, a regional proxy subnet, its GKE version, a
    project other than the fleet's."""
    out, path = member.output, f"{member.path}.stack"
    found: list[Problem] = []
    if out.get("networkCreated"):
        found.append(Problem(path, "the stack creates its own VPC; every cluster of a fleet is in one shared VPC (F1)"))
    if out.get("regionalProxySubnet"):
        found.append(
            Problem(
                path,
                f"the stack sets gateway.proxySubnet {fmt(out['regionalProxySubnet'])}: a region of the fleet holds the "
                f"fleet's {PROXY_PURPOSE} proxy-only subnet and no regional one (F1)",
            )
        )
    found += [
        Problem(path, why)
        for why in export_problems(out.get("minMasterVersion") or "", out.get("releaseChannel") or "")
    ]
    if fleet_project is not None and out.get("project") != fleet_project:
        found.append(
            Problem(path, f"project {fmt(out.get('project'))} is not the fleet's gcp:project {fmt(fleet_project)}")
        )
    if out.get("hpaProfile") != HPA_PROFILE:
        found.append(
            Problem(
                path,
                f"cluster.hpaProfile {fmt(out.get('hpaProfile') or 'unset')} is not {HPA_PROFILE}: the KV-cache "
                "metric the fleet balances on is exported only with the performance HPA profile (F1, G1)",
            )
        )
    if not out.get("exports"):
        found.append(
            Problem(
                path, f"exports no gateway-served workload (gateway.enabled and a {either(gateway_types)} workload)"
            )
        )
    existing = re.match(SUBNET_PATH, member.config.existing_proxy_subnet or "")
    if existing and (existing["region"], existing["project"]) != (out.get("region"), out.get("project")):
        found.append(
            Problem(
                f"{member.path}.existingProxySubnet",
                f"{member.config.existing_proxy_subnet!r} is not in the stack's project {fmt(out.get('project'))} "
                f"and region {fmt(out.get('region'))}",
            )
        )
    return found


def _shared_problems(members_: list[Member]) -> list[Problem]:
    """One VPC, one cluster per region, unique cluster names (the membership ids)."""
    found: list[Problem] = []
    first: dict[str, dict[Any, Member]] = {"network": {}, "region": {}, "clusterName": {}}
    for member in members_:
        for key, seen in first.items():
            value = member.output.get(key)
            if key == "network" and seen and value not in seen:
                other = next(iter(seen.values()))
                found.append(
                    Problem(
                        f"{member.path}.stack",
                        f"VPC {fmt(value)} is not {fmt(other.output['network'])} of {other.config.stack}: the fleet's "
                        "clusters share one VPC (F1)",
                    )
                )
            elif key != "network" and value in seen:
                found.append(
                    Problem(
                        f"{member.path}.stack",
                        f"{key} {fmt(value)} is also {seen[value].config.stack}'s: one cluster per region, "
                        "each with its own name (its fleet membership id)",
                    )
                )
            seen.setdefault(value, member)
    return found


def exported_pools(members_: list[Member]) -> dict[tuple[str, str], list[tuple[Member, dict[str, Any]]]]:
    """(namespace, pool) -> each member's export of it: the import merges pools of one namespace and name."""
    pools: dict[tuple[str, str], list[tuple[Member, dict[str, Any]]]] = {}
    for member in members_:
        for export in member.output.get("exports", []):
            pools.setdefault((export["namespace"], export["pool"]), []).append((member, export))
    return pools


def _pool_problems(members_: list[Member]) -> list[Problem]:
    """Per exported pool: in every region, one model under one served name, the metric spill-over balances on,
    leader-only selectors for multi-host replicas, and the NEG limit over the clusters."""
    found: list[Problem] = []
    for (namespace, pool), exports in exported_pools(members_).items():
        where = f"pool {namespace}/{pool}"
        missing = [m.config.stack for m in members_ if m not in [e[0] for e in exports]]
        if missing:
            found.append(Problem(f"{PATH}.regions", f"{where} is not exported by {missing}: every region serves it"))
        for key, what in (("model", "models"), ("servedName", "served names")):
            values = {str(e.get(key)) for _, e in exports}
            if len(values) > 1:
                found.append(
                    Problem(f"{PATH}.regions", f"{where} has different {what} {sorted(values)} across regions")
                )
        negs = sum(len(e["ports"]) * int(m.output["zones"]) for m, e in exports)
        if negs > NEGS_PER_BACKEND_SERVICE:
            found.append(
                Problem(
                    f"{PATH}.regions",
                    f"{where}: ports x zones x clusters = {negs} NEGs, above the {NEGS_PER_BACKEND_SERVICE} a "
                    "backend service holds (F1)",
                )
            )
        for member, export in exports:
            if not export.get("kvCacheMetric"):
                found.append(Problem(f"{member.path}.stack", f"{where} reports no KV-cache metric to spill over on"))
            hosts = int(export["hostsPerReplica"])
            for key, selector in (("selector", export["selector"]), ("metricSelector", export.get("metricSelector"))):
                leader = any((selector or {}).get(k) == v for k, v in LEADER_ONLY_LABELS.items())
                if hosts > 1 and not leader:
                    found.append(
                        Problem(
                            f"{member.path}.stack",
                            f"{where}: a replica spans {hosts} hosts and the {key} {selector} also matches workers "
                            "(404s); select leaders only (F1)",
                        )
                    )
            found += _metric_selector_problems(member, where, export.get("metricSelector"))
    return found


def _metric_selector_problems(member: Member, where: str, selector: dict[str, str] | None) -> list[Problem]:
    """The AutoscalingMetric's pod selector: present, and only keys GKE accepts there (G1)."""
    bad = sorted(k for k in selector or {} if not re.fullmatch(METRIC_SELECTOR_KEY, k))
    if selector and not bad:
        return []
    what = f"label keys {bad}" if bad else "no metricSelector"
    return [
        Problem(
            f"{member.path}.stack",
            f"{where}: the KV-cache AutoscalingMetric selects pods by {what}; GKE accepts only keys of letters, "
            "digits, hyphen and underscore (G1): re-`up` the regional stack",
        )
    ]


# ---- what the fleet applies in its config cluster ------------------------------------------------------


@dataclass(frozen=True)
class FleetPlan:
    """The fleet as it is built: validated members, the config cluster, the home region and the pools it routes."""

    config: FleetConfig
    project: str
    members: tuple[Member, ...]
    config_member: Member
    home_region: str
    pools: tuple[dict[str, Any], ...]
    """One export per routed pool (namespace, pool, model, ports), from the config cluster's member."""

    @property
    def gateway_namespace(self) -> str:
        return self.pools[0]["namespace"]


def plan(cfg: FleetConfig, members_: list[Member], project: str) -> FleetPlan:
    config_stack = cfg.config_cluster or cfg.regions[0].stack
    config_member = next(m for m in members_ if m.config.stack == config_stack)
    pools = tuple(sorted(config_member.output["exports"], key=lambda e: (e["namespace"], e["pool"])))
    return FleetPlan(
        cfg, project, tuple(members_), config_member, cfg.home_region or config_member.output["region"], pools
    )


GATEWAY_NAME = "fleet-gateway"
LISTENER = "http"


def gateway_manifest(fleet: FleetPlan) -> dict[str, Any]:
    """The multi-cluster Gateway: an internal cross-regional load balancer with an address in every region."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": GATEWAY_NAME,
            "namespace": fleet.gateway_namespace,
            "labels": dict(naming.MANAGED_BY_LABELS),
        },
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "addresses": [
                {"type": f"{ADDRESS_TYPE}{m.output['region']}", "value": m.output["region"]} for m in fleet.members
            ],
            "listeners": [
                {
                    "name": LISTENER,
                    "protocol": "HTTP",
                    "port": 80,
                    "allowedRoutes": {"namespaces": route_namespace_selector([p["namespace"] for p in fleet.pools])},
                }
            ],
        },
    }


def _pool_object(api_version: str, kind: str, pool: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """One fleet object about an imported pool, in the pool's namespace, named after it."""
    metadata = {
        "name": f"{pool['pool']}-fleet",
        "namespace": pool["namespace"],
        "labels": dict(naming.MANAGED_BY_LABELS),
    }
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def _import_ref(pool: dict[str, Any]) -> dict[str, str]:
    return {"group": GKE_NETWORKING, "kind": IMPORT_KIND, "name": pool["pool"]}


def route_manifest(fleet: FleetPlan, pool: dict[str, Any]) -> dict[str, Any]:
    """Requests to the fleet's Gateway go to the pool's import; with several pools, by the model header."""
    match: dict[str, Any] = {"path": {"type": "PathPrefix", "value": "/"}}
    if len(fleet.pools) > 1:
        match["headers"] = [{"type": "Exact", "name": MODEL_HEADER, "value": pool["servedName"]}]
    parent = {
        "group": "gateway.networking.k8s.io",
        "kind": "Gateway",
        "name": GATEWAY_NAME,
        "namespace": fleet.gateway_namespace,
        "sectionName": LISTENER,
    }
    spec = {"parentRefs": [parent], "rules": [{"matches": [match], "backendRefs": [_import_ref(pool)]}]}
    return _pool_object("gateway.networking.k8s.io/v1", "HTTPRoute", pool, spec)


def health_check_manifest(pool: dict[str, Any]) -> dict[str, Any]:
    """The load balancer's health check of the pool's serving pods in every cluster (F1: HTTP /health)."""
    check = {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": pool["ports"][0]}}
    spec = {"targetRef": _import_ref(pool), "default": {"config": check}}
    return _pool_object(f"{GKE_NETWORKING}/v1", "HealthCheckPolicy", pool, spec)


def backend_policy_manifest(fleet: FleetPlan, pool: dict[str, Any]) -> dict[str, Any]:
    """Home region first, spill-over on KV-cache utilisation, a capacity limit per cluster: the balancing mode and
    its metric in `default`, the per-region fields only in scopes (F2: never both), home region's scope first."""
    members_ = sorted(fleet.members, key=lambda m: m.output["region"] != fleet.home_region)
    scopes = [
        {
            "selector": {REGION_LABEL: m.output["region"]},
            "backendPreference": "PREFERRED" if m.output["region"] == fleet.home_region else "DEFAULT",
            "capacityScalerPercent": m.config.capacity_percent,
        }
        for m in members_
    ]
    default = {
        "timeoutSec": fleet.config.timeout_sec,
        "balancingMode": "CUSTOM_METRICS",
        "trafficDuration": "LONG",
        "customMetrics": [
            {
                "name": KV_CACHE_POLICY_METRIC,
                "dryRun": False,
                "maxUtilizationPercent": fleet.config.spillover.kv_cache_utilization_percent,
            }
        ],
        "scopes": scopes,
    }
    spec = {"targetRef": _import_ref(pool), "default": default}
    return _pool_object(f"{GKE_NETWORKING}/v1", "GCPBackendPolicy", pool, spec)


def autoscaling_metric_manifest(pool: str, namespace: str, selector: dict[str, str], port: int, metric: str) -> dict:
    """Per exporting regional cluster: the pods' KV-cache gauge exported as `kv-cache`, the custom metric the
    fleet's backend policy balances on (F1 metrics.yaml)."""
    return {
        "apiVersion": AUTOSCALING_METRIC_API,
        "kind": "AutoscalingMetric",
        "metadata": {
            "name": f"{pool}-{KV_CACHE_EXPORT}",
            "namespace": namespace,
            "labels": dict(naming.MANAGED_BY_LABELS),
        },
        "spec": {
            "selector": {"matchLabels": dict(selector)},
            "endpoints": [{"port": port, "path": "/metrics"}],
            "metrics": [{"name": metric, "exportName": KV_CACHE_EXPORT}],
        },
    }


def routing_summary(fleet: FleetPlan) -> dict[str, Any]:
    """The `fleet` output of the fleet stack: which regional pools the Gateway routes to, and how."""
    return {
        "preview": PREVIEW,
        "gateway": GATEWAY_NAME,
        "namespace": fleet.gateway_namespace,
        "gatewayClassName": GATEWAY_CLASS,
        "configCluster": fleet.config_member.config.stack,
        "homeRegion": fleet.home_region,
        "spilloverKvCacheUtilizationPercent": fleet.config.spillover.kv_cache_utilization_percent,
        "routes": {
            f"{p['namespace']}/{p['pool']}": {
                "model": p["servedName"],
                "import": f"{IMPORT_KIND} {p['namespace']}/{p['pool']}",
                "regions": {
                    m.output["region"]: {
                        "stack": m.config.stack,
                        "cluster": m.output["clusterName"],
                        "preference": "PREFERRED" if m.output["region"] == fleet.home_region else "DEFAULT",
                        "capacityPercent": m.config.capacity_percent,
                    }
                    for m in fleet.members
                },
            }
            for p in fleet.pools
        },
        "addressCommand": (
            f"kubectl get gateway {GATEWAY_NAME} -n {fleet.gateway_namespace} -o jsonpath='{{.status.addresses[0].value}}'"
        ),
    }
