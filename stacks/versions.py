"""The version matrix: the one place that pins what tpu-serving installs and runs.

Python packages are installed from requirements.txt, which must agree with PYTHON_PACKAGES (a test checks).
Helm charts, controller manifests and container images are pinned here and nowhere else; config may choose
another version only from a chart's SUPPORTED list, and the compatibility rules below are checked before
anything is registered. Sources are in ../shared/reference/SOURCES.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from stacks.catalog import version_tuple

PYTHON_PACKAGES: dict[str, str] = {
    "pulumi": "3.272.0",
    "pulumi-gcp": "10.2.0",
    "pulumi-kubernetes": "4.34.2",
    "pydantic": "2.14.3",
    "PyYAML": "6.0.3",
    "pytest": "9.2.0",
    "pytest-timeout": "2.4.0",
    "kubernetes-validate": "1.37.0",
    "pytest-xdist": "3.8.0",
    "ruff": "0.17.5",
    "mypy": "2.4.1",
    "types-PyYAML": "6.0.12.20261113",
}

# Kubernetes minor version the rendered objects are validated against when cluster.minMasterVersion is unset
# (the GKE REGULAR channel's minor when this matrix was last updated).
DEFAULT_KUBERNETES_MINOR = "1.34"


@dataclass(frozen=True)
class ChartVersion:
    """One release of a Helm chart published in an OCI registry, and the controller image it runs."""

    chart: str  # oci://... reference, as `helm install <chart> --version <version>` takes it
    version: str
    image_repository: str
    image_tag: str
    namespace: str
    release_name: str


def _lws(version: str) -> ChartVersion:
    # oci://registry.k8s.io/lws/charts/lws, namespace lws-system (lws installation docs, v0.7.0)
    return ChartVersion(
        "oci://registry.k8s.io/lws/charts/lws", version, "registry.k8s.io/lws/lws", f"v{version}", "lws-system", "lws"
    )


def _jobset(version: str) -> ChartVersion:
    # oci://registry.k8s.io/jobset/charts/jobset, version without "v", namespace jobset-system (jobset docs, v0.10.1)
    return ChartVersion(
        "oci://registry.k8s.io/jobset/charts/jobset",
        version,
        "registry.k8s.io/jobset/jobset",
        f"v{version}",
        "jobset-system",
        "jobset",
    )


def _kueue(version: str) -> ChartVersion:
    return ChartVersion(
        "oci://registry.k8s.io/kueue/charts/kueue",
        version,
        "registry.k8s.io/kueue/kueue",
        f"v{version}",
        "kueue-system",
        "kueue",
    )


def _prometheus_adapter(version: str, app_version: str) -> ChartVersion:
    return ChartVersion(
        "oci://ghcr.io/prometheus-community/charts/prometheus-adapter",
        version,
        "registry.k8s.io/prometheus-adapter/prometheus-adapter",
        app_version,
        "custom-metrics",
        "prometheus-adapter",
    )


# Supported versions per chart; the first is the default and the one the tests validate against the primary CRDs
# in ../shared/reference/crds. The others have their CRDs under crds/alternates/.
CHARTS: dict[str, dict[str, ChartVersion]] = {
    "lws": {v: _lws(v) for v in ("0.7.0", "0.10.0")},
    "jobset": {v: _jobset(v) for v in ("0.10.1", "0.12.0")},
    # xpk pins Kueue v0.17.1 (KUEUE_VERSION)
    "kueue": {v: _kueue(v) for v in ("0.17.1",)},
    # chart 5.3.0 = prometheus-adapter v0.12.0 (Chart.yaml appVersion)
    "prometheusAdapter": {"5.3.0": _prometheus_adapter("5.3.0", "v0.12.0")},
}


def default_version(chart: str) -> str:
    return next(iter(CHARTS[chart]))


@dataclass(frozen=True)
class ManifestVersion:
    """A controller installed from its upstream release manifest (server-side apply)."""

    url: str
    version: str
    min_jobset: str


# google/pathways-job release/install.yaml; its README requires JobSet >= v0.8.0.
PATHWAYS_JOB: dict[str, ManifestVersion] = {
    "0.1.4": ManifestVersion(
        "https://github.com/google/pathways-job/releases/download/v0.1.4/install.yaml", "0.1.4", min_jobset="0.8.0"
    ),
}


def jobset_satisfies(jobset_version: str, minimum: str) -> bool:
    return version_tuple(jobset_version) >= version_tuple(minimum)


# Container images. Workload layers add theirs here.
IMAGES: dict[str, str] = {
    # k8s-stackdriver custom-metrics-stackdriver-adapter/deploy/production/adapter_new_resource_model.yaml
    "customMetricsStackdriverAdapter": "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0",
    # ai-on-gke modules/prometheus-adapter/main.tf: the GMP query frontend for prometheus-adapter
    "gmpFrontend": "gke.gcr.io/prometheus-engine/frontend:v0.8.0-gke.4",
    # kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways (GKE tutorial serve-multihost-tpu-jetstream)
    "pathwaysProxy": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.5.3",
    "pathwaysServer": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.5.3",
    "jetstreamPathways": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0",
    "jetstreamHttpPathways": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3",
    # ai-on-gke tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/kubectl/deployment.yaml
    "maxengineServer": "us-docker.pkg.dev/cloud-tpu-images/inference/maxengine-server:v0.2.2",
    "jetstreamHttp": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2",
    # kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml (GKE tutorial tpu-multihost-saxml)
    "saxAdminServer": "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0",
    "saxModelServer": "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0",
    "saxHttp": "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0",
}


# GitHub Actions the user workflows in .github/workflows use, pinned to exact releases (a test checks every
# `uses:` against this list).
GITHUB_ACTIONS: dict[str, str] = {
    "actions/checkout": "v4.2.2",
    "actions/setup-python": "v5.3.0",
    "actions/github-script": "v7.0.1",
    "actions/upload-artifact": "v4.4.3",
    "google-github-actions/auth": "v2.1.7",
    "google-github-actions/setup-gcloud": "v2.1.5",
    "pulumi/actions": "v6.0.1",
}
# The Cloud SDK the workflows install with setup-gcloud, for its gke-gcloud-auth-plugin component (the kubeconfig's
# credential plugin; a component follows its SDK release).
GCLOUD_SDK = "547.0.0"
# The Pulumi CLI the workflows install (the SDK in PYTHON_PACKAGES is the same release line).
PULUMI_CLI = "3.272.0"
