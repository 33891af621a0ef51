"""The naming and value rules of the Kubernetes and Google Cloud APIs, checked over a recording, offline.

JSON Schemas (tooling/oracles/schemas.py) check structure and types; they do not check what the API servers enforce in
code: name formats and lengths, label values, unique ports, int32 ranges, image references, the names JobSet
derives. This module does, for every Kubernetes object and every Google Cloud resource a stack registers, so
`render --check`, the shipped-stack tests and the config fuzzer hold a render to what `pulumi up` would meet.

Sources (each rule below names its own):
- Kubernetes names and labels: kubernetes/apimachinery pkg/util/validation/validation.go (IsDNS1123Label,
  IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName, IsValidLabelValue, IsValidPortName),
  https://github.com/kubernetes/apimachinery/blob/master/pkg/util/validation/validation.go
- Kubernetes object rules: kubernetes/kubernetes pkg/apis/core/validation/validation.go (Service ports unique,
  container names unique, port names unique per pod) and pkg/apis/autoscaling/validation/validation.go.
- Image references: the OCI distribution reference grammar, distribution/reference reference.go
  (https://github.com/distribution/reference/blob/main/reference.go).
- Google Cloud names: the API reference of each resource (cited at its rule).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from stacks import naming
from tooling.harness.offline import UNKNOWN, Recording

INT32_MAX = 2**31 - 1

# ---- Kubernetes (apimachinery pkg/util/validation/validation.go) ---------------------------------------------

DNS1123_LABEL = naming.DNS1123_LABEL  # DNS1123LabelMaxLength = 63
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")  # 253
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")  # DNS1035LabelMaxLength = 63
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # qualifiedNameMaxLength = 63
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")  # LabelValueMaxLength = 63
IANA_SVC_NAME = re.compile(r"[-a-z0-9]+")  # IsValidPortName: <= 15, a letter, no "--", no leading/trailing "-"

# ---- Google Cloud ---------------------------------------------------------------------------------------

# GKE Cluster.name and NodePool.name: "lowercase letters, numbers, and hyphens; start with a letter, end with a
# number or a letter; 40 characters at most" (https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/
# projects.locations.clusters#Cluster, ...clusters.nodePools#NodePool).
GKE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?")
# Compute Engine resource names (networks, subnetworks, secondary ranges, routers, NATs): RFC 1035, 1-63
# characters, "[a-z]([-a-z0-9]*[a-z0-9])?" (https://cloud.google.com/compute/docs/reference/rest/v1/subnetworks,
# SubnetworkSecondaryRange.rangeName: "must be 1-63 characters long, and comply with RFC1035 ... unique within the
# subnetwork").
COMPUTE_NAME = re.compile(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?")
# IAM ServiceAccount: accountId "6-30 characters long, and match the regular expression [a-z]([-a-z0-9]*[a-z0-9])";
# displayName "The maximum length is 100 UTF-8 bytes"; description 256 UTF-8 bytes
# (https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts).
SERVICE_ACCOUNT_ID = re.compile(r"[a-z]([-a-z0-9]{4,28}[a-z0-9])")
SERVICE_ACCOUNT_DISPLAY_NAME_BYTES = 100
SERVICE_ACCOUNT_DESCRIPTION_BYTES = 256
# Cloud Storage bucket names: 3-63 characters, lowercase letters, digits, '-', '_' (and '.' with domain proof),
# starting and ending with a letter or digit, no "goog" prefix and no "google"
# (https://cloud.google.com/storage/docs/buckets#naming).
BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]")
# Resource labels: keys start with a lowercase letter; keys and values up to 63 characters of lowercase letters,
# digits, '_' and '-'; at most 64 labels (https://cloud.google.com/resource-manager/docs/labels-overview).
GCP_LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
GCP_LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
GCP_LABELS_MAX = 64


def _ok(pattern: re.Pattern[str], value: Any, max_len: int | None = None) -> bool:
    return isinstance(value, str) and (max_len is None or len(value) <= max_len) and bool(pattern.fullmatch(value))


def image_reference_ok(value: Any) -> bool:
    """The OCI distribution reference grammar, as the program checks image overrides (stacks.naming)."""
    return isinstance(value, str) and naming.image_reference_problem(value) is None


def port_name_ok(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 15
        and bool(IANA_SVC_NAME.fullmatch(value))
        and re.search(r"[a-z]", value) is not None
        and "--" not in value
        and not value.startswith("-")
        and not value.endswith("-")
    )


def label_key_ok(key: Any) -> bool:
    """IsQualifiedName: an optional DNS-1123 subdomain prefix (253) and '/', then a name of 63 at most."""
    if not isinstance(key, str):
        return False
    prefix, _, name = key.rpartition("/")
    if "/" in key and not _ok(DNS1123_SUBDOMAIN, prefix, 253):
        return False
    return _ok(QUALIFIED_NAME, name, 63)


# ---- Kubernetes objects ---------------------------------------------------------------------------------

# Kinds whose metadata.name is a DNS-1035 label (Service: ValidateServiceName), a DNS-1123 label (Namespace) or a
# path segment (RBAC kinds: ValidateRBACName = path.IsValidPathSegmentName, no '/' or '%', not '.' or '..');
# the rest are DNS-1123 subdomains (NameIsDNSSubdomain).
PATH_SEGMENT = re.compile(r"(?!\.\.?$)[^/%]+")
NAME_RULES: dict[str, tuple[re.Pattern[str], int, str]] = {
    "Service": (DNS1035_LABEL, 63, "a DNS-1035 label"),
    "Namespace": (DNS1123_LABEL, 63, "a DNS-1123 label"),
    **{k: (PATH_SEGMENT, 253, "a path segment") for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")},
}
SUBDOMAIN = (DNS1123_SUBDOMAIN, 253, "a DNS-1123 subdomain")
# int64 fields among what the stack sends; every other integer of a built-in object is an int32.
INT64_KEYS = {"activeDeadlineSeconds", "terminationGracePeriodSeconds", "runAsUser", "runAsGroup", "fsGroup"}
# JobSet's webhook refuses a JobSet whose longest derived Job or pod name (with the pod's random suffix) is not a
# DNS-1035 label of 63 at most: stacks/naming.py jobset_longest_names (kubernetes-sigs/jobset@v0.10.1
# pkg/webhooks/jobset_webhook.go ValidateCreate).


def _labels(where: str, labels: Any, errors: list[str]) -> None:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        if not label_key_ok(key):
            errors.append(f"{where}: label key {key!r} is not a qualified name")
        if not _ok(LABEL_VALUE, value, 63):
            errors.append(f"{where}: label {key}={value!r} is not a valid label value (63 characters at most)")


def _ints(where: str, node: Any, errors: list[str], key: str = "") -> None:
    """Integers within int32 (int64 for INT64_KEYS): the Kubernetes and Google APIs' integer fields."""
    if isinstance(node, bool):
        return
    if isinstance(node, float) and node.is_integer():
        node = int(node)  # mocks deliver numbers as floats
    if isinstance(node, int):
        limit = 2**63 - 1 if key in INT64_KEYS else INT32_MAX
        if not -limit - 1 <= node <= limit:
            errors.append(f"{where}: {node} is outside the {'int64' if limit > INT32_MAX else 'int32'} range")
    elif isinstance(node, dict):
        for k, v in node.items():
            _ints(f"{where}.{k}".lstrip("."), v, errors, k)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _ints(f"{where}[{i}]", v, errors, key)


def _pod_spec(where: str, spec: Any, errors: list[str]) -> None:
    if not isinstance(spec, dict):
        return
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    names: set[str] = set()
    port_names: set[str] = set()
    for c in containers:
        cname = c.get("name")
        if not _ok(DNS1123_LABEL, cname, 63):
            errors.append(f"{where}: container name {cname!r} is not a DNS-1123 label")
        if cname in names:
            errors.append(f"{where}: container name {cname!r} is used twice")
        names.add(cname)
        image = c.get("image")
        if image != UNKNOWN and not image_reference_ok(image):
            errors.append(f"{where}: container {cname!r} image {image!r} is not a valid image reference")
        for p in c.get("ports") or []:
            port = p.get("containerPort")
            if not isinstance(port, int | float) or not 1 <= port <= 65535:
                errors.append(f"{where}: container {cname!r} port {port!r} is not in 1-65535")
            if "name" in p:
                if not port_name_ok(p["name"]):
                    errors.append(f"{where}: port name {p['name']!r} is not an IANA service name (15 characters)")
                if p["name"] in port_names:
                    errors.append(f"{where}: port name {p['name']!r} is used twice in the pod")
                port_names.add(p["name"])


def _pod_templates(obj: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    """(where, pod template) of the workload kinds the stack creates, built-in and custom."""
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        yield "spec.template", spec.get("template")
    elif kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            yield (
                f"spec.replicatedJobs[{i}].template.spec.template",
                (((rj.get("template") or {}).get("spec") or {}).get("template")),
            )
    elif kind == "LeaderWorkerSet":
        lwt = spec.get("leaderWorkerTemplate") or {}
        for key in ("leaderTemplate", "workerTemplate"):
            if key in lwt:
                yield f"spec.leaderWorkerTemplate.{key}", lwt[key]


def _jobset_names(obj: dict[str, Any], errors: list[str]) -> None:
    name = obj["metadata"].get("name", "")
    for rj in (obj.get("spec") or {}).get("replicatedJobs") or []:
        replicas = int(rj.get("replicas", 1))
        job_spec = (rj.get("template") or {}).get("spec") or {}
        job, pod = naming.jobset_longest_names(name, rj.get("name", ""), replicas, int(job_spec.get("completions", 1)))
        # the pod name is checked for an Indexed Job with completions (JobSet's defaulting makes every Job Indexed)
        derived = [("Job", job)] + ([("pod", pod)] if "completions" in job_spec else [])
        for what, text in derived:
            if not _ok(DNS1035_LABEL, text, 63):
                errors.append(f"spec.replicatedJobs: derived {what} {text!r} is not a DNS-1035 label of 63 at most")


def _service(obj: dict[str, Any], errors: list[str]) -> None:
    ports = (obj.get("spec") or {}).get("ports") or []
    seen: set[tuple[Any, Any]] = set()
    names: set[Any] = set()
    for p in ports:
        key = (p.get("port"), p.get("protocol", "TCP"))
        if key in seen:
            errors.append(f"spec.ports: port {key[0]}/{key[1]} is used twice")
        seen.add(key)
        if len(ports) > 1:
            if not port_name_ok(p.get("name")):
                errors.append(f"spec.ports: name {p.get('name')!r} is required with several ports (IANA name)")
            if p.get("name") in names:
                errors.append(f"spec.ports: name {p.get('name')!r} is used twice")
            names.add(p.get("name"))
        for field in ("port", "targetPort"):
            value = p.get(field)
            if isinstance(value, int | float) and not 1 <= value <= 65535:
                errors.append(f"spec.ports.{field}: {value} is not in 1-65535")


def _hpa(obj: dict[str, Any], errors: list[str]) -> None:
    """pkg/apis/autoscaling/validation/validation.go: minReplicas >= 1 (unless scale-to-zero), max >= min,
    targets > 0, periodSeconds in 1..1800, stabilizationWindowSeconds in 0..3600, policy values > 0."""
    spec = obj.get("spec") or {}
    lo, hi = spec.get("minReplicas", 1), spec.get("maxReplicas")
    if not isinstance(lo, int | float) or lo < 1 or not isinstance(hi, int | float) or hi < lo:
        errors.append(f"spec: minReplicas {lo!r} / maxReplicas {hi!r}: need 1 <= minReplicas <= maxReplicas")
    for i, metric in enumerate(spec.get("metrics") or []):
        target = ((metric.get(metric.get("type", "").lower() or "x") or {}).get("target")) or {}
        for key in ("averageValue", "value", "averageUtilization"):
            if key in target and _quantity_le_zero(target[key]):
                errors.append(f"spec.metrics[{i}].target.{key}: {target[key]!r} must be greater than 0")
    for direction, rules in (spec.get("behavior") or {}).items():
        if not isinstance(rules, dict):
            continue
        window = rules.get("stabilizationWindowSeconds")
        if window is not None and not 0 <= window <= 3600:
            errors.append(f"spec.behavior.{direction}.stabilizationWindowSeconds: {window} is not in 0..3600")
        for j, policy in enumerate(rules.get("policies") or []):
            if not 1 <= policy.get("periodSeconds", 0) <= 1800:
                errors.append(f"spec.behavior.{direction}.policies[{j}].periodSeconds: not in 1..1800")
            if not policy.get("value", 0) > 0:
                errors.append(f"spec.behavior.{direction}.policies[{j}].value: must be greater than 0")


def _quantity_le_zero(value: Any) -> bool:
    if isinstance(value, int | float):
        return value <= 0
    match = re.match(r"^([+-]?[0-9.]+)", str(value))
    return not match or float(match.group(1)) <= 0


def object_errors(obj: dict[str, Any]) -> list[str]:
    """What the API server would refuse in one Kubernetes object, beyond its JSON Schema."""
    errors: list[str] = []
    meta = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    pattern, max_len, what = NAME_RULES.get(kind, SUBDOMAIN)
    if not _ok(pattern, meta.get("name"), max_len):
        errors.append(f"metadata.name: {meta.get('name')!r} is not {what} of {max_len} characters at most")
    if "namespace" in meta and not _ok(DNS1123_LABEL, meta["namespace"], 63):
        errors.append(f"metadata.namespace: {meta['namespace']!r} is not a DNS-1123 label")
    _labels("metadata.labels", meta.get("labels"), errors)
    for where, template in _pod_templates(obj):
        if isinstance(template, dict):
            _labels(f"{where}.metadata.labels", (template.get("metadata") or {}).get("labels"), errors)
            _pod_spec(f"{where}.spec", template.get("spec"), errors)
    if kind == "Service":
        _service(obj, errors)
    elif kind == "HorizontalPodAutoscaler":
        _hpa(obj, errors)
    elif kind == "JobSet":
        _jobset_names(obj, errors)
    _ints("", {k: v for k, v in obj.items() if k != "metadata"}, errors)
    return errors


def kubernetes_errors(objects: list[dict[str, Any]]) -> list[str]:
    """Per-object rules, and two objects of one kind, namespace and name (the second create would fail)."""
    out: list[str] = []
    seen: dict[tuple[str, str, str], int] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        ident = f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}"
        out.extend(f"{ident}: {e}" for e in object_errors(obj))
        key = (f"{obj.get('apiVersion')}/{obj.get('kind')}", str(meta.get("namespace", "")), str(meta.get("name")))
        seen[key] = seen.get(key, 0) + 1
    out.extend(f"{k[0]} {k[1]}/{k[2]}: {n} objects of this name" for k, n in seen.items() if n > 1)
    return out


# ---- Google Cloud resources ---------------------------------------------------------------------------------

# type -> input -> (pattern, max length or None, what)
GCP_NAMES: dict[str, dict[str, tuple[re.Pattern[str], str]]] = {
    "gcp:container/cluster:Cluster": {"name": (GKE_NAME, "a GKE name (RFC 1035, 40 characters)")},
    "gcp:container/nodePool:NodePool": {"name": (GKE_NAME, "a GKE node pool name (RFC 1035, 40 characters)")},
    "gcp:serviceaccount/account:Account": {"accountId": (SERVICE_ACCOUNT_ID, "a service account id (6-30)")},
    "gcp:storage/bucket:Bucket": {"name": (BUCKET_NAME, "a bucket name (3-63)")},
    "gcp:compute/network:Network": {"name": (COMPUTE_NAME, "a Compute Engine name (RFC 1035, 63)")},
    "gcp:compute/subnetwork:Subnetwork": {"name": (COMPUTE_NAME, "a Compute Engine name (RFC 1035, 63)")},
    "gcp:compute/router:Router": {"name": (COMPUTE_NAME, "a Compute Engine name (RFC 1035, 63)")},
    "gcp:compute/routerNat:RouterNat": {"name": (COMPUTE_NAME, "a Compute Engine name (RFC 1035, 63)")},
}
LABEL_INPUTS = ("labels", "resourceLabels")
# Inputs named like resource labels that are not: a notification channel's `labels` are its configuration (monitoring
# v3 NotificationChannel.labels "Configuration fields that define the channel", e.g. email_address; its resource
# labels are userLabels, https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.notificationChannels).
NOT_LABELS = {"gcp:monitoring/notificationChannel:NotificationChannel": {"labels"}}
USER_LABELS = {"gcp:monitoring/notificationChannel:NotificationChannel": ("userLabels",)}


def _empty_strings(where: str, node: Any, errors: list[str]) -> None:
    """An empty string sent to a Google API field is at best dropped (a perpetual diff), at worst refused."""
    if node == "":
        errors.append(f"{where}: empty string")
    elif isinstance(node, dict):
        for k, v in node.items():
            _empty_strings(f"{where}.{k}", v, errors)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _empty_strings(f"{where}[{i}]", v, errors)


def _gcp_labels(where: str, labels: Any, errors: list[str]) -> None:
    if not isinstance(labels, dict):
        return
    if len(labels) > GCP_LABELS_MAX:
        errors.append(f"{where}: {len(labels)} labels, at most {GCP_LABELS_MAX}")
    for key, value in labels.items():
        if not _ok(GCP_LABEL_KEY, key) or not _ok(GCP_LABEL_VALUE, value):
            errors.append(f"{where}: label {key}={value!r} is not a Google Cloud label")


def gcp_resource_errors(type_: str, inputs: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    for key, (pattern, what) in GCP_NAMES.get(type_, {}).items():
        value = inputs.get(key)
        if value not in (None, UNKNOWN) and not _ok(pattern, value):
            errors.append(f"{key}: {value!r} is not {what}")
    if type_ == "gcp:storage/bucket:Bucket" and isinstance(inputs.get("name"), str):
        name = inputs["name"]
        if name.startswith("goog") or "google" in name:
            errors.append(f"name: {name!r} starts with 'goog' or contains 'google'")
    if type_ == "gcp:serviceaccount/account:Account":
        for key, limit in (
            ("displayName", SERVICE_ACCOUNT_DISPLAY_NAME_BYTES),
            ("description", SERVICE_ACCOUNT_DESCRIPTION_BYTES),
        ):
            value = inputs.get(key)
            if isinstance(value, str) and len(value.encode()) > limit:
                errors.append(f"{key}: {len(value.encode())} bytes, at most {limit}")
    if type_ == "gcp:compute/subnetwork:Subnetwork":
        ranges = [r.get("rangeName") for r in inputs.get("secondaryIpRanges") or []]
        for name in ranges:
            if not _ok(COMPUTE_NAME, name):
                errors.append(f"secondaryIpRanges: rangeName {name!r} is not RFC 1035 (63 characters)")
        if len(set(ranges)) != len(ranges):
            errors.append(f"secondaryIpRanges: range names {ranges} are not unique within the subnetwork")
    if type_ == "gcp:container/nodePool:NodePool":
        nc = inputs.get("nodeConfig") or {}
        _gcp_labels("nodeConfig.resourceLabels", nc.get("resourceLabels"), errors)
    for key in LABEL_INPUTS + USER_LABELS.get(type_, ()):
        if key not in NOT_LABELS.get(type_, set()):
            _gcp_labels(key, inputs.get(key), errors)
    _empty_strings("", inputs, errors)
    _ints("", inputs, errors)
    return errors


def gcp_errors(recording: Recording) -> list[str]:
    """Per-resource rules, and two resources of one type with one API name (the second create would fail)."""
    from tooling.harness.k8s_objects import plain

    out: list[str] = []
    seen: dict[tuple[str, str, str], list[str]] = {}
    for reg in recording.resources:
        if not reg.type.startswith("gcp:") or not reg.custom:
            continue
        inputs = plain(reg.inputs, mask_secrets=False)
        out.extend(f"{reg.type} {reg.name}: {e}" for e in gcp_resource_errors(reg.type, inputs))
        api_name = inputs.get("name") or inputs.get("accountId")
        if isinstance(api_name, str) and api_name != UNKNOWN:
            scope = str(inputs.get("cluster", "")) if reg.type == "gcp:container/nodePool:NodePool" else ""
            seen.setdefault((reg.type, scope, api_name), []).append(reg.name)
    out.extend(
        f"{t} {n!r}: {len(r)} resources of this name ({', '.join(r)})" for (t, _, n), r in seen.items() if len(r) > 1
    )
    return out
