"""Access limited to a prefix of a bucket: the IAM condition every prefix-scoped grant of the stack uses.

Cloud Storage checks object permissions against `resource.name` (`projects/_/buckets/<bucket>/objects/<name>`) and
a list request against the bucket, with the requested prefix in the `storage.googleapis.com/objectListPrefix` API
attribute (https://cloud.google.com/storage/docs/access-control/iam#conditions,
https://cloud.google.com/iam/docs/conditions-attribute-reference). IAM conditions on a bucket need uniform
bucket-level access, which the stack bucket has. Pure Python, tested directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stacks import naming


def prefix_expression(bucket: str, prefix: str) -> str:
    """A CEL expression true for the objects under `prefix` (ending with "/"), for listing that prefix, and for the
    one object named like the directory itself.

    The last: file-system clients ask whether a "directory" exists by reading the object of that exact name first
    and listing only on NOT_FOUND; without it, IAM answers 403 and the client fails instead of listing
    (tensorflow tsl/platform/cloud/gcs_file_system.cc GcsFileSystem::FileExists: any status but NOT_FOUND from
    StatForObject is returned as is). It matches that one name only, never a sibling such as "<prefix>2/".
    """
    if not prefix.endswith("/"):
        raise ValueError(f"prefix {prefix!r} must end with '/' (else it also matches its siblings)")
    objects = f"projects/_/buckets/{bucket}/objects/"
    return (
        f'resource.name.startsWith("{objects}{prefix}") || '
        f'resource.name == "{objects}{prefix.rstrip("/")}" || '
        f'api.getAttribute("storage.googleapis.com/objectListPrefix", "").startsWith("{prefix}")'
    )


def prefix_condition(bucket: str, prefix: str) -> dict[str, str]:
    """The `condition` of a bucket IAM member limited to `prefix`: title, description, expression."""
    return {
        "title": f"only {prefix}"[:100],
        "description": f"objects under gs://{bucket}/{prefix} only",
        "expression": prefix_expression(bucket, prefix),
    }


def gcs_location(url: str) -> tuple[str, str | None]:
    """(bucket, object prefix ending with "/") of a gs:// directory URL; prefix None for the bucket's root."""
    bucket, _, path = url.removeprefix("gs://").partition("/")
    path = path.strip("/")
    return bucket, (f"{path}/" if path else None)


# Cloud Storage clients read the bucket's metadata before its objects: the Run:ai model streamer's GCS list_files
# calls `get_bucket(bucket_name)` first (run-ai/runai-model-streamer
# py/runai_model_streamer_gcs/runai_model_streamer_gcs/files/files.py@2d9f367 list_files), which needs storage.buckets.get;
# neither object role holds it (https://cloud.google.com/storage/docs/access-control/iam-roles), and a prefix
# condition never matches the bucket itself (`projects/_/buckets/<b>`). So each identity with object access to a
# bucket also holds storage.buckets.get on it, unconditioned: on the stack bucket through a custom role of the stack
# holding that one permission (no predefined role holds only it: roles/storage.legacyBucketReader adds
# storage.objects.list on the whole bucket, which a prefix grant must not give); on another bucket, whose objects
# the identity reads whole anyway, through roles/storage.legacyBucketReader (storage.buckets.get,
# storage.objects.list), since a project's custom role binds only inside that project
# (https://cloud.google.com/iam/docs/understanding-custom-roles#custom_role_availability).
BUCKET_GET_PERMISSION = "storage.buckets.get"
LEGACY_BUCKET_READER = "roles/storage.legacyBucketReader"
# IAM roles.create `roleId`: "alphanumeric characters, underscores (_), and periods (.)", at most 64 characters
# (https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/create); the provider validates
# `^[a-zA-Z0-9_\.]{3,64}$` (hashicorp/terraform-provider-google-beta@v7.45.0 verify/validation.go
# IAMCustomRoleIDRegex, tooling/oracles/provider_schema.py checks it).
ROLE_ID_RE = re.compile(r"[a-zA-Z0-9_.]{3,64}")
ROLE_ID_PREFIX = "tpuServingBucketGet_"


def bucket_get_role_id(bucket: str) -> str:
    """The stack's custom role id holding storage.buckets.get: unique per stack, as its bucket's name is global."""
    return naming.fit(ROLE_ID_PREFIX + re.sub(r"[^a-zA-Z0-9_]", "_", bucket), 64, sep="_", hashed=bucket, digest=8)


OBJECT_USER = "roles/storage.objectUser"
OBJECT_VIEWER = "roles/storage.objectViewer"


@dataclass(frozen=True)
class Grant:
    """A role on a bucket for one identity, limited to `prefix` by prefix_condition; prefix None: the whole bucket,
    only for a bucket other than the stack's (it may lack the uniform bucket-level access IAM conditions need)."""

    key: str
    """What the grant is for (`checkpoint`, `compile-cache`): the name its IAM member resource had until issue 36
    #2, `<identity>-<key>`, kept as an alias (the resource is now named by its binding: binding_suffix)."""
    bucket: str
    role: str
    prefix: str | None
    legacy_outside: bool = False
    """Its resource was registered by the workload component itself until issue 36 #2 (`<workload>-<key>`, the
    workload its parent), not by the identity whose member it binds: aliased there too."""


def binding_suffix(grant: Grant, stack_bucket: str) -> str:
    """What a grant's IAM member resource is named after (`<identity>-<this>`): the binding it makes, its role,
    bucket and prefix, and nothing of the workload type that asks for it.

    A bucket IAM member is identified by its binding, not by the Pulumi resource: the provider's ID is
    `<bucket>/<role>/<member>[/<condition title>/<description>/<expression>]`, and its delete removes that member
    from the binding of that role and condition whichever resource made it (hashicorp/terraform-provider-google-beta
    @v7.45.0:google-beta/tpgiamresource/resource_iam_member.go resourceIamMemberCreate/resourceIamMemberDelete,
    iam.go subtractFromBindings keyed by role and conditionKey; tests/test_grant_names.py). Two resources of one stack for one binding are one grant
    that the first delete revokes: a type swap that named the same binding differently (`checkpoint` for JetStream,
    `weights` for vLLM) created the new resource (a no-op) and deleted the old one at the end, revoking the new
    server's access. Named by the binding, the same binding keeps its URN in every type and is never deleted under
    a server that still uses it. The readable part is the bucket (another bucket than the stack's) and the prefix;
    the hash of both makes the name unique however either is spelled."""
    # roles/storage.objectViewer -> viewer (short: every name is in the review's graph, which GitHub draws only within
    # 50000 characters, tooling/review/graph.py)
    role = grant.role.rsplit("/", 1)[-1].rsplit(".", 1)[-1].lower().removeprefix("object")
    where = (grant.prefix or "").rstrip("/")
    if grant.bucket != stack_bucket:
        where = f"{grant.bucket}/{where}" if where else grant.bucket
    readable = naming.slug(where)[:24].strip("-")
    digest = naming.short_hash(f"{grant.bucket}/{grant.prefix or ''}")
    return f"{role}-{readable}-{digest}"


def read_grant(
    key: str, url: str, stack_bucket: str, other_buckets: bool, other_key: str | None = None
) -> Grant | None:
    """objectViewer for reading the gs:// directory `url`: its prefix in the stack bucket; in another bucket, the
    whole bucket when `other_buckets` (the user's grantCheckpointRead), else nothing (the user grants it).

    `other_key`: the key of the whole-bucket grant, when it must keep the name it had before prefixes (renaming an
    unconditioned member creates its twin, then deleting the old one removes the shared binding: access lost)."""
    bucket, prefix = gcs_location(url)
    if bucket == stack_bucket:
        return Grant(key, bucket, OBJECT_VIEWER, prefix)
    return Grant(other_key or key, bucket, OBJECT_VIEWER, None) if other_buckets else None


def stack_root_problem(url: str, stack_bucket: str) -> str | None:
    """Why a gs:// path the workload reads cannot be granted: the stack bucket's root (its identity gets a prefix of
    the stack bucket only, never the whole of it)."""
    bucket, prefix = gcs_location(url)
    if bucket == stack_bucket and prefix is None:
        return (
            f"{url!r} is the root of the stack bucket; workloads get access to a prefix of it only: "
            f"put the files under a directory, e.g. gs://{bucket}/<dir>/"
        )
    return None
