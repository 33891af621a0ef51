"""Pod Security: the one helper that hardens every pod the stack builds, and the namespace labels derived from them.

Every pod gets the `restricted` profile of the Kubernetes Pod Security Standards as far as its image allows:
- pod `seccompProfile: RuntimeDefault` (PSS restricted "Seccomp"; CIS GKE Benchmark 4.6.2; checkov CKV_K8S_31);
- per container `allowPrivilegeEscalation: false` (PSS restricted; CKV_K8S_20), `capabilities.drop: [ALL]`
  (PSS restricted; CIS 4.2.7/4.2.9; CKV_K8S_28, CKV_K8S_37), no privileged mode (PSS baseline; CKV_K8S_16);
- `runAsNonRoot` with a fixed non-root UID (PSS restricted; CKV_K8S_23, CKV_K8S_40) and a read-only root
  filesystem with emptyDir volumes at the paths the program writes (CKV_K8S_22), where the image is verified to
  work that way (`ContainerSecurity.non_root` / `.read_only_root`, each with its source where it is declared);
- `automountServiceAccountToken: false` unless the pod calls the Kubernetes API (CIS GKE 4.1.6; CKV_K8S_38):
  Workload Identity does not use the Kubernetes token (the GKE metadata server identifies the pod).

Anything less than restricted (an added capability, privileged mode, the host network) is declared on the
container with the reason and its source, and lowers the Pod Security level of the pod's namespace: each
namespace enforces the strictest level all of its pods pass (`pod_level`), and warns/audits at `restricted`.

Sources: https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the levels and their fields),
https://kubernetes.io/docs/concepts/security/pod-security-admission/ (the namespace labels),
https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster (GKE hardening guide).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)  # least to most strict

# A non-root UID/GID no image user maps to by default (distroless `nonroot` uses the same number).
NON_ROOT_UID = 65532

LABEL_PREFIX = "pod-security.kubernetes.io/"

# PSS baseline "Capabilities": the only capabilities a baseline pod may add.
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# PSS restricted "Capabilities (v1.22+)": drop ALL, add at most NET_BIND_SERVICE.
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
# PSS restricted "Volume Types".
RESTRICTED_VOLUME_SOURCES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)


@dataclass(frozen=True)
class ContainerSecurity:
    """What one container's image allows. The default is the full restricted profile."""

    non_root: bool = True
    """Runs as NON_ROOT_UID: the image's files the program needs are world-readable and it needs no root."""
    read_only_root: bool = True
    """Root filesystem read-only; `writable` paths get an emptyDir each."""
    writable: tuple[str, ...] = ("/tmp",)
    add_capabilities: tuple[str, ...] = ()
    privileged: bool = False
    why: str = ""
    """Why anything here is less than restricted, with the source (kept next to the declaration)."""


RESTRICTED_CONTAINER = ContainerSecurity()
# An image whose user and writable paths are not verified: keep its own user and a writable root filesystem,
# everything else restricted. This passes `baseline`.
IMAGE_DEFAULTS = ContainerSecurity(non_root=False, read_only_root=False, writable=())


def _slug(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "root"


def _volume_name(container_index: int, path: str) -> str:
    return f"writable-{container_index}-{_slug(path)}"[:63].rstrip("-")


def container_security_context(sec: ContainerSecurity) -> dict[str, Any]:
    if sec.privileged:
        # Privileged containers get every capability anyway; keep the rest explicit for the reader.
        return {"privileged": True}
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "capabilities": {"drop": ["ALL"], **({"add": list(sec.add_capabilities)} if sec.add_capabilities else {})},
        "readOnlyRootFilesystem": sec.read_only_root,
    }
    if sec.non_root:
        context.update(runAsNonRoot=True, runAsUser=NON_ROOT_UID, runAsGroup=NON_ROOT_UID)
    return context


def secure_pod(
    spec: Mapping[str, Any],
    security: ContainerSecurity | Mapping[str, ContainerSecurity] = RESTRICTED_CONTAINER,
    *,
    uses_kubernetes_api: bool = False,
) -> dict[str, Any]:
    """`spec` (a PodSpec dict) with the pod and container security fields set, and emptyDirs for writable paths.

    `security` is one ContainerSecurity for every container, or one per container name (all must be named).
    """
    out = copy.deepcopy(dict(spec))
    volumes = list(out.get("volumes") or [])
    containers = []
    all_containers = [*out.get("initContainers", []), *out["containers"]]
    per_name = security if isinstance(security, Mapping) else None
    if per_name is not None:
        missing = sorted({c["name"] for c in all_containers} - set(per_name))
        if missing:
            raise ValueError(f"no ContainerSecurity for container(s) {', '.join(missing)}")
    for index, container in enumerate(out["containers"]):
        sec = per_name[container["name"]] if per_name is not None else security
        assert isinstance(sec, ContainerSecurity)
        new = dict(container)
        new["securityContext"] = container_security_context(sec)
        if sec.read_only_root and sec.writable:
            mounts = list(new.get("volumeMounts") or [])
            for path in sec.writable:
                name = _volume_name(index, path)
                mounts.append({"name": name, "mountPath": path})
                volumes.append({"name": name, "emptyDir": {}})
            new["volumeMounts"] = mounts
        containers.append(new)
    out["containers"] = containers
    if volumes:
        out["volumes"] = volumes
    securities = [per_name[c["name"]] for c in out["containers"]] if per_name is not None else [security]
    pod_context: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if all(isinstance(s, ContainerSecurity) and s.non_root and not s.privileged for s in securities):
        pod_context.update(runAsNonRoot=True, runAsUser=NON_ROOT_UID, runAsGroup=NON_ROOT_UID, fsGroup=NON_ROOT_UID)
    out["securityContext"] = {**pod_context, **(out.get("securityContext") or {})}
    out["automountServiceAccountToken"] = uses_kubernetes_api
    return out


# ---- Pod Security Standards: the level a pod passes -----------------------------------------------------


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [*spec.get("initContainers", []), *spec.get("containers", []), *spec.get("ephemeralContainers", [])]


def baseline_violations(spec: Mapping[str, Any]) -> list[str]:
    """The PSS baseline controls `spec` fails (the ones a pod builder can get wrong)."""
    out = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            out.append(f"{field}: true")
    out += [f"hostPath volume {v['name']}" for v in spec.get("volumes", []) if "hostPath" in v]
    pod_seccomp = (spec.get("securityContext") or {}).get("seccompProfile", {}).get("type")
    if pod_seccomp == "Unconfined":
        out.append("pod seccompProfile Unconfined")
    for c in _containers(spec):
        ctx = c.get("securityContext") or {}
        if ctx.get("privileged"):
            out.append(f"{c['name']}: privileged")
        extra = set((ctx.get("capabilities") or {}).get("add", [])) - BASELINE_CAPABILITIES
        if extra:
            out.append(f"{c['name']}: adds {', '.join(sorted(extra))}")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"{c['name']}: hostPort")
        if (ctx.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(f"{c['name']}: seccompProfile Unconfined")
    return out


def restricted_violations(spec: Mapping[str, Any]) -> list[str]:
    """The PSS restricted controls `spec` fails, beyond baseline's."""
    out = []
    pod = spec.get("securityContext") or {}
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_SOURCES:
            out.append(f"volume {v['name']}: {', '.join(sorted(kinds - RESTRICTED_VOLUME_SOURCES))}")
    if pod.get("runAsUser") == 0:
        out.append("pod runAsUser 0")
    for c in _containers(spec):
        ctx = c.get("securityContext") or {}
        name = c["name"]
        if ctx.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation not false")
        if not ctx.get("runAsNonRoot", pod.get("runAsNonRoot")):
            out.append(f"{name}: runAsNonRoot not true")
        if ctx.get("runAsUser") == 0:
            out.append(f"{name}: runAsUser 0")
        seccomp = (ctx.get("seccompProfile") or pod.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: seccompProfile not RuntimeDefault/Localhost")
        caps = ctx.get("capabilities") or {}
        if "ALL" not in caps.get("drop", []):
            out.append(f"{name}: capabilities do not drop ALL")
        extra = set(caps.get("add", [])) - RESTRICTED_CAPABILITIES
        if extra:
            out.append(f"{name}: adds {', '.join(sorted(extra))}")
    return out


def pod_level(spec: Mapping[str, Any]) -> str:
    """The strictest Pod Security Standards level `spec` passes."""
    if baseline_violations(spec):
        return PRIVILEGED
    return BASELINE if restricted_violations(spec) else RESTRICTED


def pod_templates(manifest: Any, path: str = "") -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    """(where, template metadata, PodSpec) of every PodSpec inside a manifest (Deployment, Job, JobSet,
    LeaderWorkerSet, PathwaysJob, ...): any map with `containers`, with the metadata of the template that holds it
    as its `spec` ({} for a bare PodSpec). `where` is the dotted path of the PodSpec, e.g.
    `spec.leaderWorkerTemplate.leaderTemplate.spec`."""
    if isinstance(manifest, Mapping):
        if isinstance(manifest.get("containers"), list):
            yield path, {}, manifest
            return
        spec = manifest.get("spec")
        if isinstance(spec, Mapping) and isinstance(spec.get("containers"), list):
            yield f"{path}.spec".lstrip("."), manifest.get("metadata") or {}, spec
            return
        for key, value in manifest.items():
            yield from pod_templates(value, f"{path}.{key}".lstrip("."))
    elif isinstance(manifest, list):
        for i, item in enumerate(manifest):
            yield from pod_templates(item, f"{path}[{i}]")


def pod_specs(manifest: Any) -> Iterator[Mapping[str, Any]]:
    """Every PodSpec inside a manifest (Deployment, Job, JobSet, LeaderWorkerSet, ...): any map with containers."""
    for _, _, spec in pod_templates(manifest):
        yield spec


def strictest_level(manifests: Iterable[Any]) -> str:
    """The strictest level every pod of `manifests` passes (restricted when there are none)."""
    levels = [pod_level(spec) for m in manifests for spec in pod_specs(m)]
    return min(levels, key=LEVELS.index, default=RESTRICTED)


def namespace_labels(enforce: str, kubernetes_minor: str) -> dict[str, str]:
    """Pod Security Admission labels: enforce `enforce`, warn and audit at restricted, pinned to the minor.

    Pinning `*-version` to the cluster's minor keeps a control-plane upgrade from tightening the rules under
    running pods (pod-security-admission docs: "<MODE>-version ... defaults to latest").
    """
    if enforce not in LEVELS:
        raise ValueError(f"{enforce!r} is not a Pod Security level ({', '.join(LEVELS)})")
    version = f"v{kubernetes_minor}"
    labels = {f"{LABEL_PREFIX}enforce": enforce, f"{LABEL_PREFIX}enforce-version": version}
    for mode in ("warn", "audit"):
        labels.update({f"{LABEL_PREFIX}{mode}": RESTRICTED, f"{LABEL_PREFIX}{mode}-version": version})
    return labels
