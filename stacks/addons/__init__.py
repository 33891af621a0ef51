"""The add-on registry (LWS, JobSet, Kueue, PathwaysJob). May import: stacks.model and below.

One line per cluster add-on; each entry (stacks/addons/<name>.py) carries everything about it.

The `tpu-serving:addons` config model (and so the JSON Schema), its validation, the generic component
(components/addons.py) and the stack's `addons` output are all derived from `ADDONS`. Adding an add-on = its
pinned releases in stacks/facts/versions.py, one module here, one line below.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import Field, create_model
from pydantic.alias_generators import to_snake

from stacks.addons import jobset, kueue, lws, pathways_job
from stacks.addons.addon import Addon, AddonSettings, ChartAddonConfig, CrdPolicy, OptionalChartAddonConfig
from stacks.facts.catalog import version_tuple
from stacks.model.config_model import CamelModel
from stacks.problems import Problem

__all__ = [
    "ADDONS",
    "Addon",
    "AddonSettings",
    "AddonsConfig",
    "ChartAddonConfig",
    "CrdPolicy",
    "OptionalChartAddonConfig",
    "addon",
    "check",
    "enabled",
    "settings_model",
    "summary",
]

# Order matters: an add-on comes after every add-on it needs (a test checks).
ADDONS: tuple[Addon[Any], ...] = (
    lws.ADDON,
    jobset.ADDON,
    kueue.ADDON,
    pathways_job.ADDON,
)


class AddonsConfig(CamelModel):
    """`tpu-serving:addons`: one key per registry entry (the concrete model is `settings_model()`)."""

    def of(self, key: str) -> AddonSettings:
        settings: AddonSettings = getattr(self, to_snake(key))
        return settings


@functools.cache
def _model(entries: tuple[Addon[Any], ...]) -> type[AddonsConfig]:
    fields: dict[str, Any] = {
        to_snake(entry.key): (entry.settings, Field(default_factory=entry.settings, description=entry.description))
        for entry in entries
    }
    return create_model(
        "AddonsConfig",
        __base__=AddonsConfig,
        __doc__="The cluster-wide controllers the stack installs on the system pool, one key per add-on.",
        **fields,
    )


def settings_model() -> type[AddonsConfig]:
    """The model of `tpu-serving:addons`, one field per registered add-on."""
    return _model(ADDONS)


def addon(key: str) -> Addon[Any]:
    found = next((entry for entry in ADDONS if entry.key == key), None)
    if found is None:
        raise KeyError(f"{key!r} is not a registered add-on; registered: {', '.join(a.key for a in ADDONS)}")
    return found


def enabled(config: AddonsConfig) -> list[tuple[Addon[Any], AddonSettings]]:
    """The add-ons a config installs, in registry order (needed add-ons first), with their settings."""
    return [(entry, config.of(entry.key)) for entry in ADDONS if config.of(entry.key).enabled]


def summary(config: AddonsConfig) -> dict[str, dict[str, str]]:
    """The stack's `addons` output: each installed add-on and where it comes from."""
    return {entry.key: entry.summary(entry.release(settings)) for entry, settings in enabled(config)}


def check(config: AddonsConfig, base: str) -> list[Problem]:
    """A problem (at `base` + its key path under it) for each unsupported version and each unmet need."""
    found: list[Problem] = []
    for entry in ADDONS:
        settings = config.of(entry.key)
        if settings.version is not None and settings.version not in entry.releases:
            supported = ", ".join(entry.releases)
            found.append(
                Problem(
                    f"{base}.{entry.key}.version",
                    f"{settings.version!r} is not supported; supported: {supported} (stacks/facts/versions.py)",
                )
            )
        elif settings.enabled:
            found += _unmet_needs(entry, entry.release(settings), config, base)
            found += _admits_problems(entry, settings, base)
    return found


def _admits_problems(entry: Addon[Any], settings: AddonSettings, base: str) -> list[Problem]:
    """An add-on's webhooks may not intercept kube-system or the add-on's own namespace: with `failurePolicy: Fail`
    its own controller (or the cluster's system pods) could not be created while it is down."""
    own = entry.release(settings).namespace
    return [
        Problem(
            f"{base}.{entry.key}.namespaces",
            f"{ns!r} cannot be managed by the {entry.title}: its webhooks would admit the pods that serve them "
            f"(allowed: the namespaces of your workloads, not kube-system or {own})",
        )
        for ns in entry.admits(settings)
        if ns in ("kube-system", own)
    ]


def _unmet_needs(entry: Addon[Any], release: Any, config: AddonsConfig, base: str) -> list[Problem]:
    found = []
    for key, minimum in entry.needs(release).items():
        needed, settings = addon(key), config.of(key)
        version = settings.version or needed.default_version
        if not settings.enabled:
            found.append(
                Problem(f"{base}.{entry.key}.enabled", f"the {entry.title} needs {needed.title}: enable addons.{key}")
            )
        elif version in needed.releases and version_tuple(version) < version_tuple(minimum):
            found.append(
                Problem(f"{base}.{key}.version", f"{version!r} is too old for the {entry.title} (needs >= {minimum})")
            )
    return found
