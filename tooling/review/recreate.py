"""Which differences between two renders recreate the cluster, a TPU pool, the bucket or the network.

Google Cloud cannot change these fields in place: Pulumi replaces the resource (for a TPU pool, the whole slice;
for the cluster, everything in it). `python -m tooling.review.render --compare <old render>` names every such field, so
a pull request shows a recreation before anyone runs `pulumi up`. Deleted resources are named too.

`review` adds what such a change needs: a protected resource (staging and prod) is never replaced or deleted by
`pulumi up`, so each one says what it takes and what stops meanwhile; and a TPU pool whose capacity is a list has no
node pools of its own, so a change to its ComputeClass (zone, machine, capacities) is named with what it does to
the nodes GKE already runs for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tooling.harness.k8s_objects import manifest
from tooling.oracles import provider_schema

# The resource types whose recreation the review names; which of their inputs force it comes from the provider's
# schema (tooling/oracles/provider_schema.py, tooling/data/provider_rules.json: every ForceNew field).
REVIEWED_TYPES = (
    "gcp:container/cluster:Cluster",
    "gcp:container/nodePool:NodePool",
    "gcp:storage/bucket:Bucket",
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
)
# Inputs that are not ForceNew but that the provider never updates: a change plans as an in-place update that does
# nothing, so the resource keeps its old value (and, read back after the update, diffs again on the next preview).
# hashicorp/terraform-provider-google-beta@v7.45.0 (and @93c65b2d60, the 8.x line):google-beta/services/container/
# resource_container_node_pool.go reads placement_policy and maintenance_policy only in expandNodePool (create), and
# nodePoolUpdate has no HasChange for either: a TPU slice's new topology needs the pool recreated; the node pool's
# upgrade exclusion is left to the cluster's (components/tpu_pool.py CREATE_ONLY). Every registered node pool either
# replaces on each of these or ignores it (tests/test_change_safety.py).
NOT_UPDATED: dict[str, tuple[str, ...]] = {
    "gcp:container/nodePool:NodePool": ("placementPolicy", "maintenancePolicies")
}
MISSING = object()
COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
TPU_POOL_PARENT = "tpu-serving:tpu:TpuSlicePool"


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
    # the ComputeClass of a pool whose capacity is a list (tooling/review/render.py writes cluster-scoped objects there)
    for path in sorted((render / "k8s" / "_cluster").glob("ComputeClass-*.yaml")):
        body, options = manifest(yaml.safe_load(path.read_text()))
        name = body["metadata"]["name"]
        out[f"{COMPUTE_CLASS} {name}"] = {"type": COMPUTE_CLASS, "name": name, "inputs": body, "options": options}
    return out


def recreations(old_render: Path | Resources, new_render: Path | Resources) -> list[str]:
    """One line per field that forces a replacement, and per protected-kind resource that disappears.

    Either side is a render directory or what `read_render` read from one (to compare against a render that is
    about to be overwritten)."""
    old = old_render if isinstance(old_render, dict) else read_render(old_render)
    new = new_render if isinstance(new_render, dict) else read_render(new_render)
    lines = []
    for key in sorted(k for k in old if old[k]["type"] in REVIEWED_TYPES):
        if key not in new:
            lines.append(f"{key}: deleted")
            continue
        options = new[key].get("options") or {}
        ignore, replace_on = list(options.get("ignoreChanges") or []), tuple(options.get("replaceOnChanges") or ())
        changes = field_changes(old[key]["type"], old[key]["inputs"], new[key]["inputs"], ignore, replace_on)
        changes += account_changes(old[key], new[key], changes)
        lines.extend(f"{key}: {change}" for change in changes)
    return lines


ACCOUNT = "gcp:serviceaccount/account:Account"
# ForceNew inputs a render shows as "(known after apply)" because they are another resource's output: the service
# account a node pool runs as (node_config.service_account, ForceNew in tooling/data/provider_rules.json) is an
# Account's email. Unknown on both sides, the values compare equal; the Account the node pool depends on says which.
ACCOUNT_FIELDS = {"gcp:container/nodePool:NodePool": "nodeConfig.serviceAccount"}


def account_changes(old: dict[str, Any], new: dict[str, Any], changes: list[str]) -> list[str]:
    """`<field> <old account> -> <new account> (replaces it)` when the service account a resource runs as is another
    Account resource (a PathwaysJob added, removed or renamed on a pool: its nodes run as the workload's account)."""
    field = ACCOUNT_FIELDS.get(old["type"])
    if field is None or any(line.startswith(field + " ") for line in changes):
        return []

    def accounts(body: dict[str, Any]) -> list[str]:
        deps = (body.get("options") or {}).get("dependsOn") or []
        return sorted(d.split(" ", 1)[1] for d in deps if d.startswith(ACCOUNT + " "))

    before, after = accounts(old), accounts(new)
    if before == after or not (before and after):
        return []
    return [f"{field} {' '.join(before)} -> {' '.join(after)} (replaces it: another service account)"]


# ---- what a replacement or a ComputeClass change needs -------------------------------------------------------

# Pulumi refuses to replace a resource that is protected in the state and in the program ("unable to replace
# resource ... as it is currently marked for protection", checked when the step is generated, so `pulumi preview`
# fails too), and to delete one protected in the state (pulumi/pulumi pkg/resource/deploy/step_generator.go and
# step.go DeleteStep.Apply). Protection lifted in the same update lets the replacement through.
REFUSED = "`pulumi up` refuses: it is protected (`protect`)"
NEEDS = {
    "gcp:container/nodePool:NodePool": (
        "the slice's nodes are deleted before the new ones exist (deleteBeforeReplace), so what runs on it stops "
        'serving until the new slice is up and its pods are scheduled again. Without downtime: docs/operations.md "Moving a '
        'serving TPU pool" (add a pool with the new setting, move the workload, retire the old pool). To accept '
        "the downtime instead: `pulumi state unprotect '{urn}'`, then `pulumi up` (the new node pool is protected "
        "again)"
    ),
    "gcp:container/cluster:Cluster": (
        "every node pool and workload in it goes with it. Build the new cluster as a new stack, move the clients, "
        'then retire this one (docs/operations.md "Retiring a staging or prod stack")'
    ),
    "gcp:storage/bucket:Bucket": (
        "its objects do not move with it. Copy them to the new bucket first (`gcloud storage cp --recursive`), "
        "then `pulumi state unprotect '{urn}'` and `pulumi up` (the old bucket is retained, not emptied)"
    ),
}


def _urn(render_dir_name: str, body: dict[str, Any]) -> str:
    """The resource's URN (urn:pulumi:<stack>::<project>::<parent type>$<type>::<name>), for a resource whose parent,
    if any, is a top-level component (every node pool, the cluster, the bucket)."""
    parent = (body.get("options") or {}).get("parent")
    chain = f"{parent.split(' ', 1)[0]}${body['type']}" if parent else body["type"]
    return f"urn:pulumi:{render_dir_name}::tpu-serving::{chain}::{body['name']}"


def protected_needs(old: Resources, new: Resources, replaced: list[str], stack: str) -> list[str]:
    """One line per protected resource that the change replaces or deletes: that `pulumi up` refuses, what stops,
    and the procedure."""
    lines = []
    for key in sorted({line.split(": ", 1)[0] for line in replaced}):
        body = old[key]
        if not (body.get("options") or {}).get("protect"):
            continue
        if key not in new:
            lines.append(
                f"{key}: {REFUSED} deletion; `pulumi state unprotect '{_urn(stack, body)}'` first (the preview gate "
                "also needs the `allow-replace` label)"
            )
            continue
        if not (new[key].get("options") or {}).get("protect"):
            lines.append(f"{key}: protection is lifted in the same update, so `pulumi up` replaces it")
            continue
        order = (
            "the old nodes are deleted before the new ones exist (deleteBeforeReplace), so "
            if body["options"].get("deleteBeforeReplace")
            else ""
        )
        need = NEEDS.get(body["type"], "lift its protection first").format(urn=_urn(stack, body), order=order)
        lines.append(f"{key}: {REFUSED}, and the preview gate needs the `allow-replace` label. Replacing it: {need}")
    return lines


# What a ComputeClass change does to running nodes: GKE uses the class when it creates nodes (node pool
# auto-creation; https://docs.cloud.google.com/kubernetes-engine/docs/concepts/about-compute-classes "GKE cluster
# autoscaling uses the attributes in a ComputeClass to create nodes"); the object is updated in place (same name).
COMPUTE_CLASS_FIELDS = {
    "spec.priorityDefaults.location.zones": "zone",
    "spec.priorities": "machine, TPU shape and capacities",
    "spec.nodePoolConfig": "node service account and labels",
}
COMPUTE_CLASS_EFFECT = (
    "updated in place, nothing is replaced: the nodes GKE already runs for the class stay where they are and keep "
    "serving; nodes it creates from now on (scale-up, repair, a pod rescheduled) follow the new {what}. To move "
    "running replicas, restart the workload (`kubectl rollout restart`) once the new {what} has capacity; its old "
    "nodes are removed when empty"
)


def compute_class_changes(old: Resources, new: Resources) -> list[str]:
    lines = []
    for key in sorted(k for k in old if old[k]["type"] == COMPUTE_CLASS):
        if key not in new:
            lines.append(f"{key}: deleted (GKE stops creating nodes for the pool; running nodes stay until empty)")
            continue
        for field, what in COMPUTE_CLASS_FIELDS.items():
            before, after = _get(old[key]["inputs"], field), _get(new[key]["inputs"], field)
            if before != after:
                lines.append(
                    f"{key}: {field} {_show(before)} -> {_show(after)} ({COMPUTE_CLASS_EFFECT.format(what=what)})"
                )
    return lines


def review(old_render: Path | Resources, new_render: Path, stack: str | None = None) -> list[str]:
    """Every replacement and deletion (recreations), what each protected one needs (protected_needs), and every
    ComputeClass change with its effect on running nodes (compute_class_changes)."""
    old = old_render if isinstance(old_render, dict) else read_render(old_render)
    new = read_render(new_render)
    replaced = recreations(old, new)
    return replaced + protected_needs(old, new, replaced, stack or new_render.name) + compute_class_changes(old, new)
