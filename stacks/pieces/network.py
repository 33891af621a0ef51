"""The network piece (tpu-serving:cluster.network): a VPC, subnet and Cloud NAT the stack creates, or existing ones.
Its rules, and its plan: the names, the ranges and the flow logs the environment profile decides
(components/network.py builds it)."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from stacks import naming
from stacks.model.config_model import NetworkConfig
from stacks.model.profiles import Profile
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, check_cidr, check_name, check_path_region
from stacks.problems import Problem

NAME = "network"
PATH = f"{NS}:cluster.network"
# A VPC or subnet given by name, or by path (projects/p/global/networks/n, projects/p/regions/r/subnetworks/n).
NETWORK_REF_RE = re.compile(
    r"(projects/[a-z][-a-z0-9.:]*/(global|regions/[a-z0-9-]+)/(networks|subnetworks)/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)
# The ranges of the subnet the stack creates (primary: nodes; secondary: Pods, Services). Compute Engine's smallest
# subnet IPv4 range, primary or secondary, is a /29 (https://cloud.google.com/vpc/docs/subnets#valid-ranges); GKE
# gives every node a /24 of the Pod range at the default 110 Pods per node
# (https://cloud.google.com/kubernetes-engine/docs/how-to/flexible-pod-cidr), so a Pod range below /24 holds no node.
# No range is larger than the largest private block, 10.0.0.0/8 (RFC 1918): the stack's own bound.
SUBNET_PREFIX_MAX = {"nodesCidr": 29, "podsCidr": 24, "servicesCidr": 29}
SUBNET_PREFIX_WHY = {
    "nodesCidr": "Compute Engine's smallest subnet range is a /29",
    "podsCidr": "GKE gives each node a /24 of the Pod range",
    "servicesCidr": "Compute Engine's smallest subnet range is a /29",
}
SUBNET_PREFIX_MIN = 8
# The created subnet's ranges: (key, NetworkConfig attribute).
SUBNET_RANGES = (("nodesCidr", "nodes_cidr"), ("podsCidr", "pods_cidr"), ("servicesCidr", "services_cidr"))


@dataclass(frozen=True)
class NetworkPlan:
    """The network as the stack builds it: every default resolved."""

    config: NetworkConfig
    name: str
    """What the created VPC, subnet, router, NAT and proxy-only subnet are named after: the cluster's name."""
    project: str
    region: str
    network_name: str
    """The VPC: cluster.network, else (created) `name`."""
    subnetwork_name: str
    """The subnet: cluster.network.subnetwork, else (created) `name`."""
    nat: bool
    """A Cloud Router and NAT for the subnet: cluster.network.nat, else (a created network) true."""
    flow_logs: bool
    """VPC flow logs on the created subnet: cluster.network.flowLogs, else the environment profile's."""
    proxy_subnet_cidr: str | None
    """The range of the proxy-only subnet the stack creates for a regional gateway; None: it creates none."""


def visit(ctx: Context, found: Findings) -> NetworkPlan | None:
    """Its rules (its key is cluster.network: reported among the cluster's, at network.rules and
    network.flowLogs), then its plan, with the proxy-only subnet the gateway asks for."""
    given, cluster = ctx.invocation, ctx.sections.cluster
    if cluster is not None:
        found.problems_at("network.rules").extend(problems(cluster.network))
        found.problems_at("network.flowLogs").extend(flow_logs_problems(cluster.network))
    if (
        not found.clean
        or cluster is None
        or not (ctx.cluster_name and ctx.profile and ctx.region and given.gcp_project)
    ):
        return None
    return plan(
        cluster.network,
        name=ctx.cluster_name,
        project=given.gcp_project,
        region=ctx.region,
        profile=ctx.profile,
        proxy_subnet_cidr=ctx.proxy_subnet_cidr,
    )


def plan(
    network: NetworkConfig, *, name: str, project: str, region: str, profile: Profile, proxy_subnet_cidr: str | None
) -> NetworkPlan:
    return NetworkPlan(
        config=network,
        name=name,
        project=project,
        region=region,
        # an existing network names its VPC, subnet and NAT (problems() requires them)
        network_name=network.network or name,
        subnetwork_name=network.subnetwork or name,
        nat=network.nat is not False,
        flow_logs=profile.vpc_flow_logs if network.flow_logs is None else network.flow_logs,
        proxy_subnet_cidr=proxy_subnet_cidr,
    )


def problems(network: NetworkConfig) -> list[Problem]:
    """The network's own rules: range names, VPC and subnet references, the created subnet's ranges, or what an
    existing network must say."""
    found: list[Problem] = []
    for key, range_name in (
        ("podsRangeName", network.pods_range_name),
        ("servicesRangeName", network.services_range_name),
    ):
        # SubnetworkSecondaryRange.rangeName: RFC 1035, 1-63 characters, unique within the subnetwork
        # (https://cloud.google.com/compute/docs/reference/rest/v1/subnetworks)
        check_name(f"{PATH}.{key}", range_name, naming.COMPUTE_NAME_MAX, "secondary range name", found)
    _check_range_names_distinct(network, found)
    check_path_region(f"{PATH}.subnetwork", network.subnetwork, found)
    for key, given in (("network", network.network), ("subnetwork", network.subnetwork)):
        if given is not None and not NETWORK_REF_RE.fullmatch(given):
            found.append(
                Problem(
                    f"{PATH}.{key}",
                    f"{given!r} is not a {key} name (RFC 1035, at most 63 characters) or "
                    f"projects/<project>/.../{key}s/<name> path",
                )
            )
    if network.create:
        _check_created_ranges(network, found)
    else:
        _check_existing(network, found)
    return found


def _check_created_ranges(network: NetworkConfig, found: list[Problem]) -> None:
    ranges = {key: _check_subnet_range(f"{PATH}.{key}", getattr(network, attr), found) for key, attr in SUBNET_RANGES}
    parsed = [(k, r) for k, r in ranges.items() if r is not None]
    for i, (ka, ra) in enumerate(parsed):
        for kb, rb in parsed[i + 1 :]:
            if ra.overlaps(rb):
                found.append(Problem(f"{PATH}.{kb}", f"{rb} overlaps {ka} {ra}; the ranges must be disjoint"))


def _check_existing(network: NetworkConfig, found: list[Problem]) -> None:
    for key, value in (("network", network.network), ("subnetwork", network.subnetwork)):
        if not value:
            found.append(Problem(f"{PATH}.{key}", "required when network.create is false"))
    if network.nat is None:
        found.append(
            Problem(
                f"{PATH}.nat",
                "required when network.create is false: true creates a Cloud Router and NAT for the subnet on "
                "that network; false when it already has NAT (without NAT, private nodes cannot pull public "
                "images)",
            )
        )


def flow_logs_problems(network: NetworkConfig) -> list[Problem]:
    """flowLogs applies to a subnet the stack creates only."""
    if not (network.flow_logs and not network.create):
        return []
    return [
        Problem(
            f"{PATH}.flowLogs",
            "true applies only to a subnet the stack creates (network.create: true); enable flow logs on the "
            "existing subnet where it is managed",
        )
    ]


def created_ranges(network: NetworkConfig) -> list[tuple[str, ipaddress.IPv4Network]]:
    """The created subnet's ranges that parse (the others are reported at their own key), for overlap checks."""
    out = []
    for key, attr in SUBNET_RANGES:
        try:
            out.append((key, ipaddress.IPv4Network(getattr(network, attr), strict=True)))
        except ValueError:
            continue
    return out


def _check_range_names_distinct(network: NetworkConfig, found: list[Problem]) -> None:
    """The Pods and Services secondary ranges have distinct names (unique within the subnetwork); the problem is
    reported at the key the user set (the other one may be its default)."""
    if network.pods_range_name != network.services_range_name:
        return
    given = network.model_fields_set
    key, other = (
        ("podsRangeName", "servicesRangeName")
        if "pods_range_name" in given and "services_range_name" not in given
        else ("servicesRangeName", "podsRangeName")
    )
    default = "" if {"pods_range_name", "services_range_name"} <= given else " (its default)"
    found.append(
        Problem(
            f"{PATH}.{key}",
            f"{network.pods_range_name!r} is also {other}{default}; a subnet's secondary ranges need distinct names",
        )
    )


def _check_subnet_range(path: str, value: str, found: list[Problem]) -> ipaddress.IPv4Network | None:
    """A range of the created subnet: a network written with its prefix length, of a size a subnet range can
    have. A bare address (10.0.0.0) would be read as a single address (/32)."""
    key = path.rsplit(".", 1)[-1]
    if "/" not in value:
        found.append(
            Problem(path, f"{value!r} has no prefix length: write the range as <address>/<length>, e.g. 10.0.0.0/20")
        )
        return None
    network = check_cidr(path, value, found)
    if network is not None and not SUBNET_PREFIX_MIN <= network.prefixlen <= SUBNET_PREFIX_MAX[key]:
        found.append(
            Problem(
                path,
                f"{value!r} is a /{network.prefixlen}; allowed: /{SUBNET_PREFIX_MIN} to /{SUBNET_PREFIX_MAX[key]} "
                f"({SUBNET_PREFIX_WHY[key]}; at most the size of 10.0.0.0/8)",
            )
        )
        return None
    return network
