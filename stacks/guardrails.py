"""The guardrails about resources, whatever program registered them: one pure definition of each, used by the program
(stacks/pieces, the tests over every example's registered resources) and by the policy pack (policy/__main__.py,
`pulumi preview --policy-pack policy/`).

A rule reads a resource as Pulumi hands it to an analyzer: its type token, name, inputs (camelCase, as the
provider's schema names them) and its `protect` option (pulumi/pulumi sdk/proto/analyzer.proto
AnalyzerResourceOptions.protect; pulumi-policy@v1.21.0 pulumi_policy/policy.py PolicyResourceOptions.protect). A
value not known before apply is UNKNOWN: a rule never guesses it (it says nothing, or says what it cannot see).

The rules (RULES), each with an enforcement level per environment (ENFORCEMENT) and a message naming the resource,
the field and what is allowed:
- no-public-endpoint: a Service of type LoadBalancer must be internal or list source ranges; an Ingress is not one
  GKE makes an external load balancer of (kubernetes.io/ingress.class gce, or no class at all); every backend an
  HTTPRoute attached to a Gateway of an external GKE class sends to is the target of a Cloud Armor policy
  (GCPBackendPolicy, or a patch of one, with `default.securityPolicy`, in the backend's namespace); the
  GKE control plane's IP endpoint must be private or behind master authorized networks. Allowed in dev (advisory).
- pod-security-levels: every Namespace enforces a Pod Security level, pinned to a version, warning and auditing at
  restricted, and enforces exactly the strictest level its pods pass (stacks/security/pod_security.py).
- wi-bucket-grants-scoped: an object role (the basic roles editor and owner included) granted to an identity (not a
  Google-managed group) on any bucket or on a whole project, folder or organization, by any grant resource (every
  *IAMMember/Binding/Policy of the provider's storage, projects, folder and organizations modules, GRANT_TYPES),
  carries the IAM condition limiting it to one prefix (stacks/security/bucket_access.py prefix_expression); never
  to allUsers or allAuthenticatedUsers.
- prod-protected: the cluster, its node pools and buckets carry Pulumi `protect` in prod and staging
  (stacks/model/profiles.py).
- images-pinned: every container image is pinned by a tag other than `latest` or by digest; an image of the version
  matrix (stacks/facts/versions.py IMAGES) is the matrix's pin.
- no-gke-managed-objects: no object GKE installs and manages (stacks/facts/gke_managed.py MANAGED).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks import naming
from stacks.facts import catalog, gke_managed, versions
from stacks.security import bucket_access, pod_security

DEV, STAGING, PROD = "dev", "staging", "prod"
ENVIRONMENTS = (DEV, STAGING, PROD)
ADVISORY, MANDATORY, DISABLED = "advisory", "mandatory", "disabled"

PUBLIC_ENDPOINT = "no-public-endpoint"
POD_SECURITY = "pod-security-levels"
BUCKET_GRANTS = "wi-bucket-grants-scoped"
PROTECTED = "prod-protected"
IMAGES = "images-pinned"
GKE_MANAGED = "no-gke-managed-objects"
RULES = (PUBLIC_ENDPOINT, POD_SECURITY, BUCKET_GRANTS, PROTECTED, IMAGES, GKE_MANAGED)

# What each rule does in each environment: dev may open endpoints and run unpinned images (warned), and tears down
# completely (nothing protected); staging is warned about protection; everything else refuses the update.
ENFORCEMENT: dict[str, dict[str, str]] = {
    PUBLIC_ENDPOINT: {DEV: ADVISORY, STAGING: MANDATORY, PROD: MANDATORY},
    POD_SECURITY: {DEV: MANDATORY, STAGING: MANDATORY, PROD: MANDATORY},
    BUCKET_GRANTS: {DEV: MANDATORY, STAGING: MANDATORY, PROD: MANDATORY},
    PROTECTED: {DEV: DISABLED, STAGING: ADVISORY, PROD: MANDATORY},
    IMAGES: {DEV: ADVISORY, STAGING: MANDATORY, PROD: MANDATORY},
    GKE_MANAGED: {DEV: MANDATORY, STAGING: MANDATORY, PROD: MANDATORY},
}


def level(rule: str, environment: Any) -> str:
    """The rule's level in `environment`; an environment that is none of ENVIRONMENTS gets the strictest (as an
    unknown stack does in the pack). The program refuses what the pack refuses (mandatory) and warns about what it
    warns about (advisory), reading this one table."""
    if not isinstance(environment, str) or environment not in ENVIRONMENTS:
        return MANDATORY
    return ENFORCEMENT[rule][environment]


def allowed_in(rule: str) -> list[str]:
    """The environments where the rule does not refuse."""
    return [env for env in ENVIRONMENTS if ENFORCEMENT[rule][env] != MANDATORY]


DESCRIPTIONS: dict[str, str] = {
    PUBLIC_ENDPOINT: "No endpoint reachable from the internet without source ranges or Cloud Armor, outside dev.",
    POD_SECURITY: "Every namespace enforces the strictest Pod Security level its pods pass; warns/audits restricted.",
    BUCKET_GRANTS: "Object roles (on a bucket or the project) are granted to identities for a prefix only (IAM condition).",
    PROTECTED: "The cluster, its node pools and buckets are protected (Pulumi protect) in prod and staging.",
    IMAGES: "Every container image is pinned (tag other than latest, or digest); matrix images at the matrix's pin.",
    GKE_MANAGED: "No object GKE installs and manages (its CRDs, GatewayClasses, namespaces) is created or adopted.",
}


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""A value not known before apply (a computed output in a preview)."""


def is_unknown(value: Any) -> bool:
    # pulumi.output.Unknown is what the program's mocks record (tooling/harness/offline.py)
    return value is UNKNOWN or type(value).__name__ == "Unknown"


@dataclass(frozen=True)
class Resource:
    """A registered resource as an analyzer sees it."""

    type: str
    name: str
    props: Mapping[str, Any]
    protect: bool = False
    urn: str = ""


@dataclass(frozen=True)
class Violation:
    rule: str
    resource: Resource
    message: str


def environment_of(configured: Any, stack: str | None) -> str:
    """The environment whose enforcement levels apply: the stack's `tpu-serving:environment` (or the pack's
    `environment` config) when it is one (prod when it is set to something else: environment_problem); else the
    first environment the stack's name holds as a word; else prod (an unknown stack gets the strictest levels)."""
    if isinstance(configured, str) and configured in ENVIRONMENTS:
        return configured
    if environment_problem(configured):
        return PROD  # a configured value the pack does not know: the strictest, and refused (environment_problem)
    words = set(re.split(r"[^a-z0-9]+", (stack or "").lower()))
    return next((env for env in (PROD, STAGING, DEV) if env in words), PROD)


def environment_problem(configured: Any) -> str | None:
    """A configured environment that is none of ENVIRONMENTS (`production`, say): refused, never silently read as
    another (the program refuses it too: stacks/pieces/environment.py)."""
    if configured in (None, "") or (isinstance(configured, str) and configured in ENVIRONMENTS):
        return None
    return (
        f"tpu-serving:environment {configured!r} is not an environment the pack knows; allowed: "
        f"{', '.join(ENVIRONMENTS)} (set it as the stack tag or config tpu-serving:environment); until then the "
        f"strictest levels ({PROD}'s) apply"
    )


# ---- reading resources ---------------------------------------------------------------------------------------


def kind_of(resource: Resource) -> str | None:
    """The Kubernetes kind of a `kubernetes:<group>/<version>:<Kind>` resource (a `...Patch` names its object's kind)."""
    if not resource.type.startswith("kubernetes:") or resource.type.count(":") != 2:
        return None
    return resource.type.rsplit(":", 1)[1].removesuffix("Patch")


def _get(props: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(props, Mapping):
            return None
        props = props.get(key)
    return props


def object_name(resource: Resource) -> str:
    """metadata.name, or the resource's name where the provider auto-names it."""
    name = _get(resource.props, "metadata", "name")
    return name if isinstance(name, str) else resource.name


def namespace_of(resource: Resource) -> str:
    ns = _get(resource.props, "metadata", "namespace")
    return ns if isinstance(ns, str) else "default"


def label(resource: Resource) -> str:
    """How a message names the resource: its type and name, with the Kubernetes object it is."""
    kind = kind_of(resource)
    if kind and kind_of(resource) != "Namespace" and _get(resource.props, "metadata", "namespace") is not None:
        return f"{resource.type} {resource.name!r} ({kind} {namespace_of(resource)}/{object_name(resource)})"
    if kind:
        return f"{resource.type} {resource.name!r} ({kind} {object_name(resource)})"
    return f"{resource.type} {resource.name!r}"


# ---- no-public-endpoint ----------------------------------------------------------------------------------------

SERVICE = "kubernetes:core/v1:Service"
GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
BACKEND_POLICY = "kubernetes:networking.gke.io/v1:GCPBackendPolicy"
CLUSTER = "gcp:container/cluster:Cluster"
# GKE's internal passthrough Network Load Balancer for a Service of type LoadBalancer
# (https://cloud.google.com/kubernetes-engine/docs/how-to/internal-load-balancing: "networking.gke.io/load-balancer-type:
# Internal"; the older cloud.google.com/load-balancer-type annotation is still read).
INTERNAL_LB_ANNOTATIONS = ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type")
# GKE's GatewayClasses whose load balancer has an internet-facing address (gke_managed G1: "external" in the
# name; gke-l7-gxlb is the classic external Application Load Balancer; gke-l7-rilb* are internal).
EXTERNAL_GATEWAY_CLASSES = frozenset(
    name
    for row in gke_managed.MANAGED
    if row.kind == "GatewayClass"
    for name in row.names
    if "external" in name or "gxlb" in name
)


def whole_internet(cidr: str) -> bool:
    """A source range that admits every address (0.0.0.0/0, ::/0): the same as none."""
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen == 0
    except ValueError:
        return False


def service_endpoint_problem(resource: Resource) -> str | None:
    """A Service of type LoadBalancer gets an internet-facing address unless internal or limited to source ranges
    (Kubernetes ServiceSpec.loadBalancerSourceRanges, https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/)."""
    spec = _get(resource.props, "spec") or {}
    if not isinstance(spec, Mapping) or spec.get("type") != "LoadBalancer":
        return None
    annotations = _get(resource.props, "metadata", "annotations") or {}
    if any(annotations.get(key) == "Internal" for key in INTERNAL_LB_ANNOTATIONS if isinstance(annotations, Mapping)):
        return None
    ranges = spec.get("loadBalancerSourceRanges")
    if is_unknown(ranges):
        return None
    if isinstance(ranges, list) and ranges and not any(isinstance(c, str) and whole_internet(c) for c in ranges):
        return None
    return (
        f"{label(resource)}: spec.type LoadBalancer with spec.loadBalancerSourceRanges {ranges or 'unset'} is "
        f"reachable from the whole internet; allowed: the annotation {INTERNAL_LB_ANNOTATIONS[0]}: Internal, or "
        "spec.loadBalancerSourceRanges listing the clients' CIDRs (not 0.0.0.0/0)"
    )


INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"


def ingress_problem(resource: Resource) -> str | None:
    """An Ingress GKE's Ingress controller makes an external Application Load Balancer of: the annotation
    kubernetes.io/ingress.class `gce`, or neither it nor spec.ingressClassName set (GKE's table "GKE Ingress controller
    behavior", https://cloud.google.com/kubernetes-engine/docs/concepts/ingress: `gce-internal` makes an internal one;
    another class, or only ingressClassName, is left to another controller, whose Service this rule reads)."""
    if resource.type != INGRESS:
        return None
    annotations = _get(resource.props, "metadata", "annotations") or {}
    cls = annotations.get(INGRESS_CLASS_ANNOTATION) if isinstance(annotations, Mapping) else None
    class_name = _get(resource.props, "spec", "ingressClassName")
    if is_unknown(cls) or is_unknown(class_name):
        return None
    if not (cls == "gce" or (cls is None and class_name is None)):
        return None
    return (
        f"{label(resource)}: metadata.annotations {INGRESS_CLASS_ANNOTATION} {cls or 'unset'} makes GKE's Ingress "
        "controller create an external Application Load Balancer reachable from the whole internet; allowed: "
        f"{INGRESS_CLASS_ANNOTATION}: gce-internal (an internal Application Load Balancer), or the Inference Gateway "
        "with source ranges"
    )


def control_plane_open(private_endpoint: Any, authorized_cidrs: Any) -> list[str] | None:
    """Who the control plane's IP endpoint admits (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation):
    None when only listed sources reach it (a private endpoint, or master authorized networks enforced with no block
    open to every address) or it cannot be known yet; else the blocks open to every address, [] when master
    authorized networks are not enforced (`authorized_cidrs` None). The one definition the policy pack's
    no-public-endpoint and the program's cluster warning (stacks/pieces/cluster.py) read."""
    if private_endpoint is True or is_unknown(private_endpoint) or is_unknown(authorized_cidrs):
        return None
    if authorized_cidrs is None:
        return []
    open_blocks = [str(c) for c in authorized_cidrs if isinstance(c, str) and whole_internet(c)]
    return open_blocks or None


def cluster_endpoint_problem(resource: Resource) -> str | None:
    """A cluster whose control plane's IP endpoint accepts any address (control_plane_open)."""
    if resource.type != CLUSTER:
        return None
    authorized = _get(resource.props, "masterAuthorizedNetworksConfig")
    cidrs: Any = None
    if is_unknown(authorized):
        cidrs = UNKNOWN
    elif isinstance(authorized, Mapping):
        blocks = authorized.get("cidrBlocks")
        cidrs = UNKNOWN if is_unknown(blocks) else [_get(b, "cidrBlock") for b in blocks or []]
    open_blocks = control_plane_open(_get(resource.props, "privateClusterConfig", "enablePrivateEndpoint"), cidrs)
    if open_blocks is None:
        return None
    return (
        f"{label(resource)}: privateClusterConfig.enablePrivateEndpoint is not true and masterAuthorizedNetworksConfig "
        f"is {'open to ' + ', '.join(open_blocks) if open_blocks else 'unset'}: the control plane's IP endpoint accepts "
        "any address; allowed: a private endpoint, or masterAuthorizedNetworksConfig with the operators' CIDRs"
    )


HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
# A GCPBackendPolicy, whole or as a server-side-apply patch of one (pulumi-kubernetes registers a
# CustomResourcePatch as `<apiVersion>:<Kind>Patch`: pulumi/pulumi-kubernetes sdk/python/pulumi_kubernetes/
# apiextensions/CustomResourcePatch.py, the type token `kubernetes:{api_version}:{kind}Patch`).
BACKEND_POLICY_TYPES = (BACKEND_POLICY, f"{BACKEND_POLICY}Patch")
GATEWAY_API = "gateway.networking.k8s.io"
# The (group, kind) a reference without them names (kubernetes-sigs/gateway-api@v1.6.1
# config/crd/standard/gateway.networking.k8s.io_httproutes.yaml: parentRefs[] group/kind defaults, rules[].backendRefs[]
# group/kind defaults; a test reads them from the CRD); a reference's namespace defaults to the referrer's.
PARENT_DEFAULT = (GATEWAY_API, "Gateway")
BACKEND_DEFAULT = ("", "Service")


def _ref(ref: Any, namespace: str, group: str, kind: str) -> tuple[str, str, str, str] | None:
    """(namespace, group, kind, name) of a Gateway API reference with its defaults (PARENT_DEFAULT, BACKEND_DEFAULT;
    the namespace the referrer's), None when not known."""
    if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str):
        return None
    ns, grp, knd = ref.get("namespace", namespace), ref.get("group", group), ref.get("kind", kind)
    if not all(isinstance(v, str) for v in (ns, grp, knd)):
        return None
    return ns, grp, knd, ref["name"]


def armored_backends(resources: Iterable[Resource]) -> set[tuple[str, str, str, str]]:
    """The backends (namespace, group, kind, name) a Cloud Armor policy guards: the `spec.targetRef` of a
    GCPBackendPolicy (or a patch of one) with `spec.default.securityPolicy`, in the policy's own namespace (the CRD:
    targetRef.namespace "when unspecified, the local namespace is inferred. Even when policy targets a resource in a
    different namespace, it MUST only apply to traffic originating from the same namespace as the policy"; GKE:
    https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources "Configure Cloud Armor
    backend security policy", the policy targets a Service (or the InferencePool) in its namespace). A policy name
    not known before apply (the stack's own Cloud Armor policy's output) counts: never guessed."""
    out = set()
    for r in resources:
        if r.type not in BACKEND_POLICY_TYPES or _get(r.props, "spec", "default", "securityPolicy") in (None, ""):
            continue
        target = _ref(_get(r.props, "spec", "targetRef"), namespace_of(r), *BACKEND_DEFAULT)
        if target is not None and target[0] == namespace_of(r):
            out.add(target)
    return out


def gateway_backends(
    gateway_resource: Resource, resources: Iterable[Resource]
) -> dict[tuple[str, str, str, str], Resource]:
    """Each backend (namespace, group, kind, name) an HTTPRoute attached to the Gateway sends requests to, with the
    route."""
    here = (namespace_of(gateway_resource), *PARENT_DEFAULT, object_name(gateway_resource))
    out: dict[tuple[str, str, str, str], Resource] = {}
    for r in resources:
        if r.type != HTTP_ROUTE:
            continue
        parents = _get(r.props, "spec", "parentRefs") or []
        if not isinstance(parents, list) or here not in {_ref(p, namespace_of(r), *PARENT_DEFAULT) for p in parents}:
            continue
        for rule in _get(r.props, "spec", "rules") or []:
            for ref in (_get(rule, "backendRefs") or []) if isinstance(rule, Mapping) else []:
                backend = _ref(ref, namespace_of(r), *BACKEND_DEFAULT)
                if backend is not None:
                    out.setdefault(backend, r)
    return out


def gateway_problems(resources: Iterable[Resource]) -> list[tuple[Resource, str]]:
    """A Gateway of an external GKE class sends requests only to backends a Cloud Armor policy guards: each backend
    of each HTTPRoute attached to it is the target of a GCPBackendPolicy (or a patch of one) with
    `spec.default.securityPolicy` in the backend's namespace (armored_backends). A Gateway no route of the stack
    attaches to serves nothing of the stack."""
    resources = list(resources)
    armored = armored_backends(resources)
    out = []
    for r in resources:
        cls = _get(r.props, "spec", "gatewayClassName")
        if r.type != GATEWAY or cls not in EXTERNAL_GATEWAY_CLASSES:
            continue
        for (ns, group, kind, name), route in sorted(gateway_backends(r, resources).items()):
            if (ns, group, kind, name) in armored:
                continue
            out.append(
                (
                    r,
                    f"{label(r)}: spec.gatewayClassName {cls} is an internet-facing load balancer and {label(route)} "
                    f"sends requests to {kind} {ns}/{name} with no Cloud Armor policy: allowed: an internal class "
                    f"(gke-l7-rilb), or a GCPBackendPolicy in namespace {ns} with spec.targetRef {{group: "
                    f"{group!r}, kind: {kind}, name: {name}}} and spec.default.securityPolicy (a policy limiting the "
                    "source ranges)",
                )
            )
    return out


# ---- pod-security-levels ---------------------------------------------------------------------------------------

NAMESPACE = "kubernetes:core/v1:Namespace"


def namespace_label_problem(resource: Resource) -> str | None:
    """The Pod Security Admission labels every namespace carries, as the program writes them
    (pod_security.namespace_labels: enforce a level pinned to the cluster's minor; warn and audit at restricted,
    pinned the same), https://kubernetes.io/docs/concepts/security/pod-security-admission/."""
    if resource.type != NAMESPACE:
        return None
    labels = _get(resource.props, "metadata", "labels") or {}
    if is_unknown(labels) or not isinstance(labels, Mapping):
        return None
    p = pod_security.LABEL_PREFIX
    enforce, version = labels.get(f"{p}enforce"), labels.get(f"{p}enforce-version")
    minor = version[1:] if isinstance(version, str) and re.fullmatch(r"v1\.[0-9]+", version) else "1.<minor>"
    expected = pod_security.namespace_labels(enforce if enforce in pod_security.LEVELS else "restricted", minor)
    wrong = []
    if enforce not in pod_security.LEVELS:
        wrong.append(f"{p}enforce={enforce!r} (allowed: {', '.join(pod_security.LEVELS)})")
    for key, want in expected.items():
        if key != f"{p}enforce" and labels.get(key) != want:
            why = ": the cluster's minor, never latest" if key.endswith("-version") else ""
            wrong.append(f"{key}={labels.get(key)!r} (allowed: {want}{why})")
    if not wrong:
        return None
    return f"{label(resource)}: metadata.labels " + "; ".join(wrong)


# Kinds whose pods are exactly their pod templates. A custom resource whose controller adds pods of its own
# (PathwaysJob: its head pod) hides them: a namespace holding one may enforce less than its templates pass.
TEMPLATE_KINDS = frozenset(
    {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "LeaderWorkerSet", "JobSet"}
)


def namespace_level_problems(resources: Iterable[Resource]) -> list[tuple[Resource, str]]:
    """Each namespace of the stack enforces the strictest level all of its pods pass (pod_level): higher rejects
    the stack's own pods; lower admits what no pod needs (unless a controller adds pods the templates do not show)."""
    resources = list(resources)
    pods: dict[str, list[Mapping[str, Any]]] = {}
    hidden: set[str] = set()
    for r in resources:
        if kind_of(r) and r.type != NAMESPACE:
            specs = list(pod_security.pod_specs(_get(r.props, "spec") or {}))
            pods.setdefault(namespace_of(r), []).extend(specs)
            if specs and kind_of(r) not in TEMPLATE_KINDS:
                hidden.add(namespace_of(r))
    out = []
    for r in resources:
        if r.type != NAMESPACE:
            continue
        enforce = (_get(r.props, "metadata", "labels") or {}).get(f"{pod_security.LABEL_PREFIX}enforce")
        if enforce not in pod_security.LEVELS:
            continue  # namespace_label_problem says so
        specs = pods.get(object_name(r), [])
        need = min((pod_security.pod_level(s) for s in specs), key=pod_security.LEVELS.index, default=None)
        if need is None or need == enforce:
            continue
        looser = pod_security.LEVELS.index(enforce) < pod_security.LEVELS.index(need)
        if looser and object_name(r) in hidden:
            continue
        out.append(
            (
                r,
                f"{label(r)}: metadata.labels {pod_security.LABEL_PREFIX}enforce={enforce} but the strictest level "
                f"all {len(specs)} pod template(s) in namespace {object_name(r)} pass is {need}; allowed: {need}",
            )
        )
    return out


# ---- wi-bucket-grants-scoped -----------------------------------------------------------------------------------

BUCKET = "gcp:storage/bucket:Bucket"


def _grant_types() -> tuple[str, ...]:
    """Every grant resource type of the installed Google provider SDK on a bucket or on what holds buckets (a role
    granted on a project, folder or organization reaches every bucket under it:
    https://cloud.google.com/storage/docs/access-control/iam, https://cloud.google.com/iam/docs/resource-hierarchy-access-control):
    the `<module>/<resource>:<Resource>` tokens of pulumi_gcp's storage, projects, folder and organizations modules whose
    resource ends in IAMMember (one member, `member`), IAMBinding (one role's members, `members`) or IAMPolicy (a whole
    policy, `policyData`), read from the SDK's sources so that the list is complete by construction."""
    import pulumi_gcp

    root = Path(pulumi_gcp.__file__).parent
    token = re.compile(r"'(gcp:(?:storage|projects|folder|organizations)/(\w+):(\w*IAM(?:Member|Binding|Policy)))'")
    found = {
        m.group(1)
        for module in GRANT_MODULES
        for path in sorted((root / module).glob("*iam*.py"))
        for m in token.finditer(path.read_text())
        if m.group(3)[0].isupper() and m.group(2) == m.group(3)[0].lower() + m.group(3)[1:]
    }
    return tuple(sorted(found))


# the provider modules whose IAM resources grant on a bucket, or on every bucket of a project, folder or organization
GRANT_MODULES = ("storage", "projects", "folder", "organizations")
GRANT_TYPES = _grant_types()
BUCKET_IAM_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
BUCKET_IAM_BINDING = "gcp:storage/bucketIAMBinding:BucketIAMBinding"
BUCKET_IAM_POLICY = "gcp:storage/bucketIAMPolicy:BucketIAMPolicy"
PROJECT_IAM_MEMBER = "gcp:projects/iAMMember:IAMMember"
PROJECT_IAM_BINDING = "gcp:projects/iAMBinding:IAMBinding"
PROJECT_IAM_POLICY = "gcp:projects/iAMPolicy:IAMPolicy"
# the grants above the bucket: on a project, a folder or an organization
PROJECT_GRANT_TYPES = tuple(t for t in GRANT_TYPES if not t.startswith("gcp:storage/"))
# what holds the grant, by module: the input naming it, and how a message says it
GRANT_SCOPES = {
    "projects": ("project", "the project {} (every bucket in it)"),
    "folder": ("folder", "the folder {} (every bucket of every project under it)"),
    "organizations": ("orgId", "the organization {} (every bucket in it)"),
}
# Predefined roles with object access (https://cloud.google.com/storage/docs/access-control/iam-roles).
OBJECT_ROLES = frozenset(
    {
        "roles/storage.objectViewer",
        "roles/storage.objectUser",
        "roles/storage.objectCreator",
        "roles/storage.objectAdmin",
        "roles/storage.admin",
        "roles/storage.legacyObjectReader",
        "roles/storage.legacyObjectOwner",
        "roles/storage.legacyBucketReader",
        "roles/storage.legacyBucketWriter",
        "roles/storage.legacyBucketOwner",
        # managed folders' admin: objects in them (https://cloud.google.com/storage/docs/access-control/iam-roles)
        "roles/storage.folderAdmin",
        # the basic roles hold storage.objects.* on every bucket of where they are granted
        # (https://cloud.google.com/iam/docs/roles-overview#basic)
        "roles/editor",
        "roles/owner",
    }
)
# Grants to Google's own accounts are not Workload Identity: the usage/storage-log writer
# (https://cloud.google.com/storage/docs/access-logs: group cloud-storage-analytics@google.com, objectCreator).
GOOGLE_GROUPS = ("group:cloud-storage-analytics@google.com",)
# Anyone on the internet, anyone with a Google account (https://cloud.google.com/iam/docs/principal-identifiers):
# never allowed an object role, not even a read of a bucket the stack does not create.
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
_PREFIX_EXPRESSION = re.compile(r'resource\.name\.startsWith\("projects/_/buckets/([^/"]+)/objects/([^"]+/)"\)')


def prefix_of(expression: Any, bucket: Any = None) -> str | None:
    """The prefix an IAM condition limits `bucket`'s objects to (any bucket's when `bucket` is not known: None or
    UNKNOWN): the one bucket_access.prefix_expression writes, and nothing wider; None for any other expression."""
    if not isinstance(expression, str):
        return None
    found = _PREFIX_EXPRESSION.match(expression)
    if found is None or (isinstance(bucket, str) and found.group(1) != bucket):
        return None
    named, prefix = found.groups()
    return prefix if expression == bucket_access.prefix_expression(named, prefix) else None


@dataclass(frozen=True)
class Grant:
    """One role granted to members by a grant resource, where the resource says it."""

    role: Any
    members: tuple[Any, ...]
    expression: Any
    bucket: Any
    """The bucket's name (UNKNOWN before apply); None for a grant on a project, folder or organization."""
    field: str
    """Where in the resource's inputs: `role` or `policyData.bindings[<i>]`."""
    scope: str = ""
    """Where a grant above the bucket is: 'the project p (every bucket in it)'."""


def _policy_bindings(policy_data: Any) -> list[Mapping[str, Any]] | None:
    """The bindings of a `policyData` (JSON, https://cloud.google.com/iam/docs/reference/rest/v1/Policy); None when
    not known yet or not a policy."""
    if is_unknown(policy_data) or not isinstance(policy_data, str):
        return None
    try:
        bindings = json.loads(policy_data).get("bindings") or []
    except (ValueError, AttributeError):
        return None
    return [b for b in bindings if isinstance(b, Mapping)] if isinstance(bindings, list) else None


def grants_of(resource: Resource) -> list[Grant]:
    """What a grant resource (GRANT_TYPES) grants; nothing for any other resource."""
    if resource.type not in GRANT_TYPES:
        return []
    props = resource.props
    bucket = None if resource.type in PROJECT_GRANT_TYPES else props.get("bucket")
    module = resource.type.split(":")[1].split("/")[0]
    key, where = GRANT_SCOPES.get(module, ("", ""))
    scope = where.format(props.get(key) if isinstance(props.get(key), str) else "") if key else ""
    if resource.type.endswith("IAMPolicy"):
        return [
            Grant(b.get("role"), tuple(b.get("members") or ()), _get(b, "condition", "expression"), bucket,
                  f"policyData.bindings[{i}]", scope)
            for i, b in enumerate(_policy_bindings(props.get("policyData")) or [])
        ]  # fmt: skip
    members = props.get("members")
    if resource.type.endswith("IAMMember"):
        members = [props.get("member")]
    members = tuple(members) if isinstance(members, list) else (members,)
    return [Grant(props.get("role"), members, _get(props, "condition", "expression"), bucket, "role", scope)]


# What an identity may hold on a whole bucket the stack does not create: the read of a model from a user's own bucket
# (bucket_access.read_grant for grantCheckpointRead: objectViewer, and legacyBucketReader for storage.buckets.get),
# which may lack the uniform bucket-level access an IAM condition needs. Never on the stack's own buckets, never a
# role that writes, never project-wide.
OTHER_BUCKET_READ_ROLES = frozenset({bucket_access.OBJECT_VIEWER, bucket_access.LEGACY_BUCKET_READER})


def grant_problem(resource: Resource, grant: Grant, stack_buckets: frozenset[str] = frozenset()) -> str | None:
    """An object role granted to an identity (not a Google-managed group) carries the IAM condition limiting it to
    one prefix of one bucket (bucket_access.prefix_expression), on the bucket or (a project-level grant) anywhere;
    except a read role (OTHER_BUCKET_READ_ROLES) on a bucket other than the stack's (`stack_buckets`), or whose name
    is not known yet (never guessed)."""
    identities = [m for m in grant.members if m not in GOOGLE_GROUPS]
    public = [m for m in identities if m in PUBLIC_MEMBERS]
    if grant.role not in OBJECT_ROLES or not identities or (is_unknown(grant.expression) and not public):
        return None
    if public:
        return (
            f"{label(resource)}: {grant.field} {grant.role} for {', '.join(public)} makes objects public; allowed: "
            "an object role for identities only (never allUsers or allAuthenticatedUsers), limited to one prefix"
        )
    if prefix_of(grant.expression, grant.bucket) is not None:
        return None
    other_bucket = grant.bucket is not None and (is_unknown(grant.bucket) or grant.bucket not in stack_buckets)
    if other_bucket and grant.role in OTHER_BUCKET_READ_ROLES:
        return None
    who = ", ".join(m if isinstance(m, str) else "an identity" for m in identities)
    where = (grant.scope or "the project (every bucket in it)") if grant.bucket is None else f"bucket {grant.bucket}"
    if grant.bucket in stack_buckets:
        where = f"the stack's bucket {grant.bucket}"
    bucket = grant.bucket if isinstance(grant.bucket, str) else "<bucket>"
    return (
        f"{label(resource)}: {grant.field} {grant.role} on {where} for {who} with condition.expression "
        f"{grant.expression!r}; allowed: a grant on the bucket with a condition limiting it to one prefix, "
        f"{bucket_access.prefix_expression(bucket, '<prefix>/')!r} (stacks/security/bucket_access.py); on a bucket "
        f"the stack does not create, also {' or '.join(sorted(OTHER_BUCKET_READ_ROLES))} on the whole bucket"
    )


def bucket_grant_problems(resources: Iterable[Resource]) -> list[tuple[Resource, str]]:
    """Every object-role grant, on any bucket or the project, by any grant resource (grants_of), is prefix-scoped
    (grant_problem)."""
    resources = list(resources)
    stack_buckets = frozenset(n for r in resources if r.type == BUCKET and isinstance(n := r.props.get("name"), str))
    return [(r, why) for r in resources for g in grants_of(r) if (why := grant_problem(r, g, stack_buckets))]


# ---- prod-protected --------------------------------------------------------------------------------------------

NODE_POOL = "gcp:container/nodePool:NodePool"
PROTECTED_TYPES = (CLUSTER, NODE_POOL, BUCKET)
# the environments prod-protected applies in: their profiles protect (stacks/model/profiles.py PROFILES reads this)
PROTECTED_ENVIRONMENTS = tuple(env for env in ENVIRONMENTS if ENFORCEMENT[PROTECTED][env] != DISABLED)
# A node pool holds TPUs when its machine type is one of the TPU catalog's (stacks/facts/catalog.py): those take
# long to get back (capacity); a CPU pool is recreated in minutes and stays unprotected.
TPU_MACHINE_TYPES = frozenset(mt for gen in catalog.GENERATIONS.values() for mt in gen.host_resources)


def must_protect(resource: Resource) -> bool:
    if resource.type == NODE_POOL:
        machine = _get(resource.props, "nodeConfig", "machineType")
        return is_unknown(machine) or machine in TPU_MACHINE_TYPES
    return resource.type in PROTECTED_TYPES


def protect_problem(resource: Resource, environment: str) -> str | None:
    if environment not in PROTECTED_ENVIRONMENTS or resource.protect or not must_protect(resource):
        return None
    return (
        f"{label(resource)}: resource option protect is false in {environment}; allowed: protect=True (a delete or "
        "replacement is refused until a reviewed `pulumi state unprotect`)"
    )


# ---- images-pinned ---------------------------------------------------------------------------------------------


def _repository(image: str) -> str:
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name[: len(name) - len(last) + last.index(":")] if ":" in last else name


MATRIX_IMAGES: dict[str, str] = {_repository(pin): pin for pin in versions.IMAGES.values()}


def image_problem(image: str, matrix: Mapping[str, str] = MATRIX_IMAGES) -> str | None:
    """Why `image` is not pinned: not a reference, no tag nor digest, the tag `latest`, or an image of the version
    matrix at another pin. None when pinned."""
    why = naming.image_reference_problem(image)
    if why:
        return why
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else None
    if not digest and tag in (None, "latest"):
        return (
            f"{image!r} is not pinned (tag {tag or 'none, which pulls latest'}): give a version tag or @sha256 digest"
        )
    pin = matrix.get(_repository(image))
    if pin is not None and image != pin and image != pin.split("@", 1)[0]:
        return f"{image!r} is not the version matrix's pin {pin!r} (stacks/facts/versions.py IMAGES)"
    return None


def image_problems(resource: Resource, matrix: Mapping[str, str] = MATRIX_IMAGES) -> list[str]:
    if not kind_of(resource):
        return []
    out = []
    for where, _, spec in pod_security.pod_templates(_get(resource.props, "spec") or {}, "spec"):
        for group in ("initContainers", "containers"):
            for i, container in enumerate(spec.get(group) or []):
                image = container.get("image") if isinstance(container, Mapping) else None
                if not isinstance(image, str):
                    continue
                why = image_problem(image, matrix)
                if why:
                    out.append(f"{label(resource)}: {where}.{group}[{i}].image: {why}")
    return out


# ---- no-gke-managed-objects ------------------------------------------------------------------------------------


def gke_managed_problem(resource: Resource) -> str | None:
    kind = kind_of(resource)
    if kind is None or (kind, object_name(resource)) not in gke_managed.never_created():
        return None
    return (
        f"{label(resource)}: {kind} {object_name(resource)} is installed and managed by GKE (stacks/facts/"
        "gke_managed.py); allowed: rely on GKE's object, never create, patch or adopt it (a destroy would delete it)"
    )


# ---- all of them -----------------------------------------------------------------------------------------------


def resource_violations(resource: Resource, environment: str) -> list[Violation]:
    """The per-resource rules (a resource validation policy each)."""
    found: list[tuple[str, str | None]] = [
        (PUBLIC_ENDPOINT, service_endpoint_problem(resource)),
        (PUBLIC_ENDPOINT, ingress_problem(resource)),
        (PUBLIC_ENDPOINT, cluster_endpoint_problem(resource)),
        (POD_SECURITY, namespace_label_problem(resource)),
        (PROTECTED, protect_problem(resource, environment)),
        *((IMAGES, why) for why in image_problems(resource)),
        (GKE_MANAGED, gke_managed_problem(resource)),
    ]
    return [Violation(rule, resource, why) for rule, why in found if why]


def stack_violations(resources: Iterable[Resource]) -> list[Violation]:
    """The rules over the whole stack (a stack validation policy each)."""
    resources = list(resources)
    return [
        *(Violation(PUBLIC_ENDPOINT, r, why) for r, why in gateway_problems(resources)),
        *(Violation(POD_SECURITY, r, why) for r, why in namespace_level_problems(resources)),
        *(Violation(BUCKET_GRANTS, r, why) for r, why in bucket_grant_problems(resources)),
    ]


def violations(resources: Iterable[Resource], environment: str) -> list[Violation]:
    """Every violation of every rule, the disabled ones of `environment` left out."""
    resources = list(resources)
    found = [v for r in resources for v in resource_violations(r, environment)] + stack_violations(resources)
    return [v for v in found if ENFORCEMENT[v.rule][environment] != DISABLED]
