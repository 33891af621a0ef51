"""Refuse a `pulumi preview` that would replace or delete a protected resource, unless a label allows it.

    pulumi preview --stack prod --json > preview.json
    python -m tooling.review.preview_gate preview.json [--allow]

Protected: the GKE cluster, the TPU pools (their node pools, whose slices take long to get back, a pool's
ComputeClass, which owns the node pools GKE creates for it, and a TPU7x pool's workload policy) and the bucket (data).
A replacement counts as destructive whichever order Pulumi uses (create-before-delete or delete-before-replace).

The gate fails closed: a file that is not a complete preview (not JSON, `{}`, no change summary, a malformed
step, a preview that reported errors) is refused with the reason, never passed as "no changes".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from components.tpu_pool import TYPE_TOKEN as TPU_POOL_COMPONENT
from stacks.serving import compute_class

DESTRUCTIVE_OPS = {"delete", "replace", "create-replacement", "delete-replaced", "discard", "discard-replaced"}
PROTECTED_TYPES = {"gcp:container/cluster:Cluster", "gcp:storage/bucket:Bucket"}
TPU_NODE_POOL = "gcp:container/nodePool:NodePool"
# Children of a TPU pool that are protected with it.
TPU_POOL_PARTS = {
    TPU_NODE_POOL,
    f"kubernetes:{compute_class.API_VERSION}:{compute_class.KIND}",
    "gcp:compute/resourcePolicy:ResourcePolicy",
}


class NotAPreview(ValueError):
    """The input is not the complete output of `pulumi preview --json`."""


def is_protected(urn: str) -> bool:
    """urn:pulumi:<stack>::<project>::<parent types $-joined>$<type>::<name>"""
    parts = urn.split("::")
    if len(parts) < 4:
        return False
    types = parts[2].split("$")
    kind = types[-1]
    return kind in PROTECTED_TYPES or (kind in TPU_POOL_PARTS and TPU_POOL_COMPONENT in types[:-1])


def check_preview(preview: Any) -> list[dict[str, Any]]:
    """The steps of a complete preview, or NotAPreview saying why the input is not one.

    `pulumi preview --json` prints a PreviewDigest (pulumi/pulumi sdk/go/common/display/json.go): `steps` (omitted
    when empty), `diagnostics`, and `changeSummary`, which is filled from the engine's final summary event. A digest
    without `changeSummary` never finished, so its missing steps prove nothing.
    """
    if not isinstance(preview, dict):
        raise NotAPreview(
            f"expected a JSON object (the output of `pulumi preview --json`), got {type(preview).__name__}"
        )
    if not isinstance(preview.get("changeSummary"), dict):
        raise NotAPreview("no `changeSummary`: this is not the complete output of `pulumi preview --json`")
    errors = [
        d.get("message", "").strip()
        for d in preview.get("diagnostics") or []
        if isinstance(d, dict) and d.get("severity") == "error"
    ]
    if errors:
        raise NotAPreview(f"the preview reported {len(errors)} error(s): {errors[0][:300]}")
    steps = preview.get("steps", [])
    if not isinstance(steps, list):
        raise NotAPreview(f"`steps` is not a list (got {type(steps).__name__})")
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or not isinstance(step.get("op"), str) or not isinstance(step.get("urn"), str):
            raise NotAPreview(f"steps[{i}] has no `op` and `urn` strings: {json.dumps(step)[:200]}")
    return steps


def destructive_changes(preview: dict[str, Any]) -> list[str]:
    """'<op> <urn>' for every step that would replace or delete a protected resource."""
    found = set()
    for step in check_preview(preview):
        if step["op"] in DESTRUCTIVE_OPS and is_protected(step["urn"]):
            found.add(f"{step['op']} {step['urn']}")
    return sorted(found)


def load(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as err:
        raise NotAPreview(f"cannot read {path}: {err.strerror or err}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise NotAPreview(f"{path} is not JSON ({err.msg} at line {err.lineno}, column {err.colno})") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preview", type=Path, help="output of `pulumi preview --json`")
    parser.add_argument("--allow", action="store_true", help="report, but do not fail (the PR carries the allow label)")
    args = parser.parse_args(argv)
    try:
        changes = destructive_changes(load(args.preview))
    except NotAPreview as err:
        print(f"preview gate: refused: {err}", file=sys.stderr)
        return 2
    for change in changes:
        print(f"protected resource: {change}")
    if changes and not args.allow:
        print(
            "This change would replace or delete the cluster, a TPU pool or the bucket. If that is intended, add the "
            "`allow-replace` label to the pull request.",
            file=sys.stderr,
        )
        return 1
    print(f"{len(changes)} protected resource(s) replaced or deleted" + (" (allowed by label)" if changes else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
