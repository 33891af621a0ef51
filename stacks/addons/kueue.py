"""Kueue (kubernetes-sigs/kueue): job queueing and quotas, off by default."""

from __future__ import annotations

from typing import Any

from stacks import versions
from stacks.addon_values import deep_merge, image_values
from stacks.addons.addon import Addon, OptionalChartAddonConfig
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.pod_security import BASELINE


def kueue_values(chart: versions.ChartVersion, user: dict[str, Any]) -> dict[str, Any]:
    # keys of charts/kueue/values.yaml: controllerManager.manager.image.*, controllerManager.nodeSelector
    ours = {
        "controllerManager": {"manager": {"image": image_values(chart)}, "nodeSelector": dict(SYSTEM_POOL_SELECTOR)}
    }
    return deep_merge(ours, user)


ADDON = Addon(
    key="kueue",
    title="Kueue",
    description="Kueue.",
    settings=OptionalChartAddonConfig,
    releases=versions.CHARTS["kueue"],
    # The kueue chart's pod security defaults are not in the reference set: baseline until verified.
    pod_security=BASELINE,
    values=kueue_values,
)
