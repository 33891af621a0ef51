"""The entry type of the add-on registry: everything about one cluster add-on, as data and pure builders.

An add-on is installed either as a Helm chart (`ChartVersion`: a `helm.v3.Release` in a namespace the stack creates
with the add-on's Pod Security level) or as an upstream release manifest (`ManifestVersion`: applied server-side,
bringing its own namespace). Its pinned releases are the version matrix's (stacks/facts/versions.py); the entry only
points at them. components/addons.py registers what an entry describes, with no knowledge of any one add-on.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import Field

from stacks.facts.versions import ChartVersion, ManifestVersion
from stacks.model.config_model import CamelModel

R = TypeVar("R", ChartVersion, ManifestVersion)
# (the pinned chart release, the add-on's validated settings) -> Helm values, the user's `values` merged last
ValuesBuilder = Callable[[ChartVersion, "AddonSettings"], dict[str, Any]]


class AddonSettings(CamelModel):
    """What every add-on key accepts: whether to install it and which supported version."""

    enabled: bool = Field(True, description="Install it.")
    version: str | None = Field(None, description="Chart version from the supported list; default: the matrix's.")


class ChartAddonConfig(AddonSettings):
    """A Helm chart the stack installs (pinned in stacks/facts/versions.py)."""

    values: dict[str, Any] = Field(default_factory=dict, description="Helm values merged over the stack's own.")


def user_values(settings: AddonSettings) -> dict[str, Any]:
    """The Helm values a user set for a chart add-on (merged over the stack's own)."""
    values: dict[str, Any] = getattr(settings, "values", {})
    return values


class OptionalChartAddonConfig(ChartAddonConfig):
    enabled: bool = Field(False, description="Install it (off by default).")


# The Helm post-renderer (a path from the project root, where Pulumi runs its providers, as
# stacks/monitoring/adapters/entry.py DROP_API_SERVICES) that puts Helm's keep policy on every CRD a chart templates.
KEEP_CRDS = "scripts/helm_postrender_keep_crds.py"


class CrdPolicy(enum.Enum):
    """How the stack applies an add-on's CRDs at a release (components/addons.py `AddonCrds`)."""

    # The chart ships them under crds/: the stack applies the files at the release tag before the release (which
    # skips crds/), so a version change updates them in place; Helm never upgrades crds/ (helm.sh docs,
    # "Custom Resource Definitions").
    STACK = "applied by the stack before the release"
    # The chart templates them: the stack applies the files at the release tag first, with Helm's ownership
    # metadata for the release, so Helm adopts them (on install, and on a revert from a version that ships them
    # under crds/, whose CRDs the stack applied) instead of refusing an object it does not own.
    ADOPTED = "applied by the stack as the release's, then adopted by the chart's templates"
    # Helm's, with the release (the chart's crds/ or templates): only for a chart with one supported version, since
    # Helm never upgrades crds/ and deletes a templated CRD that leaves the templates (a test checks). The release
    # runs KEEP_CRDS, so neither its uninstall (the add-on disabled) nor an upgrade deletes a templated CRD, which
    # would take every object of its kind with it.
    HELM = "managed by Helm with the release"
    # The upstream release manifest carries them; server-side apply updates them with it.
    MANIFEST = "in the upstream release manifest"


def _no_needs(release: Any) -> Mapping[str, str]:
    return {}


def _admits_nothing(settings: Any) -> Sequence[str]:
    return ()


@dataclass(frozen=True, eq=False)
class Addon(Generic[R]):
    """One add-on. `key` is its key under `tpu-serving:addons` (camelCase) and the stem of its resource names."""

    key: str
    title: str  # what it is, in messages and the README ("JobSet", "PathwaysJob controller")
    settings: type[AddonSettings]  # the model of `tpu-serving:addons.<key>` (its defaults: on or off)
    releases: Mapping[str, R]  # supported releases from stacks/facts/versions.py; the first is the default
    description: str | None = None  # the key's description in the JSON Schema
    # Pod Security level the stack's namespace for a chart enforces: what the chart's pods pass with `values`.
    # None for a manifest, which brings its own namespace.
    pod_security: str | None = None
    values: ValuesBuilder | None = None  # Helm values of a chart release, the user's merged last
    # Other add-ons this one needs at a release: add-on key -> minimum version. Needed add-ons come earlier in
    # the registry, so they are registered first and depended on.
    needs: Callable[[R], Mapping[str, str]] = field(default=_no_needs)
    # The namespaces whose objects its admission webhooks (failurePolicy Fail) intercept, from its settings: the
    # stack creates each of its namespaces among them only after the add-on's release is ready (components/addons.py
    # `Addons.admission`), so no object there races the webhook. Never kube-system or its own namespace.
    admits: Callable[[Any], Sequence[str]] = field(default=_admits_nothing)

    @property
    def resource_name(self) -> str:
        """The stem of the add-on's resource names: its key in kebab case (pathwaysJob -> pathways-job)."""
        return re.sub(r"[A-Z]", lambda m: "-" + m.group(0).lower(), self.key)

    @property
    def default_version(self) -> str:
        return next(iter(self.releases))

    def release(self, settings: AddonSettings) -> R:
        """The pinned release a (validated) config selects."""
        return self.releases[settings.version or self.default_version]

    def chart_values(self, release: ChartVersion, settings: AddonSettings) -> dict[str, Any]:
        if self.values is None:
            raise ValueError(f"add-on {self.key!r} is a chart without a values builder")
        return self.values(release, settings)

    def summary(self, release: R) -> dict[str, str]:
        """Its entry in the stack's `addons` output: what is installed, from where."""
        if isinstance(release, ManifestVersion):
            return {"manifest": release.url, "version": release.version}
        return {"chart": release.chart, "version": release.version, "namespace": release.namespace}

    def crd_policy(self, release: R) -> CrdPolicy:
        if isinstance(release, ManifestVersion):
            return CrdPolicy.MANIFEST
        if release.crds is None:
            return CrdPolicy.HELM
        return CrdPolicy.ADOPTED if release.crds.templated else CrdPolicy.STACK
