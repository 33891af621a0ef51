"""The cluster piece (tpu-serving:cluster): the GKE cluster, its system pool and how it is reached. Its rules,
its plan (name, location, and what the environment profile decides: protection, upgrade hold, maintenance window,
intranode visibility) and the check of minMasterVersion against what the other pieces need
(components/cluster.py builds it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stacks import guardrails, naming
from stacks.facts import catalog, images, versions
from stacks.facts import maintenance as maintenance_rules
from stacks.facts.images import ImageMirror
from stacks.model import config_parse
from stacks.model.config_model import DEFAULT_MAINTENANCE_WINDOW, ClusterConfig, MaintenanceWindowConfig
from stacks.model.local_target import LocalConfig
from stacks.model.profiles import Profile
from stacks.pieces import node_identity
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import (
    MACHINE_TYPE_RE,
    NS,
    REGION_RE,
    ZONE_RE,
    check_cidr,
    check_key,
    check_labels,
    check_name,
    check_region,
    check_zone_region,
    parse_section,
    rfc3339,
)
from stacks.problems import Problem, fmt
from stacks.serving import pool_sizing
from stacks.serving.workload_type import WorkloadRegistry

NAME = "cluster"
KEYS = ("cluster", "local")  # the keys it parses (`parse`), each reported at the slot of its name


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    """cluster by its model; local (a local cluster in its place, stacks/model/local_target.py) when set."""
    local = raw.get("local")
    return {
        "cluster": parse_section(raw, "cluster", ClusterConfig, found.problems_at("cluster")),
        "local": None
        if local is None
        else config_parse.parse(f"{NS}:local", LocalConfig, local, found.problems_at("local")),
    }


PATH = f"{NS}:cluster"
GKE_VERSION_RE = re.compile(r"latest|[1-9][0-9]*\.[0-9]+(\.[0-9]+(-gke\.[0-9]+)?)?")


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster as the stack builds it: every default resolved, the environment profile's included."""

    config: ClusterConfig
    name: str
    location: str
    project: str
    labels: dict[str, str]
    gateway_api: bool
    """The Gateway API and the HTTP load-balancing add-on, for an enabled inference gateway."""
    deletion_protection: bool
    protect: bool
    intranode_visibility: bool
    hold_minor_and_node_upgrades: bool
    maintenance_window: MaintenanceWindowConfig | None
    """The configured window; with the upgrade hold on and none configured, DEFAULT_MAINTENANCE_WINDOW."""
    authorized_networks: tuple[tuple[str, str], ...]
    """(CIDR, display name) of each masterAuthorizedNetworks entry: its displayName, else its CIDR."""
    system_pool: pool_sizing.SystemPoolSizing
    """The system pool's totals over the cluster's zones and its nodes per zone at creation."""
    nodes: node_identity.NodeAccountPlan
    """The nodes' own service account, named after the cluster."""
    cost_allocation: bool
    """GKE cost allocation (tpu-serving:cost.allocation; stacks/pieces/cost.py)."""

    @property
    def hold_scope(self) -> str:
        """The scope of the cluster's exclusion with the hold on: minor and node upgrades, every node pool's included
        (GKE API MaintenanceExclusionOptions.Scope NO_MINOR_OR_NODE_UPGRADES "excludes all minor upgrades for the
        cluster, and also exclude all node pool upgrades. Only control plane patches are allowed",
        https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters#scope).

        Always this scope, never NO_MINOR_UPGRADES with a per-node-pool exclusion: the node pool's own exclusion
        (maintenance_policy.exclusion_until_end_of_support) is create-only in the provider (hashicorp/
        terraform-provider-google-beta@v7.45.0 and @93c65b2d60 (8.x): resource_container_node_pool.go reads
        maintenance_policy only in expandNodePool, nodePoolUpdate has no HasChange for it, and the update ends with
        a read of GKE's value), so turning the hold on or off on a live stack (or dev to staging) would leave the
        existing TPU pools unheld and diff forever. The cluster's exclusion is updated in place both ways, and holds
        the node pools GKE creates for a capacity list too (so a pool going from a list to one capacity narrows
        nothing). Cost: the system pool gets no automatic patch upgrade while the hold is on (docs/operations.md
        "GKE upgrades", step 3)."""
        return "NO_MINOR_OR_NODE_UPGRADES"

    @property
    def kubernetes_minor(self) -> str:
        """The minor version objects are validated against: minMasterVersion's, else the matrix default."""
        return kubernetes_minor(self.config)

    @property
    def dns_endpoint(self) -> bool:
        return self.config.control_plane_endpoint == "dns"


def visit(ctx: Context, found: Findings) -> ClusterPlan | None:
    """Its name, rules (its network's are the network piece's) and warnings, the stack's labels, the image mirror; its plan, with
    what the gateway (the Gateway API) and cost allocation ask of it."""
    given, sections = ctx.invocation, ctx.sections
    cluster, environment = sections.cluster, sections.environment
    ctx.image_mirror = image_mirror(cluster, given.gcp_project, ctx.region)
    if cluster is None:
        return None
    ctx.cluster_name = name(cluster, given.pulumi_project, given.stack)
    ctx.kubernetes_minor = kubernetes_minor(cluster)
    found.problems_at("cluster.rules").extend(name_problems(cluster, ctx.cluster_name))
    found.problems_at("cluster.endpoint").extend(endpoint_problems(cluster, environment))
    found.problems_at("cluster.settings").extend(settings_problems(cluster, ctx.region))
    if ctx.profile is None:
        return None
    ctx.labels = {"app": "tpu-serving", "stack": naming.label_value(given.stack), "environment": environment}
    ctx.labels.update(cluster.labels)
    found.warnings_at("cluster").extend(warnings(cluster, environment))
    gateway, cost = sections.gateway, sections.cost
    if not found.clean or not (ctx.region and given.gcp_project and gateway):
        return None
    return plan(
        cluster,
        name=ctx.cluster_name,
        region=ctx.region,
        project=given.gcp_project,
        profile=ctx.profile,
        labels=ctx.labels,
        gateway_api=gateway.enabled,
        cost_allocation=cost.allocation if cost else True,
    )


def kubernetes_minor(cluster: ClusterConfig) -> str:
    if cluster.min_master_version:
        return ".".join(cluster.min_master_version.split(".")[:2])
    return versions.DEFAULT_KUBERNETES_MINOR


def name(cluster: ClusterConfig, pulumi_project: str, stack: str) -> str:
    return cluster.name or naming.default_cluster_name(pulumi_project, stack)


def location(cluster: ClusterConfig, region: str) -> str:
    """cluster.location, else gcp:region (a regional cluster)."""
    return cluster.location or region


def plan(
    cluster: ClusterConfig,
    *,
    name: str,
    region: str,
    project: str,
    profile: Profile,
    labels: dict[str, str],
    gateway_api: bool,
    cost_allocation: bool = True,
) -> ClusterPlan:
    hold = cluster.maintenance.hold_minor_and_node_upgrades
    hold = profile.hold_minor_and_node_upgrades if hold is None else hold
    window = cluster.maintenance.window
    own_visibility = cluster.intranode_visibility
    where = location(cluster, region)
    system = cluster.system_pool
    return ClusterPlan(
        config=cluster,
        name=name,
        location=where,
        project=project,
        labels=labels,
        gateway_api=gateway_api,
        deletion_protection=profile.deletion_protection,
        protect=profile.protect,
        intranode_visibility=profile.intranode_visibility if own_visibility is None else own_visibility,
        hold_minor_and_node_upgrades=hold,
        maintenance_window=DEFAULT_MAINTENANCE_WINDOW if window is None and hold else window,
        authorized_networks=tuple(
            (n.cidr_block, n.display_name or n.cidr_block) for n in cluster.master_authorized_networks
        ),
        system_pool=pool_sizing.system_pool_sizing(
            system.min_nodes, system.max_nodes, pool_sizing.cluster_zones(where)
        ),
        nodes=node_identity.cluster_nodes(name, project),
        cost_allocation=cost_allocation,
    )


# The cluster's own rules in three slots (stacks/config.py PROBLEM_SLOTS), around its network's (cluster.network is
# the network piece's: network.rules after the name, network.flowLogs after the endpoint), so a user reads them in
# the order of the keys.


def name_problems(cluster: ClusterConfig, cluster_name: str) -> list[Problem]:
    """Its name and the control plane's authorized networks."""
    found: list[Problem] = []
    check_name(f"{PATH}.name", cluster_name, naming.CLUSTER_NAME_MAX, "GKE cluster name", found)
    for i, net in enumerate(cluster.master_authorized_networks):
        check_cidr(f"{PATH}.masterAuthorizedNetworks[{i}].cidrBlock", net.cidr_block, found)
    return found


def endpoint_problems(cluster: ClusterConfig, environment: Any) -> list[Problem]:
    """The control plane's endpoint: an IP endpoint only where the policy pack's no-public-endpoint does not refuse
    (guardrails.level)."""
    if (
        cluster.control_plane_endpoint == "ip"
        and guardrails.level(guardrails.PUBLIC_ENDPOINT, environment) == guardrails.MANDATORY
    ):
        allowed = ", ".join(guardrails.allowed_in(guardrails.PUBLIC_ENDPOINT))
        return [
            Problem(
                f"{PATH}.controlPlaneEndpoint",
                f"'ip' is allowed only in {allowed} (environment is {fmt(environment)}); staging and prod reach the "
                "control plane through the DNS-based endpoint (allowed: 'dns')",
            )
        ]
    return []


def settings_problems(cluster: ClusterConfig, region: str | None) -> list[Problem]:
    """Maintenance, the other fields, labels, the system pool, placement in the region."""
    found: list[Problem] = []
    _check_maintenance(cluster, found)
    _check_fields(cluster, found)
    check_labels(f"{PATH}.labels", cluster.labels, found)
    if cluster.system_pool.min_nodes > cluster.system_pool.max_nodes:
        found.append(
            Problem(
                f"{PATH}.systemPool.minNodes",
                f"{cluster.system_pool.min_nodes} is above maxNodes {cluster.system_pool.max_nodes}",
            )
        )
    if region:
        _check_placement(cluster, region, found)
    return found


def _check_placement(cluster: ClusterConfig, region: str, found: list[Problem]) -> None:
    """Its location in gcp:region, its Secrets key there, and a system pool with a node in each of its zones."""
    where = location(cluster, region)
    zone = ZONE_RE.fullmatch(where)
    given = cluster.location is not None  # (the default, gcp:region, is checked at its own key)
    listed = not given or (
        check_region(f"{PATH}.location", where, found)
        if REGION_RE.fullmatch(where)
        else check_zone_region(f"{PATH}.location", where, found)
    )
    if listed and where != region and not (zone and zone.group(1) == region):
        found.append(
            Problem(
                f"{PATH}.location",
                f"{where!r} must be gcp:region ({region!r}, a regional cluster) or a zone in it, e.g. {region}-b",
            )
        )
    check_key(f"{PATH}.secretsEncryptionKey", cluster.secrets_encryption_key, region, "the cluster's region", found)
    zones = pool_sizing.cluster_zones(where)
    if cluster.system_pool.max_nodes < zones:
        found.append(
            Problem(
                f"{PATH}.systemPool.maxNodes",
                f"{cluster.system_pool.max_nodes} is below {zones}: a regional cluster's system pool starts "
                f"with a node in each of its {zones} zones (maxNodes is the total over them)",
            )
        )


def _check_maintenance(cluster: ClusterConfig, found: list[Problem]) -> None:
    base = f"{PATH}.maintenance"
    maintenance = cluster.maintenance
    rfc3339(f"{base}.holdStart", maintenance.hold_start, found)
    window = maintenance.window
    if window is None:
        return
    start = rfc3339(f"{base}.window.start", window.start, found)
    end = rfc3339(f"{base}.window.end", window.end, found)
    if start and end and end <= start:
        found.append(Problem(f"{base}.window.end", f"{window.end!r} is not after window.start {window.start!r}"))
    try:
        rule = maintenance_rules.parse(window.recurrence)
    except ValueError as e:
        found.append(
            Problem(
                f"{base}.window.recurrence",
                f"{window.recurrence!r} is not an RFC 5545 RRULE GKE takes: {e}; GKE takes "
                f"FREQ={'|'.join(maintenance_rules.FREQS)} and {', '.join(maintenance_rules.KEYS[1:])}, e.g. "
                "FREQ=WEEKLY;BYDAY=SA,SU or FREQ=DAILY",
            )
        )
        return
    if (
        start
        and end
        and end > start
        and (least := maintenance_rules.least_availability(rule, start, end)) < maintenance_rules.MIN_AVAILABLE
    ):
        found.append(
            Problem(
                f"{base}.window",
                f"{window.start} to {window.end}, {window.recurrence} leaves {least.total_seconds() / 3600:.1f} h "
                f"of maintenance in some 32 days; GKE needs {maintenance_rules.RULE_TEXT}",
            )
        )


def _check_fields(cluster: ClusterConfig, found: list[Problem]) -> None:
    """Free-text fields that Google Cloud reads: machine type, version, label count."""
    system = cluster.system_pool
    if not MACHINE_TYPE_RE.fullmatch(system.machine_type):
        found.append(
            Problem(
                f"{PATH}.systemPool.machineType", f"{system.machine_type!r} is not a machine type, e.g. e2-standard-4"
            )
        )
    if cluster.min_master_version is not None and not GKE_VERSION_RE.fullmatch(cluster.min_master_version):
        found.append(
            Problem(
                f"{PATH}.minMasterVersion",
                f"{cluster.min_master_version!r} is not a GKE version, e.g. 1.32 or 1.32.2-gke.1297000",
            )
        )
    # 64 labels per resource at most; the stack adds app, stack and environment
    if len(cluster.labels) > 61:
        found.append(Problem(f"{PATH}.labels", f"{len(cluster.labels)} labels; at most 61 (64 with the stack's)"))
    for i, net in enumerate(cluster.master_authorized_networks):
        if not re.fullmatch(r"[^\x00-\x1f\x7f]{0,100}", net.display_name):
            found.append(
                Problem(
                    f"{PATH}.masterAuthorizedNetworks[{i}].displayName",
                    f"{net.display_name!r} is not allowed: at most 100 characters, no control characters",
                )
            )


@dataclass(frozen=True)
class VersionNeed:
    """A minimum GKE version another piece needs: `what` needs it, `whom` for."""

    version: str
    what: str
    whom: str
    message: Callable[[ClusterConfig], list[Problem]] | None = None
    """The problem to report when this need is the highest one and unmet, if the piece words it itself
    (called with the cluster config; None: the generic wording)."""
    always_required: bool = False
    """minMasterVersion must be set for it whatever the version (the channel's default cannot be known)."""


def version_problems(cluster: ClusterConfig, needs: list[VersionNeed]) -> list[Problem]:
    """minMasterVersion meets the highest minimum the other pieces need, named at once (not one requirement, then
    after the user raises the version, the next). Without minMasterVersion the cluster runs its release channel's
    default version, which this program cannot know offline: a need in the matrix's newest minor
    (DEFAULT_KUBERNETES_MINOR) or later, or one that is always required, is refused until minMasterVersion says so."""
    if not needs:
        return []
    top = max(needs, key=lambda n: catalog.version_tuple(n.version))
    given = cluster.min_master_version
    if given and catalog.version_tuple(given) >= catalog.version_tuple(top.version):
        return []
    if top.message is not None:
        return top.message(cluster)
    if given:
        return [
            Problem(
                f"{PATH}.minMasterVersion",
                f"{given!r} is below {top.version}, {top.what} ({top.whom}); {top.version} or later meets every "
                "minimum the stack needs",
            )
        ]
    newest = catalog.version_tuple(versions.DEFAULT_KUBERNETES_MINOR)
    if any(catalog.version_tuple(n.version)[:2] >= newest or n.always_required for n in needs):
        return [
            Problem(
                f"{PATH}.minMasterVersion",
                f"required with {top.whom}: set it to {top.version} or later ({top.what}), a version the "
                f"{cluster.release_channel} channel offers; the channel's default version may be older",
            )
        ]
    return []


def image_mirror(cluster: ClusterConfig | None, gcp_project: str | None, region: str | None) -> ImageMirror | None:
    """cluster.images.mirror: a remote repository for each public registry the version matrix's images come from
    (None without a project or region, reported elsewhere)."""
    if not gcp_project or not region:
        return None
    enabled = cluster is not None and cluster.images.mirror
    return images.plan(enabled, gcp_project, region, versions.IMAGES.values())


def private_endpoint(cluster: ClusterConfig) -> bool:
    """The control plane's IP endpoint is private (privateClusterConfig.enablePrivateEndpoint): the DNS-based
    endpoint takes user traffic, the nodes are private and no CIDRs are listed (components/cluster.py
    control_plane_access)."""
    return cluster.control_plane_endpoint == "dns" and cluster.private_nodes and not cluster.master_authorized_networks


def authorized_networks_enforced(cluster: ClusterConfig) -> bool:
    """Master authorized networks are enforced (masterAuthorizedNetworksConfig is sent): always with the DNS-based
    endpoint (only the listed CIDRs on the IP endpoint, none by default), with the IP endpoint when CIDRs are listed."""
    return cluster.control_plane_endpoint == "dns" or bool(cluster.master_authorized_networks)


def warnings(cluster: ClusterConfig, environment: str) -> list[str]:
    """What the cluster's settings open up, said on every run."""
    out = []
    cidrs = [n.cidr_block for n in cluster.master_authorized_networks]
    # guardrails.control_plane_open: the policy pack's no-public-endpoint reads the registered cluster the same way
    open_blocks = guardrails.control_plane_open(
        private_endpoint(cluster), cidrs if authorized_networks_enforced(cluster) else None
    )
    if open_blocks == []:
        out.append(
            f"{PATH}.controlPlaneEndpoint={cluster.control_plane_endpoint} with no masterAuthorizedNetworks: the "
            f"{environment} control plane endpoint accepts connections from any address (authenticated); list the "
            "CIDRs of your operators and CI"
        )
    elif open_blocks:
        out.append(
            f"{PATH}.masterAuthorizedNetworks lists {', '.join(open_blocks)}: the {environment} control plane "
            "endpoint accepts connections from any address (authenticated); list the CIDRs of your operators and CI"
        )
    if not cluster.private_nodes:
        out.append(f"{PATH}.privateNodes=false: nodes get public IP addresses")
    return out
