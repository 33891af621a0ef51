"""The TPU pools piece (tpu-serving:tpuPools): each pool against the catalog, its region and GKE's rules, then what
pools share (node pool names); its plan is `stacks.serving.pool_plan.PoolPlan`, and the GKE versions the pools need
(components/tpu_pool.py builds each pool)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.model import config_parse
from stacks.model.config_model import AutoscalingConfig, TpuPoolConfig
from stacks.pieces import cluster as cluster_piece
from stacks.pieces import gateway as gateway_piece
from stacks.pieces.cluster import VersionNeed
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import MACHINE_TYPE_RE, NS, ZONE_RE, check_name, check_zone_region
from stacks.problems import Problem, fmt
from stacks.serving import compute_class
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_type import WorkloadRegistry

NAME = "tpuPools"
KEYS = ("tpuPools",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    """Each pool by its model apart (None where it does not parse)."""
    pools = config_parse.parse_each(PATH, TpuPoolConfig, raw.get("tpuPools"), "pools", found.problems_at("tpuPools"))
    return {"pools": pools}


PATH = f"{NS}:tpuPools"
# A reservation: its name (RFC 1035) or projects/<project>/reservations/<name> for a shared one.
RESERVATION_RE = re.compile(r"(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
# Node pools the cluster itself creates (components/cluster.py); a TPU pool must not derive one of these names.
CLUSTER_NODE_POOLS = (naming.SYSTEM_NODE_POOL,)


def visit(ctx: Context, found: Findings) -> list[PoolPlan]:
    """Each pool's plan or its problems, then what the pools share; minMasterVersion against the GKE versions the
    pools and the gateway (its config says which) need; the pools' warnings. Returns the plans of the pools without
    problems (the workloads are checked against them)."""
    sections = ctx.sections
    cluster, gateway = sections.cluster, sections.gateway
    streaming = cluster.images.streaming if cluster is not None else False
    ctx.pools, pool_problems = plans(sections.pools, ctx.region, protect=ctx.protect, image_streaming=streaming)
    rules = found.problems_at("tpuPools.rules")
    rules.extend(pool_problems)
    if cluster is not None:
        needs = version_needs(ctx.pools) + (gateway_piece.version_needs(gateway) if gateway is not None else [])
        rules.extend(cluster_piece.version_problems(cluster, needs))
    found.warnings_at("tpuPools").extend(warnings(sections.pools, ctx.pools))
    return ctx.pools


def plans(
    pools: list[TpuPoolConfig | None], region: str | None, *, protect: bool, image_streaming: bool = False
) -> tuple[list[PoolPlan], list[Problem]]:
    """Each TPU pool's plan, or its problems (a pool None was not parsed: reported already); then what pools
    share: their names and the node-pool names they derive. `protect`: the environment profile's protection;
    `image_streaming`: cluster.images.streaming."""
    found: list[Problem] = []
    indexed: list[tuple[int, PoolPlan]] = []
    seen: dict[str, int] = {}
    for i, pool in enumerate(pools):
        if pool is None:
            continue
        if pool.name in seen:
            found.append(
                Problem(f"{PATH}[{i}].name", f"{pool.name!r} is already the name of tpuPools[{seen[pool.name]}]")
            )
            continue
        seen[pool.name] = i
        if region:
            plan = _check_pool(i, pool, region, protect, found, image_streaming)
            if plan is not None:
                indexed.append((i, plan))
    return _check_node_pool_names(indexed, found), found


def version_needs(pools: list[PoolPlan]) -> list[VersionNeed]:
    """For every pool: its generation's minimum GKE version (catalog) and, with a capacity list, ComputeClass node
    pool auto-creation's (always required: the channel's default cannot be known)."""
    needs = []
    for plan in pools:
        generation = plan.shape.generation
        needs.append(
            VersionNeed(
                generation.min_gke_version, f"the minimum GKE version for {generation.name}", f"pool {plan.name!r}"
            )
        )
        if plan.compute_class:
            what = "the minimum GKE version for a capacity list (ComputeClass node pool auto-creation)"
            needs.append(VersionNeed(compute_class.MIN_GKE_VERSION, what, f"pool {plan.name!r}", always_required=True))
    return needs


def warnings(pools: list[TpuPoolConfig | None], planned: list[PoolPlan]) -> list[str]:
    """TPU zones the catalog's source does not list, then warm slices' (zone_warnings, warm_slice_warnings)."""
    return zone_warnings(pools, planned) + warm_slice_warnings(pools, planned)


def zone_warnings(pools: list[TpuPoolConfig | None], planned: list[PoolPlan]) -> list[str]:
    """TPU zones the catalog's source does not list (unless the pool's zoneConfirmed says the user checked) or marks
    single-tenant (unless the pool consumes a reservation), for the pools that have a plan."""
    planned_configs = {id(plan.config) for plan in planned}  # not by name: a repeated name is a problem of its own
    out = []
    for i, pool in enumerate(pools):
        if pool is not None and id(pool) in planned_configs:
            why = _zone_warning(pool)
            if why:
                out.append(f"{PATH}[{i}].zone: {why}")
    return out


def warm_slice_warnings(pools: list[TpuPoolConfig | None], planned: list[PoolPlan]) -> list[str]:
    """warmSlices on capacity no reservation guarantees: `up` does not create those slices (it would wait for
    capacity, and fail the run on a stockout: stacks/serving/pool_sizing.py sizing); they are warm only once a scale-out
    has brought them up, from then on held by their node pools' minimum."""
    planned_configs = {id(plan.config) for plan in planned}
    return [
        f"{PATH}[{i}].warmSlices: {pool.warm_slices} on {pool.capacity} capacity: `pulumi up` creates no slice (it "
        "would wait for capacity and fail on a stockout); each warm slice is kept from the first scale-out that "
        "brings it up (its node pools' minimum then holds it); the cost estimate's baseline counts it as kept"
        for i, pool in enumerate(pools)
        if pool is not None and id(pool) in planned_configs and pool.warm_slices and pool.capacity != "reservation"
    ]


def _zone_warning(pool: TpuPoolConfig) -> str | None:
    """The catalog's zone warning for a pool, given its capacities and tpuPools[].zoneConfirmed."""
    capacities = tuple(pool.capacity) if isinstance(pool.capacity, list) else (pool.capacity,)
    return catalog.zone_warning(pool.tpu, pool.zone, capacities, confirmed=pool.zone_confirmed)


def _check_pool(
    i: int, pool: TpuPoolConfig, region: str, protect: bool, problems: list[Problem], streaming: bool = False
) -> PoolPlan | None:
    """A TPU pool against the catalog, its region and GKE's rules; its plan when it has no problem."""
    base = f"{PATH}[{i}]"
    start = len(problems)
    _check_pool_names(base, pool, region, problems)
    shape = _pool_shape(base, pool, problems)
    capacities = _check_capacity(base, pool, problems)
    if pool.autoscaling is not None:
        _check_pool_autoscaling(base, pool, pool.autoscaling, shape, len(capacities), problems)
    _check_warm_slices(base, pool, shape, len(capacities), problems)
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
    return PoolPlan(config=pool, shape=shape, node_pool_names=tuple(names), protect=protect, streaming=streaming)


def _check_pool_names(base: str, pool: TpuPoolConfig, region: str, problems: list[Problem]) -> None:
    """The pool's name, machine type, reservation and zone are names GCP accepts, the zone in the region."""
    check_name(f"{base}.name", pool.name, naming.NODE_POOL_NAME_MAX - 4, "pool name", problems)
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
    if zone and not check_zone_region(f"{base}.zone", pool.zone, problems):
        return
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
                f"{base}.reservation", f"given with capacity {fmt(pool.capacity)}: {why}, or remove the reservation"
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


def _check_warm_slices(
    base: str, pool: TpuPoolConfig, shape: catalog.SliceShape | None, capacity_count: int, problems: list[Problem]
) -> None:
    """warmSlices: a multi-host pool of its own node pools, at most its slices, never paused by an explicit 0 cap."""
    warm = pool.warm_slices
    if not warm:
        return
    path = f"{base}.warmSlices"
    if capacity_count > 1:
        problems.append(
            Problem(
                path,
                f"{warm} with a capacity list: GKE creates this pool's node pools for pending pods and removes them "
                "when empty, so it keeps no idle slice; use one capacity, or 0",
            )
        )
    elif shape is not None and not shape.multi_host:
        problems.append(
            Problem(path, f"{warm} on single-host {pool.topology}: keep warm nodes with autoscaling.minNodes instead")
        )
    elif pool.capacity == "flex-start":
        problems.append(Problem(path, f"{warm} with flex-start: flex-start pools start at 0, so none is kept warm"))
    elif warm > pool.slices:
        problems.append(Problem(path, f"{warm} is above slices {pool.slices}: at most every slice is kept warm"))


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
                    f"{PATH}[{i}].name",
                    f"{plan.name!r} derives node pool {clash!r}, which is already the name of {owner[clash]}; "
                    "rename the pool",
                )
            )
            continue
        owner.update({n: f"a node pool of tpuPools[{i}] ({plan.name!r})" for n in plan.node_pool_names})
        kept.append(plan)
    return kept


def priority(plan: PoolPlan, capacity: str, policy_name: object | None) -> dict[str, Any]:
    """One priority of a pool's ComputeClass: the pool's TPU slice shape on one capacity (C1, C2: the sources in
    stacks/serving/compute_class.py)."""
    shape = plan.shape
    rule: dict[str, Any] = {
        "machineType": shape.machine_type,  # C2
        "tpu": {"type": shape.generation.accelerator, "count": shape.chips_per_host, "topology": shape.topology},
    }
    if policy_name is not None:  # a multi-host TPU7x slice: its workload policy (C1 placement.policyName)
        rule["placement"] = {"policyName": policy_name}
    if capacity == "spot":
        rule["spot"] = True
    elif capacity == "on-demand":
        rule["spot"] = False
    elif capacity == "reservation":
        rule["spot"] = False
        reservation = plan.config.reservation
        assert reservation is not None  # the pool's rules require it with capacity reservation
        rule["reservations"] = {
            "affinity": "Specific",
            "specific": [compute_class.split_reservation(reservation)],
        }
    elif capacity == "flex-start":
        rule["flexStart"] = {"enabled": True}  # C2; flex-start VMs never consume a reservation
    else:  # pragma: no cover - the config model allows nothing else
        raise ValueError(capacity)
    return rule


def compute_class_manifest(
    plan: PoolPlan, *, node_service_account: object, policy_name: object | None = None
) -> dict[str, Any]:
    """The ComputeClass object of a pool whose capacity is a list, in priority order."""
    name = compute_class.class_name(plan.name)
    return {
        "apiVersion": compute_class.API_VERSION,
        "kind": compute_class.KIND,
        "metadata": {"name": name, "labels": {naming.POOL_LABEL: plan.name}},
        "spec": {
            "description": f"tpu-serving pool {plan.name}: {' > '.join(plan.capacities)}",
            "priorities": [priority(plan, c, policy_name) for c in plan.capacities],
            "priorityDefaults": {"location": {"zones": [plan.config.zone]}},
            # GKE creates the node pools; the class alone enables it (C4, 1.33.3-gke.1136000 and later).
            "nodePoolAutoCreation": {"enabled": True},
            # Move workloads back to a higher priority (e.g. off spot, back into the reservation) when it has room.
            "activeMigration": {"optimizeRulePriority": True},
            "nodePoolConfig": {
                "serviceAccount": node_service_account,  # the stack's node identity, never the default one
                "nodeLabels": {naming.POOL_LABEL: plan.name},
            },
        },
    }
