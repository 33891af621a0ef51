"""Helm values of the add-on charts: pinned images, scheduled on the CPU system pool, user values merged last."""

from __future__ import annotations

import copy
from typing import Any

from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.pod_security import BASELINE, RESTRICTED
from stacks.versions import ChartVersion

# The Pod Security level each add-on namespace enforces: what the chart's pods pass with the values below.
CHART_POD_SECURITY: dict[str, str] = {
    # lws chart values.yaml (v0.7.0): podSecurityContext.runAsNonRoot, securityContext allowPrivilegeEscalation
    # false, readOnlyRootFilesystem, drop ALL; lws_values adds the RuntimeDefault seccomp profile it lacks.
    "lws": RESTRICTED,
    # jobset chart README (v0.10.1): controller.podSecurityContext {runAsNonRoot, seccompProfile RuntimeDefault},
    # controller.securityContext allowPrivilegeEscalation false, readOnlyRootFilesystem, drop ALL.
    "jobset": RESTRICTED,
    # The kueue chart's pod security defaults are not in the reference set: baseline until verified.
    "kueue": BASELINE,
}


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` over `base`, recursively for mappings; lists and scalars are replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _image(chart: ChartVersion) -> dict[str, str]:
    return {"repository": chart.image_repository, "tag": chart.image_tag, "pullPolicy": "IfNotPresent"}


def lws_values(chart: ChartVersion, user: dict[str, Any]) -> dict[str, Any]:
    # keys of charts/lws/values.yaml: image.manager.*, nodeSelector, podSecurityContext (whose default is
    # {runAsNonRoot: true}: the seccomp profile makes the pod pass Pod Security `restricted`)
    ours = {
        "image": {"manager": _image(chart)},
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    return deep_merge(ours, user)


def jobset_values(chart: ChartVersion, user: dict[str, Any]) -> dict[str, Any]:
    # keys of charts/jobset/values.yaml: image.*, controller.nodeSelector
    ours = {"image": _image(chart), "controller": {"nodeSelector": dict(SYSTEM_POOL_SELECTOR)}}
    return deep_merge(ours, user)


def kueue_values(chart: ChartVersion, user: dict[str, Any]) -> dict[str, Any]:
    # keys of charts/kueue/values.yaml: controllerManager.manager.image.*, controllerManager.nodeSelector
    ours = {"controllerManager": {"manager": {"image": _image(chart)}, "nodeSelector": dict(SYSTEM_POOL_SELECTOR)}}
    return deep_merge(ours, user)


def prometheus_adapter_values(
    chart: ChartVersion, prometheus_url: str, rules: list[dict[str, Any]], user: dict[str, Any]
) -> dict[str, Any]:
    # keys of prometheus-adapter 5.3.0 values.yaml: image.*, nodeSelector, prometheus.{url,port}, rules.*
    ours = {
        "image": _image(chart),
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "prometheus": {"url": prometheus_url, "port": 9090},
        "rules": {"default": False, "custom": [], "external": rules},
    }
    return deep_merge(ours, user)
