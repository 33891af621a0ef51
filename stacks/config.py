"""Load and validate the stack config before any resource is registered.

`load_stack_config()` reads Pulumi config, parses each key with the models in `stacks.config_model`, applies
the cross-field rules below, and raises one `pulumi.RunError` that lists every problem with its key path
(`tpu-serving:tpuPools[1].topology`), the bad value and what is allowed. `parse_stack_config()` does the same
from a plain dict, without Pulumi, so the rules are tested directly.
"""

from __future__ import annotations

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
    gateway,
    gke_managed,
    local_ports,
    metrics_adapters,
    naming,
    network_policy,
    pod_security,
    versions,
)
from stacks.addons import AddonsConfig
from stacks.config_model import (
    BucketConfig,
    ClusterConfig,
    GatewayConfig,
    MonitoringConfig,
    TpuPoolConfig,
)
from stacks.pieces import bucket as bucket_piece
from stacks.pieces import cluster as cluster_piece
from stacks.pieces import gateway as gateway_piece
from stacks.pieces import network as network_piece
from stacks.pieces import tpu_pools
from stacks.pieces.rules import NS, REGION_RE, check_name
from stacks.pieces.rules import fmt as _fmt
from stacks.pool_plan import PoolPlan
from stacks.problems import ConfigError, Problem
from stacks.profiles import PROFILES, Profile
from stacks.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType

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
# Words of a stack or project name (split on - _ .) that say which environment it is for.
ENVIRONMENT_WORDS = {"prod": ("prod", "production", "prd"), "staging": ("staging", "stage", "stg")}
# Secret keys: read only as Pulumi secrets by the components that need them, never parsed into the config.
SECRET_KEYS = ("hfToken",)

GCP_PROJECT_RE = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")


@dataclass(frozen=True)
class StackConfig:
    stack: str
    pulumi_project: str
    gcp_project: str
    region: str
    environment: str
    profile: Profile
    cluster: ClusterConfig
    cluster_plan: cluster_piece.ClusterPlan
    network_plan: network_piece.NetworkPlan
    bucket: BucketConfig
    bucket_plan: bucket_piece.BucketPlan
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
    def local_ports(self) -> dict[str, dict[int, int]]:
        """Per workload: the local port of each Service port its port-forward commands forward, of its own across
        the stack (stacks/local_ports.py), from the plans as validated."""
        return local_ports.allocate([(w.name, w.forwarded_ports) for w in self.workloads])

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
        return gateway_piece.proxy_subnet_created(self.gateway)

    @property
    def cluster_name(self) -> str:
        return self.cluster_plan.name

    @property
    def cluster_location(self) -> str:
        return self.cluster_plan.location

    @property
    def bucket_name(self) -> str:
        return self.bucket_plan.name

    @property
    def bucket_force_destroy(self) -> bool:
        return self.bucket_plan.force_destroy

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


def _declared_pool_names(raw: Any) -> set[str]:
    """Names of every pool entry, valid or not: a workload naming a pool that has its own problem (say a misspelt
    key) must not get a second, misleading "not a TPU pool" problem; the pool's problem is the real one."""
    if not isinstance(raw, list):
        return set()
    return {item["name"] for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)}


# ---- rules --------------------------------------------------------------------------------------------


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
    path: str, workload: Any, pool: PoolPlan, types: WorkloadRegistry, problems: list[Problem]
) -> None:
    """Refuse a pool whose generation the workload type's pinned images do not serve, naming the types that do.
    Not for a workload that runs images of its own, nor for a type whose own rules check the images it runs
    (WorkloadType.checks_generation): each workload's generation is checked once."""
    gen, kind = pool.shape.generation.name, types[workload.type]
    if kind.checks_generation or workload.overrides_images() or gen in generations_served(kind):
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
    check_name(f"{path}.name", workload.name, WORKLOAD_NAME_MAX, "workload name", problems)
    if workload.name in seen:
        problems.append(
            Problem(f"{path}.name", f"{workload.name!r} is already the name of workloads[{seen[workload.name]}]")
        )
    seen.setdefault(workload.name, i)
    namespace = workload.namespace or workload.name
    if namespace in FORBIDDEN_NAMESPACES:
        problems.append(Problem(f"{path}.namespace", f"{namespace!r} is reserved for the system; choose another"))
    else:
        check_name(f"{path}.namespace", namespace, 63, "namespace", problems)
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
            _check_generation(path, workload, pool, types, problems)
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


def _check_pieces(
    sections: _Sections,
    region: str | None,
    names: tuple[str | None, str | None],
    problems: list[Problem],
) -> list[PoolPlan]:
    """Each platform piece's own rules, then the checks between pieces: the gateway against the network it runs in,
    minMasterVersion against what the pools and the gateway need. Returns the pools' plans."""
    cluster_name, bucket_name = names
    cluster, gateway = sections.cluster, sections.gateway
    if cluster is not None:
        assert cluster_name is not None
        problems.extend(
            cluster_piece.problems(cluster, cluster_name=cluster_name, environment=sections.environment, region=region)
        )
        if gateway is not None:
            problems.extend(gateway_piece.problems(gateway, cluster.network))
    if sections.bucket is not None:
        problems.extend(bucket_piece.problems(sections.bucket, bucket_name=bucket_name, region=region))
    pools, pool_problems = tpu_pools.plans(sections.pools, region)
    problems.extend(pool_problems)
    if cluster is not None:
        needs = tpu_pools.version_needs(pools) + (gateway_piece.version_needs(gateway) if gateway is not None else [])
        problems.extend(cluster_piece.version_problems(cluster, needs))
    return pools


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
    cluster_name = cluster_piece.name(sections.cluster, pulumi_project, stack) if sections.cluster else None
    bucket_name = (
        bucket_piece.name(sections.bucket, gcp_project, pulumi_project, stack)
        if sections.bucket and gcp_project
        else None
    )
    pools = _check_pieces(sections, region, (cluster_name, bucket_name), problems)
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
    assert gcp_project and region and cluster_name and bucket_name
    return _stack_config(
        sections,
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        names=(cluster_name, bucket_name),
        pools=pools,
        workloads=workload_plans,
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
    names: tuple[str, str],
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
    cluster_name, bucket_name = names
    labels = {"app": "tpu-serving", "stack": naming.label_value(stack), "environment": environment, **cluster.labels}
    proxy_cidr = gateway.proxy_subnet_cidr if gateway_piece.proxy_subnet_created(gateway) else None
    return StackConfig(
        stack=stack,
        pulumi_project=pulumi_project,
        gcp_project=gcp_project,
        region=region,
        environment=environment,
        profile=profile,
        cluster=cluster,
        cluster_plan=cluster_piece.plan(
            cluster,
            name=cluster_name,
            location=cluster.location or region,
            project=gcp_project,
            profile=profile,
            labels=labels,
            gateway_api=gateway.enabled,
        ),
        network_plan=network_piece.plan(
            cluster.network,
            name=cluster_name,
            project=gcp_project,
            region=region,
            profile=profile,
            proxy_subnet_cidr=proxy_cidr,
        ),
        bucket=bucket,
        bucket_plan=bucket_piece.plan(
            bucket, name=bucket_name, region=region, project=gcp_project, profile=profile, labels=labels
        ),
        pools=tuple(pools),
        labels=labels,
        addons=addons,
        monitoring=monitoring,
        gateway=gateway,
        workloads=tuple(workloads),
        warnings=tuple(
            bucket_piece.warnings(bucket, profile) + cluster_piece.warnings(cluster, environment) + warnings
        ),
        paused=sections.paused,
        decommission=sections.decommission,
        workload_types=workload_types,
    )


# ---- what a new user gets wrong: placeholder project, environment against names, TPU zones ----------------


def named_environment(name: str | None) -> str | None:
    """The environment a stack or project name says it is for ('acme-prod' -> prod), or None."""
    words = set(re.split(r"[-_.]", name or ""))
    return next((env for env, names in ENVIRONMENT_WORDS.items() if words & set(names)), None)


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
    return out + tpu_pools.zone_warnings(sections.pools, pools)


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
