"""The PathwaysJob controller (google/pathways-job): runs `pathways-job` workloads as JobSets, off by default.

Installed from its upstream release manifest, applied server-side as its README says; the manifest brings its own
namespace and CRD.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from stacks.addons.addon import Addon, AddonSettings
from stacks.facts import versions


class PathwaysJobAddonConfig(AddonSettings):
    """The PathwaysJob controller from its upstream release manifest (needs JobSet >= 0.8); required by
    pathways-job workloads."""

    enabled: bool = Field(False, description="Install the PathwaysJob controller (batch Pathways jobs).")
    version: str | None = Field(None, description="Controller version from the supported list.")


def _needs(release: versions.ManifestVersion) -> Mapping[str, str]:
    # the controller makes a JobSet per PathwaysJob (its README: "JobSet >= v0.8.0")
    return {"jobset": release.min_jobset}


ADDON = Addon(
    key="pathwaysJob",
    title="PathwaysJob controller",
    settings=PathwaysJobAddonConfig,
    releases=versions.PATHWAYS_JOB,
    needs=_needs,
)
