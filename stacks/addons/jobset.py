"""JobSet (kubernetes-sigs/jobset): Saxml's model servers, and the PathwaysJob controller's jobs, are JobSets."""

from __future__ import annotations

from typing import Any

from stacks.addons.addon import Addon, AddonSettings, ChartAddonConfig, user_values
from stacks.facts import versions
from stacks.facts.addon_values import deep_merge, image_values
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.security.pod_security import RESTRICTED


def jobset_values(chart: versions.ChartVersion, settings: AddonSettings) -> dict[str, Any]:
    # keys of charts/jobset/values.yaml: image.*, controller.nodeSelector
    ours = {"image": image_values(chart), "controller": {"nodeSelector": dict(SYSTEM_POOL_SELECTOR)}}
    return deep_merge(ours, user_values(settings))


ADDON = Addon(
    key="jobset",
    title="JobSet",
    description="JobSet (Saxml model servers).",
    settings=ChartAddonConfig,
    releases=versions.CHARTS["jobset"],
    # jobset chart README (v0.10.1): controller.podSecurityContext {runAsNonRoot, seccompProfile RuntimeDefault},
    # controller.securityContext allowPrivilegeEscalation false, readOnlyRootFilesystem, drop ALL.
    pod_security=RESTRICTED,
    values=jobset_values,
)
