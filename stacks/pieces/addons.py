"""The add-ons piece (tpu-serving:addons): the controllers workloads need (stacks/addons: one registry entry per
add-on, with its settings model and rules). Its rules and its plan (components/addons.py builds it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks import addons as addon_registry
from stacks.addons import AddonsConfig
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, parse_section
from stacks.problems import Problem
from stacks.serving.workload_type import WorkloadRegistry

NAME = "addons"
KEYS = ("addons",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    """The add-ons by the model the add-on registry makes of its entries."""
    return {"addons": parse_section(raw, "addons", addon_registry.settings_model(), found.problems_at("addons"))}


PATH = f"{NS}:addons"


@dataclass(frozen=True)
class AddonsPlan:
    """The add-ons as the stack installs them."""

    settings: AddonsConfig
    """Each add-on's settings (enabled, version, ...), by its key."""
    kubernetes_minor: str
    """The minor version the Pod Security labels of their namespaces are pinned to."""


def visit(ctx: Context, found: Findings) -> AddonsPlan | None:
    """Every registry entry's own rules (reported with the key's shape problems: they read no other key); the plan,
    with the cluster's Kubernetes minor."""
    addons = ctx.sections.addons
    if addons is None:
        return None
    found.problems_at("addons").extend(problems(addons))
    if not found.clean or ctx.kubernetes_minor is None:
        return None
    return plan(addons, kubernetes_minor=ctx.kubernetes_minor)


def problems(addons: AddonsConfig) -> list[Problem]:
    """Every registry entry's own rules."""
    return addon_registry.check(addons, PATH)


def plan(addons: AddonsConfig, *, kubernetes_minor: str) -> AddonsPlan:
    return AddonsPlan(settings=addons, kubernetes_minor=kubernetes_minor)
