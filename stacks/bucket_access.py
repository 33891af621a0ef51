"""Access limited to a prefix of a bucket: the IAM condition every prefix-scoped grant of the stack uses.

Cloud Storage checks object permissions against `resource.name` (`projects/_/buckets/<bucket>/objects/<name>`) and
a list request against the bucket, with the requested prefix in the `storage.googleapis.com/objectListPrefix` API
attribute (https://cloud.google.com/storage/docs/access-control/iam#conditions,
https://cloud.google.com/iam/docs/conditions-attribute-reference). IAM conditions on a bucket need uniform
bucket-level access, which the stack bucket has. Pure Python, tested directly.
"""

from __future__ import annotations


def prefix_expression(bucket: str, prefix: str) -> str:
    """A CEL expression true for the objects under `prefix` (ending with "/") and for listing that prefix."""
    if not prefix.endswith("/"):
        raise ValueError(f"prefix {prefix!r} must end with '/' (else it also matches its siblings)")
    return (
        f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/{prefix}") || '
        f'api.getAttribute("storage.googleapis.com/objectListPrefix", "").startsWith("{prefix}")'
    )


def prefix_condition(bucket: str, prefix: str) -> dict[str, str]:
    """The `condition` of a bucket IAM member limited to `prefix`: title, description, expression."""
    return {
        "title": f"only {prefix}"[:100],
        "description": f"objects under gs://{bucket}/{prefix} only",
        "expression": prefix_expression(bucket, prefix),
    }
