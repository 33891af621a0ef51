"""`make preflight STACK=<stack>`: will `pulumi up` get what the stack asks for? One row per check, PASS, WARN or
FAIL, each with the command or link that fixes it; scripts/preflight.py prints them and exits non-zero on a FAIL.

Every answer comes from `gcloud ... --format=json` through one `Runner` (the tests replace it with recorded
responses, tests/data/preflight/). The fields read are the APIs' own (google-api-python-client 2.202.0
googleapiclient/discovery_cache/documents/, kept in tooling/data/api_schemas.json by tooling/oracles/api_schemas.py):

- TPU quota: `gcloud compute regions describe` returns a compute v1 `Region` whose `quotas[]` are `Quota`
  {metric, limit, usage}. The `Quota.metric` enum names the regional TPU quotas GKE's TPU node pools draw on:
  TPU_PODSLICE_V4, TPU_LITE_PODSLICE_V5 and their PREEMPTIBLE_ twins (Spot; flex-start too, docs/deploying.md).
  It has no metric for v5p, v6e or TPU7x, and no TPU counterpart of the project-wide CPUS_ALL_REGIONS /
  GPUS_ALL_REGIONS: those generations' quotas are only in the console's Cloud Quotas page (a WARN row with the link).
- Reservations: `gcloud compute reservations describe` returns a compute v1 `Reservation`: status (READY) and one
  member of its oneof `type` (tooling/oracles/api_schemas.py ONEOFS): specificReservation {count, inUseCount,
  instanceProperties.machineType} in VMs (int64 fields arrive as strings), or aggregateReservation {vmFamily,
  reservedResources[].accelerator {acceleratorType, acceleratorCount}, inUseResources[] alike} in chips, the shape
  Compute returns TPU reservations in (TPU7x among them). RESERVATION_KINDS reads each.
- Versions: `gcloud container get-server-config` returns a container v1 `ServerConfig`: channels[] {channel,
  validVersions}.
- APIs and roles: those the `gcp:` resources the stack registers need (tooling/oracles/gcp_requirements.py TYPES; the
  program runs under mocks to list them), no more.
- APIs: `gcloud services list --enabled` returns serviceusage v1 `GoogleApiServiceusageV1Service`s {config.name,
  state}.
- Roles: `gcloud projects get-iam-policy` returns a cloudresourcemanager v1 `Policy` {bindings[] {role, members}}.
  Roles held through a group, a folder or the organization are not in it: a role missing there is a WARN.
- Domain restricted sharing: every principal the stack grants a role that is not the project's own (its service
  accounts, its Workload Identity pool) is checked against the effective policy of the list constraint
  iam.allowedPolicyMemberDomains: `gcloud org-policies describe iam.allowedPolicyMemberDomains --effective
  --project=P` returns an orgpolicy v2 `GoogleCloudOrgpolicyV2Policy` {spec {rules[] {allowAll, denyAll,
  values {allowedValues, deniedValues}}}} (projects.policies.getEffectivePolicy). Its allowed values are Google
  Workspace customer ids or organizations; Google's group cloud-storage-analytics@google.com and Google's service
  agents belong to neither ("Service agents are created and managed by Google, so they aren't part of your
  organization ... to grant roles to service agents, you need to disable the constraint, grant the role, and then
  re-enable the constraint": https://cloud.google.com/resource-manager/docs/organization-policy/domain-restricted-sharing,
  the iam.allowedPolicyMemberDomains method): such a grant FAILs while the constraint restricts domains.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from components.bucket import ACCESS_LOG_WRITER
from stacks.facts import capacity_words, catalog
from stacks.pieces import gateway as gateway_piece
from stacks.pieces import tpu_pools
from stacks.reports.cost import pool_nodes
from stacks.serving.pool_plan import PoolPlan
from stacks.stack_config import StackConfig
from tooling.oracles import api_schemas, gcp_requirements

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"

Runner = Callable[[list[str]], Any]
"""gcloud arguments (without `gcloud` and `--format=json`) -> the parsed JSON answer; raises GcloudError."""


class GcloudError(RuntimeError):
    """gcloud exited non-zero (its stderr is the message)."""


# Generation -> (on-demand, preemptible) regional quota metric, from compute v1 `Quota.metric` (module docstring);
# None: not a Compute Engine regional quota in that enum.
QUOTA_METRICS: dict[str, tuple[str, str] | None] = {
    "v4": ("TPU_PODSLICE_V4", "PREEMPTIBLE_TPU_PODSLICE_V4"),
    "v5e": ("TPU_LITE_PODSLICE_V5", "PREEMPTIBLE_TPU_LITE_PODSLICE_V5"),
    "v5p": None,
    "v6e": None,
    "tpu7x": None,
}
PREEMPTIBLE_CAPACITIES = ("spot", "flex-start")
QUOTA_CAPACITIES = ("on-demand", *PREEMPTIBLE_CAPACITIES)  # a reservation is checked as a reservation

QUOTAS_PAGE = "https://console.cloud.google.com/iam-admin/quotas?project={project}"


@dataclass(frozen=True)
class Row:
    check: str  # quota, reservation, version, api, role, org policy
    subject: str  # what it is about: a pool, an API, a role
    status: str
    detail: str
    fix: str = ""  # the command or link that fixes it ("" on PASS)


# ---- TPU quota ------------------------------------------------------------------------------------------------


def quota_metric(generation: str, capacity: str) -> str | None:
    metrics = QUOTA_METRICS[generation]
    if metrics is None:
        return None
    return metrics[1] if capacity in PREEMPTIBLE_CAPACITIES else metrics[0]


def pool_chips(plan: PoolPlan, paused: bool) -> tuple[int, int]:
    """(baseline, peak) chips of a pool: its nodes at their minimum and maximum (stacks.reports.cost.pool_nodes)."""
    low, high = (0, 0) if paused else pool_nodes(plan)
    per = plan.shape.chips_per_host
    return low * per, high * per


def _against(need: int, limit: float, usage: float) -> str:
    if need > limit:
        return FAIL
    return WARN if need > limit - usage else PASS


def quota_rows(cfg: StackConfig, region: dict[str, Any]) -> list[Row]:
    """Per pool and quota-drawing capacity: its baseline and peak chips, with every pool drawing on the same quota,
    against the region's limit and what is free of it."""
    quotas = {q.get("metric"): q for q in region.get("quotas", [])}
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wanted: list[tuple[PoolPlan, str, str | None]] = []
    for plan in cfg.pools:
        for capacity in plan.capacities:
            if capacity not in QUOTA_CAPACITIES:
                continue
            metric = quota_metric(plan.shape.generation.name, capacity)
            counted = any(p is plan and m == metric for p, _, m in wanted)  # spot and flex-start: one quota
            wanted.append((plan, capacity, metric))
            if metric and not counted:
                low, high = pool_chips(plan, cfg.paused)
                totals[metric][0] += low
                totals[metric][1] += high
    return [_quota_row(cfg, plan, capacity, metric, quotas, totals) for plan, capacity, metric in wanted]


def _quota_row(
    cfg: StackConfig,
    plan: PoolPlan,
    capacity: str,
    metric: str | None,
    quotas: dict[str, Any],
    totals: dict[str, list[int]],
) -> Row:
    subject = f"pool {plan.name} ({plan.shape.generation.name} {capacity})"
    page = QUOTAS_PAGE.format(project=cfg.gcp_project)
    low, high = pool_chips(plan, cfg.paused)
    if metric is None:
        return Row(
            "quota",
            subject,
            WARN,
            f"needs {low} chips at baseline, {high} at peak; {plan.shape.generation.name} has no Compute Engine "
            f"regional quota metric (compute v1 Quota.metric): check its TPU quota in the console; "
            f"{capacity_words.STOCKOUT_NOTE}",
            page,
        )
    quota = quotas.get(metric)
    if quota is None:
        return Row("quota", subject, FAIL, f"{metric} is not a quota of {cfg.region} for this project", page)
    limit, usage = float(quota.get("limit", 0)), float(quota.get("usage", 0))
    base_total, peak_total = totals[metric]
    shared = "" if (base_total, peak_total) == (low, high) else f" ({base_total}/{peak_total} with the other pools)"
    status = max(_against(base_total, limit, usage), _against(peak_total, limit, usage), key=_rank)
    detail = (
        f"{metric} in {cfg.region}: needs {low} chips at baseline, {high} at peak{shared}; limit {limit:g}, "
        f"in use {usage:g}"
    )
    if status == FAIL:
        detail += f" ({capacity_words.QUOTA_SHORT})"
    elif status == WARN:
        detail += " (the rest is in use: by this stack itself if it runs, else by others)"
    if len(plan.capacities) > 1 and status == FAIL:
        status = WARN  # a capacity list falls back to its next capacity
        detail += "; the ComputeClass falls back to its next capacity"
    return Row("quota", subject, status, f"{detail}; {capacity_words.STOCKOUT_NOTE}", "" if status == PASS else page)


def _rank(status: str) -> int:
    return (PASS, WARN, FAIL).index(status)


def worst(rows: list[Row]) -> str:
    return max((row.status for row in rows), key=_rank, default=PASS)


# ---- reservations ---------------------------------------------------------------------------------------------


def reservation_target(plan: PoolPlan, project: str) -> tuple[str, str]:
    """(owner project, reservation name) of the pool's `reservation`: a name, or projects/<p>/reservations/<name>."""
    ref = plan.config.reservation or ""
    parts = ref.split("/")
    if len(parts) >= 4 and parts[0] == "projects" and parts[2] == "reservations":
        return parts[1], parts[3]
    return project, ref


def reservation_command(plan: PoolPlan, project: str) -> list[str]:
    owner, name = reservation_target(plan, project)
    return ["compute", "reservations", "describe", name, f"--zone={plan.config.zone}", f"--project={owner}"]


@dataclass(frozen=True)
class Reserved:
    """What a reservation holds for a pool, in the unit it counts (hosts: VMs of one machine type; chips: a TPU
    family's accelerators), or why the pool cannot consume it (`mismatch`)."""

    unit: str
    reserved: int
    in_use: int
    what: str  # the machine type or VM family it reserves
    mismatch: str = ""


def _count(value: Any) -> int:
    """An int64 (a string in JSON) or int32 count; absent is 0."""
    return int(value or 0)


def vm_family(machine_type: str) -> str | None:
    """The compute v1 `AllocationAggregateReservation.vmFamily` of a TPU machine type: the enum value ending in its
    machine family (ct5lp-hightpu-4t -> VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP; gcloud's own map is the same,
    google-cloud-sdk command_lib/compute/future_reservations/util.py tpu_version_to_vm_family)."""
    family = "_" + machine_type.split("-", 1)[0].upper()
    enum = api_schemas.schema("compute.v1", "AllocationAggregateReservation")["properties"]["vmFamily"]["enum"]
    found = [value for value in enum if value.endswith(family)]
    return found[0] if len(found) == 1 else None


def _specific(plan: PoolPlan, specific: dict[str, Any]) -> Reserved:
    machine = str((specific.get("instanceProperties") or {}).get("machineType", "")).rsplit("/", 1)[-1]
    count, in_use = _count(specific.get("count")), _count(specific.get("inUseCount"))
    wrong = "" if machine == plan.shape.machine_type else f"reserves {machine or 'no machine type'}, the pool runs "
    return Reserved("hosts", count, in_use, machine, wrong and wrong + plan.shape.machine_type)


def _accelerators(resources: Any) -> int:
    return sum(_count((r.get("accelerator") or {}).get("acceleratorCount")) for r in resources or [])


def _aggregate(plan: PoolPlan, aggregate: dict[str, Any]) -> Reserved:
    family, wanted = aggregate.get("vmFamily", ""), vm_family(plan.shape.machine_type)
    reserved, in_use = _accelerators(aggregate.get("reservedResources")), _accelerators(aggregate.get("inUseResources"))
    wrong = "" if family == wanted else f"reserves {family or 'no VM family'}, the pool runs {wanted} "
    return Reserved("chips", reserved, in_use, family, wrong and wrong + f"({plan.shape.machine_type})")


# compute v1 `Reservation`'s oneof `type` member -> its reader (tests/test_preflight.py: one per ONEOFS member)
RESERVATION_KINDS: dict[str, Callable[[PoolPlan, dict[str, Any]], Reserved]] = {
    "specificReservation": _specific,
    "aggregateReservation": _aggregate,
}


def reserved(plan: PoolPlan, reservation: dict[str, Any]) -> Reserved:
    """The reservation's capacity for the pool, whichever member of the oneof it sets."""
    for kind, read in RESERVATION_KINDS.items():
        if isinstance(reservation.get(kind), dict):
            return read(plan, reservation[kind])
    return Reserved("hosts", 0, 0, "", f"sets none of {', '.join(RESERVATION_KINDS)}")


def reservation_row(cfg: StackConfig, plan: PoolPlan, reservation: dict[str, Any] | None, error: str = "") -> Row:
    """The pool's reservation: READY, of the pool's machine type (or TPU family), with room for its baseline and
    peak (hosts of a specific reservation, chips of an aggregate one)."""
    owner, name = reservation_target(plan, cfg.gcp_project)
    subject = f"pool {plan.name} (reservation {name})"
    listing = f"gcloud compute reservations list --project={owner} --filter=zone:{plan.config.zone}"
    if reservation is None:
        return Row("reservation", subject, FAIL, f"not found in {plan.config.zone}: {error}".rstrip(": "), listing)
    held = reserved(plan, reservation)
    if held.mismatch:
        return Row("reservation", subject, FAIL, held.mismatch, listing)
    low, high = (0, 0) if cfg.paused else pool_nodes(plan)
    if held.unit == "chips":
        low, high = low * plan.shape.chips_per_host, high * plan.shape.chips_per_host
    status = max(_against(low, held.reserved, held.in_use), _against(high, held.reserved, held.in_use), key=_rank)
    detail = (
        f"{held.what}: needs {low} {held.unit} at baseline, {high} at peak; {held.reserved} reserved, "
        f"{held.in_use} in use"
    )
    if reservation.get("status") != "READY":
        status = max(status, WARN, key=_rank)
        detail += f"; status {reservation.get('status')}"
    if status == FAIL:
        detail += f" ({capacity_words.RESERVATION_SHORT})"
        if len(plan.capacities) > 1:
            status, detail = WARN, detail + "; the ComputeClass falls back to its next capacity"
    if held.unit == "chips":
        # compute v1 reservations.resize sets specificSkuCount only: an aggregate reservation's chips do not grow
        # by gcloud; another reservation in the zone, or a new one, does
        fix = f"{listing} (a TPU reservation with free chips of {held.what}, or a new one)"
    else:
        fix = (
            f"gcloud compute reservations update {name} --zone={plan.config.zone} --project={owner} --vm-count=<hosts>"
        )
    return Row("reservation", subject, status, detail, "" if status == PASS else fix)


def reservation_rows(cfg: StackConfig, run: Runner) -> list[Row]:
    rows = []
    for plan in cfg.pools:
        if "reservation" not in plan.capacities or not plan.config.reservation:
            continue
        try:
            rows.append(reservation_row(cfg, plan, run(reservation_command(plan, cfg.gcp_project))))
        except GcloudError as err:
            rows.append(reservation_row(cfg, plan, None, str(err)))
    return rows


# ---- GKE versions ---------------------------------------------------------------------------------------------


def server_config_command(cfg: StackConfig) -> list[str]:
    where = "--region" if cfg.regional else "--zone"
    return ["container", "get-server-config", f"{where}={cfg.cluster_location}", f"--project={cfg.gcp_project}"]


def version_rows(cfg: StackConfig, server_config: dict[str, Any]) -> list[Row]:
    """Each minimum the stack needs (every pool's generation, a capacity list, the gateway, minMasterVersion) is met
    by a version the release channel offers."""
    channel = cfg.cluster.release_channel
    entry: dict[str, Any] = next((c for c in server_config.get("channels", []) if c.get("channel") == channel), {})
    offered = sorted(entry.get("validVersions", []), key=catalog.version_tuple)
    newest = offered[-1] if offered else None
    needs = [(n.version, f"{n.whom}: {n.what}") for n in tpu_pools.version_needs(list(cfg.pools))]
    needs += [(n.version, f"{n.whom}: {n.what}") for n in gateway_piece.version_needs(cfg.gateway)]
    if cfg.cluster.min_master_version:
        needs.append((cfg.cluster.min_master_version, "cluster.minMasterVersion"))
    link = "https://cloud.google.com/kubernetes-engine/docs/release-notes"
    rows = []
    for version, whom in needs:
        met = newest is not None and catalog.version_tuple(newest) >= catalog.version_tuple(version)
        detail = f"needs {version}; {channel} offers up to {newest or 'nothing'} in {cfg.cluster_location}"
        fix = "" if met else f"cluster.releaseChannel: a channel offering {version} or later (RAPID is newest); {link}"
        rows.append(Row("version", whom, PASS if met else FAIL, detail, fix))
    return rows


# ---- APIs and roles -------------------------------------------------------------------------------------------


Resources = Iterable[tuple[str, Mapping[str, Any]]]
"""(type, inputs) of what the stack registers (tooling.harness.offline: the program under mocks)."""


def api_rows(project: str, needs: gcp_requirements.Requirements, services: list[dict[str, Any]]) -> list[Row]:
    """Each API the stack's resources need (tooling/oracles/gcp_requirements.py), enabled in the project."""
    enabled = {s.get("config", {}).get("name") for s in services if s.get("state") == "ENABLED"}
    return [
        Row(
            "api",
            api,
            PASS if api in enabled else FAIL,
            f"enabled (for {', '.join(features)})" if api in enabled else f"not enabled (for {', '.join(features)})",
            "" if api in enabled else f"gcloud services enable {api} --project={project}",
        )
        for api, features in needs.apis.items()
    ]


def member(account: str) -> str:
    """The IAM member of the account gcloud runs as."""
    return f"serviceAccount:{account}" if account.endswith(".gserviceaccount.com") else f"user:{account}"


def role_rows(project: str, needs: gcp_requirements.Requirements, account: str, policy: dict[str, Any]) -> list[Row]:
    """Each role the stack's resources need: held on the project (PASS, else WARN: a group, folder or organization
    grant is not in the project's policy); one granted elsewhere (the billing account, a KMS key) is a WARN to check
    there."""
    who = member(account)
    held = {b.get("role") for b in policy.get("bindings", []) if who in b.get("members", [])}
    rows = []
    for role, features in needs.roles.items():
        purpose = f"for {', '.join(features)}"
        if role.scope != gcp_requirements.PROJECT:
            detail = (
                f"needed on the {role.scope}, not the project; preflight reads only the project's policy ({purpose})"
            )
            rows.append(Row("role", role.name, WARN, detail, f"grant {role.name} to {who} on the {role.scope}"))
        elif role.name in held:
            rows.append(Row("role", role.name, PASS, f"{who} holds it on the project ({purpose})"))
        else:
            detail = (
                f"{who} does not hold it on the project directly (a group, folder or organization grant is not "
                f"seen) ({purpose})"
            )
            fix = f"gcloud projects add-iam-policy-binding {project} --member={who} --role={role.name}"
            rows.append(Row("role", role.name, WARN, detail, fix))
    return rows


# ---- domain restricted sharing --------------------------------------------------------------------------------

DOMAIN_CONSTRAINT = "iam.allowedPolicyMemberDomains"
# A principal outside the project that the stack grants only when a setting asks for it: the setting that drops it.
DROPPED_BY = {ACCESS_LOG_WRITER: "tpu-serving:bucket.accessLogs: false (no usage and storage logs)"}


def org_policy_command(project: str) -> list[str]:
    return ["org-policies", "describe", DOMAIN_CONSTRAINT, "--effective", f"--project={project}"]


def granted_members(resources: Resources) -> dict[str, list[str]]:
    """Every principal a `gcp:` resource grants a role (its `member` or `members` input) -> the roles."""
    found: dict[str, list[str]] = {}
    for type_, inputs in resources:
        if not type_.startswith("gcp:"):
            continue
        members = inputs.get("members") or [inputs.get("member")]
        for who in members:
            if isinstance(who, str) and who:
                roles = found.setdefault(who, [])
                role = str(inputs.get("role", "?"))
                if role not in roles:
                    roles.append(role)
    return found


def in_project(member: str, project: str) -> bool:
    """One of the project's own principals: a service account of the project (<id>@<project>.iam.gserviceaccount.com)
    or a Kubernetes ServiceAccount of its Workload Identity pool (<project>.svc.id.goog, either member form:
    https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity)."""
    pool = f"{project}.svc.id.goog"
    if member.startswith(("principal://", "principalSet://")):
        return f"/workloadIdentityPools/{pool}/" in member
    kind, _, who = member.partition(":")
    return kind == "serviceAccount" and (who.endswith(f"@{project}.iam.gserviceaccount.com") or who.startswith(pool))


def restriction(policy: dict[str, Any]) -> tuple[str, str]:
    """(status an outside principal gets, what the effective policy says): PASS when it allows every domain."""
    spec = policy.get("spec") or {}
    rules = spec.get("rules") or []
    if not rules or any(rule.get("allowAll") for rule in rules):
        return PASS, f"{DOMAIN_CONSTRAINT} allows every domain"
    if any(rule.get("denyAll") for rule in rules):
        return FAIL, f"{DOMAIN_CONSTRAINT} denies every domain"
    allowed = [v for rule in rules for v in (rule.get("values") or {}).get("allowedValues", [])]
    if allowed:
        return FAIL, f"{DOMAIN_CONSTRAINT} allows only {', '.join(allowed)}"
    denied = [v for rule in rules for v in (rule.get("values") or {}).get("deniedValues", [])]
    return WARN, f"{DOMAIN_CONSTRAINT} denies {', '.join(denied) or 'some values'}: check they are not its domain"


def domain_rows(project: str, resources: Resources, run: Runner) -> list[Row]:
    """Each principal outside the project the stack grants a role, against domain restricted sharing."""
    outside = {m: r for m, r in granted_members(resources).items() if not in_project(m, project)}
    if not outside:
        return [Row("org policy", DOMAIN_CONSTRAINT, PASS, "the stack grants no principal outside the project")]
    command = org_policy_command(project)
    try:
        status, said = restriction(run(command) or {})
    except GcloudError as err:
        detail = f"cannot read it ({err}); needs roles/orgpolicy.policyViewer"
        return [Row("org policy", DOMAIN_CONSTRAINT, WARN, detail, "gcloud " + " ".join(command))]
    rows = []
    for member, roles in outside.items():
        detail = f"granted {', '.join(roles)}, not one of the project's own principals; {said}"
        if status == FAIL:
            detail += ": the grant is refused and the `pulumi up` stops there"
        fix = DROPPED_BY.get(
            member,
            "an organization policy administrator lifts the constraint for the first `pulumi up` and restores it "
            "(Google: it has no per-principal exception), or moves to iam.managed.allowedPolicyMembers listing it",
        )
        rows.append(Row("org policy", member, status, detail, "" if status == PASS else fix))
    return rows


# ---- all of it ------------------------------------------------------------------------------------------------


def _call(run: Runner, args: list[str], check: str, rows: list[Row]) -> Any:
    try:
        return run(args)
    except GcloudError as err:
        rows.append(Row(check, "gcloud " + " ".join(args[:3]), FAIL, str(err), "gcloud auth login; gcloud config list"))
        return None


def preflight(cfg: StackConfig, run: Runner, resources: Resources) -> list[Row]:
    """Every check of the stack; `resources`: what it registers (its APIs and roles come from their types, the
    principals it grants from their inputs)."""
    rows: list[Row] = []
    region = _call(run, ["compute", "regions", "describe", cfg.region, f"--project={cfg.gcp_project}"], "quota", rows)
    if region is not None:
        rows += quota_rows(cfg, region)
    rows += reservation_rows(cfg, run)
    server_config = _call(run, server_config_command(cfg), "version", rows)
    if server_config is not None:
        rows += version_rows(cfg, server_config)
    return rows + project_rows(cfg.gcp_project, run, resources)


def project_rows(project: str, run: Runner, resources: Resources) -> list[Row]:
    """What any stack (a fleet stack too) needs of its project: the APIs and roles of the `gcp:` resources it
    registers, and each principal it grants outside the project against domain restricted sharing."""
    resources = list(resources)
    needs = gcp_requirements.requirements(resources)
    rows: list[Row] = []
    services = _call(run, ["services", "list", "--enabled", f"--project={project}"], "api", rows)
    if services is not None:
        rows += api_rows(project, needs, services)
    account = _call(run, ["config", "get", "account"], "role", rows)
    policy = _call(run, ["projects", "get-iam-policy", project], "role", rows)
    if account and policy is not None:
        rows += role_rows(project, needs, str(account), policy)
    return rows + domain_rows(project, resources, run)


def table(rows: list[Row]) -> list[str]:
    out = []
    for row in rows:
        out.append(f"{row.status:4}  {row.check:11}  {row.subject}: {row.detail}")
        if row.fix:
            out.append(f"      fix: {row.fix}")
    return out
