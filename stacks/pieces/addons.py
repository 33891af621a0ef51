"""The add-ons piece (tpu-serving:addons): the controllers workloads need (stacks/addons: one registry entry per
add-on, with its settings model and rules). Its rules and its plan (components/addons.py builds it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks import addons as addon_registry
from stacks.addons import AddonsConfig
from stacks.model.config_parse import parse
from stacks.pieces.rules import NS
from stacks.problems import Problem

PATH = f"{NS}:addons"


@dataclass(frozen=True)
class AddonsPlan:
    """The add-ons as the stack installs them."""

    settings: AddonsConfig
    """Each add-on's settings (enabled, version, ...), by its key."""
    kubernetes_minor: str
    """The minor version the Pod Security labels of their namespaces are pinned to."""


def section(raw: Any, found: list[Problem]) -> AddonsConfig | None:
    """tpu-serving:addons parsed with the registry's settings model, then every entry's own rules (None: it does
    not parse, reported)."""
    addons = parse(PATH, addon_registry.settings_model(), {} if raw is None else raw, found)
    if addons is not None:
        found.extend(problems(addons))
    return addons


def problems(addons: AddonsConfig) -> list[Problem]:
    """Every registry entry's own rules."""
    return addon_registry.check(addons, PATH)


def plan(addons: AddonsConfig, *, kubernetes_minor: str) -> AddonsPlan:
    return AddonsPlan(settings=addons, kubernetes_minor=kubernetes_minor)
