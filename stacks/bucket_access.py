"""Access limited to a prefix of a bucket: the IAM condition every prefix-scoped grant of the stack uses.

Cloud Storage checks object permissions against `resource.name` (`projects/_/buckets/<bucket>/objects/<name>`) and
a list request against the bucket, with the requested prefix in the `storage.googleapis.com/objectListPrefix` API
attribute (https://cloud.google.com/storage/docs/access-control/iam#conditions,
https://cloud.google.com/iam/docs/conditions-attribute-reference). IAM conditions on a bucket need uniform
bucket-level access, which the stack bucket has. Pure Python, tested directly.
"""

from __future__ import annotations

from dataclasses import dataclass


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


OBJECT_USER = "roles/storage.objectUser"
OBJECT_VIEWER = "roles/storage.objectViewer"


@dataclass(frozen=True)
class Grant:
    """A role on a bucket for one identity, limited to `prefix` by prefix_condition; prefix None: the whole bucket,
    only for a bucket other than the stack's (it may lack the uniform bucket-level access IAM conditions need)."""

    key: str  # names the IAM member resource
    bucket: str
    role: str
    prefix: str | None


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
