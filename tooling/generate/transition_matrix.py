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
find, both directions; a documented verdict may be worse than a run finds on one example (the same names, one
replica), which ALSO_ACCEPTED allows: a documented replacement or dip never hides a failure, and a refused change
is one the docs send through its safe procedure anyway.
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


# What the kinds of change that are not a clean in-place update do, and their safe procedure. First match wins.
EFFECTS: tuple[Effect, ...] = (
    Effect(
        r"workloads\[[\w-]+\]\.autoscaling unset",
        "refused",
        "degrades",
        "Removing `autoscaling` sets `spec.replicas` on a Deployment/LeaderWorkerSet whose replicas its HPA owns "
        "(kube-controller-manager, through the scale subresource): the preview fails on a server-side apply "
        "conflict, and forcing it would race the HPA, deleted only at the end. Adding it back leaves `spec.replicas` "
        "to the HPA: the field falls to 1 until the HPA's first scale-up.",
        "Removing: set `autoscaling.minReplicas` and `maxReplicas` to the replicas you want, `pulumi up`, wait until "
        "`kubectl get hpa` shows them, then replace `autoscaling` with `replicas` (the same value: no conflict) and "
        "`pulumi up`. Adding: first `kubectl apply --server-side --field-manager=handover-to-hpa` a manifest holding "
        "only `spec.replicas` (its current value), then `pulumi up` (kubernetes.io server-side apply, transferring "
        "ownership).",
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
        r"workloads\[saxml\]\.maxRestarts changed",
        "replaces",
        "replaces",
        "JobSet's failurePolicy is immutable (a CEL rule in its CRD): the model servers' JobSet is deleted and "
        "created again; Saxml serves nothing until the models are loaded again.",
        "Change it in a maintenance window, or run a second Saxml workload meanwhile.",
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
        r"workloads\[\]\.type ",
        "refused",
        "refused",
        "The Kubernetes objects are safe: the Service, PDB, PodMonitoring, HPA and identity keep their URNs (one "
        "component type for every workload type) and are updated in place, or replaced where the types name them "
        "differently (the Service `<name>-svc` or `<name>`: clients must use the new name); the new server is "
        "created and the old one deleted at the end. But the types name their bucket grants differently (by what "
        "each grant is for): the same IAM binding is created under a new name, a no-op, and the old resource's "
        "delete at the end removes it, so the new server loses its checkpoint or bucket access. A PathwaysJob (which "
        "takes a pool's node service account) also replaces the node pools of the pool it joins or leaves.",
        "Add the workload of the new type under a new name (and pool where it needs one), `pulumi up`, move clients "
        "to its Service, then remove the old workload and `pulumi up`.",
    ),
)
DEFAULT = Effect("", "clean", "clean", "Updated in place; serving continues.", "`pulumi up`.")


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
    addons = {**(other.get(f"{NS}:addons") or {}), **(new.get(f"{NS}:addons") or {})}
    if addons:
        new[f"{NS}:addons"] = addons
    return new


# Changes that are only valid with a companion change: (kind pattern, the companion's keys under the same object).
COMPANIONS: dict[str, dict[str, Any]] = {
    # an external gateway needs its allowed clients (stacks/pieces/gateway.py)
    "gateway.exposure -> external": {"sourceRanges": ["203.0.113.0/24", "198.51.100.0/24"]},
}


def _with_companion(kind: str, config: dict[str, Any]) -> dict[str, Any]:
    for pattern, extra in COMPANIONS.items():
        if kind == pattern:
            section = kind.split(".", 1)[0]
            return {**config, f"{NS}:{section}": {**config[f"{NS}:{section}"], **extra}}
    return config


def changes(examples: dict[str, dict[str, Any]]) -> list[Change]:
    """Every change kind on every example it applies to (the full matrix)."""
    out = [
        Change(kind, name, _with_companion(kind, new))
        for name, config in examples.items()
        for kind, new in field_changes(config)
    ]
    return out + list(type_swaps(examples))


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

ALSO_ACCEPTED = {"replaces": ("clean",), "degrades": ("clean",), "refused": ("replaces", "degrades", "clean")}
FAILING = ("collision", "deletion order", "orphan", "conflict", "race", "immutable", "in use")


def verdict(found: list[str]) -> str:
    """The verdict of a transition from its problems (tooling/review/transition.py)."""
    kinds = {p.split(":", 1)[0] for p in found}
    if kinds & set(FAILING):
        return "refused"
    if "replaced" in kinds:
        return "replaces"
    if "dip" in kinds:
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
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)
