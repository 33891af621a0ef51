"""Refuse a `pulumi preview` that would replace or delete a protected resource, unless a label allows it.

    pulumi preview --stack prod --json > preview.json
    python -m tooling.preview_gate preview.json [--allow]

Protected: the GKE cluster, the TPU node pools (their slices take long to get back) and the bucket (data).
A replacement counts as destructive whichever order Pulumi uses (create-before-delete or delete-before-replace).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DESTRUCTIVE_OPS = {"delete", "replace", "create-replacement", "delete-replaced", "discard", "discard-replaced"}
PROTECTED_TYPES = {"gcp:container/cluster:Cluster", "gcp:storage/bucket:Bucket"}
TPU_NODE_POOL = "gcp:container/nodePool:NodePool"
TPU_POOL_COMPONENT = "tpu-serving:tpu:TpuSlicePool"


def is_protected(urn: str) -> bool:
    """urn:pulumi:<stack>::<project>::<parent types $-joined>$<type>::<name>"""
    parts = urn.split("::")
    if len(parts) < 4:
        return False
    types = parts[2].split("$")
    kind = types[-1]
    return kind in PROTECTED_TYPES or (kind == TPU_NODE_POOL and TPU_POOL_COMPONENT in types[:-1])


def destructive_changes(preview: dict[str, Any]) -> list[str]:
    """'<op> <urn>' for every step that would replace or delete a protected resource."""
    found = set()
    for step in preview.get("steps", []):
        op = step.get("op", "")
        urn = step.get("urn", "")
        if op in DESTRUCTIVE_OPS and is_protected(urn):
            found.add(f"{op} {urn}")
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preview", type=Path, help="output of `pulumi preview --json`")
    parser.add_argument("--allow", action="store_true", help="report, but do not fail (the PR carries the allow label)")
    args = parser.parse_args(argv)
    changes = destructive_changes(json.loads(args.preview.read_text()))
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
