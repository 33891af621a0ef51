"""Load and validate the stack config before any resource is registered.

`load_stack_config()` reads Pulumi config, parses each key with the models in `stacks.config_model`, applies
the cross-field rules below, and raises one `pulumi.RunError` that lists every problem with its key path
(`tpu-serving:tpuPools[1].topology`), the bad value and what is allowed. `parse_stack_config()` does the same
from a plain dict, without Pulumi, so the rules are tested directly.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from stacks import addons as addon_registry
from stacks import (
    bucket_access,
    catalog,
    compute_class,
    gateway,
    gke_managed,
    kms,
    local_ports,
    metrics_adapters,
    naming,
    network_policy,
    pod_security,
    pool_sizing,
    storage_locations,
    versions,
)
from stacks.addons import AddonsConfig
from stacks.config_model import (
    AutoscalingConfig,
    BucketConfig,
    ClusterConfig,
    GatewayConfig,
    MonitoringConfig,
    NetworkConfig,
    TpuPoolConfig,
)
from stacks.pool_plan import PoolPlan
from stacks.problems import ConfigError, Problem
from stacks.profiles import PROFILES, Profile
from stacks.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType

NS = "tpu-serving"
# Keys this version of the program understands under `tpu-serving:`; anything else is a typo.
KNOWN_KEYS = (
    "environment",
    "cluster",
    "bucket",
    "tpuPools",
    "addons",
    "monitoring",
    "gateway",
    "workloads",
    "paused",
    "decommission",
    "hfToken",
)
# The gcp:project every example ships with (examples/*/Pulumi.*.yaml, Pulumi.dev.yaml): a stack made from an example
# keeps it until the user sets theirs. The offline render warns; a real `pulumi preview`/`up` refuses it.
PLACEHOLDER_PROJECT = "my-tpu-project"
# Words of a stack or project name (its runs of letters, lowercased: 'Prod1' and 'acme_prod.eu' say prod) that say
# which environment it is for. Checked in this order, so 'preprod' is staging, not prod.
ENVIRONMENT_WORDS = {
    "staging": ("staging", "stage", "stg", "preprod", "preproduction"),
    "prod": ("prod", "production", "prd"),
}
# A word that starts or ends with one of these says that environment too ('myprod', 'prodeu', 'stagingeu'), except
# English words that merely start with it ('product', 'producer', 'produce').
ENVIRONMENT_AFFIXES = {"staging": ("staging",), "prod": ("prod",)}
NOT_ENVIRONMENT_PREFIXES = ("produc",)
# Secret keys: read only as Pulumi secrets by the components that need them, never parsed into the config.
SECRET_KEYS = ("hfToken",)

# Google Cloud region and zone names (https://cloud.google.com/compute/docs/regions-zones): a geography prefix,
# a direction and a number (us-east5, europe-west4, me-central2); zones add a letter (us-east5-b) or, for AI
# zones, ai<n><letter> (us-central1-ai1a, https://cloud.google.com/tpu/docs/regions-zones).
REGION_RE = re.compile(r"(us|europe|asia|australia|northamerica|southamerica|me|africa)-[a-z]+[1-9][0-9]?")
ZONE_RE = re.compile(rf"({REGION_RE.pattern})-(?:[a-h]|ai[1-9][a-z]?)")
BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]")
GCP_PROJECT_RE = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")
# Compute Engine machine types: e2-standard-4, n2-custom-4-16384, ct6e-standard-4t.
MACHINE_TYPE_RE = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")
# A reservation: its name (RFC 1035) or projects/<project>/reservations/<name> for a shared one.
RESERVATION_RE = re.compile(r"(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
# A VPC or subnet given by name, or by path (projects/p/global/networks/n, projects/p/regions/r/subnetworks/n).
NETWORK_REF_RE = re.compile(
    r"(projects/[a-z][-a-z0-9.:]*/(global|regions/[a-z0-9-]+)/(networks|subnetworks)/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)
GKE_VERSION_RE = re.compile(r"latest|[1-9][0-9]*\.[0-9]+(\.[0-9]+(-gke\.[0-9]+)?)?")
# GKE: a cluster has at most 15,000 nodes (https://cloud.google.com/kubernetes-engine/quotas); no count here is more.
MAX_NODES = 15000


@dataclass(frozen=True)
class StackConfig:
    stack: str
    pulumi_project: str
    gcp_project: str
    region: str
    environment: str
    profile: Profile
    cluster: ClusterConfig
    cluster_name: str
    cluster_location: str
    bucket: BucketConfig
    bucket_name: str
    bucket_force_destroy: bool
    pools: tuple[PoolPlan, ...]
    labels: dict[str, str]
    addons: AddonsConfig = field(default_factory=lambda: addon_registry.settings_model()())
    monitoring: MonitoringConfig = field(default_factory=MonitoringConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    workloads: tuple[Any, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    workload_types: WorkloadRegistry = field(default_factory=WorkloadRegistry)
    """The workload types the config was parsed with (workloads/registry.py): what builds each workload."""
    paused: bool = False
    """Workloads at zero and TPU pools allowed to shrink to zero nodes; everything else stays."""
    decommission: bool = False
    """Protection lifted on purpose so that `pulumi destroy` can run on a staging/prod stack."""

    @property
    def identity_suffix(self) -> str:
        """naming.stack_identity_suffix of this stack: on every KSA that holds Google access."""
        return naming.stack_identity_suffix(self.pulumi_project, self.stack)

    @property
    def namespaces(self) -> list[str]:
        """Namespaces the stack creates for its workloads (never the ones every cluster has)."""
        return sorted({w.namespace for w in self.workloads} - PREEXISTING_NAMESPACES)

    @property
    def gateway_workloads(self) -> list[Any]:
        """Workloads served through the Inference Gateway: those whose plan offers a gateway backend (vllm, unless
        the workload opts out), and only when tpu-serving:gateway is enabled."""
        if not self.gateway.enabled:
            return []
        return [w for w in self.workloads if getattr(w, "gateway_backend", None) and w.gateway_backend() is not None]

    @property
    def proxy_subnet_created(self) -> bool:
        """The stack creates the proxy-only subnet the regional gateway needs."""
        return self.gateway.enabled and (self.gateway.proxy_subnet or "create") == "create"

    @property
    def namespace_levels(self) -> dict[str, str]:
        """Pod Security level each workload namespace enforces: the strictest one all of its pods pass."""
        return {
            ns: pod_security.strictest_level(m for w in self.workloads if w.namespace == ns for m in w.pod_manifests())
            for ns in self.namespaces
        }

    @property
    def network_policies(self) -> dict[str, list[dict[str, Any]]]:
        """Per workload namespace: default-deny ingress, its own pods to each other, and each workload's allows."""
        return {
            ns: [
                *network_policy.namespace_baseline(ns),
                *(p for w in self.workloads if w.namespace == ns for p in w.ingress_allows()),
                *(p for w in self.gateway_workloads if w.namespace == ns for p in self._gateway_allows(w)),
            ]
            for ns in self.namespaces
        }

    def _gateway_allows(self, plan: Any) -> list[dict[str, Any]]:
        """The gateway's load balancer (its proxies and health checks are not pods of the cluster, so no `from`,
        as stacks/network_policy.py explains) to the serving pods' port and to the endpoint picker's ext-proc and
        gRPC health ports; paused, nothing is routed and nothing is opened."""
        if self.paused:
            return []
        backend = plan.gateway_backend()
        return [
            network_policy.allow_clients(
                f"{backend.name}-gateway", backend.namespace, backend.selector, [backend.port]
            ),
            network_policy.allow_clients(
                gateway.epp_name(backend.name),
                backend.namespace,
                gateway.epp_pod_labels(backend.name),
                [gateway.EPP_EXT_PROC_PORT, gateway.EPP_HEALTH_PORT],
            ),
        ]

    def chart(self, name: str) -> versions.ChartVersion:
        """The pinned release of a chart installed outside the add-on registry (prometheusAdapter): the matrix's
        default. An add-on's release is its registry entry's (`stacks.addons`), from its `version` setting."""
        return versions.CHARTS[name][versions.default_version(name)]

    @property
    def kubernetes_minor(self) -> str:
        """The minor version objects are validated against: minMasterVersion's, else the matrix default."""
        if self.cluster.min_master_version:
            return ".".join(self.cluster.min_master_version.split(".")[:2])
        return versions.DEFAULT_KUBERNETES_MINOR

    @property
    def regional(self) -> bool:
        return self.cluster_location == self.region

    def pool(self, name: str) -> PoolPlan | None:
        return next((p for p in self.pools if p.name == name), None)


# ---- parsing ------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def _allowed_keys(root: Any, loc: tuple) -> list[str]:
    """The keys the model at `loc` accepts, for an 'unknown key' message."""
    tp = root
    for part in loc:
        if isinstance(part, str) and (part in _BRANCH_SEGMENTS or part.startswith(("function-", "is-instance"))):
            continue
        tp = _unwrap(tp)
        if isinstance(part, int):
            args = get_args(tp)
            tp = args[0] if args else tp
        elif isinstance(tp, type) and issubclass(tp, BaseModel):
            fld = next((f for n, f in tp.model_fields.items() if (f.alias or n) == part), None)
            if fld is None:
                break
            tp = fld.annotation
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or n for n, f in tp.model_fields.items()]
    return []


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is not None and type(None) in get_args(tp):
        tp = next(a for a in get_args(tp) if a is not type(None))
    return tp


# Path segments pydantic adds for the branch of a union or a validator: never part of a key path a user wrote.
_BRANCH_SEGMENTS = {"str", "int", "float", "bool", "list", "dict", "none", "json-or-python", "lax-or-strict"}
FLOAT64_EXACT = 2**53


def _path(base: str, loc: tuple) -> str:
    out = base
    for part in loc:
        if isinstance(part, str) and (part in _BRANCH_SEGMENTS or part.startswith(("function-", "is-instance"))):
            continue
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _message(tp: Any, e: Any) -> str:
    """One pydantic error in the stack's words: what is wrong with the value, and what is allowed."""
    loc, kind, ctx, got = tuple(e["loc"]), e["type"], e.get("ctx") or {}, _fmt(e.get("input"))
    if kind == "extra_forbidden":
        return f"unknown key; allowed: {', '.join(_allowed_keys(tp, loc[:-1]))}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        keys = _allowed_keys(tp, loc)
        return f"must be a mapping{' with keys ' + ', '.join(keys) if keys else ''} (got {got})"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]} (got {got})"
    if kind == "literal_error":
        return f"{got} is not allowed; allowed: {ctx.get('expected', '').replace(' or ', ', ').replace(chr(39), '')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "greater than", "less_than_equal": "at most"}
        limit = next(v for k, v in ctx.items() if k in ("ge", "gt", "le", "lt"))
        return f"{got} is not allowed; must be {words.get(kind, 'less than')} {limit}"
    if kind in ("too_short", "too_long"):
        return f"{got} is not allowed; must have {'at least' if kind == 'too_short' else 'at most'} " + (
            f"{ctx.get('min_length', ctx.get('max_length'))} item(s)"
        )
    if kind == "string_pattern_mismatch":
        return f"{got} is not allowed; must match {ctx.get('pattern')}"
    if kind in ("finite_number",):
        return f"{got} is not allowed; must be a finite number"
    text = str(e["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
    return f"{text} (got {got})"


def _too_large(base: str, raw: Any, problems: list[Problem], loc: tuple = ()) -> bool:
    """Numbers a float64 does not hold exactly, anywhere in `raw`: Pulumi sends every number as a float64
    (google.protobuf.Value), so larger ones would change or fail in transit. Fields have their own, lower bounds."""
    found = False
    if isinstance(raw, dict):
        for k, v in raw.items():
            found = _too_large(base, v, problems, (*loc, k)) or found
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            found = _too_large(base, v, problems, (*loc, i)) or found
    elif isinstance(raw, int | float) and not isinstance(raw, bool) and not -FLOAT64_EXACT <= raw <= FLOAT64_EXACT:
        problems.append(Problem(_path(base, loc), f"{_fmt(raw)} is too large; numbers are at most 2^53"))
        found = True
    return found


def _parse(base: str, tp: Any, raw: Any, problems: list[Problem]) -> Any:
    """Validate `raw` as `tp`; on failure add one problem per error, in the stack's words, and return None."""
    if _too_large(base, raw, problems):
        return None
    try:
        return TypeAdapter(tp).validate_python(raw)
    except ValidationError as err:
        found: dict[str, list[str]] = {}
        branches: dict[str, list[str]] = {}  # a union reports one type error per branch: say them as one
        for e in err.errors():
            path = _path(base, tuple(e["loc"]))
            if e["type"] in _TYPE_WORDS and any(p in _BRANCH_SEGMENTS for p in e["loc"]):
                branches.setdefault(path, []).append(_TYPE_WORDS[e["type"]])
                found.setdefault(path, [])
                continue
            message = _message(tp, e)
            if message not in found.setdefault(path, []):
                found[path].append(message)
        for e in err.errors():
            path = _path(base, tuple(e["loc"]))
            if path in branches and not found[path]:
                words = list(dict.fromkeys(branches[path]))
                found[path].append(f"must be {', '.join(words[:-1])} or {words[-1]} (got {_fmt(e['input'])})")
        problems.extend(Problem(path, m) for path, messages in found.items() for m in messages)
        return None


def _parse_pools(raw: Any, problems: list[Problem]) -> list[TpuPoolConfig | None]:
    """Each pool separately, so one broken pool does not hide the problems of the others."""
    base = f"{NS}:tpuPools"
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(base, f"must be a list of pools (got {_fmt(raw)})"))
        return []
    return [_parse(f"{base}[{i}]", TpuPoolConfig, item, problems) for i, item in enumerate(raw)]


def with_local_ports(plans: list[Any]) -> list[Any]:
    """Each workload's port-forward commands get local ports of their own across the stack."""
    ports = local_ports.allocate([(p.name, p.forwarded_ports) for p in plans])
    return [dataclasses.replace(p, local_ports=tuple(sorted(ports[p.name].items()))) for p in plans]


def _declared_pool_names(raw: Any) -> set[str]:
    """Names of every pool entry, valid or not: a workload naming a pool that has its own problem (say a misspelt
    key) must not get a second, misleading "not a TPU pool" problem; the pool's problem is the real one."""
    if not isinstance(raw, list):
        return set()
    return {item["name"] for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)}


# ---- rules --------------------------------------------------------------------------------------------


def _check_cidr(path: str, value: str, problems: list[Problem]) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as err:
        problems.append(Problem(path, f"{value!r} is not a valid IPv4 CIDR block ({err}); e.g. 10.0.0.0/20"))
        return None


def _check_name(path: str, value: str, max_len: int, what: str, problems: list[Problem]) -> None:
    if len(value) > max_len or not naming.RFC1035.fullmatch(value):
        problems.append(
            Problem(
                path,
                f"{value!r} is not a valid {what}: lowercase letters, digits and hyphens, starting with a letter, "
                f"not ending with a hyphen, at most {max_len} characters",
            )
        )


def check_bucket_name(name: str) -> str | None:
    """Why `name` is not a bucket name this stack accepts, or None. Dots are refused: they need domain proof."""
    if not BUCKET_RE.fullmatch(name):
        return (
            f"{name!r} is not a valid bucket name: 3-63 characters of lowercase letters, digits, '-' and '_', "
            "starting and ending with a letter or digit (dotted names need domain verification and are not accepted)"
        )
    if name.startswith("goog") or "google" in name or "g00gle" in name or "go0gle" in name:
        return f"{name!r} is not a valid bucket name: it may not start with 'goog' or contain 'google'"
    return None


def _check_labels(path: str, labels: dict[str, str], problems: list[Problem]) -> None:
    for key, value in labels.items():
        if not naming.LABEL_KEY.fullmatch(key) or not naming.LABEL_VALUE.fullmatch(value):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"label {key}={value!r} is invalid: keys start with a lowercase letter; keys and values use "
                    "lowercase letters, digits, '_' and '-', at most 63 characters",
                )
            )


def _rfc3339(path: str, value: str, problems: list[Problem]) -> datetime.datetime | None:
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in value:
        problems.append(Problem(path, f"{value!r} is not an RFC 3339 time with a zone, e.g. 2025-01-04T03:00:00Z"))
        return None
    return parsed


def _check_maintenance(cluster: ClusterConfig, problems: list[Problem]) -> None:
    base = f"{NS}:cluster.maintenance"
    maintenance = cluster.maintenance
    _rfc3339(f"{base}.holdStart", maintenance.hold_start, problems)
    window = maintenance.window
    if window is None:
        return
    start = _rfc3339(f"{base}.window.start", window.start, problems)
    end = _rfc3339(f"{base}.window.end", window.end, problems)
    if start and end and end <= start:
        problems.append(Problem(f"{base}.window.end", f"{window.end!r} is not after window.start {window.start!r}"))
    if not re.fullmatch(r"FREQ=(DAILY|WEEKLY|MONTHLY)(;[A-Z]+=[A-Z0-9,+-]+)*", window.recurrence):
        problems.append(
            Problem(
                f"{base}.window.recurrence",
                f"{window.recurrence!r} is not an RFC 5545 RRULE, e.g. FREQ=WEEKLY;BYDAY=SA,SU or FREQ=DAILY",
            )
        )


def _check_network(cluster: ClusterConfig, problems: list[Problem]) -> None:
    base = f"{NS}:cluster"
    for i, net in enumerate(cluster.master_authorized_networks):
        _check_cidr(f"{base}.masterAuthorizedNetworks[{i}].cidrBlock", net.cidr_block, problems)
    network = cluster.network
    npath = f"{base}.network"
    ranges_named = (("podsRangeName", network.pods_range_name), ("servicesRangeName", network.services_range_name))
    for key, range_name in ranges_named:
        # SubnetworkSecondaryRange.rangeName: RFC 1035, 1-63 characters, unique within the subnetwork
        # (https://cloud.google.com/compute/docs/reference/rest/v1/subnetworks)
        _check_name(f"{npath}.{key}", range_name, naming.COMPUTE_NAME_MAX, "secondary range name", problems)
    _check_range_names_distinct(npath, network, problems)
    for key, given in (("network", network.network), ("subnetwork", network.subnetwork)):
        if given is not None and not NETWORK_REF_RE.fullmatch(given):
            problems.append(
                Problem(
                    f"{npath}.{key}",
                    f"{given!r} is not a {key} name (RFC 1035, at most 63 characters) or "
                    f"projects/<project>/.../{key}s/<name> path",
                )
            )
    if network.create:
        ranges = {
            key: _check_subnet_range(f"{npath}.{key}", getattr(network, attr), problems)
            for key, attr in (("nodesCidr", "nodes_cidr"), ("podsCidr", "pods_cidr"), ("servicesCidr", "services_cidr"))
        }
        parsed = [(k, r) for k, r in ranges.items() if r is not None]
        for i, (ka, ra) in enumerate(parsed):
            for kb, rb in parsed[i + 1 :]:
                if ra.overlaps(rb):
                    problems.append(Problem(f"{npath}.{kb}", f"{rb} overlaps {ka} {ra}; the ranges must be disjoint"))
    else:
        for key, value in (("network", network.network), ("subnetwork", network.subnetwork)):
            if not value:
                problems.append(Problem(f"{npath}.{key}", "required when network.create is false"))
        if network.nat is None:
            problems.append(
                Problem(
                    f"{npath}.nat",
                    "required when network.create is false: true creates a Cloud Router and NAT for the subnet on "
                    "that network; false when it already has NAT (without NAT, private nodes cannot pull public "
                    "images)",
                )
            )


def _check_range_names_distinct(npath: str, network: NetworkConfig, problems: list[Problem]) -> None:
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
    problems.append(
        Problem(
            f"{npath}.{key}",
            f"{network.pods_range_name!r} is also {other}{default}; a subnet's secondary ranges need distinct names",
        )
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


def _check_subnet_range(path: str, value: str, problems: list[Problem]) -> ipaddress.IPv4Network | None:
    """A range of the created subnet: a network written with its prefix length, of a size a subnet range can
    have. A bare address (10.0.0.0) would be read as a single address (/32)."""
    key = path.rsplit(".", 1)[-1]
    if "/" not in value:
        problems.append(
            Problem(path, f"{value!r} has no prefix length: write the range as <address>/<length>, e.g. 10.0.0.0/20")
        )
        return None
    network = _check_cidr(path, value, problems)
    if network is not None and not SUBNET_PREFIX_MIN <= network.prefixlen <= SUBNET_PREFIX_MAX[key]:
        problems.append(
            Problem(
                path,
                f"{value!r} is a /{network.prefixlen}; allowed: /{SUBNET_PREFIX_MIN} to /{SUBNET_PREFIX_MAX[key]} "
                f"({SUBNET_PREFIX_WHY[key]}; at most the size of 10.0.0.0/8)",
            )
        )
        return None
    return network


# A proxy-only subnet is /26 or larger; GKE's Gateway guide creates a /23 ("Configure a proxy-only subnet",
# https://cloud.google.com/load-balancing/docs/proxy-only-subnets#proxy_only_subnet_size).
PROXY_SUBNET_PREFIX_MAX = 26
# A regional Cloud Armor security policy: a name (RFC 1035) or its projects/<p>/regions/<r>/securityPolicies/ path.
SECURITY_POLICY_RE = re.compile(
    r"(projects/[a-z][-a-z0-9.:]*/regions/[a-z0-9-]+/securityPolicies/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)


def _check_gateway(gateway: GatewayConfig, network: NetworkConfig, problems: list[Problem]) -> None:
    """tpu-serving:gateway: who may reach it, and where its load balancer's proxies get their addresses."""
    base = f"{NS}:gateway"
    for i, cidr in enumerate(gateway.source_ranges):
        _check_cidr(f"{base}.sourceRanges[{i}]", cidr, problems)
    if gateway.cloud_armor_policy is not None and not SECURITY_POLICY_RE.fullmatch(gateway.cloud_armor_policy):
        problems.append(
            Problem(
                f"{base}.cloudArmorPolicy",
                f"{gateway.cloud_armor_policy!r} is not a security policy name (RFC 1035, at most 63 characters) or "
                "projects/<project>/regions/<region>/securityPolicies/<name> path",
            )
        )
    if gateway.exposure == "external":
        if not gateway.source_ranges and gateway.cloud_armor_policy is None:
            problems.append(
                Problem(
                    f"{base}.exposure",
                    "external needs sourceRanges (client CIDRs; every other source is denied) or cloudArmorPolicy "
                    "(an existing regional Cloud Armor policy); the gateway is never open to the internet by default",
                )
            )
        elif gateway.source_ranges and gateway.cloud_armor_policy is not None:
            problems.append(
                Problem(
                    f"{base}.cloudArmorPolicy",
                    "give sourceRanges or cloudArmorPolicy, not both (a backend has one security policy)",
                )
            )
    else:
        for key, given in (("sourceRanges", gateway.source_ranges), ("cloudArmorPolicy", gateway.cloud_armor_policy)):
            if given:
                problems.append(
                    Problem(
                        f"{base}.{key}",
                        "only for exposure: external (an internal gateway is reachable from the VPC only)",
                    )
                )
    if gateway.enabled:
        _check_proxy_subnet(gateway, network, problems)


def _check_gateway_version(cluster: ClusterConfig, problems: list[Problem]) -> None:
    """The gateway's InferencePools need the InferencePool CRD, which GKE installs (stacks/gke_managed.py) and the
    stack therefore never applies: the control plane must be at least the version GKE installs it from. Called by
    _check_gke_versions when that is the highest version the stack needs."""
    need = gke_managed.required_version(
        cluster.min_master_version,
        gke_managed.CRD,
        gke_managed.INFERENCE_POOL_CRD,
        gke_managed.stack_settings(gateway_api=True),
    )
    if need is None:
        return
    given = "unset (the release channel's default version, unknown before the cluster exists)"
    if cluster.min_master_version:
        given = f"{cluster.min_master_version!r}"
    problems.append(
        Problem(
            f"{NS}:cluster.minMasterVersion",
            f"{given} with gateway.enabled: set it to {need} or later, a version the {cluster.release_channel} "
            f"channel offers; GKE installs the InferencePool CRD ({gke_managed.INFERENCE_POOL_CRD}) from {need} "
            "and the stack never applies a CRD GKE manages",
        )
    )


def _check_proxy_subnet(gateway: GatewayConfig, network: NetworkConfig, problems: list[Problem]) -> None:
    """Where an enabled gateway's load balancer proxies get their addresses: a proxy-only subnet, existing or
    created with a range disjoint from the cluster's."""
    base = f"{NS}:gateway"
    if network.create and gateway.proxy_subnet == "existing":
        problems.append(
            Problem(
                f"{base}.proxySubnet",
                "'existing' needs cluster.network.create: false; a network the stack creates has no proxy-only "
                "subnet unless the stack creates it (create)",
            )
        )
    if not network.create and gateway.proxy_subnet is None:
        problems.append(
            Problem(
                f"{base}.proxySubnet",
                "required when cluster.network.create is false: existing (the network already has an ACTIVE "
                "REGIONAL_MANAGED_PROXY subnet in gcp:region; a region holds one) or create (the stack adds one "
                "with proxySubnetCidr)",
            )
        )
    if (gateway.proxy_subnet or "create") == "create":
        proxy = _check_cidr(f"{base}.proxySubnetCidr", gateway.proxy_subnet_cidr, problems)
        if proxy is not None and proxy.prefixlen > PROXY_SUBNET_PREFIX_MAX:
            problems.append(
                Problem(
                    f"{base}.proxySubnetCidr",
                    f"{gateway.proxy_subnet_cidr} is smaller than /{PROXY_SUBNET_PREFIX_MAX}; a proxy-only subnet "
                    "needs /26 or larger (/23 recommended)",
                )
            )
        if proxy is not None and network.create:
            for key, attr in (
                ("nodesCidr", "nodes_cidr"),
                ("podsCidr", "pods_cidr"),
                ("servicesCidr", "services_cidr"),
            ):
                try:
                    other = ipaddress.IPv4Network(getattr(network, attr), strict=True)
                except ValueError:
                    continue  # reported at its own key
                if proxy.overlaps(other):
                    problems.append(
                        Problem(
                            f"{base}.proxySubnetCidr",
                            f"{proxy} overlaps cluster.network.{key} {other}; the ranges must be disjoint",
                        )
                    )


def _check_cluster(cluster: ClusterConfig, problems: list[Problem]) -> None:
    """Free-text fields that Google Cloud reads: machine type, version, label count."""
    base = f"{NS}:cluster"
    system = cluster.system_pool
    if not MACHINE_TYPE_RE.fullmatch(system.machine_type):
        problems.append(
            Problem(
                f"{base}.systemPool.machineType", f"{system.machine_type!r} is not a machine type, e.g. e2-standard-4"
            )
        )
    if cluster.min_master_version is not None and not GKE_VERSION_RE.fullmatch(cluster.min_master_version):
        problems.append(
            Problem(
                f"{base}.minMasterVersion",
                f"{cluster.min_master_version!r} is not a GKE version, e.g. 1.32 or 1.32.2-gke.1297000",
            )
        )
    # 64 labels per resource at most; the stack adds app, stack and environment
    if len(cluster.labels) > 61:
        problems.append(Problem(f"{base}.labels", f"{len(cluster.labels)} labels; at most 61 (64 with the stack's)"))
    for i, net in enumerate(cluster.master_authorized_networks):
        if not re.fullmatch(r"[^\x00-\x1f\x7f]{0,100}", net.display_name):
            problems.append(
                Problem(
                    f"{base}.masterAuthorizedNetworks[{i}].displayName",
                    f"{net.display_name!r} is not allowed: at most 100 characters, no control characters",
                )
            )


def _check_key(path: str, key: str | None, location: str, of_what: str, problems: list[Problem]) -> None:
    """A Cloud KMS key in config: its resource name, in the location of the data it encrypts (Cloud Storage:
    https://cloud.google.com/storage/docs/encryption/customer-managed-keys, key resource locations; GKE:
    https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets, a key in the cluster's location)."""
    why = kms.key_problem(key, location, of_what) if key is not None else None
    if why:
        problems.append(Problem(path, why))


def _check_location(location: str, region: str, problems: list[Problem]) -> None:
    path = f"{NS}:cluster.location"
    zone = ZONE_RE.fullmatch(location)
    if location == region:
        return
    if zone and zone.group(1) == region:
        return
    problems.append(
        Problem(
            path, f"{location!r} must be gcp:region ({region!r}, a regional cluster) or a zone in it, e.g. {region}-b"
        )
    )


def _check_pool(i: int, pool: TpuPoolConfig, region: str, problems: list[Problem]) -> PoolPlan | None:
    """A TPU pool against the catalog, its region and GKE's rules; its plan when it has no problem."""
    base = f"{NS}:tpuPools[{i}]"
    start = len(problems)
    _check_pool_names(base, pool, region, problems)
    shape = _pool_shape(base, pool, problems)
    capacities = _check_capacity(base, pool, problems)
    if pool.autoscaling is not None:
        _check_pool_autoscaling(base, pool, pool.autoscaling, shape, len(capacities), problems)
    if len(problems) > start or shape is None:
        return None
    # A pool with a capacity list gets a ComputeClass and node pools GKE creates: none of its own.
    names = [] if len(capacities) > 1 else naming.slice_node_pool_names(pool.name, pool.slices, shape.multi_host)
    longest = max(names, key=len, default="")
    if len(longest) > naming.NODE_POOL_NAME_MAX:
        problems.append(
            Problem(
                f"{base}.name",
                f"{pool.name!r} with {pool.slices} slices gives node pool {longest!r} ({len(longest)} characters); GKE "
                f"node pool names are at most {naming.NODE_POOL_NAME_MAX}: shorten the name",
            )
        )
        return None
    return PoolPlan(config=pool, shape=shape, node_pool_names=tuple(names))


def _check_pool_names(base: str, pool: TpuPoolConfig, region: str, problems: list[Problem]) -> None:
    """The pool's name, machine type, reservation and zone are names GCP accepts, the zone in the region."""
    _check_name(f"{base}.name", pool.name, naming.NODE_POOL_NAME_MAX - 4, "pool name", problems)
    if pool.machine_type is not None and not MACHINE_TYPE_RE.fullmatch(pool.machine_type):
        problems.append(
            Problem(f"{base}.machineType", f"{pool.machine_type!r} is not a machine type, e.g. ct6e-standard-4t")
        )
    if pool.reservation is not None and not RESERVATION_RE.fullmatch(pool.reservation):
        problems.append(
            Problem(
                f"{base}.reservation",
                f"{pool.reservation!r} is not a reservation: its name (lowercase letters, digits, '-', at most 63) or "
                "projects/<project>/reservations/<name>",
            )
        )

    zone = ZONE_RE.fullmatch(pool.zone)
    if not zone or zone.group(1) != region:
        problems.append(
            Problem(f"{base}.zone", f"{pool.zone!r} is not a zone of gcp:region {region!r}, e.g. {region}-a")
        )


def _pool_shape(base: str, pool: TpuPoolConfig, problems: list[Problem]) -> catalog.SliceShape | None:
    """The slice shape from the catalog (None: the TPU, topology or machine type is not in it), and its slices."""
    shape: catalog.SliceShape | None = None
    try:
        gen = catalog.generation(pool.tpu)
    except catalog.CatalogError as err:
        problems.append(Problem(f"{base}.tpu", str(err)))
        gen = None
    if gen is not None:
        try:
            shape = catalog.slice_shape(pool.tpu, pool.topology, pool.machine_type)
        except catalog.CatalogError as err:
            key = "machineType" if pool.topology in catalog.topologies(gen) else "topology"
            problems.append(Problem(f"{base}.{key}", str(err)))

    if pool.slices < 1:
        problems.append(Problem(f"{base}.slices", f"{pool.slices} is not allowed; a pool has at least 1 slice"))
    elif shape is not None and not shape.multi_host and pool.slices > 1:
        multi = [s for s in catalog.shapes(shape.generation, pool.topology) if s.multi_host]
        advice = (
            f"for {pool.slices} multi-host slices of {pool.topology} set machineType: {multi[0].machine_type} "
            f"({multi[0].hosts} hosts x {multi[0].chips_per_host} chips per slice), or "
            if multi
            else ""
        )
        problems.append(
            Problem(
                f"{base}.slices",
                f"{pool.slices} slices on single-host {pool.tpu} {pool.topology} ({shape.machine_type}) is not allowed: "
                f"multislice needs multi-host slices; {advice}use autoscaling.maxNodes for more single-host nodes",
            )
        )
    return shape


def _check_capacity(base: str, pool: TpuPoolConfig, problems: list[Problem]) -> list[str]:
    """Capacity types and the reservation agree; returns the capacity types in priority order."""
    capacities: list[str] = list(pool.capacity) if isinstance(pool.capacity, list) else [pool.capacity]
    if "reservation" in capacities and not pool.reservation:
        problems.append(Problem(f"{base}.reservation", "required with capacity 'reservation': the reservation's name"))
    if pool.reservation and "reservation" not in capacities:
        why = (
            "spot VMs cannot consume a reservation"
            if pool.capacity == "spot"
            else "add reservation to the capacity list"
            if isinstance(pool.capacity, list)
            else "set capacity: reservation"
        )
        problems.append(
            Problem(
                f"{base}.reservation", f"given with capacity {_fmt(pool.capacity)}: {why}, or remove the reservation"
            )
        )
    return capacities


def _check_pool_autoscaling(
    base: str,
    pool: TpuPoolConfig,
    auto: AutoscalingConfig,
    shape: catalog.SliceShape | None,
    capacity_count: int,
    problems: list[Problem],
) -> None:
    """Autoscaling bounds: ordered, whole slices on a multi-host pool, 0 at the bottom where GKE starts empty."""
    if auto.min_nodes > auto.max_nodes:
        problems.append(Problem(f"{base}.autoscaling.minNodes", f"{auto.min_nodes} is above maxNodes {auto.max_nodes}"))
    if (
        shape is not None
        and shape.multi_host
        and (auto.max_nodes != shape.hosts or auto.min_nodes not in (0, shape.hosts))
    ):
        problems.append(
            Problem(
                f"{base}.autoscaling",
                f"{{minNodes: {auto.min_nodes}, maxNodes: {auto.max_nodes}}} is not allowed on a multi-host "
                f"{pool.topology} slice: slices are atomic, so minNodes is 0 or {shape.hosts} and maxNodes is "
                f"{shape.hosts}",
            )
        )
    if capacity_count > 1 and auto.min_nodes != 0:
        problems.append(
            Problem(
                f"{base}.autoscaling.minNodes",
                f"{auto.min_nodes} with a capacity list: GKE creates this pool's node pools for pending pods and "
                "removes them when empty, so minNodes is 0 (maxNodes bounds what workloads may use)",
            )
        )
    if pool.capacity == "flex-start" and auto.min_nodes != 0:
        problems.append(
            Problem(f"{base}.autoscaling.minNodes", f"{auto.min_nodes} with flex-start: flex-start pools start at 0")
        )


# Node pools the cluster itself creates (components/cluster.py); a TPU pool must not derive one of these names.
CLUSTER_NODE_POOLS = (naming.SYSTEM_NODE_POOL,)


def _check_node_pool_names(plans: list[tuple[int, PoolPlan]], problems: list[Problem]) -> list[PoolPlan]:
    """Every GKE node pool name the stack derives is unique in the cluster (`mh` with 2 slices and `mh-s1` both
    derive `mh-s1`; a pool named `system` derives the system pool's name). Returns the plans without clashes."""
    owner: dict[str, str] = {name: "the cluster's system pool" for name in CLUSTER_NODE_POOLS}
    kept = []
    for i, plan in plans:
        clash = next((n for n in plan.node_pool_names if n in owner), None)
        if clash is not None:
            problems.append(
                Problem(
                    f"{NS}:tpuPools[{i}].name",
                    f"{plan.name!r} derives node pool {clash!r}, which is already the name of {owner[clash]}; "
                    "rename the pool",
                )
            )
            continue
        owner.update({n: f"a node pool of tpuPools[{i}] ({plan.name!r})" for n in plan.node_pool_names})
        kept.append(plan)
    return kept


GATEWAY_NEEDS = "gateway.enabled"


def _gke_version_needs(pools: list[PoolPlan], gateway_enabled: bool) -> list[tuple[str, str, str]]:
    """(minimum GKE version, what needs it, for whom) for every pool: its generation's minimum (catalog) and, with a
    capacity list, ComputeClass node pool auto-creation's; and an enabled gateway's InferencePool CRD."""
    needs = []
    for plan in pools:
        generation = plan.shape.generation
        needs.append(
            (generation.min_gke_version, f"the minimum GKE version for {generation.name}", f"pool {plan.name!r}")
        )
        if plan.compute_class:
            what = "the minimum GKE version for a capacity list (ComputeClass node pool auto-creation)"
            needs.append((compute_class.MIN_GKE_VERSION, what, f"pool {plan.name!r}"))
    if gateway_enabled:
        settings = gke_managed.stack_settings(gateway_api=True)
        need = gke_managed.required_version(None, gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, settings)
        assert need is not None  # required_version returns the version when none is given
        needs.append((need, "the version GKE installs the InferencePool CRD from", GATEWAY_NEEDS))
    return needs


def _check_gke_versions(
    cluster: ClusterConfig, pools: list[PoolPlan], gateway_enabled: bool, problems: list[Problem]
) -> None:
    """minMasterVersion meets the highest minimum the pools and the gateway need, named at once (not one
    requirement, then after the user raises the version, the next). Without minMasterVersion the cluster runs its
    release channel's default version, which this program cannot know offline: a pool whose minimum is in the
    matrix's newest minor (DEFAULT_KUBERNETES_MINOR) or later, a capacity list or an enabled gateway is refused
    until minMasterVersion says so."""
    needs = _gke_version_needs(pools, gateway_enabled)
    if not needs:
        return
    need, what, whom = max(needs, key=lambda n: catalog.version_tuple(n[0]))
    min_master_version = cluster.min_master_version
    if min_master_version and catalog.version_tuple(min_master_version) >= catalog.version_tuple(need):
        return
    if whom == GATEWAY_NEEDS:
        _check_gateway_version(cluster, problems)
    elif min_master_version:
        problems.append(
            Problem(
                f"{NS}:cluster.minMasterVersion",
                f"{min_master_version!r} is below {need}, {what} ({whom}); {need} or later meets every minimum the "
                "stack needs",
            )
        )
    elif (
        any(
            catalog.version_tuple(v)[:2] >= catalog.version_tuple(versions.DEFAULT_KUBERNETES_MINOR)
            for v, _, _ in needs
        )
        or any(p.compute_class for p in pools)
        or gateway_enabled
    ):
        problems.append(
            Problem(
                f"{NS}:cluster.minMasterVersion",
                f"required with {whom}: set it to {need} or later ({what}), a version the "
                f"{cluster.release_channel} channel offers; the channel's default version may be older",
            )
        )


def _check_addons(addons: AddonsConfig, problems: list[Problem]) -> None:
    problems.extend(addon_registry.check(addons, f"{NS}:addons"))


def generations_served(workload_type: WorkloadType) -> frozenset[str]:
    """TPU generations a workload type's default images serve (all, where nothing is recorded). The JetStream/MaxText,
    Pathways (jax-0.5.3) and Saxml images pinned today predate TPU7x (versions.IMAGE_RECORDS, with sources)."""
    served = frozenset(catalog.GENERATIONS)
    for key in workload_type.tpu_images:
        tpus = versions.IMAGE_RECORDS[key].serves.tpus
        served &= tpus if tpus is not None else served
    return served


def _check_compute_class(path: str, kind: WorkloadType, pool: PoolPlan, problems: list[Problem]) -> None:
    """Refuse a pool whose capacity is a list (a ComputeClass) for a type whose TPU pods a controller writes."""
    if pool.compute_class and kind.no_compute_class:
        problems.append(
            Problem(
                f"{path}.pool",
                f"{kind.name} cannot run on pool {pool.name!r}, whose capacity is a list (ComputeClass "
                f"{pool.compute_class}): {kind.no_compute_class}; give the pool a single capacity",
            )
        )


def _check_generation(
    path: str,
    workload: Any,
    pool: PoolPlan,
    types: WorkloadRegistry,
    reported: tuple[Problem, ...],
    problems: list[Problem],
) -> None:
    """Refuse a pool whose generation the workload type's default images do not serve, naming the types that do.
    Image overrides are the workload's own check (versions.image_gaps), as is a gap it reported already."""
    gen = pool.shape.generation.name
    images = getattr(workload, "images", None)
    overridden = images is not None and any(v is not None for v in images.model_dump().values())
    kind = types[workload.type]
    if gen in generations_served(kind) or overridden or any("TPU generation" in p.message for p in reported):
        return
    serving = [t.name for t in types.values() if gen in generations_served(t)]
    problems.append(
        Problem(
            f"{path}.pool",
            f"{workload.type} cannot run on {gen} (pool {pool.name!r}): its pinned images do not support {gen}; "
            f"workload types that do: {', '.join(serving) or 'none in this version'}",
        )
    )


PREEXISTING_NAMESPACES = {"default"}
FORBIDDEN_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", *gke_managed.namespaces()}
WORKLOAD_NAME_MAX = 40


def _parse_workloads(raw: Any, types: WorkloadRegistry, problems: list[Problem]) -> list[tuple[int, Any]]:
    base = f"{NS}:workloads"
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(base, f"must be a list of workloads (got {_fmt(raw)})"))
        return []
    parsed = []
    for i, item in enumerate(raw):
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in types:
            problems.append(
                Problem(f"{base}[{i}].type", f"{_fmt(kind)} is not a workload type; allowed: {', '.join(types)}")
            )
            continue
        workload = _parse(f"{base}[{i}]", types[kind].config, item, problems)
        if workload is not None:
            parsed.append((i, workload))
    return parsed


def _check_workload_keys(
    i: int,
    workload: Any,
    seen: dict[str, int],
    all_pool_names: set[str],
    addons: AddonsConfig | None,
    types: WorkloadRegistry,
    pools_complete: bool,
    problems: list[Problem],
) -> str:
    """What every workload is checked for before its type's rules: its name, namespace, pool and add-on; returns
    its namespace."""
    path = f"{NS}:workloads[{i}]"
    _check_name(f"{path}.name", workload.name, WORKLOAD_NAME_MAX, "workload name", problems)
    if workload.name in seen:
        problems.append(
            Problem(f"{path}.name", f"{workload.name!r} is already the name of workloads[{seen[workload.name]}]")
        )
    seen.setdefault(workload.name, i)
    namespace = workload.namespace or workload.name
    if namespace in FORBIDDEN_NAMESPACES:
        problems.append(Problem(f"{path}.namespace", f"{namespace!r} is reserved for the system; choose another"))
    else:
        _check_name(f"{path}.namespace", namespace, 63, "namespace", problems)
        _check_not_a_stack_namespace(path, workload, namespace, problems)
    if workload.pool not in all_pool_names and pools_complete:
        available = ", ".join(sorted(all_pool_names)) or "none (add tpuPools)"
        problems.append(
            Problem(f"{path}.pool", f"{workload.pool!r} is not a TPU pool of this stack; available: {available}")
        )
    addon = types[workload.type].addon
    if addon and addons is not None and not addons.of(addon).enabled:
        problems.append(
            Problem(f"{path}.type", f"{workload.type} needs the {addon} add-on: enable tpu-serving:addons.{addon}")
        )
    return namespace


def stack_namespaces() -> dict[str, list[str]]:
    """The namespaces the stack creates for itself, with what each is for: every add-on release's (a chart's
    namespace is the stack's, with its NetworkPolicies; a manifest brings its own), every metrics adapter's (with
    its NetworkPolicies) and the inference gateway's. Read from the registries when called, so an entry added later
    is covered; reserved whether or not the config enables it (enabling it later must not collide)."""
    owners: dict[str, list[str]] = {}
    for entry in addon_registry.ADDONS:
        for release in entry.releases.values():
            owners.setdefault(release.namespace, []).append(f"the {entry.title} add-on")
    for adapter in metrics_adapters.ADAPTERS.values():
        owners.setdefault(adapter.namespace, []).append(f"the metrics adapter {adapter.name}")
    owners.setdefault(gateway.GATEWAY_NAMESPACE, []).append("the inference gateway")
    return {ns: sorted(set(whose)) for ns, whose in owners.items()}


def _check_not_a_stack_namespace(path: str, workload: Any, namespace: str, problems: list[Problem]) -> None:
    """A workload's namespace is one the stack creates for the workload (its Namespace and NetworkPolicies): it
    cannot be one the stack already creates for an add-on, an adapter or the gateway (two resources would manage
    one Namespace and one NetworkPolicy)."""
    reserved = stack_namespaces()
    if namespace in reserved:
        key, default = ("namespace", "") if workload.namespace else ("name", " (the default namespace)")
        problems.append(
            Problem(
                f"{path}.{key}",
                f"{namespace!r}{default} is the namespace the stack creates for {' and '.join(reserved[namespace])}; "
                f"a workload needs a namespace of its own, not one of {', '.join(sorted(reserved))}",
            )
        )


def _check_workloads(
    workloads: list[tuple[int, Any]],
    pools: dict[str, PoolPlan],
    all_pool_names: set[str],
    addons: AddonsConfig | None,
    types: WorkloadRegistry,
    context: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
    pools_complete: bool = True,
) -> list[Any]:
    """Each workload's own rules (its type's `resolve`: its plan or its problems), then what workloads share:
    namespaces and pool capacity.

    `pools_complete` is false when tpuPools itself has problems: a workload's pool is then not reported as
    missing (the pool list is the problem, and it is reported at its own key)."""
    plans = []
    seen: dict[str, int] = {}
    for i, workload in workloads:
        path = f"{NS}:workloads[{i}]"
        start = len(problems)
        namespace = _check_workload_keys(i, workload, seen, all_pool_names, addons, types, pools_complete, problems)
        kind = types[workload.type]
        pool = pools.get(workload.pool)
        resolved = kind.resolve(path, workload, pool, namespace, context)
        warnings.extend(resolved.warnings)
        if pool is not None:
            _check_generation(path, workload, pool, types, resolved.problems, problems)
            _check_compute_class(path, kind, pool, problems)
        problems.extend(resolved.problems)
        _check_images(path, workload, problems)
        if len(problems) == start and resolved.plan is not None:
            roots = [
                (key, bucket_access.stack_root_problem(url, context.bucket)) for key, url in resolved.plan.read_paths()
            ]
            problems.extend(Problem(f"{path}.{key}", why) for key, why in roots if why)
            if not any(why for _, why in roots):
                plans.append((i, resolved.plan))
    _check_exclusive_pools(workloads, pools, types, problems)
    _check_shared_namespaces(plans, problems)
    _check_pool_capacity(plans, problems)
    return [plan for _, plan in plans]


def _check_images(path: str, workload: Any, problems: list[Problem]) -> None:
    """Every image override of any workload type (its `images` mapping) is a reference a kubelet can pull."""
    images = getattr(workload, "images", None)
    for key, image in (images.model_dump() if images is not None else {}).items():
        why = naming.image_reference_problem(image) if isinstance(image, str) else None
        if why:
            problems.append(Problem(f"{path}.images.{_camel(key)}", why))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _check_shared_namespaces(plans: list[tuple[int, Any]], problems: list[Problem]) -> None:
    """Workloads name their objects `<workload>` or `<workload>-<role>`; in one namespace, a workload whose name
    is another's followed by '-' could get the same object name (Saxml `sax` has Deployment `sax-http`, as does a
    JetStream workload `sax-http`). Such names need separate namespaces."""
    for i, plan in plans:
        for j, other in plans:
            if i != j and plan.namespace == other.namespace and plan.name.startswith(f"{other.name}-"):
                problems.append(
                    Problem(
                        f"{NS}:workloads[{i}].name",
                        f"{plan.name!r} starts with {other.name + '-'!r}, the prefix of the objects of workloads[{j}] "
                        f"in the same namespace {plan.namespace!r}; rename it or give it its own namespace",
                    )
                )


def _check_pool_capacity(plans: list[tuple[int, Any]], problems: list[Problem]) -> None:
    """The TPU hosts workloads on one pool need at most, added up, fit in the pool (a workload type that does not
    say what it needs, `hosts_needed` None, is not counted)."""
    by_pool: dict[str, list[tuple[int, Any, int]]] = {}
    for i, plan in plans:
        need = plan.hosts_needed
        if need is not None:
            by_pool.setdefault(plan.pool.name, []).append((i, plan, need))
    for name, users in by_pool.items():
        pool = users[0][1].pool
        capacity = pool.capacity_hosts
        total = sum(n for _, _, n in users)
        if total > capacity:
            who = ", ".join(f"workloads[{i}] {p.name!r} {n}" for i, p, n in users)
            problems.append(
                Problem(
                    f"{NS}:workloads[{users[-1][0]}].pool",
                    f"pool {name!r} has {capacity} TPU host(s), but its workloads need {total} at most ({who}); "
                    "give them separate pools or lower their replicas",
                )
            )


def _check_exclusive_pools(
    workloads: list[tuple[int, Any]], pools: dict[str, PoolPlan], types: WorkloadRegistry, problems: list[Problem]
) -> None:
    """A pool of a host-network workload serves it alone (its nodes act as that workload's identity), and the node
    pools a workload adds do not collide with the TPU node pools."""
    users: dict[str, list[int]] = {}
    for i, workload in workloads:
        users.setdefault(workload.pool, []).append(i)
    node_pools = {name: pool for pool in pools.values() for name in pool.node_pool_names}
    for i, workload in workloads:
        kind = types[workload.type]
        others = [j for j in users.get(workload.pool, []) if j != i]
        if kind.exclusive_pool and others:
            problems.append(
                Problem(
                    f"{NS}:workloads[{i}].pool",
                    f"pool {workload.pool!r} is also used by workloads[{others[0]}]; a {workload.type} workload runs "
                    "as its pool's node identity, so its pool serves it alone: add a pool",
                )
            )
        for added in kind.added_node_pools(workload):
            if added in node_pools:
                problems.append(
                    Problem(
                        f"{NS}:workloads[{i}].name",
                        f"its head node pool {added!r} would collide with a node pool of tpuPools {node_pools[added].name!r}",
                    )
                )


@dataclass(frozen=True)
class _Sections:
    """The stack config's keys parsed by their models (None: the key has problems, reported already)."""

    environment: Any  # as given (reported at its key when it is not a profile name)
    cluster: ClusterConfig | None
    bucket: BucketConfig | None
    pools: list[TpuPoolConfig | None]
    addons: AddonsConfig | None
    monitoring: MonitoringConfig | None
    gateway: GatewayConfig | None
    workloads: list[tuple[int, Any]]
    paused: bool
    decommission: bool


def _check_invocation(
    gcp_project: str | None,
    region: str | None,
    extra_keys: tuple[str, ...],
    hf_token: str | None,
    problems: list[Problem],
) -> str | None:
    """What comes from outside `tpu-serving:` keys: the gcp: settings, unknown keys, how the token is set.
    Returns the region when it is one."""
    if hf_token == "plain":
        problems.append(
            Problem(
                f"{NS}:hfToken",
                "is set in plain text; set it as a secret so it is encrypted in the stack file and state: "
                "pulumi config set --secret tpu-serving:hfToken <token>",
            )
        )
    for key in extra_keys:
        problems.append(Problem(f"{NS}:{key}", f"unknown key; allowed: {', '.join(KNOWN_KEYS)}"))
    if not gcp_project:
        problems.append(
            Problem("gcp:project", "required: the Google Cloud project id (pulumi config set gcp:project ...)")
        )
    elif not GCP_PROJECT_RE.fullmatch(gcp_project):
        problems.append(
            Problem("gcp:project", f"{gcp_project!r} is not a project id (6-30 lowercase letters, digits, '-')")
        )
    if not region:
        problems.append(Problem("gcp:region", "required: the region of the cluster and TPUs, e.g. us-east5"))
    elif not REGION_RE.fullmatch(region):
        problems.append(Problem("gcp:region", f"{region!r} is not a region name, e.g. us-east5"))
        return None
    return region


def _parse_sections(raw: dict[str, Any], types: WorkloadRegistry, problems: list[Problem]) -> _Sections:
    environment = raw.get("environment")
    if environment is None:
        problems.append(Problem(f"{NS}:environment", f"required: one of {', '.join(PROFILES)}"))
    elif environment not in PROFILES:
        problems.append(
            Problem(f"{NS}:environment", f"{_fmt(environment)} is not allowed; allowed: {', '.join(PROFILES)}")
        )
    cluster = _parse(f"{NS}:cluster", ClusterConfig, raw.get("cluster") or {}, problems)
    bucket = _parse(f"{NS}:bucket", BucketConfig, raw.get("bucket") or {}, problems)
    pools = _parse_pools(raw.get("tpuPools"), problems)
    addons = _parse(f"{NS}:addons", addon_registry.settings_model(), raw.get("addons") or {}, problems)
    monitoring = _parse(f"{NS}:monitoring", MonitoringConfig, raw.get("monitoring") or {}, problems)
    gateway = _parse(f"{NS}:gateway", GatewayConfig, raw.get("gateway") or {}, problems)
    if addons is not None:
        _check_addons(addons, problems)
    return _Sections(
        environment=environment,
        cluster=cluster,
        bucket=bucket,
        pools=pools,
        addons=addons,
        monitoring=monitoring,
        gateway=gateway,
        workloads=_parse_workloads(raw.get("workloads"), types, problems),
        paused=_parse(f"{NS}:paused", bool, raw.get("paused", False), problems) or False,
        decommission=_parse(f"{NS}:decommission", bool, raw.get("decommission", False), problems) or False,
    )


def _check_cluster_section(
    sections: _Sections, region: str | None, pulumi_project: str, stack: str, problems: list[Problem]
) -> tuple[str | None, str | None]:
    """The cluster's own rules; returns its name and location (None where they cannot be known)."""
    cluster, environment = sections.cluster, sections.environment
    if cluster is None:
        return None, None
    cluster_name = cluster.name or naming.default_cluster_name(pulumi_project, stack)
    _check_name(f"{NS}:cluster.name", cluster_name, naming.CLUSTER_NAME_MAX, "GKE cluster name", problems)
    _check_network(cluster, problems)
    if cluster.control_plane_endpoint == "ip" and environment != "dev":
        problems.append(
            Problem(
                f"{NS}:cluster.controlPlaneEndpoint",
                f"'ip' is allowed only in dev (environment is {_fmt(environment)}); staging and prod reach the "
                "control plane through the DNS-based endpoint (allowed: 'dns')",
            )
        )
    if cluster.network.flow_logs and not cluster.network.create:
        problems.append(
            Problem(
                f"{NS}:cluster.network.flowLogs",
                "true applies only to a subnet the stack creates (network.create: true); enable flow logs on the "
                "existing subnet where it is managed",
            )
        )
    _check_maintenance(cluster, problems)
    _check_cluster(cluster, problems)
    if sections.gateway is not None:
        _check_gateway(sections.gateway, cluster.network, problems)
    _check_labels(f"{NS}:cluster.labels", cluster.labels, problems)
    _check_system_pool(cluster, problems)
    if not region:
        return cluster_name, None
    cluster_location = cluster.location or region
    _check_location(cluster_location, region, problems)
    _check_key(
        f"{NS}:cluster.secretsEncryptionKey", cluster.secrets_encryption_key, region, "the cluster's region", problems
    )
    zones = pool_sizing.cluster_zones(cluster_location)
    if cluster.system_pool.max_nodes < zones:
        problems.append(
            Problem(
                f"{NS}:cluster.systemPool.maxNodes",
                f"{cluster.system_pool.max_nodes} is below {zones}: a regional cluster's system pool starts "
                f"with a node in each of its {zones} zones (maxNodes is the total over them)",
            )
        )
    return cluster_name, cluster_location


def _check_system_pool(cluster: ClusterConfig, problems: list[Problem]) -> None:
    if cluster.system_pool.min_nodes > cluster.system_pool.max_nodes:
        problems.append(
            Problem(
                f"{NS}:cluster.systemPool.minNodes",
                f"{cluster.system_pool.min_nodes} is above maxNodes {cluster.system_pool.max_nodes}",
            )
        )


def _check_bucket_section(
    bucket: BucketConfig | None,
    gcp_project: str | None,
    region: str | None,
    pulumi_project: str,
    stack: str,
    problems: list[Problem],
) -> str | None:
    """The bucket's rules; returns its name (None where it cannot be known)."""
    bucket_name = None
    if bucket is not None and gcp_project:
        bucket_name = bucket.name or naming.default_bucket_name(gcp_project, pulumi_project, stack)
        why = check_bucket_name(bucket_name)
        if why:
            problems.append(Problem(f"{NS}:bucket.name", why))
    if bucket is not None and region:
        _check_key(
            f"{NS}:bucket.kmsKeyName", bucket.kms_key_name, bucket.location or region, "the bucket's location", problems
        )
    if bucket is not None:
        _check_bucket_location(bucket, problems)
    return bucket_name


def _check_bucket_location(bucket: BucketConfig, problems: list[Problem]) -> None:
    """A location Cloud Storage has (stacks/storage_locations.py, from Google's list)."""
    if (
        bucket.location is not None
        and not storage_locations.is_location(bucket.location)
        and not storage_locations.may_be_new_region(bucket.location)
    ):
        s = storage_locations
        problems.append(
            Problem(
                f"{NS}:bucket.location",
                f"{bucket.location!r} is not a Cloud Storage location; allowed: one of its {len(s.REGIONS)} regions "
                f"(e.g. us-east5, europe-west4; all at {s.SOURCE}), a dual-region ({', '.join(s.DUAL_REGIONS)}) or "
                f"a multi-region ({', '.join(s.MULTI_REGIONS)})",
            )
        )


def _check_pools(sections: _Sections, region: str | None, problems: list[Problem]) -> list[PoolPlan]:
    """Each TPU pool against the catalog and the region, then what pools share: node-pool names and versions."""
    indexed: list[tuple[int, PoolPlan]] = []
    seen: dict[str, int] = {}
    for i, pool in enumerate(sections.pools):
        if pool is None:
            continue
        if pool.name in seen:
            problems.append(
                Problem(f"{NS}:tpuPools[{i}].name", f"{pool.name!r} is already the name of tpuPools[{seen[pool.name]}]")
            )
            continue
        seen[pool.name] = i
        if region:
            plan = _check_pool(i, pool, region, problems)
            if plan is not None:
                indexed.append((i, plan))
    plans = _check_node_pool_names(indexed, problems)
    if sections.cluster is not None:
        gateway_enabled = sections.gateway is not None and sections.gateway.enabled
        _check_gke_versions(sections.cluster, plans, gateway_enabled, problems)
    return plans


def _workload_context(
    sections: _Sections,
    cluster_name: str | None,
    bucket_name: str | None,
    identity_suffix: str,
    hf_token: str | None,
) -> WorkloadContext:
    cluster, monitoring, addons = sections.cluster, sections.monitoring, sections.addons
    return WorkloadContext(
        adapter=monitoring.adapter if monitoring is not None else "none",
        min_master_version=cluster.min_master_version if cluster is not None else None,
        scrape_interval=monitoring.scrape_interval if monitoring is not None else "15s",
        bucket=bucket_name or "",
        paused=sections.paused,
        cluster_name=cluster_name or "",
        identity_suffix=identity_suffix,
        lws_enabled=addons.of("lws").enabled if addons is not None else False,
        hf_token=hf_token == "secret",
        environment=sections.environment if isinstance(sections.environment, str) else "",
    )


def parse_stack_config(
    raw: dict[str, Any],
    *,
    stack: str,
    pulumi_project: str,
    gcp_project: str | None,
    region: str | None,
    workload_types: WorkloadRegistry,
    extra_keys: tuple[str, ...] = (),
    hf_token: str | None = None,
    refuse_placeholder: bool = False,
) -> StackConfig:
    """Validate a stack config given as `{key without namespace: value}`; raise ConfigError with every problem.

    `workload_types` are the types the program serves (workloads/registry.py). `hf_token` says how
    tpu-serving:hfToken is set: None (not set), "secret", or "plain" (refused: it would be stored in plain text in
    the stack file). `refuse_placeholder`: the examples' gcp:project is a problem (a real deployment), not a
    warning (the offline render and tests)."""
    problems: list[Problem] = []
    region = _check_invocation(gcp_project, region, extra_keys, hf_token, problems)
    sections = _parse_sections(raw, workload_types, problems)
    _check_environment_names(sections.environment, stack, gcp_project, problems)
    placeholder = placeholder_project_problem(gcp_project) if refuse_placeholder else None
    problems.extend([placeholder] if placeholder else [])
    cluster_name, cluster_location = _check_cluster_section(sections, region, pulumi_project, stack, problems)
    bucket_name = _check_bucket_section(sections.bucket, gcp_project, region, pulumi_project, stack, problems)
    pools = _check_pools(sections, region, problems)
    warnings: list[str] = _first_run_warnings(gcp_project, sections, pools)
    context = _workload_context(
        sections, cluster_name, bucket_name, naming.stack_identity_suffix(pulumi_project, stack), hf_token
    )
    workload_plans = _check_workloads(
        sections.workloads,
        {p.name: p for p in pools},
        _declared_pool_names(raw.get("tpuPools")),
        sections.addons,
        workload_types,
        context,
        problems,
        warnings,
        pools_complete=isinstance(raw.get("tpuPools", []), list) and None not in sections.pools,
    )
    if problems:
        raise ConfigError(stack, problems)
    assert gcp_project and region and cluster_name and cluster_location and bucket_name
    return _stack_config(
        sections,
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        names=(cluster_name, cluster_location, bucket_name),
        pools=pools,
        workloads=with_local_ports(workload_plans),
        workload_types=workload_types,
        warnings=warnings,
    )


def _stack_config(
    sections: _Sections,
    *,
    stack: str,
    pulumi_project: str,
    gcp_project: str,
    region: str,
    names: tuple[str, str, str],
    pools: list[PoolPlan],
    workloads: list[Any],
    workload_types: WorkloadRegistry,
    warnings: list[str],
) -> StackConfig:
    """The validated config, with the environment's profile and the warnings a user should read."""
    cluster, bucket, environment = sections.cluster, sections.bucket, sections.environment
    addons, monitoring, gateway = sections.addons, sections.monitoring, sections.gateway
    assert cluster is not None and bucket is not None and environment
    assert addons is not None and monitoring is not None and gateway is not None
    profile = PROFILES[environment]
    if sections.decommission:
        profile = profile.decommissioned()
        warnings.append(
            f"{NS}:decommission=true: protection of the {environment} cluster, TPU pools and bucket is off so that "
            "`pulumi destroy` can run; the bucket is still retained (left in place) on destroy"
        )
    if sections.paused:
        warnings.append(f"{NS}:paused=true: workloads are at zero and TPU pools scale to zero nodes")
    if gateway.enabled and not any(getattr(w, "gateway_backend", None) and w.gateway_backend() for w in workloads):
        warnings.append(
            f"{NS}:gateway.enabled=true but no workload is served through it (only vllm workloads are, unless they "
            "opt out): the Gateway routes nothing"
        )
    cluster_name, cluster_location, bucket_name = names
    return StackConfig(
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        environment=environment,
        profile=profile,
        cluster=cluster,
        cluster_name=cluster_name,
        cluster_location=cluster_location,
        bucket=bucket,
        bucket_name=bucket_name,
        bucket_force_destroy=profile.bucket_force_destroy if bucket.force_destroy is None else bucket.force_destroy,
        pools=tuple(pools),
        labels={"app": "tpu-serving", "stack": naming.label_value(stack), "environment": environment, **cluster.labels},
        addons=addons,
        monitoring=monitoring,
        gateway=gateway,
        workloads=tuple(workloads),
        warnings=tuple(_warnings(environment, profile, cluster, bucket) + warnings),
        paused=sections.paused,
        decommission=sections.decommission,
        workload_types=workload_types,
    )


def _warnings(environment: str, profile: Profile, cluster: ClusterConfig, bucket: BucketConfig) -> list[str]:
    out = []
    if bucket.force_destroy is not None and bucket.force_destroy != profile.bucket_force_destroy:
        out.append(
            f"{NS}:bucket.forceDestroy={str(bucket.force_destroy).lower()} overrides the {environment} profile "
            f"({str(profile.bucket_force_destroy).lower()})"
        )
    if cluster.control_plane_endpoint == "ip" and not cluster.master_authorized_networks:
        out.append(
            f"{NS}:cluster.controlPlaneEndpoint=ip with no masterAuthorizedNetworks: the {environment} control plane "
            "endpoint accepts connections from any address (authenticated); list the CIDRs of your operators and CI"
        )
    if not cluster.private_nodes:
        out.append(f"{NS}:cluster.privateNodes=false: nodes get public IP addresses")
    if bucket.location is not None and storage_locations.may_be_new_region(bucket.location):
        out.append(
            f"{NS}:bucket.location={bucket.location!r} is written like a region but is not in the list of Cloud "
            f"Storage locations the stack knows ({storage_locations.SOURCE}); if it is a new region it works, else "
            "`pulumi up` fails when the bucket is created"
        )
    return out


# ---- what a new user gets wrong: placeholder project, environment against names, TPU zones ----------------


def named_environment(name: str | None) -> str | None:
    """The environment a stack or project name says it is for ('acme-prod', 'Prod', 'prod1', 'myprod' -> prod;
    'product-demo' -> None), or None."""
    words = re.findall(r"[a-z]+", (name or "").lower())
    for env, names in ENVIRONMENT_WORDS.items():
        if any(word in names for word in words):
            return env
    return next((env for env in ENVIRONMENT_AFFIXES if any(_word_says(word, env) for word in words)), None)


def _word_says(word: str, env: str) -> bool:
    """`word` starts or ends with one of env's affixes, and is not an English word that merely starts with one."""
    if word.startswith(NOT_ENVIRONMENT_PREFIXES):
        return False
    return any(word.startswith(a) or word.endswith(a) for a in ENVIRONMENT_AFFIXES[env])


def _check_environment_names(environment: Any, stack: str, gcp_project: str | None, problems: list[Problem]) -> None:
    """A stack or project named like prod (or staging) runs that environment's profile, not a lower one: `dev` there
    means no deletion protection and a bucket destroyed with its contents."""
    rank = {name: i for i, name in enumerate(PROFILES)}  # dev, staging, prod: least to most protected
    if not isinstance(environment, str) or environment not in rank:
        return  # reported at its key already
    for what, name in (("stack", stack), ("gcp:project", gcp_project)):
        named = named_environment(name)
        # a project may host a lower environment than its name (staging in 'acme-prod'), but never dev
        if named is None or rank[environment] >= rank[named] or (what == "gcp:project" and environment != "dev"):
            continue
        problems.append(
            Problem(
                f"{NS}:environment",
                f"{_fmt(environment)} with {what} {name!r}, which is named like {named}: the {environment} profile "
                f"has {_protection(PROFILES[environment])}; set tpu-serving:environment: {named}, or use a "
                f"{what.removeprefix('gcp:')} name that does not say {named}",
            )
        )


def _protection(profile: Profile) -> str:
    if profile.protect:
        return "deletion protection on the cluster, TPU pools and bucket"
    if profile.bucket_force_destroy:
        return "no deletion protection, and `pulumi destroy` deletes the bucket with its contents"
    return "no deletion protection"


def placeholder_project_problem(gcp_project: str | None) -> Problem | None:
    """gcp:project still the examples' placeholder: refused by a real preview/up (load_stack_config)."""
    if gcp_project != PLACEHOLDER_PROJECT:
        return None
    return Problem(
        "gcp:project",
        f"{PLACEHOLDER_PROJECT!r} is the examples' placeholder, not your project: pulumi config set gcp:project "
        "<your project id> (or edit the stack file)",
    )


def _first_run_warnings(gcp_project: str | None, sections: _Sections, pools: list[PoolPlan]) -> list[str]:
    """The placeholder project (refused by a real preview/up) and TPU zones the catalog's source does not list."""
    out = []
    placeholder = placeholder_project_problem(gcp_project)
    if placeholder is not None:
        out.append(f"{placeholder}; `pulumi preview` and `pulumi up` refuse it")
    planned = {plan.name for plan in pools}
    for i, pool in enumerate(sections.pools):
        if pool is not None and pool.name in planned:
            why = _zone_warning(pool)
            if why:
                out.append(f"{NS}:tpuPools[{i}].zone: {why}")
    return out


def _zone_warning(pool: TpuPoolConfig) -> str | None:
    """The catalog's zone warning for a pool: its capacities (a reservation serves a single-tenant zone) and
    whether the user confirmed the zone (tpuPools[].zoneConfirmed)."""
    capacities = tuple(pool.capacity) if isinstance(pool.capacity, list) else (pool.capacity,)
    return catalog.zone_warning(pool.tpu, pool.zone, capacities, confirmed=pool.zone_confirmed)


# ---- Pulumi entry point -------------------------------------------------------------------------------


def _raw_config(get: Callable[[str], str | None]) -> dict[str, Any]:
    """Read each known key; structured values arrive as JSON text. Text that is not JSON is kept as a string,
    so validation reports it at its key ("should be a valid dictionary") with the other problems."""
    raw: dict[str, Any] = {}
    for key in KNOWN_KEYS:
        if key in SECRET_KEYS:
            continue
        text = get(key)
        if text is None:
            continue
        try:
            raw[key] = text if key == "environment" else json.loads(text)
        except json.JSONDecodeError:
            raw[key] = text
    return raw


def _all_config_keys(runtime_config) -> set[str]:
    """Keys set for this run: the CLI passes them in the PULUMI_CONFIG bag; tests and mocks set them in-process."""
    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def _secret_state(runtime_config, key: str) -> str | None:
    """None when `tpu-serving:<key>` is unset, else "secret" or "plain" (without reading the value)."""
    full = f"{NS}:{key}"
    if full not in _all_config_keys(runtime_config):
        return None
    # the CLI lists secret keys in PULUMI_CONFIG_SECRET_KEYS; tests and mocks set them in-process
    secret = full in runtime_config.get_config_secret_keys_env() or runtime_config.is_config_secret(full)
    return "secret" if secret else "plain"


def _under_mocks() -> bool:
    """True when the program runs under Pulumi's mocks (`pulumi.runtime.set_mocks`: the tests and the offline
    render), False under the Pulumi CLI's engine, whose resource monitor is a gRPC stub (pulumi==3.272.0
    sdk/python/lib/pulumi/runtime/settings.py Settings: a monitor address becomes a ResourceMonitorStub;
    runtime/mocks.py set_mocks installs a MockMonitor)."""
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor

    return isinstance(settings.get_monitor(), MockMonitor)


def load_stack_config(workload_types: WorkloadRegistry) -> StackConfig:
    """Read and validate this stack's config; raise pulumi.RunError listing every problem."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    cfg = pulumi.Config(NS)
    gcp = pulumi.Config("gcp")
    stack = pulumi.get_stack()
    raw = _raw_config(cfg.get)
    present = [k.split(":", 1)[1] for k in _all_config_keys(runtime_config) if k.startswith(f"{NS}:")]
    extra = tuple(sorted(k for k in present if k not in KNOWN_KEYS))
    try:
        parsed = parse_stack_config(
            raw,
            stack=stack,
            pulumi_project=pulumi.get_project(),
            gcp_project=gcp.get("project"),
            region=gcp.get("region"),
            workload_types=workload_types,
            extra_keys=extra,
            hf_token=_secret_state(runtime_config, "hfToken"),
            refuse_placeholder=not _under_mocks(),
        )
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None
    for warning in parsed.warnings:
        pulumi.log.warn(warning)
    return parsed
