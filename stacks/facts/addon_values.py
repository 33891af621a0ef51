"""Helm values helpers the stack's charts share: the pinned image block, and the user's values merged last.

Each chart's own values builder is in its registry module (stacks/addons/<name>.py, stacks/monitoring/adapters/).
"""

from __future__ import annotations

import copy
from typing import Any

from stacks.facts.versions import ChartVersion


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`override` over `base`, recursively for mappings; lists and scalars are replaced."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def image_values(chart: ChartVersion) -> dict[str, str]:
    """A chart's `image` block: the controller image pinned with the chart release."""
    return {"repository": chart.image_repository, "tag": chart.image_tag, "pullPolicy": "IfNotPresent"}
