"""Names derived from the stack: one rule per name, so nothing is typed twice and every limit is met.

Google Cloud limits: GKE cluster and node pool names 40 characters, service account ids 6-30, bucket names
3-63, label keys and values 63. A name that would be too long keeps its start and gets a short stable hash
of the whole, so two long names that share a prefix still differ.
"""

from __future__ import annotations

import hashlib
import re

CLUSTER_NAME_MAX = 40
NODE_POOL_NAME_MAX = 40
SERVICE_ACCOUNT_ID_MIN, SERVICE_ACCOUNT_ID_MAX = 6, 30
BUCKET_NAME_MAX = 63
LABEL_MAX = 63

SERVICE_ACCOUNT_DISPLAY_NAME_BYTES = 100
SERVICE_ACCOUNT_DESCRIPTION_BYTES = 256
COMPUTE_NAME_MAX = 63
DNS_LABEL_MAX = 63

# Always used with fullmatch (re.match with "$" accepts a trailing newline).
RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
# Google Cloud resource labels: https://cloud.google.com/resource-manager/docs/labels-overview#requirements
LABEL_VALUE = re.compile(r"[a-z0-9_-]{0,63}")
LABEL_KEY = re.compile(r"[a-z][a-z0-9_-]{0,62}")
# Kubernetes: a DNS-1123 label (namespaces, container names, JobSet-derived Job names), as
# kubernetes/apimachinery pkg/util/validation/validation.go (DNS1123LabelFmt, DNS1123LabelMaxLength = 63).
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
# OCI image reference grammar, distribution/reference reference.go (domain, path components, tag, digest).
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = re.compile(
    rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)
IMAGE_NAME_MAX = 255  # distribution/reference NameTotalLengthMax (domain and path)

# The GKE name of the cluster's CPU system pool (components/cluster.py); no TPU pool may derive it.
SYSTEM_NODE_POOL = "system"
# Node label of the CPU system pool; controllers and adapters select it so they never land on TPU nodes.
ROLE_LABEL = "tpu-serving/role"
SYSTEM_POOL_SELECTOR = {ROLE_LABEL: "system"}
# Node label of a node pool the stack provisions for one workload (e.g. a Pathways head pool).
WORKLOAD_LABEL = "tpu-serving/workload"

# Node labels of TPU nodes: the configured pool, and the slice index within it.
POOL_LABEL = "tpu-serving/pool"
SLICE_LABEL = "tpu-serving/slice"

# Set by the API server on every namespace (Kubernetes >= 1.22): how a selector names namespaces.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Labels on every Kubernetes object the stack creates.
# Namespaces every cluster has that a workload may use: the stack never creates (or deletes) them.
PREEXISTING_NAMESPACES = frozenset({"default"})
MANAGED_BY_LABELS = {"app.kubernetes.io/managed-by": "pulumi", "app.kubernetes.io/part-of": "tpu-serving"}

# Objects below this prefix in the stack bucket are Pathways scratch data; the bucket expires them.
PATHWAYS_SCRATCH_PREFIX = "pathways/"


# What JobSet's webhook checks of the names it will derive, at the pinned tags (kubernetes-sigs/jobset@v0.10.1 and
# @v0.12.0: pkg/webhooks/jobset_webhook.go ValidateCreate, pkg/util/placement/placement.go GenJobName/GenPodName):
# the last Job `<jobset>-<replicatedJob>-<replicas-1>` and, for an Indexed Job (its defaulting webhook makes every
# Job Indexed), the last pod `<jobset>-<replicatedJob>-<replicas-1>-<completions-1>` plus the Job controller's
# random suffix, which it counts as "-abcde", must each be a DNS-1035 label of at most 63 characters.
JOBSET_POD_SUFFIX = "-abcde"


def jobset_longest_names(jobset: str, replicated_job: str, replicas: int, completions: int) -> tuple[str, str]:
    """(the longest Job name, the longest pod name with its 6-character suffix) JobSet's webhook checks."""
    job = f"{jobset}-{replicated_job}-{max(replicas - 1, 0)}"
    return job, f"{job}-{max(completions - 1, 0)}{JOBSET_POD_SUFFIX}"


def short_hash(text: str, length: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def slug(text: str) -> str:
    """Lowercase, with runs of anything but [a-z0-9] turned into one hyphen."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def fit(name: str, max_len: int, *, sep: str = "-", hashed: str | None = None, digest: int = 6) -> str:
    """`name` when it fits, else its start (no trailing hyphen), `sep` and a hash (`digest` characters) of `hashed`,
    by default of the whole name: `max_len` characters at most."""
    if len(name) <= max_len:
        return name
    head = name[: max_len - digest - len(sep)].rstrip("-")
    return f"{head}{sep}{short_hash(name if hashed is None else hashed, digest)}"


def image_reference_problem(image: str) -> str | None:
    """Why `image` is not an image reference a kubelet can pull, or None."""
    if not IMAGE_REFERENCE.fullmatch(image):
        return (
            f"{image!r} is not an image reference: [registry/]path[:tag][@sha256:digest], lowercase path, "
            "no spaces, e.g. us-docker.pkg.dev/my-project/repo/server:v1"
        )
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last) + last.index(":")]
    if len(name) > IMAGE_NAME_MAX:
        return f"{image!r} is not an image reference: the name is longer than {IMAGE_NAME_MAX} characters"
    return None


def fit_bytes(text: str, max_bytes: int) -> str:
    """`text` when its UTF-8 form fits `max_bytes`, else a start of it and a hash of the whole."""
    if len(text.encode()) <= max_bytes:
        return text
    head = text.encode()[: max_bytes - 7].decode(errors="ignore")
    return f"{head}~{short_hash(text)}"


def service_account_display_name(text: str) -> str:
    """IAM ServiceAccount.displayName holds 100 UTF-8 bytes at most
    (https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts)."""
    return fit_bytes(text, SERVICE_ACCOUNT_DISPLAY_NAME_BYTES)


def default_cluster_name(pulumi_project: str, stack: str) -> str:
    return fit(slug(f"{pulumi_project}-{stack}"), CLUSTER_NAME_MAX)


def default_bucket_name(gcp_project: str, pulumi_project: str, stack: str) -> str:
    """Globally unique in practice: GCP project ids are unique, and the stack makes it unique within one.

    GCS refuses names containing "google" (or close misspellings) or starting with "goog", so a stack named
    after it gets "gcp" instead.
    """
    name = slug(f"{gcp_project}-{pulumi_project}-{stack}").replace("google", "gcp")
    if name.startswith("goog"):
        name = f"tps-{name}"
    return fit(name, BUCKET_NAME_MAX)


def access_log_bucket_name(bucket_name: str) -> str:
    """The bucket that receives `bucket_name`'s usage and storage logs: `<bucket>-logs`, within 63 characters."""
    return fit(f"{bucket_name}-logs", BUCKET_NAME_MAX)


def node_service_account_id(cluster_name: str) -> str:
    return fit(f"{cluster_name}-nodes", SERVICE_ACCOUNT_ID_MAX)


def workload_service_account_id(stack: str, namespace: str, ksa: str) -> str:
    """A Google service account id for one Kubernetes ServiceAccount: unique per stack, within 30 characters.

    The hash covers the stack, namespace and KSA name, so the id stays unique even when the readable part is cut.
    """
    readable = slug(f"{stack}-{ksa}")[: SERVICE_ACCOUNT_ID_MAX - 7].rstrip("-")
    if not readable or not readable[0].isalpha():
        readable = f"w{readable}"[: SERVICE_ACCOUNT_ID_MAX - 7].rstrip("-")
    return f"{readable}-{short_hash(f'{stack}/{namespace}/{ksa}')}"


def slice_node_pool_names(pool: str, slices: int, multi_host: bool) -> list[str]:
    """GKE node pool names of one configured pool.

    Multi-host pools are named `<pool>-s<i>` even with one slice, so growing `slices` adds node pools and never
    renames (and so recreates) the first one.
    """
    if not multi_host:
        return [pool]
    return [f"{pool}-s{i}" for i in range(slices)]


RESOURCE_POLICY_NAME_MAX = 63


def workload_policy_name(cluster_name: str, pool: str, topology: str) -> str:
    """The regional workload policy of one multi-host pool. The topology is part of the name, so changing it
    creates a new policy before the slices that use the old one are replaced."""
    return fit(slug(f"{cluster_name}-{pool}-{topology}"), RESOURCE_POLICY_NAME_MAX)


def region_of_zone(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def label_value(text: str) -> str:
    return fit(re.sub(r"[^a-z0-9_-]+", "-", text.lower()), LABEL_MAX)


def stack_identity_suffix(pulumi_project: str, stack: str) -> str:
    """A short token unique per stack (Pulumi project and stack), readable where it can be.

    Workload Identity pools are per project: every cluster of a project shares `PROJECT.svc.id.goog`, and a KSA is
    the principal `ns/<namespace>/sa/<name>` in every cluster alike. Kubernetes ServiceAccounts that hold Google
    access carry this suffix, so a pod of one stack never acts as another stack's workload and no two stacks hold
    the same IAM grant (destroying one removes only its own).
    """
    readable = slug(stack)[:20].rstrip("-")
    token = short_hash(f"{pulumi_project}/{stack}")
    return f"{readable}-{token}" if readable else token


def stack_service_account(base: str, suffix: str) -> str:
    """The name of a Kubernetes ServiceAccount with Google access: `<base>-<stack suffix>`, a DNS label."""
    return fit(f"{base}-{suffix}", LABEL_MAX) if suffix else base


def workload_pool(gcp_project: str) -> str:
    return f"{gcp_project}.svc.id.goog"


def workload_identity_member(gcp_project: str, namespace: str, ksa: str) -> str:
    return f"serviceAccount:{workload_pool(gcp_project)}[{namespace}/{ksa}]"


def workload_identity_principal(project_number: str, gcp_project: str, namespace: str, ksa: str) -> str:
    """A direct Workload Identity principal for one KSA: IAM without a Google service account in between."""
    return (
        f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
        f"{workload_pool(gcp_project)}/subject/ns/{namespace}/sa/{ksa}"
    )
