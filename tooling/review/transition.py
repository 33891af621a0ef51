"""What a `pulumi up` from one config to another does to a live stack, from two offline runs of the program: the
problems a clean transition must not have.

Pulumi relates an old and a new resource only by URN (type, parent chain, name). A resource whose URN is in both runs
is updated, or replaced when a replacing field changed; one only in the old run is deleted, after every create and
update and in reverse dependency order (pulumi/pulumi pkg/resource/deploy: deletes of resources no longer in the
program are scheduled last, dependents before their dependencies); one only in the new run is created. The failure
modes checked:

- collision: an object the old run manages under one URN and the new run under another (a Kubernetes object's
  group, kind, namespace and name; a Google resource's type and name). The create runs first (the API server answers
  AlreadyExists, or server-side apply adopts the object, and Helm refuses to adopt what it did not make), and the old
  resource's delete at the end removes the object the new one now stands for.
- replacement: a resource in both runs whose change replaces it (a Kubernetes object's name or namespace, a
  `replaceOnChanges` field, a Google field the provider marks ForceNew: tooling/review/recreate.py field_changes).
- deletion order: a deleted object in a Namespace deleted too must depend on it (else the Namespace may go first and
  take it along mid-way), and a deleted custom resource on its deleted CustomResourceDefinition (else the CRD's
  delete removes it first, and its own delete, with its finalizers' clean-up, never runs).
- orphan: a custom resource the new run keeps or creates whose CustomResourceDefinition the old run applied and the
  new run deletes.

A Helm release is one resource to Pulumi but installs many objects, and an object it installs collides with a stack
resource like any other: Helm refuses to install over an object it does not own ("invalid ownership metadata",
helm/helm@v3.17.3 pkg/action/validate.go existingResourceConflict) and its uninstall deletes every object of the
release's manifest (pkg/action/uninstall.go). So each release is expanded into what it installs (`with_charts`: the
record of the pinned Helm's render of its chart with the stack's values, tooling/oracles/chart_objects.py), each object a
registration under the release: created, updated and deleted with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tooling.harness.offline import Recording, Registration
from tooling.oracles import chart_objects
from tooling.review.recreate import field_changes

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
# Built-in groups (pulumi-kubernetes types): anything else under kubernetes: is a custom resource.
BUILTIN_GROUPS = {
    "core",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "admissionregistration.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "helm.sh",
    "yaml",
    "yaml/v2",
}


def installed_by(release: Registration) -> list[Registration]:
    """What a Helm release installs (the chart_objects record), one registration per object under the release, with
    its dependencies. A CRD carries its group (`<plural>.<group>`), as crd_sources reads it."""
    inputs = release.inputs
    objects = chart_objects.installed(
        str(inputs["chart"]), str(inputs["version"]), str(inputs["name"]), str(inputs["namespace"])
    )
    if objects is None:
        raise KeyError(f"{inputs['chart']}@{inputs['version']} is not recorded: run `make chart-objects`")
    out = []
    for obj in objects:
        group_version = obj["apiVersion"] if "/" in obj["apiVersion"] else f"core/{obj['apiVersion']}"
        meta = {"name": obj["name"], **({"namespace": obj["namespace"]} if obj["namespace"] else {})}
        body: dict[str, Any] = {"metadata": meta}
        if obj["kind"] == "CustomResourceDefinition":
            body["spec"] = {"group": obj["name"].split(".", 1)[1]}
        type_ = f"kubernetes:{group_version}:{obj['kind']}"
        where = f"{obj['kind']}/{obj['namespace'] or ''}/{obj['name']}"
        out.append(
            Registration(
                type_,
                f"{release.name}[{where}]",
                f"{release.urn}$chart::{where}",
                True,
                body,
                parent=release.urn,
                dependencies=list(release.dependencies),
            )
        )
    return out


def with_charts(rec: Recording) -> Recording:
    """`rec` with every Helm release expanded into what it installs (module docstring)."""
    return Recording([r for reg in rec.resources for r in [reg, *(installed_by(reg) if reg.type == RELEASE else [])]])


def _group_kind(reg: Registration) -> tuple[str, str]:
    """(API group, kind) of a Kubernetes registration: `kubernetes:<group>/<version>:<Kind>`."""
    module, kind = reg.type.split(":")[1:3]
    return module.rsplit("/", 1)[0], kind


def identity(reg: Registration) -> tuple[str, ...] | None:
    """The cloud object a registration manages, when its inputs name it."""
    inputs = reg.inputs
    if reg.type.startswith("kubernetes:"):
        meta = inputs.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name") or reg.type.startswith("kubernetes:helm.sh"):
            return None
        group, kind = _group_kind(reg)
        return (group, kind, str(meta.get("namespace") or ""), str(meta["name"]))
    if reg.type.startswith("gcp:") and isinstance(inputs.get("name"), str):
        scope = tuple(str(inputs.get(k, "")) for k in ("project", "location", "region", "zone", "cluster", "bucket"))
        return (reg.type, *scope, inputs["name"])
    return None


def _custom(reg: Registration) -> bool:
    return reg.type.startswith("kubernetes:") and _group_kind(reg)[0] not in BUILTIN_GROUPS


def crd_sources(rec: Recording) -> dict[str, list[Registration]]:
    """API group -> the registrations that apply its CustomResourceDefinitions: a CRD itself, or a ConfigGroup or
    ConfigFile of CRD files named `<group>_<plural>.yaml` (the upstream repositories' layout, components/addons.py)."""
    out: dict[str, list[Registration]] = {}
    for reg in rec.resources:
        if reg.type == CRD and (group := (reg.inputs.get("spec") or {}).get("group")):
            out.setdefault(group, []).append(reg)
        elif reg.type.startswith("kubernetes:yaml/"):
            files = reg.inputs.get("files") or [reg.inputs.get("file")]
            for f in files if isinstance(files, list) else []:
                name = str(f).rsplit("/", 1)[-1]
                if "_" in name and name.endswith(".yaml"):
                    out.setdefault(name.split("_", 1)[0], []).append(reg)
    return out


def _depends(rec: Recording, reg: Registration, target: str) -> bool:
    """`reg` depends on URN `target`, directly, through its dependencies' dependencies, or through a parent's."""
    by_urn = {r.urn: r for r in rec.resources}
    seen, todo = set(), [reg.urn]
    while todo:
        urn = todo.pop()
        if urn in seen:
            continue
        seen.add(urn)
        node = by_urn.get(urn)
        if node is None:
            continue
        if target in node.dependencies:
            return True
        todo.extend(node.dependencies)
        if node.parent:
            todo.append(node.parent)
    return False


def _replaced(old: Registration, new: Registration) -> list[str]:
    if old.type.startswith("kubernetes:"):
        before, after = old.inputs.get("metadata") or {}, new.inputs.get("metadata") or {}
        out = [
            f"metadata.{k} {before.get(k)!r} -> {after.get(k)!r} (replaces it)"
            for k in ("name", "namespace")
            if isinstance(before, dict) and isinstance(after, dict) and before.get(k) != after.get(k)
        ]
        for path in new.replace_on_changes:
            a, b = _get(old.inputs, path), _get(new.inputs, path)
            if a != b:
                out.append(f"{path} changes (replaceOnChanges)")
        return out
    if old.type.startswith("gcp:"):
        try:
            return field_changes(old.type, old.inputs, new.inputs, new.ignore_changes, tuple(new.replace_on_changes))
        except KeyError:  # a type the provider rules do not record
            return []
    return []


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def problems(old: Recording, new: Recording) -> Iterator[str]:
    """Every problem of the transition from the run `old` to the run `new` (module docstring), each Helm release
    expanded into what it installs."""
    old, new = with_charts(old), with_charts(new)
    old_urns = {r.urn: r for r in old.resources}
    new_urns = {r.urn: r for r in new.resources}
    removed = [r for u, r in old_urns.items() if u not in new_urns]
    added = [r for u, r in new_urns.items() if u not in old_urns]

    gone = {i: r for r in removed if (i := identity(r)) is not None}
    for reg in added:
        if (i := identity(reg)) is not None and i in gone:
            yield f"collision: {gone[i].name} (deleted) and {reg.name} (created) are the same object {i}"

    for urn, before in old_urns.items():
        after = new_urns.get(urn)
        if after is not None:
            yield from (f"replaced: {after.name}: {line}" for line in _replaced(before, after))

    namespaces = {r.inputs["metadata"]["name"]: r for r in removed if r.type == NAMESPACE}
    old_sources, new_sources = crd_sources(old), crd_sources(new)
    for reg in removed:
        ident = identity(reg)
        if ident is None:
            continue
        ns = namespaces.get(ident[2])
        if ns is not None and reg.type.startswith("kubernetes:") and not _depends(old, reg, ns.urn):
            yield f"deletion order: {reg.name} does not depend on its Namespace {ns.name}, deleted too"
        for source in old_sources.get(ident[0], []) if _custom(reg) else []:
            if source.urn not in new_urns and not _depends(old, reg, source.urn):
                yield f"deletion order: {reg.name} does not depend on {source.name}, which deletes its CRD"

    for reg in new.resources:
        group = _group_kind(reg)[0] if _custom(reg) else ""
        if group in old_sources and group not in new_sources:
            yield f"orphan: {reg.name} stays while its CRD goes with {old_sources[group][0].name}"
