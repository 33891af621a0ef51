"""The checkov findings the stack accepts, each as a `checkov.io/skip<N>: <check id>=<reason>` annotation on the
object it concerns (or on the one pod template of a custom resource it concerns: template_skip_annotations), so that
the scan of every example (`make scan`, tooling/scans/scan.py) ends with zero unexplained failures and a reviewer sees the
reason next to the object. The scan also fails on a skip the object's pods do not need (checkov without the skips).

Annotation format: checkov kubernetes/kubernetes_utils.py get_skipped_checks (prefix `checkov.io/skip`, value
`<id>=<comment>`, split on "=" so a reason must not contain one). Check ids: https://www.checkov.io/5.Policy%20Index/kubernetes.html
"""

from __future__ import annotations

from collections.abc import Iterable

from stacks.security.pod_security import ContainerSecurity

Skip = tuple[str, str]

# ---- reasons shared by several objects -------------------------------------------------------------------------

IMAGE_DIGEST: Skip = (
    "CKV_K8S_43",
    "images are pinned by tag in the version matrix stacks/facts/versions.py: no upstream release note or manifest "
    "states their digests (Image.digest_source)",
)
PULL_POLICY: Skip = (
    "CKV_K8S_15",
    "IfNotPresent with tag-pinned images: a restart on a TPU host does not pull multi-GB images again",
)
CPU_LIMIT: Skip = ("CKV_K8S_11", "no CPU limit on purpose: CFS throttling stalls serving; the request reserves CPU")
# A container that keeps its image's user and a writable root filesystem (stacks/pod_security.IMAGE_DEFAULTS).
IMAGE_USER: tuple[Skip, ...] = (
    ("CKV_K8S_23", "the image's user is kept: not verified to run as non-root (stacks/security/pod_security.py)"),
    ("CKV_K8S_40", "the image's user is kept: not verified to run as another UID (stacks/security/pod_security.py)"),
    ("CKV_K8S_22", "the image's writable paths are not verified: root filesystem left writable"),
)
# A server on a TPU host: it requests a share of the host's CPU and memory (stacks.serving.workload_plan.host_requests), so
# the pod is Burstable, but has no memory limit.
HOST_MEMORY_LIMIT: Skip = (
    "CKV_K8S_13",
    "no memory limit on a TPU host's server: its host-memory peak (loading the checkpoint) is not published and an "
    "OOM kill stops the whole slice; it requests a share of the host (stacks/serving/workload_plan.py host_requests)",
)
HOST_NETWORK: Skip = ("CKV_K8S_19", "the TPU runtime's multi-host traffic needs the host network, as upstream")
TAG_PINNED: tuple[Skip, ...] = (IMAGE_DIGEST, PULL_POLICY)


def probes(reason: str) -> tuple[Skip, Skip]:
    """No liveness (CKV_K8S_8) and no readiness (CKV_K8S_9) probe, for `reason`."""
    return (("CKV_K8S_8", reason), ("CKV_K8S_9", reason))


def security(sec: ContainerSecurity) -> tuple[Skip, ...]:
    """The findings a container's declared ContainerSecurity (stacks/security/pod_security.py) accepts, with its reason:
    its image's user and writable root (CKV_K8S_22/23/40), added capabilities (CKV_K8S_25), privileged mode
    (CKV_K8S_16, which brings CKV_K8S_20/28/37: a privileged container holds every capability)."""
    why = sec.why
    out: list[Skip] = []
    if not sec.non_root:
        out += [(c, f"{why}: keeps the image's user" if why else r) for c, r in IMAGE_USER if c != "CKV_K8S_22"]
    if not sec.read_only_root:
        out.append(("CKV_K8S_22", f"{why}: root filesystem writable" if why else dict(IMAGE_USER)["CKV_K8S_22"]))
    if sec.add_capabilities:
        out.append(("CKV_K8S_25", f"adds {' '.join(sec.add_capabilities)}: {why}"))
    if sec.privileged:
        out += [(check, f"privileged: {why}") for check in ("CKV_K8S_16", "CKV_K8S_20", "CKV_K8S_28", "CKV_K8S_37")]
    return tuple(out)


def skip_annotations(skips: Iterable[Skip]) -> dict[str, str]:
    """`checkov.io/skip1..N` annotations, in the order given, one per distinct check id."""
    seen: dict[str, str] = {}
    for check, reason in skips:
        if "=" in reason:
            raise ValueError(f"checkov splits a skip on '=': the reason for {check} must not contain one")
        seen.setdefault(check, reason)
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(seen.items(), 1)}


def template_skip_annotations(shared: Iterable[Skip], own: Iterable[Skip]) -> dict[str, str]:
    """A pod template's own skip annotations: those of `own` whose check the object's `shared` skips (which every
    template of the object inherits) do not already accept. The scan (tooling/scans/scan.py expanded_pods) applies the
    object's skips, then the template's, to the pods of that template only."""
    accepted = {check for check, _ in shared}
    return skip_annotations(s for s in own if s[0] not in accepted)
