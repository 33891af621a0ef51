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
- immutable: a custom resource updated in place while a field its API refuses to change changes
  (stacks/facts/immutable_fields.py: the CRDs' transition rules and the webhooks' immutable fields), not replaced.
- conflict / race: an object an HPA scaled (the HPA controller writes `spec.replicas` through the scale subresource,
  field manager kube-controller-manager; tracked when a manager owned the field before the write, k8s.io/apimachinery
  pkg/util/managedfields scalehandler.go and internal/skipnonapplied.go, so the check assumes it may be) that the new
  run gives `spec.replicas`: server-side apply refuses a value another manager owns unless forced (pulumi/pulumi-kubernetes provider/pkg/await/await.go ssaUpdate, patchForce:
  the `pulumi.com/patchForce` annotation, else the provider's enablePatchForce; the stack's provider sets neither),
  and forced (`up` succeeds), an autoscaler that is still there (Pulumi deletes it only at the end of the `up`) may
  write over anything but 0 until then: the race degrades (the replicas may end where the HPA left them, and the
  stack's state says otherwise until `pulumi up --refresh`: Read prunes the live object to the inputs' shape, and
  Diff compares that to the program's, provider/pkg/provider/provider.go pruneLiveState; the forced apply then
  wins with no HPA left).
- in use: a Cloud Armor policy deleted while a Gateway, route, router release or backend policy patch that the load
  balancer builds on it is deleted too without depending on it (Compute refuses to delete a policy a backend
  service uses); or deleted at all while the old run attached it to a backend (a GCPBackendPolicy patch naming it):
  even ordered after the patch, the delete runs as soon as the patch is gone from the Kubernetes API, but GKE's
  Gateway controller reconfigures the load balancer from the policy objects afterwards, asynchronously
  (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources: "the Policy is processed by
  the Gateway controller and the underlying load balancer resource is (re)configured"), and the provider's delete is
  one DELETE with no retry on resourceInUseByAnotherResource (hashicorp/terraform-provider-google-beta
  google-beta/services/compute/resource_compute_region_security_policy.go resourceComputeRegionSecurityPolicyDelete:
  transport_tpg.SendRequest with no ErrorRetryPredicates; a longer customTimeouts.delete only bounds that one
  request and its operation). The safe procedure takes two `up`s (docs/operations.md).
- dip (degrades serving, `up` succeeds): `spec.replicas` the old run set (n > 1) and the new run leaves to an HPA:
  the stack owned the field alone, so the apply removes it and it falls to its default 1 until the HPA scales up
  (https://kubernetes.io/docs/reference/using-api/server-side-apply/#transferring-ownership).

- capacity: TPU servers the new run creates beside old ones on one pool (a Deployment, LeaderWorkerSet or JobSet
  of pods requesting `google.com/tpu` on the nodes labelled `tpu-serving/pool`). The creates run first and the old
  servers are deleted only at the end of the `up` (above), so during the `up` the pool must hold both: the old run's
  servers (an updated one counted at the larger of its two sizes) plus the new ones, a server replaced under its URN
  and created before the old one is deleted counted twice: old and replacement (no deleteBeforeReplace, and a name or
  namespace change or a replaceOnChanges field; the provider deletes first for its own forceNew fields when the name
  and namespace stay). When their chips exceed the
  pool's most nodes (the node pools' `autoscaling.maxNodeCount`, else their node count) times each node's chips
  (the machine type's `-<n>t`), the new pods stay Pending and the `up` waits out its customTimeouts. The safe
  procedure: raise the pool's `autoscaling.maxNodes` for the change (and lower it after), or scale the old
  workload to 0 first, or two `up`s (remove the old servers, then add the new).

Old and new resources are matched by URN or by an alias: a resource carrying `aliases` (a name, type or parent it had
before) answers to the URN it had, and so does each of its descendants, as the engine matches them.

A Helm release is one resource to Pulumi but installs many objects, and an object it installs collides with a stack
resource like any other: Helm refuses to install over an object it does not own ("invalid ownership metadata",
helm/helm@v3.17.3 pkg/action/validate.go existingResourceConflict) and its uninstall deletes every object of the
release's manifest (pkg/action/uninstall.go). So each release is expanded into what it installs (`with_charts`: the
record of the pinned Helm's render of its chart with the stack's values, tooling/oracles/chart_objects.py), each object a
registration under the release: created, updated and deleted with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stacks.facts import immutable_fields
from tooling.harness.offline import Recording, Registration
from tooling.oracles import chart_objects
from tooling.review.recreate import field_changes

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
# The provider's per-object switch that forces server-side apply conflicts (pulumi/pulumi-kubernetes
# provider/pkg/metadata/annotations.go AnnotationPatchForce), read here independently of the program's own constant.
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
ARMOR = "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy"
# What GKE builds a gateway's load balancer from (the backend services the policy is attached to): the Gateway, its
# routes, the router releases (their GCPBackendPolicy) and the patch that sets the policy on it.
ARMOR_USERS = (
    "kubernetes:gateway.networking.k8s.io/v1:Gateway",
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
    RELEASE,
    "kubernetes:networking.gke.io/v1:GCPBackendPolicyPatch",
)
BACKEND_POLICY_PATCH = ARMOR_USERS[-1]
# The fields that name a Google resource, as its API does (project, location and parent, then its own id): a name
# alone is not an identity (the same name in another project, region or bucket is another resource).
GCP_IDENTITY = (
    "project",
    "location",
    "region",
    "zone",
    "cluster",
    "bucket",
    "serviceAccountId",
    "keyRing",
    "cryptoKeyId",
    "secretId",
    "repositoryId",
    "accountId",
    "roleId",
    "role",
    "member",
    "name",
)
GCP_OWN_ID = ("name", "accountId", "roleId", "secretId", "repositoryId", "cryptoKeyId", "member")
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
    if reg.type.startswith("gcp:") and any(isinstance(inputs.get(k), str) for k in GCP_OWN_ID):
        scope = (f"{k}={inputs[k]}" for k in GCP_IDENTITY if isinstance(inputs.get(k), (str, int)))
        # an IAM member with a condition is another binding than the same role and member under another condition
        condition = [f"condition={json.dumps(inputs['condition'], sort_keys=True)}"] if inputs.get("condition") else []
        return (reg.type, *scope, *condition)
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


def _force_new() -> dict[str, tuple[str, ...]]:
    """Fields whose change the Kubernetes provider applies by replacing the object, per registered type
    (`kubernetes:<group>/<version>:<Kind>`): the provider's own table (pulumi/pulumi-kubernetes
    provider/pkg/provider/diff.go forceNew, read by tooling/oracles/k8s_force_new.py into tooling/data/k8s_force_new.json:
    a Deployment's, DaemonSet's and StatefulSet's selector, a StatefulSet's serviceName, podManagementPolicy and
    volumeClaimTemplates, a Job's template, completions, parallelism and selector, a Service's clusterIP, a
    (Cluster)RoleBinding's roleRef...), and a ConfigMap's data and a Secret's type and data, the provider being
    configured mutable for neither (enableConfigMapMutable, enableSecretMutable); a Helm release's name and namespace
    (provider/pkg/provider/helm_release.go Diff forceNewFields; make e2e, vllm-single-host-keda: a workload's namespace
    change replaced its router's release, which the review had called in place). A path under a list (`[*]`) is
    compared at the list; a path under another listed path is covered by it. The first real namespace change (make
    e2e, gemma-hpa-prometheus) replaced the prometheus-adapter rules ConfigMap, which the review had called in place."""
    data = json.loads(FORCE_NEW_DATA.read_text())
    out: dict[str, tuple[str, ...]] = {}
    for key, fields in {**data["kinds"], **data["unless_mutable"]}.items():
        group, version, kind = key.split("/")
        paths = {f.lstrip(".").split("[*]", 1)[0] for f in fields}
        top = sorted(p for p in paths if not any(p.startswith(f"{q}.") for q in paths))
        type_ = f"kubernetes:{group}/{version}:{kind}"
        out[type_] = tuple(sorted({*out.get(type_, ()), *top}))
    # a Helm release's own diff (helm_release.go forceNewFields): its name and namespace
    out[RELEASE] = tuple(f.lstrip(".") for f in data["helm_release"]["fields"])
    return out


FORCE_NEW_DATA = Path(__file__).resolve().parents[1] / "data" / "k8s_force_new.json"
FORCE_NEW: dict[str, tuple[str, ...]] = _force_new()
# What the API server refuses to change on a built-in kind (the same file's `api_server`, from the Kubernetes
# sources' update validation, tooling/oracles/k8s_force_new.py API_RULES): the kind -> its immutable spec fields, and
# a StatefulSet's spec fields that may change (every other one may not).
_API = json.loads(FORCE_NEW_DATA.read_text())["api_server"]
API_IMMUTABLE: dict[str, tuple[str, ...]] = {
    "kubernetes:{}/{}:{}".format(*key.split("/")): tuple(v) for key, v in _API["kinds"].items()
}
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
STATEFULSET_MUTABLE = tuple(_API["statefulset_mutable"])


def _api_immutable(before: Registration, after: Registration) -> Iterator[str]:
    """immutable, for a built-in kind: a field its API server refuses to change changes, and neither the provider
    (FORCE_NEW) nor the object's replaceOnChanges replaces the object for it."""
    paths = list(API_IMMUTABLE.get(after.type, ()))
    if after.type == STATEFULSET:
        spec = {**(before.inputs.get("spec") or {}), **(after.inputs.get("spec") or {})}
        paths += [f"spec.{k}" for k in spec if f"spec.{k}" not in STATEFULSET_MUTABLE]
    replacing = (*FORCE_NEW.get(after.type, ()), *after.replace_on_changes)
    for path in paths:
        covered = any(path == r or path.startswith(f"{r}.") for r in replacing)
        if not covered and _get(before.inputs, path) != _get(after.inputs, path):
            yield f"immutable: {after.name}: {path} changes in place, which the API server refuses"


def _replaced(old: Registration, new: Registration) -> list[str]:
    if old.type.startswith("kubernetes:"):
        before, after = old.inputs.get("metadata") or {}, new.inputs.get("metadata") or {}
        out = [
            f"metadata.{k} {before.get(k)!r} -> {after.get(k)!r} (replaces it)"
            for k in ("name", "namespace")
            if isinstance(before, dict) and isinstance(after, dict) and before.get(k) != after.get(k)
        ]
        for path in FORCE_NEW.get(new.type, ()):
            if _get(old.inputs, path) != _get(new.inputs, path):
                out.append(f"{path} changes (the Kubernetes provider replaces the object)")
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


def _created_before_deleted(before: Registration, after: Registration) -> bool:
    """Whether the engine replaces `before` by `after` creating the new object first: a replacement without the
    deleteBeforeReplace option, unless the provider asks for the delete first, which pulumi-kubernetes does for a
    replacement its own Diff finds (a forceNew field) that keeps the name and namespace (provider/pkg/provider/
    provider.go Diff: `len(replaces) > 0` and the same metadata.name and namespace); a replaceOnChanges one or a
    name or namespace change is created first."""
    lines = _replaced(before, after)
    if not lines or after.delete_before_replace:
        return False
    if not before.type.startswith("kubernetes:") or before.type == RELEASE:
        return True  # gcp: the bridged provider's own rule; a Helm release: helm_release.go DeleteBeforeReplace false
    provider_replaces = any("(replaceOnChanges)" not in line for line in lines)
    return not (_same_name(before, after) and provider_replaces)


def _same_name_created_first(before: Registration, after: Registration) -> bool:
    """A Kubernetes object the engine replaces for replaceOnChanges keeps its name and namespace but is created
    before the old one is deleted: the provider asks for deleteBeforeReplace only for its own forceNew fields
    (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff: `len(replaces) > 0` and the same name), so the
    create meets the old object (seen on a local cluster: e2e/transitions.py lws-subgroup)."""
    if not before.type.startswith("kubernetes:") or after.delete_before_replace:
        return False
    return _same_name(before, after)


def _same_name(before: Registration, after: Registration) -> bool:
    """Whether a Kubernetes object keeps its metadata.name (set) and namespace."""
    a, b = before.inputs.get("metadata") or {}, after.inputs.get("metadata") or {}
    return bool(
        isinstance(a, dict)
        and isinstance(b, dict)
        and a.get("name")
        and (a.get("name"), a.get("namespace")) == (b.get("name"), b.get("namespace"))
    )


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def alias_urns(rec: Recording, reg: Registration) -> set[str]:
    """The URNs `reg` also answers to (`urn:pulumi:<stack>::<project>::<type chain>::<name>`, the chain being each
    ancestor's type then its own): its own aliases (another name or type; another parent, by that parent's URN) and
    each under any URN its parent answers to, as the engine multiplies out a parent's alias (pulumi/pulumi
    pkg/resource/deploy/step_generator.go generateAliases, collapseAliasToUrn, inheritedChildAlias)."""
    by_urn = {r.urn: r for r in rec.resources}
    memo: dict[str, set[str]] = {}

    def split(urn: str) -> tuple[str, str, str]:
        head, project, types, name = urn.split("::", 3)
        return f"{head}::{project}", types, name

    def answers(node: Registration) -> set[str]:
        if node.urn in memo:
            return memo[node.urn]
        memo[node.urn] = {node.urn}
        prefix, types, _ = split(node.urn)
        own_type = types.rsplit("$", 1)[-1]
        parent = by_urn.get(node.parent)
        # the real engine's URN holds every ancestor's type; Pulumi's mocks hold the parent's own only
        # (pulumi/runtime/mocks.py make_urn): a child's URN is built from its parent's as the recording built it
        whole = parent is None or types == f"{split(parent.urn)[1]}${own_type}"

        def chain(urn: str) -> str:
            parent_types = split(urn)[1]
            return parent_types if whole else parent_types.rsplit("$", 1)[-1]

        parent_chains = {chain(u) for u in answers(parent)} if parent is not None else {""}
        specs: list[dict[str, str]] = [{}, *({"type": t} for t in node.alias_types), *node.aliases]
        out: set[str] = set()
        for spec in specs:
            type_, name = spec.get("type") or own_type, spec.get("name") or node.name
            chains = {chain(spec["parentUrn"])} if spec.get("parentUrn") else parent_chains
            out.update(f"{prefix}::{c + '$' if c else ''}{type_}::{name}" for c in chains)
        memo[node.urn] = out
        return out

    return answers(reg) - {reg.urn}


def matched(old: Recording, new: Recording) -> dict[str, Registration]:
    """Old URN -> the new registration the engine relates it to (same URN, else an alias)."""
    out = {r.urn: r for r in new.resources}
    for reg in new.resources:
        for urn in alias_urns(new, reg):
            out.setdefault(urn, reg)
    return {u: out[u] for u in (r.urn for r in old.resources) if u in out}


def _scalers(rec: Recording) -> dict[tuple[str, str, str], Registration]:
    """(namespace, kind, name) of what an HPA or KEDA ScaledObject scales -> that autoscaler."""
    out = {}
    for reg in rec.resources:
        if reg.type in (HPA, SCALED_OBJECT):
            ref = (reg.inputs.get("spec") or {}).get("scaleTargetRef") or {}
            namespace = str((reg.inputs.get("metadata") or {}).get("namespace") or "")
            out[(namespace, str(ref.get("kind") or "Deployment"), str(ref.get("name")))] = reg
    return out


def _replica_problems(old: Recording, new: Recording, matched: dict[str, Registration]) -> Iterator[str]:
    """conflict, race and dip (module docstring) of each object both runs manage."""
    old_scalers, new_urns = _scalers(old), {r.urn for r in new.resources}
    for before in old.resources:
        after = matched.get(before.urn)
        if after is None or not before.type.startswith("kubernetes:") or before.type.startswith(RELEASE):
            continue
        meta = before.inputs.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), _group_kind(before)[1], str(meta.get("name")))
        had, has = (before.inputs.get("spec") or {}).get("replicas"), (after.inputs.get("spec") or {}).get("replicas")
        scaler = old_scalers.get(key)
        if scaler is not None and had is None and has is not None:
            forced = ((after.inputs.get("metadata") or {}).get("annotations") or {}).get(PATCH_FORCE_ANNOTATION)
            if forced != "true":
                yield (
                    f"conflict: {after.name}: spec.replicas -> {has} over the value kube-controller-manager owns "
                    f"(written by {scaler.name} through the scale subresource): server-side apply refuses it"
                )
            elif has != 0:
                still = "kept" if scaler.urn in new_urns else "deleted only at the end of the up"
                yield (
                    f"race: {after.name}: spec.replicas -> {has} forced while {scaler.name} ({still}) may rescale "
                    "it until then (first pin autoscaling minReplicas = maxReplicas = the target and `up`, then "
                    "remove autoscaling)"
                )
        elif had is not None and has is None and isinstance(had, (int, float)) and had > 1:
            yield f"dip: {after.name}: spec.replicas {had} -> 1 (its default, the field left to the HPA) until scaled up"


DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
# (pod template, maxUnavailable) paths of what rolls its pods out on a template change (kubernetes-validate apps/v1
# DeploymentStrategy.rollingUpdate; kubernetes-sigs/lws@v0.7.0 leaderworkerset_types.go RolloutStrategy)
ROLLOUTS = {
    DEPLOYMENT: ("spec.template", "spec.strategy.rollingUpdate.maxUnavailable"),
    LWS: ("spec.leaderWorkerTemplate", "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable"),
}


def _gaps(new: Recording, matched: dict[str, Registration], old: Recording) -> Iterator[str]:
    """gap (degrades serving, `up` succeeds): a Deployment's or LeaderWorkerSet's pod template changes while its
    rollout may stop as many replicas as it has at least (maxUnavailable >= replicas, or the HPA's minReplicas): a
    rolling update stops the old pods before their replacements are Ready (a maxSurge 0 rollout stops
    maxUnavailable first), so the workload serves nothing for a cold start."""
    scalers = _scalers(new)
    for before in old.resources:
        after = matched.get(before.urn)
        if after is None or after.type not in ROLLOUTS:
            continue
        template, unavailable = ROLLOUTS[after.type]
        if _get(before.inputs, template) == _get(after.inputs, template):
            continue
        most = _get(after.inputs, unavailable)
        meta = after.inputs.get("metadata") or {}
        scaler = scalers.get((str(meta.get("namespace") or ""), _group_kind(after)[1], str(meta.get("name"))))
        replicas = (
            (scaler.inputs.get("spec") or {}).get("minReplicas", 1)
            if scaler is not None
            else _get(after.inputs, "spec.replicas") or 1
        )
        if isinstance(most, (int, float)) and most >= replicas:
            yield (
                f"gap: {after.name}: its pod template changes and its rollout stops up to {most:g} of its "
                f"{replicas:g} replica(s) before their replacements are Ready: no replica serves for a cold start "
                "(add a replica or a spare host for the change, or accept the gap)"
            )


def _immutable(before: Registration, after: Registration) -> Iterator[str]:
    """immutable (module docstring): a custom resource's immutable field changes and its options do not replace it."""
    if not _custom(before) or not before.type.startswith("kubernetes:"):
        return
    api_version = str(after.inputs.get("apiVersion") or "")
    kind = _group_kind(after)[1]
    if not api_version:
        group_version = after.type.split(":")[1]
        api_version = group_version
    for path in immutable_fields.replace_on_changes(api_version, kind):
        if _get(before.inputs, path) != _get(after.inputs, path) and path not in after.replace_on_changes:
            yield f"immutable: {after.name}: {path} changes in place, which its API refuses"


def _in_use(old: Recording, removed: list[Registration]) -> Iterator[str]:
    """in use (module docstring)."""
    gone = {r.urn for r in removed}
    for policy in (r for r in removed if r.type == ARMOR):
        for user in old.resources:
            if user.type in ARMOR_USERS and user.urn in gone and not _depends(old, user, policy.urn):
                yield f"in use: {policy.name} is deleted while {user.name} (deleted too, not after it) still uses it"
        attached = [
            r.name
            for r in old.resources
            if r.type == BACKEND_POLICY_PATCH
            and (
                _get(r.inputs, "spec.default.securityPolicy") == policy.inputs.get("name")
                or _depends(old, r, policy.urn)
            )
        ]
        if attached:
            yield (
                f"in use: {policy.name} is deleted in the same `up` that detaches it ({', '.join(attached)}): GKE's "
                "Gateway controller takes it off the backend services asynchronously, and the provider's delete "
                "does not retry resourceInUseByAnotherResource"
            )


TPU_RESOURCE = "google.com/tpu"
POOL_LABEL = "tpu-serving/pool"
NODE_POOL = "gcp:container/nodePool:NodePool"


def tpu_chips(template: dict[str, Any]) -> int:
    """The TPU chips a pod (or a pod template) asks for: its containers' google.com/tpu limits (or requests)."""
    chips = 0
    for c in (template.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        chips += int(float((res.get("limits") or res.get("requests") or {}).get(TPU_RESOURCE) or 0))
    return chips


def _tpu_pods(template: dict[str, Any]) -> tuple[str, int] | None:
    """(pool, chips per pod) of a pod template requesting TPU chips on a pool; None for any other."""
    pool = ((template.get("spec") or {}).get("nodeSelector") or {}).get(POOL_LABEL)
    chips = tpu_chips(template)
    return (str(pool), chips) if pool and chips else None


def pod_groups(kind: str, spec: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(pods, their template) of a server object of `kind` at its declared size: a Deployment or StatefulSet's
    replicas (1 unset), a LeaderWorkerSet's replicas leaders and replicas x (size - 1) workers (sigs.k8s.io/lws api:
    the worker template serves the leader too when there is no leader template), a JobSet's replicated jobs'
    replicas x parallelism (sigs.k8s.io/jobset api); none for any other kind."""
    groups: list[tuple[int, dict[str, Any]]] = []
    if kind in ("Deployment", "StatefulSet"):
        groups = [(int(spec.get("replicas", 1) or 0), spec.get("template") or {})]
    elif kind == "LeaderWorkerSet":
        lwt, replicas = spec.get("leaderWorkerTemplate") or {}, int(spec.get("replicas", 1) or 0)
        size = int(lwt.get("size", 1) or 1)
        worker = lwt.get("workerTemplate") or {}
        leader = lwt.get("leaderTemplate")
        groups = [(replicas, leader), (replicas * (size - 1), worker)] if leader else [(replicas * size, worker)]
    elif kind == "JobSet":
        for job in spec.get("replicatedJobs") or []:
            job_spec = ((job.get("template") or {}).get("spec")) or {}
            pods = int(job.get("replicas", 1) or 0) * int(job_spec.get("parallelism", 1) or 1)
            groups.append((pods, job_spec.get("template") or {}))
    return groups


def server_chips(reg: Registration) -> tuple[str, int] | None:
    """(pool, TPU chips) a server object's pods hold at its declared size (pod_groups); None for an object running no
    TPU pods."""
    groups = pod_groups(_group_kind(reg)[1], reg.inputs.get("spec") or {})
    found = [(t[0], n * t[1]) for n, tpl in groups if (t := _tpu_pods(tpl)) is not None]
    if not found:
        return None
    return found[0][0], sum(c for _, c in found)


def pool_capacity(rec: Recording) -> dict[str, tuple[int, int]]:
    """pool -> (most nodes, chips per node) of the node pools labelled with it."""
    out: dict[str, tuple[int, int]] = {}
    for reg in rec.resources:
        if reg.type != NODE_POOL:
            continue
        config = reg.inputs.get("nodeConfig") or {}
        pool = (config.get("labels") or {}).get(POOL_LABEL)
        per = re.search(r"-(\d+)t$", str(config.get("machineType") or ""))
        if not pool or per is None:
            continue
        scaling = reg.inputs.get("autoscaling") or {}
        nodes = scaling.get("maxNodeCount") or scaling.get("totalMaxNodeCount") or reg.inputs.get("nodeCount")
        nodes = nodes or reg.inputs.get("initialNodeCount") or 0
        most, _ = out.get(str(pool), (0, 0))
        out[str(pool)] = (most + int(float(nodes)), int(per.group(1)))
    return out


def _capacity(old: Recording, new: Recording, related: dict[str, Registration]) -> Iterator[str]:
    """capacity (module docstring)."""
    kept = {r.urn for r in related.values()}
    need: dict[str, list[tuple[str, int, bool]]] = {}  # pool -> (server, chips, created by this up)
    for before in old.resources:
        after = related.get(before.urn)
        had = server_chips(before)
        has = server_chips(after) if after is not None else None
        if had is None:
            continue
        if after is not None and has is not None and _created_before_deleted(before, after):
            # replaced under its URN, the new object created before the old is deleted (a namespace change of a
            # server without deleteBeforeReplace): both run at once, the old at its size and the new at its own
            need.setdefault(had[0], []).append((before.name, had[1], False))
            need.setdefault(has[0], []).append((f"{after.name} (its replacement)", has[1], True))
        else:
            need.setdefault(had[0], []).append((before.name, max(had[1], has[1] if has else 0), False))
    for reg in new.resources:
        if reg.urn not in kept and (has := server_chips(reg)) is not None:
            need.setdefault(has[0], []).append((reg.name, has[1], True))
    capacity = pool_capacity(new)
    for pool, servers in sorted(need.items()):
        if pool not in capacity or not any(created for *_, created in servers):
            continue
        nodes, per_node = capacity[pool]
        chips = sum(c for _, c, _ in servers)
        if chips > nodes * per_node:
            listed = ", ".join(f"{n} ({c} chips{', created' if created else ''})" for n, c, created in servers)
            yield (
                f"capacity: pool {pool}: during the up its old and new servers run at once: {listed} = {chips} "
                f"chips ({-(-chips // per_node)} nodes of {per_node}), more than its at most {nodes} nodes hold "
                f"({nodes * per_node} chips): the new pods stay Pending until the up's timeouts. Safe procedure: "
                f"raise the pool's autoscaling.maxNodes to {-(-chips // per_node)} for this up (and lower it "
                "after), or scale the old servers to 0 first, or two ups (remove the old servers, then add the new)"
            )


def problems(old: Recording, new: Recording) -> Iterator[str]:
    """Every problem of the transition from the run `old` to the run `new` (module docstring), each Helm release
    expanded into what it installs."""
    old, new = with_charts(old), with_charts(new)
    related = matched(old, new)
    old_urns = {r.urn: r for r in old.resources}
    new_urns = {r.urn: r for r in new.resources}
    kept = {r.urn for r in related.values()}
    removed = [r for u, r in old_urns.items() if u not in related]
    added = [r for u, r in new_urns.items() if u not in kept]

    gone = {i: r for r in removed if (i := identity(r)) is not None}
    for reg in added:
        if (i := identity(reg)) is not None and i in gone:
            yield f"collision: {gone[i].name} (deleted) and {reg.name} (created) are the same object {i}"

    for urn, before in old_urns.items():
        after = related.get(urn)
        if after is not None:
            lines = _replaced(before, after)
            yield from (f"replaced: {after.name}: {line}" for line in lines)
            if any("(replaceOnChanges)" in line for line in lines) and _same_name_created_first(before, after):
                yield (
                    f"collision: {after.name} is replaced under the same name created before the old one is "
                    "deleted (replaceOnChanges without deleteBeforeReplace): a server-side apply field conflict"
                )
            yield from _immutable(before, after)
            yield from _api_immutable(before, after)
    yield from _replica_problems(old, new, related)
    yield from _gaps(new, related, old)
    yield from _in_use(old, removed)
    yield from _capacity(old, new, related)

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
