"""Every kind of change a user can make to a live stack, generated from the config model, and what each does: the
transition matrix that tests/test_transition_matrix.py runs and docs/operations.md tabulates.

Changes are generated, never listed by hand: the stack config's JSON schema (tooling/generate/json_schema.py, from the
config models) is walked along each example's config, and each field the example has (or whose object it has) gets
one change per kind of value: a bool toggled, an enum set to each other value, a number changed, a list's item
added or removed, an optional block removed; each workload's `type` is swapped for each other type (the workload of
that type from another example, under the same name, with its pool) and its `pool` moved to another of the stack's
pools. A few changes need a companion to be valid (an external gateway needs source ranges): COMPANIONS adds them.

Each change is run in both directions (two offline runs, tooling/review/transition.py problems) and gets a verdict:
- `clean`: no problem: `pulumi up` updates in place, creates and deletes in a safe order;
- `replaces`: only replacements (delete then create, named in the review), which EFFECTS documents;
- `degrades`: `up` succeeds but serving dips (EFFECTS says how long and how to avoid it);
- `refused`: `up` would fail part-way; EFFECTS names the safe procedure;
- `rejected`: the program refuses the config itself (a RunError naming the key): nothing to transition.
Every change kind's documented verdict (EFFECTS, first matching pattern; `clean` otherwise) must be what the runs
find, both directions; a documented replacement or dip may be worse than a run finds on one example (the same names,
one replica), which ALSO_ACCEPTED allows: neither hides a failure. A documented refusal must be found refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

NS = "tpu-serving"
VERDICTS = ("clean", "replaces", "degrades", "refused", "rejected")
# `not exercised` (table only): no example can take the change, the program accepts it elsewhere (NOT_EXERCISED)
SKIPPED_KEYS = {f"{NS}:hfToken", f"{NS}:local", f"{NS}:decommission", f"{NS}:environment"}


@dataclass(frozen=True)
class Change:
    kind: str
    """The kind of change: the field path with list positions as `[]`, and what changes (`toggled`, `-> value`,
    `changed`, `item added`, `item removed`, `unset`, `type a -> b`, `moved to another pool`)."""
    example: str
    """The stack file (its stack name) it was generated on."""
    config: dict[str, Any]
    """The example's config with the change made."""
    before: dict[str, Any] | None = None
    """The config the change is made on when not the example's own (a variant no example ships: an external
    gateway, external_gateway_changes)."""


@dataclass(frozen=True)
class Effect:
    pattern: str
    """A regular expression matched against a change kind."""
    forth: str
    """The verdict of making the change."""
    back: str
    """The verdict of undoing it."""
    serving: str
    procedure: str
    expects: tuple[str, ...] = ()
    """Regular expressions matched against the problems a run finds: a run's failing or degrading problem
    (FAILING, DEGRADING) that none matches fails the row, so a documented refusal or dip cannot hide another one
    (a refused row found refused for another reason is not the documented refusal)."""


# A pod-template change that stops a workload's only replicas first (tooling/review/transition.py `gap`).
GAP = r"^gap: "

# What the kinds of change that are not a clean in-place update do, and their safe procedure. First match wins.
EFFECTS: tuple[Effect, ...] = (
    Effect(
        r"workloads\[[\w-]+\]\.autoscaling unset|^monitoring\.adapter -> none",
        "refused",
        "degrades",
        "Removing `autoscaling` (or the metrics adapter, which takes every workload's with it) in one `up` sets "
        "`spec.replicas` on a Deployment/LeaderWorkerSet whose replicas its HPA owns (kube-controller-manager, "
        "through the scale subresource): the stack forces the conflict (`pulumi.com/patchForce`, set whenever it "
        "sets the field), so the `up` succeeds, but the HPA, which Pulumi deletes only at the end of the same `up`, "
        "may rescale the object until then: the replicas can end where the HPA left them. Refused in one step: use "
        "the two-step procedure. Adding it back leaves `spec.replicas` to the HPA: the field falls to 1 until the "
        "HPA's first scale-up.",
        "Removing, two `up`s: first set `autoscaling.minReplicas` and `maxReplicas` to the replicas you want and "
        "`pulumi up` (the HPA holds that count); then remove `autoscaling` (set `replicas` to the same count) and "
        "`pulumi up`. If it was done in one step: `kubectl get deploy,lws -A`, and where a workload runs other than "
        "its `replicas`, `pulumi up --refresh` (the forced apply sets it, with no HPA left). Adding: first "
        "`kubectl apply --server-side --field-manager=handover-to-hpa` a manifest holding only `spec.replicas` (its "
        "current value), then `pulumi up` (kubernetes.io server-side apply, transferring ownership).",
        expects=(r"^race: .*spec\.replicas -> [\d.]+ forced while ", r"^dip: .*spec\.replicas [\d.]+ -> 1 ", GAP),
    ),
    Effect(
        r"^gateway\.exposure -> external$",
        "clean",
        "refused",
        "Adding an external gateway creates its Cloud Armor policy before the Gateway and backends that use it. "
        "Undoing it (or removing `sourceRanges`, or moving to `cloudArmorPolicy`) deletes the policy after its "
        "users, but GKE's Gateway controller takes it off the load balancer's backend services asynchronously, and "
        "the provider's delete does not retry Compute's resourceInUseByAnotherResource: the `up` can fail on the "
        "policy's delete, serving unaffected.",
        "Two `up`s: make the change and `pulumi up --exclude '**RegionSecurityPolicy::*-armor'` (everything but the "
        "policy's delete); wait until `gcloud compute backend-services list --regions=<region> "
        "--format='value(name,securityPolicy)'` shows no backend with the stack's policy "
        "(`<prefix>-gateway`); then `pulumi up` deletes it. A `pulumi up` that failed on the delete is finished "
        "the same way: run it again once the backends are clear.",
        expects=(r"^in use: .* is deleted in the same `up` that detaches it ",),
    ),
    Effect(
        r"^gateway\.(enabled toggled|exposure -> internal) \(external gateway\)$",
        "refused",
        "clean",
        "Removing an external gateway (or making it internal) deletes its Cloud Armor policy after the Gateway, "
        "routes and router releases that use it (each depends on it), but GKE's Gateway controller takes it off the "
        "load balancer's backend services asynchronously, and the provider's delete does not retry Compute's "
        "resourceInUseByAnotherResource: the `up` can fail on the policy's delete. Adding it back is `gateway."
        "exposure -> external`.",
        "As for undoing `gateway.exposure -> external`: `pulumi up --exclude '**RegionSecurityPolicy::*-armor'`, "
        "wait until no backend service names the policy, then `pulumi up`.",
        expects=(r"^in use: .* is deleted in the same `up` that detaches it ",),
    ),
    Effect(
        r"workloads\[jetstream-pathways\]\.mode -> ",
        "replaces",
        "replaces",
        "The LeaderWorkerSet's subGroupPolicy is immutable (the LWS webhook): the LeaderWorkerSet is deleted and "
        "created again; the workload serves nothing until its new groups are ready.",
        "Without downtime: add a workload with the new mode under a new name, move clients, remove the old one.",
    ),
    Effect(
        r"^addons\.pathwaysJob\.enabled toggled",
        "replaces",
        "replaces",
        "Turning the add-on off takes its PathwaysJob workloads with it (companion change): the pool that served one "
        "alone goes back to the stack's node service account, and the node pool's service account is immutable, so "
        "its node pools are replaced; turning it on with a PathwaysJob replaces them the other way.",
        "Between runs of the jobs; remove the PathwaysJob workloads and their pools in the same `up`.",
    ),
    Effect(
        r"workloads\[saxml\]\.models\[\]\.replicas changed",
        "replaces",
        "replaces",
        "Within the pool's slices the publication Job changes the replicas in place; above them the pool needs another "
        "slice (companion change), one more model server, and the model servers' replicated jobs are immutable "
        "(JobSet webhook): the JobSet is replaced, Saxml serves nothing until the models are loaded again.",
        "Add the slice in a maintenance window, or run a second Saxml workload meanwhile.",
    ),
    Effect(
        r"workloads\[saxml\]\.maxRestarts changed",
        "replaces",
        "replaces",
        "JobSet's failurePolicy is immutable (a CEL rule in its CRD): the model servers' JobSet is deleted and "
        "created again; Saxml serves nothing until the models are loaded again.",
        "Change it in a maintenance window, or run a second Saxml workload meanwhile.",
    ),
    Effect(
        r"tpuPools\[\]\.slices changed",
        "replaces",
        "replaces",
        "A Saxml workload runs one model-server Job per slice of its pool: the JobSet's replicatedJobs change, which "
        "the stack replaces rather than updates (replaceOnChanges, JobSet's immutable spec), so Saxml serves nothing "
        "until the models are loaded again; every other workload is updated in place.",
        "On a pool with a Saxml workload: change it in a maintenance window, or run a second Saxml workload meanwhile.",
    ),
    Effect(
        r"workloads\[pathways-job\]\.",
        "replaces",
        "replaces",
        "The PathwaysJob is replaced on any change of its spec (workloads/pathways_job/component.py; most of its "
        "fields are immutable by its CRD's rules): the job stops and starts again from the beginning or its last "
        "checkpoint.",
        "Change it between runs of the job.",
    ),
    Effect(
        r"workloads\[vllm\]\.loras ",
        "replaces",
        "replaces",
        "The body-based router's ConfigMap that maps the workload's model and adapter names to its pool gets new data, "
        "and the Kubernetes provider replaces a ConfigMap whose data changes (pulumi-kubernetes: ConfigMaps are "
        "replaced, not updated, unless enableConfigMapMutable): while it is replaced the router may not map this "
        "workload's names. The vLLM replicas roll to serve the new adapter set (adapters are not loaded at run time, "
        "docs/workloads/vllm.md).",
        "`pulumi up` at a quiet time; requests naming an adapter during the roll may reach a replica without it.",
    ),
    Effect(
        r"workloads\[\]\.type ",
        "replaces",
        "replaces",
        "The new server is created and the old one deleted at the end; everything else keeps its URN (one component "
        "type for every workload type) and is updated in place, and the Google identity and each bucket grant are "
        "named by what they bind (the workload's service account; role, bucket and prefix), so a grant both types "
        "make stays and only the old type's own grants go. Replaced: the Service where the types name it "
        "differently (vLLM `<name>`, the others `<name>-svc`: clients must use the new name) and the PodMonitoring "
        "(`<name>-<type>`), each created before the old one is deleted; and, to or from a type whose pool serves it "
        "alone under a node service account of its own (Saxml, PathwaysJob), that pool's node pools (the node "
        "pool's service account is immutable): the pool's nodes are created again.",
        "`pulumi up`; move clients to the new Service name where it changes. Without downtime: add the workload of "
        "the new type under a new name (and pool where it needs one), `pulumi up`, move clients, then remove the old "
        "workload.",
    ),
)
DEFAULT = Effect(
    "",
    "clean",
    "clean",
    "Updated in place; serving continues, except where it changes the pod template of a workload that has one "
    "replica (or an HPA minimum of 1) and no spare host: its rollout (maxSurge 0, maxUnavailable 1, "
    "stacks/serving/workload_plan.py rolling_update) stops the only pod before its replacement is Ready, a gap of "
    "one cold start (found `degrades` on such an example).",
    "`pulumi up`. Without the gap: add a replica (or a spare host to its pool, tpuPools autoscaling maxNodes) for "
    "the change, or accept the gap.",
    expects=(GAP,),
)


def effect(kind: str) -> Effect:
    return next((e for e in EFFECTS if re.search(e.pattern, kind)), DEFAULT)


# ---- generating the changes ----------------------------------------------------------------------------------


@cache
def _schema() -> dict[str, Any]:
    from tooling.generate import json_schema

    return json_schema.stack_config_schema()


def _regional() -> dict[str, Any]:
    """The regional stack's keys: the schema's `else` branch (a config without tpu-serving:fleet)."""
    return _schema()["properties"]["config"]["else"]["properties"]


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    """The node behind a $ref; a nullable `anyOf` as its non-null branch."""
    defs = _schema().get("$defs", {})
    while "$ref" in node:
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
    branches = [b for b in node.get("anyOf", []) if b.get("type") != "null"]
    if len(branches) == 1:
        node = {**_resolve(branches[0]), **{k: v for k, v in node.items() if k != "anyOf"}}
    return node


def _nullable(node: dict[str, Any]) -> bool:
    return any(b.get("type") == "null" for b in node.get("anyOf", []))


def _workload_schema(workload: dict[str, Any]) -> dict[str, Any]:
    items = _resolve(_regional()[f"{NS}:workloads"])["items"]
    for branch in items["oneOf"]:
        model = _resolve(branch)
        if (model.get("properties", {}).get("type") or {}).get("const") == workload.get("type"):
            return model
    return {}


def _leaf_changes(path: str, node: dict[str, Any], value: Any) -> Iterator[tuple[str, Any]]:
    """(kind suffix, new value; MISSING for `unset`) of one field, by its kind of value."""
    current = value if value is not None else node.get("default")
    enum = node.get("enum") or ([node["const"]] if "const" in node else None)
    if enum:
        for other in enum:
            if other != current:
                yield f"-> {other}", other
    elif node.get("type") == "boolean":
        yield "toggled", not bool(current)
    elif node.get("type") == "integer" and isinstance(current, int):
        most = node.get("maximum", node.get("exclusiveMaximum", float("inf")))
        yield "changed", current + 1 if current + 1 < most else current - 1
    elif node.get("type") == "number" and isinstance(current, (int, float)):
        most = node.get("maximum", node.get("exclusiveMaximum"))
        yield "changed", (current + most) / 2 if most is not None and current < most else current * 1.5 or 1


MISSING = object()
FIXED_REPLICAS = 2


def _walk(node: dict[str, Any], value: Any, path: str) -> Iterator[tuple[str, list[Any], Any]]:
    """(kind, key path, new value) for every change of `value` (an object of schema `node`) and its fields."""
    node = _resolve(node)
    for key, child in (node.get("properties") or {}).items():
        sub = value.get(key) if isinstance(value, dict) else None
        kind_path = f"{path}.{key}" if path else key
        resolved = _resolve(child)
        if key in ("type", "name", "pool", "namespace") and path == "workloads[]":
            continue
        if resolved.get("type") == "object" or "properties" in resolved:
            if isinstance(sub, dict):
                for kind, where, new in _walk(child, sub, kind_path):
                    yield kind, [key, *where], new
                if _nullable(child):
                    yield f"{kind_path} unset", [key], MISSING
            continue
        if resolved.get("type") == "array":
            if isinstance(sub, list) and sub:
                if len(sub) > int(resolved.get("minItems", 0)):
                    yield f"{kind_path} item removed", [key], sub[:-1]
                item = _resolve(resolved.get("items") or {})
                if item.get("type") == "object" or "properties" in item:
                    for i, element in enumerate(sub[:1]):
                        for kind, where, new in _walk(item, element, f"{kind_path}[]"):
                            yield kind, [key, i, *where], new
            continue
        for suffix, new in _leaf_changes(kind_path, resolved, sub):
            yield f"{kind_path} {suffix}", [key], new


def _set(config: dict[str, Any], where: list[Any], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(config)
    node: Any = out
    for part in where[:-1]:
        node = node[part]
    if new is MISSING:
        del node[where[-1]]
    else:
        node[where[-1]] = new
    return out


def field_changes(config: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, changed config) for every field change the schema allows on `config` (module docstring)."""
    keys = _regional()
    for key, node in keys.items():
        if not key.startswith(f"{NS}:") or key in SKIPPED_KEYS:
            continue
        value = config.get(key)
        short = key.removeprefix(f"{NS}:")
        resolved = _resolve(node)
        if key == f"{NS}:workloads":
            for i, workload in enumerate(value or []):
                for kind, where, new in _walk(_workload_schema(workload), workload, "workloads[]"):
                    changed = _set(config, [key, i, *where], new)
                    if where == ["autoscaling"]:  # fixed replicas instead, more than one (what an HPA gave it)
                        changed[key][i]["replicas"] = FIXED_REPLICAS
                    yield kind.replace("workloads[]", f"workloads[{workload['type']}]", 1), changed
                others = [p["name"] for p in config.get(f"{NS}:tpuPools", []) if p["name"] != workload["pool"]]
                for pool in others[:1]:
                    yield (
                        f"workloads[{workload['type']}].pool moved to another pool",
                        _set(config, [key, i, "pool"], pool),
                    )
            continue
        if resolved.get("type") == "object" or "properties" in resolved:
            if isinstance(value, dict):
                for kind, where, new in _walk(node, value, short):
                    yield kind, _set(config, [key, *where], new)
            continue
        if resolved.get("type") == "array":
            if isinstance(value, list) and value:
                if len(value) > int(resolved.get("minItems", 0)):
                    yield f"{short} item removed", {**config, key: value[:-1]}
                item = _resolve(resolved.get("items") or {})
                for kind, where, new in _walk(item, value[0], f"{short}[]"):
                    yield kind, _set(config, [key, 0, *where], new)
            continue
        for suffix, new in _leaf_changes(short, resolved, value):
            yield f"{short} {suffix}", {**config, key: new}


def type_swaps(examples: dict[str, dict[str, Any]]) -> Iterator[Change]:
    """A workload's `type` changed under the same name: for each (old type, new type) pair, the new workload taken
    from an example that has one of that type, with its pool (renamed if the name is taken) and add-ons; from an
    example in the same region where there is one, else with the pool moved to the zone of the stack's first pool."""
    found: set[tuple[str, str]] = set()
    for same_region in (True, False):
        for name, config in examples.items():
            for workload in config.get(f"{NS}:workloads", [])[:1]:
                for other in examples.values():
                    for candidate in other.get(f"{NS}:workloads", [])[:1]:
                        pair = (workload["type"], candidate["type"])
                        if pair[0] == pair[1] or (other.get("gcp:region") == config.get("gcp:region")) != same_region:
                            continue
                        if not same_region and pair in found:
                            continue
                        found.add(pair)
                        yield Change(
                            f"workloads[].type {pair[0]} -> {pair[1]}",
                            name,
                            _swapped(config, workload, other, candidate),
                        )


def _swapped(
    config: dict[str, Any], workload: dict[str, Any], other: dict[str, Any], candidate: dict[str, Any]
) -> dict[str, Any]:
    new = copy.deepcopy(config)
    pool = copy.deepcopy(next(p for p in other[f"{NS}:tpuPools"] if p["name"] == candidate["pool"]))
    pools = new.setdefault(f"{NS}:tpuPools", [])
    if any(p["name"] == pool["name"] for p in pools):
        pool["name"] = f"{pool['name']}-{candidate['type']}"[:40]
    if other.get("gcp:region") != config.get("gcp:region") and pools:
        pool["zone"] = pools[0]["zone"]
    pools.append(pool)
    swapped = {**copy.deepcopy(candidate), "name": workload["name"], "pool": pool["name"]}
    swapped.pop("namespace", None)
    if "namespace" in workload:
        swapped["namespace"] = workload["namespace"]
    new[f"{NS}:workloads"] = [swapped, *new[f"{NS}:workloads"][1:]]
    version = (other.get(f"{NS}:cluster") or {}).get("minMasterVersion")
    if version and _version(version) > _version((new.get(f"{NS}:cluster") or {}).get("minMasterVersion") or "0"):
        new[f"{NS}:cluster"] = {**(new.get(f"{NS}:cluster") or {}), "minMasterVersion": version}  # its pool needs it
    addons = {**(other.get(f"{NS}:addons") or {}), **(new.get(f"{NS}:addons") or {})}
    if addons:
        new[f"{NS}:addons"] = addons
    return new


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


# Changes that are only valid with a companion change (the program refuses them alone, naming the key): each kind
# pattern's companion makes the rest of the config agree, as the user would in the same `pulumi up`.
def _workloads(config: dict[str, Any], kind: str | None = None) -> list[dict[str, Any]]:
    return [w for w in config.get(f"{NS}:workloads", []) if kind is None or w["type"] == kind]


def _pool(config: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in config.get(f"{NS}:tpuPools", []) if p["name"] == name)


def _drop_pathways_jobs(config: dict[str, Any], before: dict[str, Any]) -> None:
    """The add-on off: its workloads go with it (a PathwaysJob needs its controller)."""
    if not (config.get(f"{NS}:addons") or {}).get("pathwaysJob", {}).get("enabled", True):
        config[f"{NS}:workloads"] = [w for w in _workloads(config) if w["type"] != "pathways-job"]


def _channel_address(config: dict[str, Any], before: dict[str, Any]) -> None:
    """A notification channel's address in the form its type takes (stacks/pieces/alerts.py)."""
    project = config.get("gcp:project", "my-project")
    forms = {
        "existing": f"projects/{project}/notificationChannels/1234567890",
        "pubsub": f"projects/{project}/topics/alerts",
    }
    for channel in (config.get(f"{NS}:alerts") or {}).get("channels", []):
        if channel.get("type") in forms:
            channel["address"] = forms[channel["type"]]


def _adapter_metrics(config: dict[str, Any], before: dict[str, Any]) -> None:
    """Another metrics adapter: each autoscaled workload keeps the metrics it serves (and scales to zero only on
    KEDA); none: fixed replicas instead of autoscaling."""
    from stacks.monitoring import adapters

    adapter = (config.get(f"{NS}:monitoring") or {}).get("adapter", adapters.DEFAULT)
    for workload in _workloads(config):
        auto = workload.get("autoscaling")
        if not auto:
            continue
        if adapter == "none":
            del workload["autoscaling"]
            workload["replicas"] = FIXED_REPLICAS
            continue
        registry = _metric_registry(workload["type"])
        kept = [m for m in auto.get("metrics", []) if adapters.adapter_serves(adapter, m["name"], registry)]
        if not kept:
            name = next(n for n in adapters.served_metrics(adapter, registry) if n in registry)
            kept = [{"name": name, "target": _target(registry[name])}]
        auto["metrics"] = kept
        if adapter != "keda" and auto.get("minReplicas") == 0:
            auto["minReplicas"] = 1


def _metric_registry(workload_type: str) -> dict[str, Any]:
    """The HPA metrics a workload type scales on (its server's and the shared ones)."""
    from stacks.monitoring import metrics
    from workloads.jetstream.server import JETSTREAM_METRICS
    from workloads.vllm.metrics import VLLM_METRICS

    own = {"jetstream": JETSTREAM_METRICS, "vllm": {**VLLM_METRICS, **metrics.GATEWAY_HPA_METRICS}}
    return own.get(workload_type, metrics.HPA_METRICS)


def _target(metric: Any) -> float:
    """A target within the metric's unit: half a replica's capacity for a bounded one, else 4."""
    return metric.unit.maximum / 2 if metric.unit.maximum is not None else 4


def _drop_orphans(config: dict[str, Any], before: dict[str, Any]) -> None:
    """A pool removed: the workloads on it go too."""
    pools = {p["name"] for p in config.get(f"{NS}:tpuPools", [])}
    config[f"{NS}:workloads"] = [w for w in _workloads(config) if w["pool"] in pools]


def _two_slices(config: dict[str, Any], before: dict[str, Any]) -> None:
    """Disaggregated serving: a pool of two slices, prefill and decode."""
    for workload in _workloads(config, "jetstream-pathways"):
        if workload.get("mode") == "disaggregated":
            pool = _pool(config, workload["pool"])
            pool["slices"] = max(int(pool.get("slices", 1)), 2)


def _room_for_replicas(config: dict[str, Any], before: dict[str, Any]) -> None:
    """More replicas (or a higher maximum, more Saxml model replicas): their pool grows to hold them."""
    old = {w["name"]: w for w in _workloads(before)}
    for workload in _workloads(config):
        was = old.get(workload["name"])
        if was is None:
            continue
        pool = _pool(config, workload["pool"])
        grow = (workload.get("replicas", 1) > was.get("replicas", 1)) or (
            (workload.get("autoscaling") or {}).get("maxReplicas", 0)
            > (was.get("autoscaling") or {}).get("maxReplicas", 0)
        )
        models = [m.get("replicas", 1) for m in workload.get("models") or []]
        if grow and "autoscaling" in pool:
            pool["autoscaling"]["maxNodes"] += int(pool.get("slices", 1)) if "x" in str(pool.get("topology")) else 1
        elif grow:
            pool["slices"] = int(pool.get("slices", 1)) * 2
        if models and max(models) > int(pool.get("slices", 1)):
            pool["slices"] = max(models)


def _metric_changed(config: dict[str, Any], before: dict[str, Any]) -> None:
    """Another metric: a target in its unit, an adapter that serves it (the first that does), and no scale to zero
    unless a metric still counts the requests waiting at zero (KEDA's, the gateway's queue)."""
    from stacks.monitoring import adapters

    for workload in _workloads(config):
        auto = workload.get("autoscaling") or {}
        registry = _metric_registry(workload["type"])
        for metric in auto.get("metrics", []):
            found = registry.get(metric["name"])
            if found is not None and found.unit.maximum is not None and metric.get("target", 0) > found.unit.maximum:
                metric["target"] = _target(found)
            adapter = (config.get(f"{NS}:monitoring") or {}).get("adapter", adapters.DEFAULT)
            if not adapters.adapter_serves(adapter, metric["name"], registry):
                serving = [a for a in adapters.choices() if adapters.adapter_serves(a, metric["name"], registry)]
                if serving:
                    config.setdefault(f"{NS}:monitoring", {})["adapter"] = serving[0]
        if auto.get("minReplicas") == 0:  # scale to zero needs the gateway's queue among the metrics: one replica
            auto["minReplicas"] = 1


def _own_new_pool(config: dict[str, Any], before: dict[str, Any]) -> None:
    """A workload that runs as its pool's node identity (Saxml, PathwaysJob) moved to another pool: a new pool of
    that shape, its own (a pool another workload uses is refused)."""
    moved = {w["name"]: w["pool"] for w in _workloads(before)}
    for workload in _workloads(config):
        if workload["type"] in ("saxml", "pathways-job") and moved.get(workload["name"]) != workload["pool"]:
            pool = copy.deepcopy(_pool(config, workload["pool"]))
            pool["name"] = f"{pool['name']}-{workload['name']}"[:40]
            models = [m.get("replicas", 1) for m in workload.get("models") or []]
            pool["slices"] = max([int(pool.get("slices", 1)), *models])
            config[f"{NS}:tpuPools"].append(pool)
            workload["pool"] = pool["name"]


def _eagle3_draft(config: dict[str, Any], before: dict[str, Any]) -> None:
    """EAGLE-3 drafts with its draft head (speculative.draftModel, staged like the weights); promptLookupMax is
    ngram's only (workloads/vllm: the typed speculative config)."""
    for workload in _workloads(config, "vllm"):
        spec = workload.get("speculative")
        if isinstance(spec, dict) and spec.get("method") == "eagle3":
            spec.pop("promptLookupMax", None)
            spec.setdefault("draftModel", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B@main")


def _rollout_valid(config: dict[str, Any], before: dict[str, Any]) -> None:
    """A rollout stays one the program accepts (stacks/serving/release.py): steps rise to 100, the weight is 0 or one
    of the steps (blueGreen: 0 or 100), and a weight above 0 needs its candidate; a changed weight is the next step,
    as `make promote` writes it."""
    old = {w["name"]: w.get("rollout") or {} for w in _workloads(before, "vllm")}
    for workload in _workloads(config, "vllm"):
        rollout = workload.get("rollout")
        if not isinstance(rollout, dict):
            continue
        steps = [s for s in rollout.get("steps", [10, 50, 100]) if isinstance(s, int)]
        if steps and steps[-1] != 100:
            rollout["steps"] = steps = [*steps, 100]
        allowed = [0, 100] if rollout.get("strategy") == "blueGreen" else [0, *steps]
        weight = rollout.get("weight")
        if weight is not None and weight not in allowed:
            was = old.get(workload["name"], {}).get("weight")
            rollout["weight"] = next((a for a in allowed if was is not None and a > was), allowed[0])
        if not workload["rollout"].get("candidate") and rollout.get("weight"):
            rollout["weight"] = 0


def _sources(section: str) -> Any:
    def add(config: dict[str, Any], before: dict[str, Any]) -> None:
        for node in _sections(config, section):
            if node.get("exposure") == "external" and not node.get("sourceRanges"):
                node["sourceRanges"] = ["203.0.113.0/24", "198.51.100.0/24"]

    return add


def _sections(config: dict[str, Any], section: str) -> list[dict[str, Any]]:
    if section == "gateway":
        return [config[f"{NS}:gateway"]] if isinstance(config.get(f"{NS}:gateway"), dict) else []
    return [w["http"] for w in _workloads(config, "saxml") if isinstance(w.get("http"), dict)]


COMPANIONS: dict[str, Any] = {
    # an external gateway or Saxml HTTP API needs its allowed clients (stacks/pieces/gateway.py, workloads/saxml)
    r"^gateway\.exposure -> external$": _sources("gateway"),
    r"^workloads\[saxml\]\.http\.exposure -> external$": _sources("saxml"),
    r"^addons\.pathwaysJob\.enabled toggled$": _drop_pathways_jobs,
    r"^alerts\.channels\[\]\.type -> ": _channel_address,
    r"^monitoring\.adapter -> ": _adapter_metrics,
    r"^tpuPools item removed$": _drop_orphans,
    r"^workloads\[jetstream-pathways\]\.mode -> disaggregated$": _two_slices,
    r"\.replicas changed$|\.maxReplicas changed$": _room_for_replicas,
    r"\.metrics\[\]\.name -> ": _metric_changed,
    r"^workloads\[(saxml|pathways-job)\]\.pool moved": _own_new_pool,
    r"^workloads\[vllm\]\.speculative\.method -> eagle3$": _eagle3_draft,
    r"^workloads\[vllm\]\.rollout\.(candidate unset|steps item removed|strategy -> |weight changed)": _rollout_valid,
}

# Kinds no example can take even with a companion, and why (tests/test_transition_matrix.py holds every other kind to
# at least one example the program accepts).
UNEXERCISED: dict[str, str] = {
    "cluster.network.create toggled": "only the fleet's regional stacks name a network, and a fleet member's cluster "
    "is in the fleet's shared VPC (gateway.fleetExport refuses create: true)",
    "cluster.network.flowLogs toggled": "flow logs apply to a subnet the stack creates; only fleet members name a "
    "network, and theirs is the fleet's shared VPC",
    "cluster.releaseChannel -> REGULAR": "only fleet members set RAPID, which gateway.fleetExport requires",
    "gateway.fleetExport toggled": "joining a fleet also needs the fleet's shared VPC (cluster.network.create: false), "
    "RAPID and a GKE version the examples outside the fleet do not have: a new stack, not a change (docs/fleet.md)",
    "gateway.proxySubnet -> existing": "needs cluster.network.create: false (an existing VPC with its proxy-only "
    "subnet), which only fleet members have, and a fleet member may not have a regional proxy subnet",
    "workloads[vllm].rollout.candidate.args unset": "the example's candidate changes only its serving flags (its "
    "replicas follow its weight): without them it names no field, which is refused (rollout.candidate); a candidate "
    "removed whole is `rollout.candidate unset`",
    "workloads[vllm].rollout.mirror toggled": "mirroring is refused: GKE's Gateway mirrors to a Service, and neither "
    "GKE nor the inference extension v1.6.0 documents a RequestMirror to an InferencePool (docs/operations.md "
    '"Release train")',
    "workloads[vllm].routing -> precise-prefix": "refused at the pinned router (llm-d-router v0.10.0): its precise "
    "prefix scorer needs a tokenizer sidecar reading the Hugging Face Hub and the engine's KV events, which the TPU "
    "support matrix does not cover (docs/workloads/vllm.md)",
    "workloads[vllm].routing -> predicted-latency": "refused at the pinned router (llm-d-router v0.10.0): its latency "
    "predictor images are tagged latest in the chart's values, so nothing can be pinned (docs/workloads/vllm.md)",
    "workloads[jetstream].pool moved to another pool": "every other pool of the examples with JetStream is multi-host, "
    "and single-host JetStream needs a single-host pool",
    "workloads[jetstream-pathways].pool moved to another pool": "its model preset's MaxText axes fit the preset's slice "
    "only, and every other pool of the examples is another slice",
    "workloads[jetstream-pathways].replicas changed": "a replica is one group over every slice of its pool, whose "
    "slices the model preset fixes: a second replica needs hosts the pool cannot have",
    "workloads[saxml].pool moved to another pool": "the other pools of the examples with Saxml are v6e, which the "
    "pinned Saxml model server does not serve (stacks/facts/versions.py)",
    "workloads[vllm].gated toggled": "a gated model needs the hfToken secret, which the offline runs do not pass "
    "(tests/test_vllm.py covers a gated model with the token)",
}


# UNEXERCISED kinds the program accepts on a stack shaped otherwise (a second pool of the right shape, the token): the
# table shows them `not exercised` with the effect expected, not `rejected` (a user with such a stack can make them).
NOT_EXERCISED = {
    "workloads[jetstream].pool moved to another pool",
    "workloads[jetstream-pathways].pool moved to another pool",
    "workloads[jetstream-pathways].replicas changed",
    "workloads[saxml].pool moved to another pool",
    "workloads[vllm].gated toggled",
}


# The companions the suite's one run per kind exercises by default; the other kinds that need one run under
# `pytest -m slow` (tests/test_transition_matrix.py: the default suite keeps its time).
DEFAULT_SUITE_COMPANIONS = (r"^gateway\.exposure -> external$",)


def needs_companion(kind: str) -> bool:
    """Whether `kind` is made valid by a companion other than DEFAULT_SUITE_COMPANIONS'."""
    return any(re.search(p, kind) for p in COMPANIONS if p not in DEFAULT_SUITE_COMPANIONS)


def _with_companion(kind: str, config: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    for pattern, companion in COMPANIONS.items():
        if re.search(pattern, kind):
            config = copy.deepcopy(config)
            companion(config, before)
    return config


EXTERNAL = " (external gateway)"


def external_gateway_changes(examples: dict[str, dict[str, Any]]) -> Iterator[Change]:
    """The gateway's changes made on an external gateway (each example with a gateway, made external with its source
    ranges, the `gateway.exposure -> external` change): no example ships one, and what deletes or narrows its Cloud
    Armor policy (removing the gateway, its exposure or its source ranges) only shows from there."""
    kind = "gateway.exposure -> external"
    for name, config in examples.items():
        gateway = config.get(f"{NS}:gateway")
        if not isinstance(gateway, dict) or gateway.get("fleetExport") or gateway.get("exposure") == "external":
            continue
        external = _with_companion(kind, _set(config, [f"{NS}:gateway", "exposure"], "external"), config)
        for other, new in field_changes(external):
            if other.startswith("gateway.") and other != kind and other not in UNEXERCISED:
                if other == "gateway.exposure -> internal":  # an internal gateway takes no source ranges
                    new[f"{NS}:gateway"].pop("sourceRanges", None)
                yield Change(f"{other}{EXTERNAL}", name, new, before=external)


def changes(examples: dict[str, dict[str, Any]]) -> list[Change]:
    """Every change kind on every example it applies to (the full matrix)."""
    out = [
        Change(kind, name, _with_companion(kind, new, config))
        for name, config in examples.items()
        for kind, new in field_changes(config)
    ]
    return out + list(type_swaps(examples)) + list(external_gateway_changes(examples))


def per_kind(all_changes: list[Change]) -> dict[str, list[Change]]:
    """Kind -> its changes, starting at a different example for each kind (by the kind's position), so the suite's
    one run per kind (the first the program accepts, tests/test_transition_matrix.py) spreads over the examples;
    `pytest -m slow` runs them all."""
    by_kind: dict[str, list[Change]] = {}
    for change in all_changes:
        by_kind.setdefault(change.kind, []).append(change)
    out = {}
    for i, (kind, options) in enumerate(sorted(by_kind.items())):
        start = i % len(options)
        out[kind] = options[start:] + options[:start]
    return out


# ---- verdicts ----------------------------------------------------------------------------------------------------

# A documented replacement or dip may run clean on one example (the same names, one replica): it never hides a
# failure. A documented refusal must be found refused: a refused row that runs clean (or a clean one that is refused)
# means the table tells users to take a procedure they do not need, or none they do.
# A clean row may degrade where a pod-template change meets one replica and no spare host (DEFAULT: its gap is the one
# degrading problem it allows, Effect.expects).
ALSO_ACCEPTED: dict[str, tuple[str, ...]] = {
    "clean": ("degrades",),
    "replaces": ("clean",),
    "degrades": ("clean",),
    "refused": (),
}
# race fails: the replicas may end where the deleted HPA left them; the row names the two-step procedure
FAILING = ("collision", "deletion order", "orphan", "conflict", "immutable", "in use", "race")
DEGRADING = ("dip", "gap")


def accepted(documented: str, found: str) -> bool:
    """Whether a run's verdict `found` agrees with the `documented` one (ALSO_ACCEPTED)."""
    return found == documented or found in ALSO_ACCEPTED.get(documented, ())


def unexpected(documented: Effect, found: list[str]) -> list[str]:
    """The failing or degrading problems of a run that a row documented `refused` or `degrades` (either way) does not
    name (Effect.expects): the documented refusal or dip must be the only one. Other rows are held by their verdict
    (`accepted`): a failing problem there makes the run refused, which they do not accept."""
    if not documented.expects and not {"refused", "degrades"} & {documented.forth, documented.back}:
        return []
    return [
        p
        for p in found
        if p.split(":", 1)[0] in (*FAILING, *DEGRADING) and not any(re.search(e, p) for e in documented.expects)
    ]


def verdict(found: list[str]) -> str:
    """The verdict of a transition from its problems (tooling/review/transition.py)."""
    kinds = {p.split(":", 1)[0] for p in found}
    if kinds & set(FAILING):
        return "refused"
    if "replaced" in kinds:
        return "replaces"
    if kinds & set(DEGRADING):
        return "degrades"
    return "clean"


@cache
def examples() -> dict[str, dict[str, Any]]:
    """Stack name -> config of every example but the fleet stacks (they build no platform; they read recorded
    outputs of the regional stacks, which are in)."""
    from tooling.harness.offline import example_names, load_stack_file
    from tooling.review.fleet_render import is_fleet
    from tooling.review.render import stack_name

    configs = {stack_name(p): load_stack_file(p) for p in example_names()}
    return {name: config for name, config in configs.items() if not is_fleet(config)}


def table(kinds: list[str] | None = None) -> str:
    """The docs/operations.md table: every kind of change, its verdicts, what it does to serving, the procedure."""
    if kinds is None:
        kinds = [c.kind for c in changes(examples())]
    rows = ["| change | up | undo | what it does to serving | safe procedure |", "|---|---|---|---|---|"]
    for kind in sorted(set(kinds)):
        e = effect(kind)
        cells = [f"`{kind}`", e.forth, e.back, e.serving, e.procedure]
        if kind in NOT_EXERCISED:
            cells = [
                f"`{kind}`",
                "not exercised",
                "not exercised",
                f"Not on any example ({UNEXERCISED[kind]}); on a stack that allows it, expected: {e.serving}",
                e.procedure,
            ]
        elif kind in UNEXERCISED:
            cells = [f"`{kind}`", "rejected", "rejected", f"Not valid on any example: {UNEXERCISED[kind]}.", "-"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
