"""The checks every workload shares, before and after its type's own rules (`WorkloadType.resolve`): its name,
namespace, pool and add-on; the pool's TPU generation and capacity type; then what workloads share: namespaces,
pool capacity and exclusive pools. Every registered type gets them, one a test adds included. `visit` is the
workloads' one visit (stacks/config.py PIECES: after the pools, the add-ons, the cluster and the bucket)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from stacks import addons as addon_registry
from stacks import guardrails, naming
from stacks.addons import AddonsConfig
from stacks.facts import catalog, gke_managed, versions
from stacks.model import config_parse
from stacks.monitoring import adapters as metrics_adapters
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, check_name
from stacks.problems import Problem
from stacks.security import bucket_access
from stacks.serving import benchmark, gateway, version_guard
from stacks.serving import release as releases
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType, either


def declared_pool_names(raw: Any) -> set[str]:
    """Names of every pool entry, valid or not: a workload naming a pool that has its own problem (say a misspelt
    key) must not get a second, misleading "not a TPU pool" problem; the pool's problem is the real one."""
    if not isinstance(raw, list):
        return set()
    return {item["name"] for item in raw if isinstance(item, dict) and isinstance(item.get("name"), str)}


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


NAME = "workloads"
KEYS = ("workloads",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    """Each entry by the config model of its `type:` in the registry (index, parsed) where it parses."""
    models = {n: t.config for n, t in types.items()}
    entries = raw.get("workloads")
    if isinstance(entries, list):
        entries = [_without_rollout(f"{NS}:workloads[{i}]", e, types, found) for i, e in enumerate(entries)]
    workloads = config_parse.parse_by_type(
        f"{NS}:workloads", models, entries, "workload", found.problems_at("workloads")
    )
    return {"workloads": workloads}


def _without_rollout(path: str, entry: Any, types: WorkloadRegistry, found: Findings) -> Any:
    """A `rollout` on a type that cannot roll out, refused saying which types can (and left out of the entry, so
    its parse does not call it an unknown key too); any other entry as given."""
    if not isinstance(entry, dict) or "rollout" not in entry:
        return entry
    if not isinstance(entry.get("type"), str) or entry["type"] not in types:
        return entry  # a type that is not a name is the type check's problem
    if entry["type"] in types.rollout_types:
        return entry
    found.problems_at("workloads").append(
        Problem(
            f"{path}.rollout",
            f"a {entry['type']} workload cannot roll out: a release train runs the current and the candidate "
            "release as two InferencePools behind the Inference Gateway's HTTPRoute, and the gate benchmarks the "
            f"candidate's server; allowed on {either(types.rollout_types)} workloads (replace a "
            f"{entry['type']} workload in place instead)",
        )
    )
    return {k: v for k, v in entry.items() if k != "rollout"}


FORBIDDEN_NAMESPACES = {"kube-system", "kube-public", "kube-node-lease", *gke_managed.namespaces()}
WORKLOAD_NAME_MAX = 40


def visit(ctx: Context, found: Findings) -> list[WorkloadPlan]:
    """Every workload checked and planned against what the pieces visited before resolved (its pool's plan, the
    add-ons, the monitoring adapter, the cluster's and the bucket's names, the gateway): their plans, also left in
    `ctx.workloads` for the pieces that serve them."""
    given, sections = ctx.invocation, ctx.sections
    cluster, monitoring, addons, gateway_config = (
        sections.cluster,
        sections.monitoring,
        sections.addons,
        sections.gateway,
    )
    environment = sections.environment
    context = WorkloadContext(
        adapter=monitoring.adapter if monitoring is not None else "none",
        min_master_version=cluster.min_master_version if cluster is not None else None,
        scrape_interval=monitoring.scrape_interval if monitoring is not None else "15s",
        bucket=ctx.bucket_name or "",
        paused=sections.paused,
        cluster_name=ctx.cluster_name or "",
        identity_suffix=naming.stack_identity_suffix(given.pulumi_project, given.stack),
        lws_enabled=addons.of("lws").enabled if addons is not None else False,
        hf_token=given.hf_token == "secret",
        environment=environment if isinstance(environment, str) else "",
        image_mirror=ctx.image_mirror,
        project=given.gcp_project or "",
        gateway_enabled=gateway_config is not None and gateway_config.enabled,
        from_zero=ctx.from_zero,
        server_await=ctx.server_await,
    )
    ctx.workloads = check(
        sections.workloads,
        {p.name: p for p in ctx.pools},
        declared_pool_names(ctx.raw.get("tpuPools")),
        addons,
        ctx.workload_types,
        context,
        found.problems_at("workloads.rules"),
        found.warnings_at("workloads"),
        pools_complete=isinstance(ctx.raw.get("tpuPools", []), list) and None not in sections.pools,
    )
    return ctx.workloads


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


def check(
    workloads: list[tuple[int, Any]],
    pools: dict[str, PoolPlan],
    all_pool_names: set[str],
    addons: AddonsConfig | None,
    types: WorkloadRegistry,
    context: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
    pools_complete: bool = True,
) -> list[WorkloadPlan]:
    """Each workload's own rules (its type's `resolve`: its plan or its problems), then what workloads share:
    namespaces and pool capacity.

    `pools_complete` is false when tpuPools itself has problems: a workload's pool is then not reported as
    missing (the pool list is the problem, and it is reported at its own key)."""
    plans: list[tuple[int, WorkloadPlan]] = []
    seen: dict[str, int] = {}
    for i, workload in workloads:
        path = f"{NS}:workloads[{i}]"
        start = len(problems)
        namespace = _check_workload_keys(i, workload, seen, all_pool_names, addons, types, pools_complete, problems)
        # a workload under a rollout runs two server sets, each its own plan (stacks/serving/release.py); the
        # candidate is checked once the current release has no problem (it would repeat them at its own key)
        for role, config in releases.server_sets(workload):
            if role == releases.CANDIDATE and len(problems) != start:
                break
            set_path = path if role == releases.CURRENT else f"{path}.rollout.candidate"
            if config.pool not in all_pool_names and role == releases.CANDIDATE and pools_complete:
                problems.append(Problem(f"{set_path}.pool", f"{config.pool!r} is not a TPU pool of this stack"))
            said: list[str] = []
            plan = _resolve(set_path, config, pools, namespace, types, context, problems, said)
            # what the candidate inherits is said once, of the current release
            warnings.extend(w for w in said if w.replace(set_path, path, 1) not in warnings)
            if role == releases.CURRENT:
                version_guard.check_advisories(
                    path,
                    _engine_images(workload, types),
                    workload.acknowledge_advisories,
                    context.environment,
                    problems,
                    warnings,
                )
            if plan is not None and len(problems) == start:
                found = releases.release(workload, role)
                if found is not None and role == releases.CANDIDATE and releases.scales_with_weight(workload):
                    found = replace(found, peak_hosts=_peak_hosts(set_path, workload, pools, namespace, types, context))
                # the type's own plan, not a copy, where there is no rollout
                plans.append((i, plan if found is None else replace(plan, release=found)))
        sets = [p for j, p in plans if j == i]
        problems.extend(releases.route_problems(path, sets))
        current = sets[0] if sets else None
        problems.extend(
            releases.problems(
                path,
                workload,
                served=current is None or current.served_by_gateway is not None,
                name_max=WORKLOAD_NAME_MAX,
                scenarios=benchmark.SCENARIOS,
                has_slo=releases.latency_slo(workload),
            )
        )
    _check_exclusive_pools(workloads, pools, types, problems)
    _check_shared_namespaces(plans, problems)
    _check_model_names(plans, context.gateway_enabled, problems)
    _check_set_names(plans, problems)
    _check_pool_capacity(plans, problems)
    return rollout_room([plan for _, plan in plans])


def _peak_hosts(
    path: str, workload: Any, pools: dict[str, PoolPlan], namespace: str, types: WorkloadRegistry, context: Any
) -> int | None:
    """The TPU hosts the candidate needs at its largest step (its replicas follow its weight), for the preflight
    capacity check; its plan at that size is resolved for this only (its problems are the size's, reported by
    the capacity check)."""
    _, peak = releases.server_sets(workload, releases.PEAK_WEIGHT)[1]
    plan = _resolve(path, peak, pools, namespace, types, context, [], [])
    return None if plan is None else plan.hosts_needed


def _engine_images(workload: Any, types: WorkloadRegistry) -> list[tuple[str, str]]:
    """The engine images every server set of the workload runs (version_guard.workload_images), each once: the
    current release's at their keys, a rollout candidate's others at `rollout.candidate.<key>`. Held to the version
    guard once per workload, so one `acknowledgeAdvisories` covers both sets and none is reported twice."""
    kind = types[workload.type]
    found: list[tuple[str, str]] = []
    for role, config in releases.server_sets(workload):
        prefix = "" if role == releases.CURRENT else "rollout.candidate."
        seen = {ref for _, ref in found}
        images = version_guard.workload_images(config, versions.IMAGES, kind.tpu_images)
        found.extend((prefix + key, ref) for key, ref in images if ref not in seen)
    return found


def _resolve(
    path: str,
    workload: Any,
    pools: dict[str, PoolPlan],
    namespace: str,
    types: WorkloadRegistry,
    context: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> WorkloadPlan | None:
    """One server set's plan from its type's rules and the rules every workload shares (None: it has problems)."""
    start = len(problems)
    kind = types[workload.type]
    pool = pools.get(workload.pool)
    resolved = kind.resolve(path, workload, pool, namespace, context)
    warnings.extend(resolved.warnings)
    if pool is not None:
        _check_generation(path, workload, pool, types, problems)
        _check_compute_class(path, kind, pool, problems)
    problems.extend(resolved.problems)
    _check_images(path, workload, context.environment, problems, warnings)
    if len(problems) != start or resolved.plan is None:
        return None
    roots = [(key, bucket_access.stack_root_problem(url, context.bucket)) for key, url in resolved.plan.read_paths()]
    problems.extend(Problem(f"{path}.{key}", why) for key, why in roots if why)
    return None if any(why for _, why in roots) else resolved.plan


def _check_images(path: str, workload: Any, environment: str, problems: list[Problem], warnings: list[str]) -> None:
    """Every image override of any workload type (its `images` mapping) is a reference a kubelet can pull (always
    refused otherwise), and pinned as the policy pack's images-pinned reads it (guardrails.image_problem: a tag other
    than latest or a digest, a matrix image at the matrix's pin), refused where the pack refuses and warned where it
    warns (guardrails.level: the one table)."""
    images = getattr(workload, "images", None)
    rule_level = guardrails.level(guardrails.IMAGES, environment)
    for key, image in (images.model_dump() if images is not None else {}).items():
        if not isinstance(image, str):
            continue
        where = f"{path}.images.{_camel(key)}"
        unpullable = naming.image_reference_problem(image)
        why = unpullable or guardrails.image_problem(image)
        if not why:
            continue
        if unpullable or rule_level == guardrails.MANDATORY:
            problems.append(Problem(where, why))
        elif rule_level == guardrails.ADVISORY:
            warnings.append(f"{where}: {why} (the policy pack's {guardrails.IMAGES} warns in {environment})")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _check_shared_namespaces(plans: list[tuple[int, WorkloadPlan]], problems: list[Problem]) -> None:
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


def _check_model_names(plans: list[tuple[int, WorkloadPlan]], gateway_enabled: bool, problems: list[Problem]) -> None:
    """Behind the stack's one Gateway, the name in a request's `model` picks the pool (stacks/serving/gateway.py
    BBR_NAME): every model and adapter name of the gateway-served workloads reaches exactly one of them. A name two
    of them serve (two base models, an adapter named like another's model or adapter) would match two routes or
    two ConfigMaps, and the router and Gateway would pick one of them silently."""
    if not gateway_enabled:
        return
    owner: dict[str, int] = {}
    for i, plan in plans:
        backend = plan.gateway_backend()
        for name in backend.model_names if backend is not None else ():
            if name in owner and owner[name] != i:
                problems.append(
                    Problem(
                        f"{NS}:workloads[{i}]",
                        f"serves the model name {name!r} through the gateway, as workloads[{owner[name]}] does: a "
                        "request names one pool by its `model`, so every model and adapter name behind the gateway "
                        "is unique (rename the adapter, set --served-model-name, or opt one out with gateway: false)",
                    )
                )
            owner.setdefault(name, i)


def _check_set_names(plans: list[tuple[int, WorkloadPlan]], problems: list[Problem]) -> None:
    """A rollout's slot b (`<name>-b`) is a name no other workload may have: its objects and identity would be
    another's."""
    owner: dict[str, int] = {}
    for i, plan in plans:
        if plan.name in owner and owner[plan.name] != i:
            j = max(i, owner[plan.name])
            problems.append(
                Problem(
                    f"{NS}:workloads[{j}].name",
                    f"{plan.name!r} is also the name of a rollout's second server set (`<name>-b`, "
                    "stacks/serving/release.py): rename one of them",
                )
            )
        owner.setdefault(plan.name, i)


def _check_pool_capacity(plans: list[tuple[int, WorkloadPlan]], problems: list[Problem]) -> None:
    """The TPU hosts workloads on one pool need at most, added up, fit in the pool (a workload type that does not
    say what it needs, `hosts_needed` None, is not counted)."""
    by_pool: dict[str, list[tuple[int, WorkloadPlan, int]]] = {}
    for i, plan in plans:
        peak = plan.release.peak_hosts if plan.release is not None else None
        need = plan.hosts_needed if peak is None else peak
        if need is not None:
            by_pool.setdefault(plan.pool.name, []).append((i, plan, need))
    # a candidate is refused at its own key when its pool cannot hold it beside what runs there already
    # (preflight for a release: the candidate is never created without room), and counted nowhere else
    for i, plan, _ in [u for users in by_pool.values() for u in users if u[1].release and u[1].release.candidate]:
        users = by_pool[plan.pool.name]
        if sum(n for _, _, n in users) > plan.pool.capacity_hosts:
            problems.append(
                releases.capacity_problem(i, plan, [(p.name, n) for _, p, n in users], plan.pool.capacity_hosts)
            )
        by_pool[plan.pool.name] = [u for u in users if u[1] is not plan]
    for name, users in by_pool.items():
        if not users:
            continue
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


def rollout_room(plans: list[WorkloadPlan]) -> list[WorkloadPlan]:
    """Each plan with `rollout_surge` set where its pool keeps hosts free for one more of its replicas: the pool's
    capacity less every workload's hosts at their maximum (`hosts_needed`), handed out in config order, since one
    `pulumi up` may roll out every workload of the pool at once (WorkloadPlan.rolling_update). Without that room a
    rollout stops a replica before its replacement starts: while the workload runs one replica, it serves nothing
    until the new one is ready (docs/operations.md "Disruption-safe serving")."""
    room: dict[str, int] = {}
    for plan in plans:
        if plan.hosts_needed is not None:
            room[plan.pool.name] = room.get(plan.pool.name, plan.pool.capacity_hosts) - plan.hosts_needed
    out = []
    for plan in plans:
        need = plan.rollout_hosts
        if need is not None and room.get(plan.pool.name, 0) >= need:
            room[plan.pool.name] -= need
            plan = replace(plan, rollout_surge=True)  # the type's own plan otherwise, not a copy
        out.append(plan)
    return out


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
