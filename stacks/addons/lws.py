"""LeaderWorkerSet (kubernetes-sigs/lws): the Pathways serving workloads and multi-host vLLM run as LeaderWorkerSets."""

from __future__ import annotations

from typing import Any

from stacks.addons.addon import Addon, AddonSettings, ChartAddonConfig, user_values
from stacks.facts import versions
from stacks.facts.addon_values import deep_merge, image_values
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.security.pod_security import RESTRICTED


def lws_values(chart: versions.ChartVersion, settings: AddonSettings) -> dict[str, Any]:
    # keys of charts/lws/values.yaml: image.manager.*, nodeSelector, podSecurityContext (whose default is
    # {runAsNonRoot: true}: the seccomp profile makes the pod pass Pod Security `restricted`)
    ours = {
        "image": {"manager": image_values(chart)},
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    return deep_merge(ours, user_values(settings))


ADDON = Addon(
    key="lws",
    title="LeaderWorkerSet",
    description="LeaderWorkerSet (Pathways serving).",
    settings=ChartAddonConfig,
    releases=versions.CHARTS["lws"],
    # lws chart values.yaml (v0.7.0): podSecurityContext.runAsNonRoot, securityContext allowPrivilegeEscalation
    # false, readOnlyRootFilesystem, drop ALL; lws_values adds the RuntimeDefault seccomp profile it lacks.
    pod_security=RESTRICTED,
    values=lws_values,
)
