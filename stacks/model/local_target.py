"""Local mode (`tpu-serving:local`): the stack's in-cluster layer applied to a Kubernetes cluster of the user's own
(a local control plane with simulated TPU nodes, `make local-cluster`), with its Google Cloud layer stood in.

The program builds the same components and workloads as for GKE (components/platform.py); only what Google Cloud
would create is left out, and what the in-cluster layer reads from it is stood in by the values Google would
return, all derived from names the plans already know: the cluster's name and location, the bucket's name and
URL, each service account's email (`<account id>@<project>.iam.gserviceaccount.com`, the form IAM gives every
user-managed account: https://cloud.google.com/iam/docs/service-account-overview "user-managed service accounts"),
the bucket-get role's name, a workload policy's name. Nothing here talks to Google.

Charts, CRD files and release manifests come from local sources (a folder laid out like ../shared/reference:
`charts/<folder>/<path in repository>`, `charts-staged/...`, `crds/`, `manifests/`), never from their registries
or URLs: a local run needs no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import Field

from stacks.facts import versions
from stacks.facts.versions import ChartCrds, ChartVersion, ManifestVersion
from stacks.model.config_model import CamelModel

# Where each chart's source lives in a sources folder (the reference copy's layout, ../shared/reference/SOURCES.md
# "charts/"): chart name (the OCI reference's last segment) -> (folder per version, repository@tag, path in it).
CHART_SOURCES: dict[str, tuple[str, str, str]] = {
    "lws": ("lws-{version}", "kubernetes-sigs/lws@v{version}", "charts/lws"),
    "jobset": ("jobset-{version}", "kubernetes-sigs/jobset@v{version}", "charts/jobset"),
    "kueue": ("kueue-{version}", "kubernetes-sigs/kueue@v{version}", "charts/kueue"),
    "prometheus-adapter": (
        "prometheus-adapter-{version}",
        "prometheus-community/helm-charts@prometheus-adapter-{version}",
        "charts/prometheus-adapter",
    ),
    # kedacore/charts tags the chart as v<version> at the root of the repository (keda/)
    "keda": ("keda-{version}", "kedacore/charts@v{version}", "keda"),
    "llm-d-router-gateway": (
        "llm-d-router-{version}",
        "llm-d/llm-d-router@{version}",
        "config/charts/llm-d-router-gateway",
    ),
    "body-based-routing": (
        "gateway-api-inference-extension-{version}",
        "kubernetes-sigs/gateway-api-inference-extension@{version}",
        "config/charts/body-based-routing",
    ),
}
# The folders of a sources folder that hold chart sources: pinned (charts/) and staged for review (charts-staged/).
CHART_FOLDERS = ("charts", "charts-staged")
DEFAULT_SOURCES = ("../shared/reference",)


class LocalConfig(CamelModel):
    """Apply only the stack's Kubernetes layer, to a cluster of your own (docs/local.md): no Google Cloud resource is
    created; the cluster, bucket and identities are stood in by the names the stack would give them."""

    kubeconfig: str = Field(
        description="Path of the kubeconfig of the cluster to apply to (relative to the project folder), e.g. "
        ".cache/local/<stack>/kubeconfig as the local-cluster make target writes it. Its current context is used."
    )
    sources: list[str] = Field(
        list(DEFAULT_SOURCES),
        min_length=1,
        description="Folders searched in order for the pinned charts, CRD files and release manifests, laid out as "
        "../shared/reference is (`charts/`, `charts-staged/`, `crds/`, `manifests/`); relative to the project folder.",
    )


class SourceMissingError(FileNotFoundError):
    """A chart, CRD file or manifest the local sources do not hold (the message says where it looked)."""


def chart_name(chart: str) -> str:
    return chart.rstrip("/").rsplit("/", 1)[-1]


class Sources(Protocol):
    """Where the stack's charts, CRD files and release manifests come from."""

    def chart_ref(self, chart: ChartVersion) -> tuple[str, str | None, str | None]: ...
    def crd_files(self, crds: ChartCrds, chart: ChartVersion) -> tuple[str, ...]: ...
    def manifest_file(self, manifest: ManifestVersion) -> str: ...


@dataclass(frozen=True)
class RegistrySources:
    """Where a GKE stack gets its charts, CRD files and release manifests: their registries and URLs at the pinned
    versions (stacks/facts/versions.py)."""

    def chart_ref(self, chart: ChartVersion) -> tuple[str, str | None, str | None]:
        """(chart, version, chart repository) as a Helm release takes them."""
        return chart.chart, chart.version, chart.repository

    def crd_files(self, crds: ChartCrds, chart: ChartVersion) -> tuple[str, ...]:
        return crds.urls

    def manifest_file(self, manifest: ManifestVersion) -> str:
        return manifest.url


REGISTRY = RegistrySources()


@dataclass(frozen=True)
class LocalSources:
    """Where a local run gets them: folders laid out as ../shared/reference, first match wins (the same versions)."""

    roots: tuple[Path, ...]

    def chart_ref(self, chart: ChartVersion) -> tuple[str, str | None, str | None]:
        """The chart's source folder; no version or repository (Helm reads the folder as it is)."""
        return str(self.chart(chart)), None, None

    def manifest_file(self, manifest: ManifestVersion) -> str:
        return str(self.manifest(manifest))

    @classmethod
    def of(cls, config: LocalConfig, base: Path) -> LocalSources:
        return cls(tuple((base / s).resolve() for s in config.sources))

    def _first(self, candidates: Sequence[str], what: str) -> Path:
        for root in self.roots:
            for relative in candidates:
                if (root / relative).exists():
                    return root / relative
        looked = ", ".join(str(root / c) for root in self.roots for c in candidates)
        raise SourceMissingError(
            f"{what}: not found in the local sources (tpu-serving:local.sources); looked at {looked}"
        )

    def chart(self, chart: ChartVersion) -> Path:
        """The chart's source folder at its pinned version."""
        name = chart_name(chart.chart)
        if name not in CHART_SOURCES:
            raise SourceMissingError(
                f"chart {chart.chart}: no local source layout known (stacks/model/local_target.py)"
            )
        folder, _, path = CHART_SOURCES[name]
        relative = f"{folder.format(version=chart.version)}/{path}"
        return self._first([f"{top}/{relative}" for top in CHART_FOLDERS], f"chart {chart.chart} {chart.version}")

    def crd_files(self, crds: ChartCrds, chart: ChartVersion) -> tuple[str, ...]:
        """The chart's CRD files: from its own source folder where they live in the chart (lws, jobset), else from
        the CRD folder's layout (`crds/` for the validated version, `crds/alternates/<project>-v<version>/`)."""
        name = chart_name(chart.chart)
        chart_path = CHART_SOURCES.get(name, ("", "", "\0"))[2]
        out = []
        for path in crds.paths:
            if path.startswith(chart_path + "/"):
                out.append(str(self.chart(chart) / path.removeprefix(chart_path + "/")))
            else:
                out.append(str(self._crd(crds.repo, crds.tag.removeprefix("v"), path.rsplit("/", 1)[-1])))
        return tuple(out)

    def _crd(self, repo: str, version: str, file_name: str) -> Path:
        projects = [
            p for p, by_version in versions.CRDS.items() if any(c.repo == repo for c in by_version.get(version, ()))
        ]
        candidates = [f"crds/{versions.crd_cache_path(p, version)}{file_name}" for p in projects]
        return self._first(candidates or [f"crds/{file_name}"], f"CRD {file_name} of {repo} {version}")

    def manifest(self, manifest: ManifestVersion) -> Path:
        """A release manifest (`<repo>/releases/download/v<version>/<file>`) as the reference keeps it:
        `manifests/<repo name>-v<version>/<file>`."""
        parts = manifest.url.split("/")
        repo, file_name = parts[4], parts[-1]
        return self._first([f"manifests/{repo}-v{manifest.version}/{file_name}"], f"manifest {manifest.url}")


# ---- stand-ins: what Google Cloud would return for the names the stack gives ----------------------------------


def service_account_email(account_id: str, project: str) -> str:
    """A user-managed service account's email, as IAM forms it from its id and project."""
    return f"{account_id}@{project}.iam.gserviceaccount.com"


def bucket_url(bucket: str) -> str:
    return f"gs://{bucket}"


def custom_role_name(project: str, role_id: str) -> str:
    """A project custom role's resource name (IAM: `projects/<project>/roles/<role id>`)."""
    return f"projects/{project}/roles/{role_id}"
