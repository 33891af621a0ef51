"""The checkov findings the stack accepts, each as a `checkov.io/skip<N>: <check id>=<reason>` annotation on the
object it concerns, so that the scan of every example (`make scan`, tooling/scan.py) ends with zero unexplained
failures and a reviewer sees the reason next to the object.

Annotation format: checkov kubernetes/kubernetes_utils.py get_skipped_checks (prefix `checkov.io/skip`, value
`<id>=<comment>`, split on "=" so a reason must not contain one). Check ids: https://www.checkov.io/5.Policy%20Index/kubernetes.html
"""

from __future__ import annotations

from collections.abc import Iterable

Skip = tuple[str, str]

# ---- reasons shared by several objects -------------------------------------------------------------------------

IMAGE_DIGEST: Skip = (
    "CKV_K8S_43",
    "images are pinned by tag in the version matrix stacks/versions.py; the upstream sources publish tags",
)
PULL_POLICY: Skip = (
    "CKV_K8S_15",
    "IfNotPresent with tag-pinned images: a restart on a TPU host does not pull multi-GB images again",
)
CPU_LIMIT: Skip = ("CKV_K8S_11", "no CPU limit on purpose: CFS throttling stalls serving; the request reserves CPU")
# A container that keeps its image's user and a writable root filesystem (stacks/pod_security.IMAGE_DEFAULTS).
IMAGE_USER: tuple[Skip, ...] = (
    ("CKV_K8S_23", "the image's user is kept: not verified to run as non-root (stacks/pod_security.py)"),
    ("CKV_K8S_40", "the image's user is kept: not verified to run as another UID (stacks/pod_security.py)"),
    ("CKV_K8S_22", "the image's writable paths are not verified: root filesystem left writable"),
)
# One pod per TPU host: the engine takes every chip of its host and the host's CPU and memory with them.
TPU_HOST_RESOURCES: tuple[Skip, ...] = tuple(
    (check, "one pod per TPU host takes the whole host; only google.com/tpu is requested, as the GKE reference")
    for check in ("CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_13")
)
TAG_PINNED: tuple[Skip, ...] = (IMAGE_DIGEST, PULL_POLICY)


def skip_annotations(skips: Iterable[Skip]) -> dict[str, str]:
    """`checkov.io/skip1..N` annotations, in the order given, one per distinct check id."""
    seen: dict[str, str] = {}
    for check, reason in skips:
        if "=" in reason:
            raise ValueError(f"checkov splits a skip on '=': the reason for {check} must not contain one")
        seen.setdefault(check, reason)
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(seen.items(), 1)}
