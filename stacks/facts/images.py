"""Where nodes pull the pinned images from: an Artifact Registry remote repository in the stack's project and
region for each public registry a pinned image comes from, and the reference a pod uses, derived from the version
matrix's (stacks/facts/versions.py stays the one pin source: the served reference is never typed twice).

Why: GKE image streaming serves only images in Artifact Registry (standard or remote repositories), so vLLM's
Docker Hub image streams only through a remote repository; a remote repository also caches the image in the region,
so a new node does not pull gigabytes from Docker Hub over Cloud NAT (with its rate limits) on every scale-out.

Sources:
- I1 https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming ("Requirements"): the Container File
  System API, Container-Optimized OS with containerd, images stored in standard or remote Artifact Registry
  repositories. TPU nodes are not named there either way: only a real deploy shows streaming onto TPU VMs.
- I2 https://cloud.google.com/artifact-registry/docs/repositories/remote-repo: a Docker remote repository for
  Docker Hub is pulled as `<location>-docker.pkg.dev/<project>/<repository>/<image path on Docker Hub>:<tag>`
  (Docker Hub's official images under `library/`).
- I3 hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/artifactregistry/
  resource_artifact_registry_repository.go: `mode` one of STANDARD_REPOSITORY, VIRTUAL_REPOSITORY,
  REMOTE_REPOSITORY; `remote_repository_config.docker_repository.public_repository` one of DOCKER_HUB;
  `docker_repository` ExactlyOneOf the other formats' blocks; `format`, `mode`, `repository_id`, `location` and the
  remote config ForceNew (tooling/data/provider_rules.json, tests/test_image_mirror.py).

Google's own images (us-docker.pkg.dev/cloud-tpu-images/..., cloud-tpu-v2-images, gcr.io/gke-release,
gke.gcr.io) already live in Artifact Registry (gcr.io is served by Artifact Registry), publicly readable: they are
pulled as they are, in Google's `us` multi-region. Whether GKE streams an image from a project that is not the
cluster's is not stated in I1; if a deploy shows it pulls them whole, copy them into a standard repository
(docs/deploying.md "Container images").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

READER_ROLE = "roles/artifactregistry.reader"
# Registries whose images are already in Artifact Registry (Google's projects): served as they are.
GOOGLE_REGISTRIES = re.compile(r"([a-z0-9-]+-)?docker\.pkg\.dev|([a-z]+\.)?gcr\.io")


@dataclass(frozen=True)
class Remote:
    """One public registry and the remote repository that serves it (I3 field values)."""

    registry: str
    """The registry host an image reference names, e.g. docker.io."""
    repository_id: str
    public_repository: str
    """remote_repository_config.docker_repository.public_repository (I3: DOCKER_HUB)."""


REMOTES: dict[str, Remote] = {r.registry: r for r in (Remote("docker.io", "docker-hub", "DOCKER_HUB"),)}
# Registries a pinned image is pulled from as it is, with why no remote serves them: a small CPU image on the system
# pool needs neither streaming nor a regional cache, and a remote repository in every stack for it would be one
# more repository and grant per stack that only a release gate uses.
DIRECT: dict[str, str] = {
    "quay.io": "the release gate's load generator (stacks/serving/benchmark.py), about 0.5 GB, run once per step",
    "ghcr.io": "the routing sidecar of a disaggregated vLLM workload's decode servers (workloads/vllm/manifests.py), "
    "about 0.1 GB, from the registry the router's endpoint picker image comes from (versions.LLM_D_ROUTER)",
}


def registry_of(ref: str) -> str:
    """The registry host of an image reference: its first path part when that names a host (a '.' or ':', or
    localhost), else Docker Hub (docker.io), as Docker and containerd resolve a short name."""
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def _path_on(ref: str, registry: str) -> str:
    """The image's path (with tag or digest) within its registry; Docker Hub's one-part names are `library/`."""
    path = ref.removeprefix(f"{registry}/") if ref.startswith(f"{registry}/") else ref
    return f"library/{path}" if registry == "docker.io" and "/" not in path else path


def host(region: str) -> str:
    """The Docker host of Artifact Registry in `region` (I2)."""
    return f"{region}-docker.pkg.dev"


def unmirrored_registries(refs: Iterable[str]) -> list[str]:
    """Registries of `refs` that are neither Google's (served as they are), nor served by a remote in REMOTES, nor
    pulled as they are for a reason (DIRECT)."""
    return sorted(
        {
            r
            for r in map(registry_of, refs)
            if r not in REMOTES and r not in DIRECT and not GOOGLE_REGISTRIES.fullmatch(r)
        }
    )


@dataclass(frozen=True)
class ImageMirror:
    """The stack's remote repositories (`cluster.images.mirror`) and the reference a pod pulls a pinned image by."""

    project: str
    region: str
    remotes: tuple[Remote, ...]
    """Empty when cluster.images.mirror is off: every image is pulled as pinned."""
    labels: dict[str, str] = field(default_factory=dict)
    """The stack's labels, on each repository."""

    def served(self, ref: str) -> str:
        """`ref` as a pod pulls it: through the stack's remote repository for its registry, else as it is."""
        registry = registry_of(ref)
        remote = next((r for r in self.remotes if r.registry == registry), None)
        if remote is None:
            return ref
        return f"{host(self.region)}/{self.project}/{remote.repository_id}/{_path_on(ref, registry)}"


def stream_confirmed(ref: str, project: str) -> bool:
    """Whether a source says GKE streams `ref` onto the stack's nodes: an Artifact Registry image in the cluster's own
    project (I1 "Requirements"; the stack's remote repositories). Google's own projects' images (cloud-tpu-images,
    gcr.io): I1 does not say, so the time-to-serve model counts them pulled whole; other registries never stream."""
    return bool(project) and re.fullmatch(rf"[a-z0-9-]+-docker\.pkg\.dev/{re.escape(project)}/.+", ref) is not None


def origin(ref: str) -> str:
    """The reference `ref` serves (the version matrix's), for a reference through a stack's remote repository;
    any other reference as it is. Lets the matrix's records (versions.image_record) recognise a served image."""
    match = _SERVED.fullmatch(ref)
    if match is None:
        return ref
    remote = next(r for r in REMOTES.values() if r.repository_id == match.group(1))
    path = match.group(2)
    if remote.registry == "docker.io":
        path = path.removeprefix("library/")
    return f"{remote.registry}/{path}"


_SERVED = re.compile(
    r"[a-z0-9-]+-docker\.pkg\.dev/[a-z][-a-z0-9]{4,28}[a-z0-9]/("
    + "|".join(r.repository_id for r in REMOTES.values())
    + r")/(.+)"
)


def plan(enabled: bool, project: str, region: str, refs: Iterable[str]) -> ImageMirror:
    """The mirror of `refs` (the version matrix's images): a remote repository for each registry they come from
    that REMOTES serves; none when it is off."""
    registries = {registry_of(ref) for ref in refs} if enabled else set()
    return ImageMirror(project, region, tuple(r for key, r in REMOTES.items() if key in registries))
