"""Which differences between two renders recreate the cluster, a TPU pool, the bucket or the network.

Google Cloud cannot change these fields in place: Pulumi replaces the resource (for a TPU pool, the whole slice;
for the cluster, everything in it). `python -m tooling.render --compare <old render>` names every such field, so
a pull request shows a recreation before anyone runs `pulumi up`. Deleted resources are named too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tooling import provider_schema

# The resource types whose recreation the review names; which of their inputs force it comes from the provider's
# schema (tooling/provider_schema.py, tooling/data/provider_rules.json: every ForceNew field).
REVIEWED_TYPES = (
    "gcp:container/cluster:Cluster",
    "gcp:container/nodePool:NodePool",
    "gcp:storage/bucket:Bucket",
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
)
# Inputs that are not ForceNew but that the provider never updates: a change plans as an in-place update that does
# nothing, so the resource keeps its old value. hashicorp/terraform-provider-google-beta@v7.45.0:google-beta/
# services/container/resource_container_node_pool.go reads placement_policy only in expandNodePool (create) and
# nodePoolUpdate has no HasChange for it: a TPU slice's new topology needs the pool recreated.
NOT_UPDATED: dict[str, tuple[str, ...]] = {"gcp:container/nodePool:NodePool": ("placementPolicy",)}
MISSING = object()


def _get(data: Any, dotted: str) -> Any:
    """The value at a camelCase dotted path; through a list of blocks, the list of each block's value."""
    for i, part in enumerate(parts := dotted.split(".")):
        if isinstance(data, list):
            return [_get(item, ".".join(parts[i:])) for item in data]
        if not isinstance(data, dict) or part not in data:
            return MISSING
        data = data[part]
    return data


def _count(value: Any) -> Any:
    """How many blocks a block-valued input sends (an object is one, as Pulumi flattens a MaxItems=1 list)."""
    if value is MISSING or value is None:
        return 0
    if isinstance(value, list):
        return [_count(v) for v in value] if any(isinstance(v, list) for v in value) else len(value)
    return 1


def _ignored(field: str, ignore_changes: list[str]) -> bool:
    return any(field == p or field.startswith(p + ".") or p.startswith(field + ".") for p in ignore_changes)


def field_changes(
    type_: str, before: dict[str, Any], after: dict[str, Any], ignore: list[str], replace_on: tuple[str, ...] = ()
) -> list[str]:
    """`<field> <old> -> <new> (why)` for each change of `type_`'s inputs that recreates it (or is never applied).

    The plugin SDK's diff (hashicorp/terraform-plugin-sdk helper/schema/schema.go, schemaMap.diffList/diffSet):
    a ForceNew primitive replaces on any change; a ForceNew list or set of blocks only when blocks are added or
    removed (its count), each nested field by its own ForceNew; a ForceNew list of primitives on any change. An
    Optional+Computed field dropped from the inputs keeps its value (no diff). Inputs under the resource's
    ignoreChanges are never diffed; its replaceOnChanges replace on any change (pulumi/pulumi resource option)."""
    fields = provider_schema.force_new_fields(type_)
    lines = []
    for field, rec in fields.items():
        if _ignored(field, ignore):
            continue
        old, new = _get(before, field), _get(after, field)
        if new is MISSING and rec.get("computed"):
            continue
        if rec.get("block") and rec.get("type") == "TypeList":
            changed = _count(old) != _count(new)
        else:
            changed = old != new
        if changed:
            lines.append(f"{field} {_show(old)} -> {_show(new)} (replaces it)")
    for field in sorted({*replace_on, *NOT_UPDATED.get(type_, ())}):
        old, new = _get(before, field), _get(after, field)
        if old == new or _ignored(field, ignore) or any(line.startswith((field + " ", field + ".")) for line in lines):
            continue
        why = "replaces it: replaceOnChanges" if field in replace_on else "never updated in place: recreate it"
        lines.append(f"{field} {_show(old)} -> {_show(new)} ({why})")
    return lines


def _show(value: Any) -> str:
    if value is MISSING:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


Resources = dict[str, dict[str, Any]]


class NotARender(ValueError):
    """A directory that is not an offline render of one stack."""


def read_render(render: Path) -> Resources:
    """The resources of a render whose replacement fields we compare; NotARender when `render` is not one.

    A missing or empty directory is an error, never "no changes": comparing against nothing proves nothing.
    """
    files = sorted((render / "gcp").glob("*.yaml")) if (render / "gcp").is_dir() else []
    if not files:
        raise NotARender(f"{render} is not an offline render (no gcp/*.yaml in it)")
    out = {}
    for path in files:
        body = yaml.safe_load(path.read_text())
        if not isinstance(body, dict) or "type" not in body or "name" not in body:
            raise NotARender(f"{path} is not a rendered resource (no type and name)")
        if body["type"] in REVIEWED_TYPES:
            out[f"{body['type']} {body['name']}"] = body
    return out


def recreations(old_render: Path | Resources, new_render: Path | Resources) -> list[str]:
    """One line per field that forces a replacement, and per protected-kind resource that disappears.

    Either side is a render directory or what `read_render` read from one (to compare against a render that is
    about to be overwritten)."""
    old = old_render if isinstance(old_render, dict) else read_render(old_render)
    new = new_render if isinstance(new_render, dict) else read_render(new_render)
    lines = []
    for key in sorted(old):
        if key not in new:
            lines.append(f"{key}: deleted")
            continue
        options = new[key].get("options") or {}
        ignore, replace_on = list(options.get("ignoreChanges") or []), tuple(options.get("replaceOnChanges") or ())
        changes = field_changes(old[key]["type"], old[key]["inputs"], new[key]["inputs"], ignore, replace_on)
        lines.extend(f"{key}: {change}" for change in changes)
    return lines
