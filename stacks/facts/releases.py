"""The engine release table of the version matrix: per engine release, its known security advisories and the
features known to break on it, each with its public source. The version guard (stacks/serving/version_guard.py)
reads it: prod refuses an engine with an open high or critical advisory unless the stack file acknowledges it, any
environment refuses a feature on a release it breaks on.

Pure data and pure functions. Only what a public source states is recorded (the advisory's GitHub security
advisory or CVE record, the issue a breakage is reported in); a release with nothing recorded says which sources
were checked in its `source`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Severity = Literal["low", "medium", "high", "critical"]
SEVERITIES: tuple[Severity, ...] = ("low", "medium", "high", "critical")


@dataclass(frozen=True)
class Advisory:
    """One published security advisory affecting a release: its id (GHSA or CVE), severity as published, the first
    release that fixes it, and its source URL."""

    id: str
    severity: Severity
    fixed_in: str
    summary: str
    source: str


@dataclass(frozen=True)
class Breakage:
    """A feature (a key of FEATURES) known not to work on a release, and where that is reported."""

    feature: str
    summary: str
    source: str


@dataclass(frozen=True)
class EngineRelease:
    """One release of a serving engine: the image the stack runs for it (None: no public source names an image tag
    for it), its release date, where it is established, and what is known against it."""

    engine: str
    version: str
    image: str | None
    released: str  # ISO date (YYYY-MM or YYYY-MM-DD), as its source gives it
    source: str
    advisories: tuple[Advisory, ...]
    breaks: tuple[Breakage, ...]


# Features a workload can turn on that a release may break, keyed as Breakage.feature names them.
FEATURES: dict[str, str] = {
    "pd-disaggregation": "vLLM prefill/decode disaggregation over a tpu-inference KV connector (TPUConnector or "
    "TPUConnectorHMA, --kv-transfer-config kv_connector)",
    "pd-disaggregation-hma": "prefill/decode disaggregation over TPUConnectorHMA, tpu-inference's connector for "
    "hybrid-attention models (kv_connector TPUConnectorHMA); it is also pd-disaggregation",
    "speculative-decoding": "speculative decoding (a draft model or n-gram proposer)",
    "lora": "serving LoRA adapters loaded at startup",
    "lora-runtime-loading": "loading and unloading LoRA adapters at runtime (/v1/load_lora_adapter)",
    "multi-host": "one model served across the hosts of a multi-host TPU slice",
    "prefix-caching": "automatic prefix caching of the KV cache",
}

_NOTHING_FOUND = "no advisory found"


def version_key(version: str) -> tuple[int, ...]:
    """A release version as comparable numbers: `v0.28.0` -> (0, 28, 0); a suffix (`.post1`, `rc1`) is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", version.removeprefix("v").split("+")[0])[:3])


# A tag that is a release version: `0.27.0` or `v0.27.0` (Docker Hub's vllm/vllm-tpu tags carry the `v`; PyPI's
# versions do not: both name the same release).
VERSION_TAG = re.compile(r"v?\d+\.\d+\.\d+")
# Docker Hub's names (github.com/distribution/reference normalize.go, the Docker CLI's parser: a first path part
# without "." or ":" that is not "localhost" is no host, so the name is Docker Hub's, defaultDomain "docker.io";
# legacyDefaultDomain "index.docker.io" normalises to it; a one-part name is in officialRepoPrefix "library/"), and
# registry-1.docker.io, the host Docker's public registry serves from (https://docs.docker.com/reference/cli/docker/
# image/tag/: a name without a hostname uses registry-1.docker.io).
DOCKER_HUB = "docker.io"
DOCKER_HUB_ALIASES = ("docker.io", "index.docker.io", "registry-1.docker.io")


def image_name(ref: str) -> tuple[str, str]:
    """An image reference as (repository with its registry host, tag): `vllm/vllm-tpu:0.27.0`,
    `index.docker.io/vllm/vllm-tpu:0.27.0` and `docker.io/vllm/vllm-tpu:0.27.0` are one repository; a digest is
    dropped, a missing tag is `latest`."""
    name = ref.split("@", 1)[0]
    repository, sep, tag = name.rpartition(":")
    if not sep or "/" in tag:
        repository, tag = name, "latest"
    host, _, rest = repository.partition("/")
    if not rest or ("." not in host and ":" not in host and host != "localhost"):
        host, rest = DOCKER_HUB, repository
    if host in DOCKER_HUB_ALIASES:
        host = DOCKER_HUB
        if "/" not in rest:
            rest = f"library/{rest}"
    return f"{host}/{rest}", tag


# ---- vLLM on TPU --------------------------------------------------------------------------------------------------
# The vllm-tpu package is vLLM built for TPU; each release pins tpu-inference at the same version (PyPI vllm-tpu
# 0.32.0 sdist requirements/tpu.txt: tpu-inference==0.32.0). PyPI lists both at 0.27.0, 0.28.0, 0.29.0, 0.30.0,
# 0.31.0 and 0.32.0 (`pip index versions vllm-tpu` / `tpu-inference`, 2026-11-29); `released` is the build date of
# each tpu-inference wheel (its dist-info timestamps). The advisories are vLLM's (the vllm package, whose source
# vllm-tpu is), each recorded with the range its public record gives: `introduced` (inclusive) to `fixed_in`.
_VLLM_ADVISORIES: tuple[tuple[str, Advisory], ...] = (
    (
        "0",
        Advisory(
            "CVE-2026-93592",
            "high",
            "0.28.0",
            "GHSA-25q3-v2hm-8vpf: /v1/embeddings and /pooling checked client-supplied token ids against the vocabulary "
            "size only; one unauthenticated request with a negative id kills the engine for every client (CVSS 3.1 "
            "7.5, 4.0 8.7; the advisory describes the CUDA device assertion, a TPU engine's reaction is not stated)",
            "https://github.com/vllm-project/vllm/security/advisories/GHSA-25q3-v2hm-8vpf",
        ),
    ),
    (
        "0.20.0",
        Advisory(
            "PYSEC-2026-4353",
            "high",
            "0.30.0",
            "inconsistent multimodal metadata sent to the disaggregated /inference/v1/generate endpoint crashes the "
            "engine (remote denial of service, CVSS 3.1 7.5)",
            "https://osv.dev/vulnerability/PYSEC-2026-4353",
        ),
    ),
    (
        "0",
        Advisory(
            "CVE-2026-105757",
            "medium",
            "0.30.0",
            "GHSA-85xf-c7hm-whqw: structured-output request failures (among them ngram_gpu speculative-decoding "
            "padding) reach the EngineCore fatal-error path and terminate the shared engine (CVSS 3.1 6.5)",
            "https://github.com/advisories/GHSA-85xf-c7hm-whqw",
        ),
    ),
    (
        "0",
        Advisory(
            "CVE-2026-105754",
            "medium",
            "0.30.0",
            "GHSA-ph72-cqr5-qpp7: the disaggregated scale-out /inference/v1/generate endpoint trusts caller-supplied "
            "multimodal features (engine termination, cross-request encoder-cache poisoning; CVSS 3.1 6.5)",
            "https://github.com/vllm-project/vllm/security/advisories/GHSA-ph72-cqr5-qpp7",
        ),
    ),
    (
        "0",
        Advisory(
            "CVE-2026-105760",
            "medium",
            "0.30.0",
            "GHSA-58v5-2m8f-94pr: request-level media_io_kwargs select the GLMGA video backend with unbounded fps and "
            "max_frames (CPU and memory exhaustion; CVSS 3.1 5.3)",
            "https://github.com/advisories/GHSA-58v5-2m8f-94pr",
        ),
    ),
    (
        "0.16.0",
        Advisory(
            "PYSEC-2026-4349",
            "medium",
            "0.32.0",
            "/v1/responses accepts a caller's chat template without trust_request_chat_template (CPU or memory "
            "exhaustion through Jinja rendering; CVSS 3.1 6.5)",
            "https://osv.dev/vulnerability/PYSEC-2026-4349",
        ),
    ),
    (
        "0.19.0",
        Advisory(
            "CVE-2026-115911",
            "medium",
            "0.32.0",
            "GHSA-542m-9234-8gvf: chat-template rendering has no time, size or iteration bound (blocks /v1/responses, "
            "exhausts memory; CVSS 3.1 6.5)",
            "https://github.com/advisories/GHSA-542m-9234-8gvf",
        ),
    ),
)

# vllm-tpu 0.27.0 to 0.29.0: with TPUConnectorHMA (tpu_inference.distributed.tpu_connector_hma) the vLLM scheduler
# reads connector._kv_transfer_config, which the connector never initialises, and EngineCore fails at startup (llm-d
# pins TPU7x prefill/decode to v0.26.0 for it); fixed by vllm-project/tpu-inference#3566. The PyPI wheels agree:
# tpu_inference/distributed/tpu_connector_hma.py calls KVConnectorBase_V1.__init__ in tpu-inference 0.30.0, 0.31.0
# and 0.32.0, not in 0.27.0, 0.28.0 or 0.29.0. The non-HMA TPUConnector is unaffected (the same source).
_HMA_STARTUP_CRASH = Breakage(
    "pd-disaggregation-hma",
    "EngineCore fails at startup: AttributeError: 'TPUConnectorHMA' object has no attribute '_kv_transfer_config' "
    "(fixed in tpu-inference 0.30.0 by vllm-project/tpu-inference#3566)",
    "https://github.com/llm-d/llm-d/pull/2533",
)

# The image tag each release runs as, where a public source names it; None where none found does.
_VLLM_TPU_IMAGES: dict[str, str | None] = {
    # llm-d/llm-d@029c5a39 guides/recipes/modelserver/components/images/tpu-vllm/release/kustomization.yaml
    "0.27.0": "docker.io/vllm/vllm-tpu:v0.27.0",
    "0.28.0": None,
    "0.29.0": None,
    "0.30.0": None,
    "0.31.0": None,
    # The pin (stacks/facts/versions.py vllmTpu): no public source found names this tag; it follows the
    # docker.io/vllm/vllm-tpu:v<version> form of the tags that are named (v0.26.0, v0.27.0, v0.29.0).
    "0.32.0": "docker.io/vllm/vllm-tpu:v0.32.0",
}
_VLLM_TPU_RELEASED = {
    "0.27.0": "2026-08-20",
    "0.28.0": "2026-08-27",
    "0.29.0": "2026-09-10",
    "0.30.0": "2026-09-30",
    "0.31.0": "2026-10-06",
    "0.32.0": "2026-10-22",
}
# Each breakage with the range its source gives: `introduced` (inclusive; llm-d pins v0.26.0 as the release before
# it) to the first release that fixes it, so a release the table does not list is held to it too.
_VLLM_TPU_BREAKS: tuple[tuple[str, str, Breakage], ...] = (("0.27.0", "0.30.0", _HMA_STARTUP_CRASH),)


def _vllm_tpu(version: str) -> EngineRelease:
    """vllm-tpu at `version`: what the recorded ranges say of it. A version the table lists carries its image, date
    and PyPI source; any other (an older or newer tag, a patch release) only the ranges' verdict."""
    key = version_key(version)
    affected = tuple(
        advisory
        for introduced, advisory in _VLLM_ADVISORIES
        if version_key(introduced) <= key < version_key(advisory.fixed_in)
    )
    breaks = tuple(
        b for introduced, fixed, b in _VLLM_TPU_BREAKS if version_key(introduced) <= key < version_key(fixed)
    )
    listed = version in _VLLM_TPU_RELEASED
    return EngineRelease(
        "vllm-tpu",
        version,
        _VLLM_TPU_IMAGES.get(version),
        _VLLM_TPU_RELEASED.get(version, "unknown"),
        (f"PyPI vllm-tpu {version} and tpu-inference {version}" if listed else f"not in the release table ({version})")
        + "; advisories: vLLM's published records (each one's source, by its affected range); breakages: each "
        "one's source",
        affected,
        breaks,
    )


ENGINE_RELEASES: tuple[EngineRelease, ...] = (
    *(_vllm_tpu(v) for v in _VLLM_TPU_RELEASED),
    # ---- the other pinned engine images (stacks/facts/versions.py IMAGE_RECORDS): no advisory or breakage found ----
    EngineRelease(
        "jetstream/maxengine-server",
        "0.2.2",
        "us-docker.pkg.dev/cloud-tpu-images/inference/maxengine-server:v0.2.2",
        "2024-06-05",
        f"{_NOTHING_FOUND} for AI-Hypercomputer/JetStream, google-jetstream or AI-Hypercomputer/maxtext "
        "(GitHub advisory and issue index searched 2026-11-29); image: ai-on-gke .../maxengine-server/Dockerfile "
        "(maxtext@jetstream-v0.2.2)",
        (),
        (),
    ),
    EngineRelease(
        "jetstream/jetstream-pathways",
        "0.2.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0",
        "unknown",
        f"{_NOTHING_FOUND} for AI-Hypercomputer/JetStream (GitHub advisory and issue index searched 2026-11-29); "
        "image: kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways",
        (),
        (),
    ),
    EngineRelease(
        "jetstream/jetstream-http",
        "0.2.3",
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3",
        "unknown",
        f"{_NOTHING_FOUND} for AI-Hypercomputer/JetStream or ai-on-gke's http-server (GitHub advisory and issue "
        "index searched 2026-11-29); image: kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways",
        (),
        (),
    ),
    EngineRelease(
        "saxml/sax-model-server",
        "1.1.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml",
        (),
        (),
    ),
    EngineRelease(
        "saxml/sax-admin-server",
        "1.1.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-admin-server.yaml",
        (),
        (),
    ),
    EngineRelease(
        "saxml/sax-http",
        "1.0.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-http.yaml",
        (),
        (),
    ),
)


# Image repositories whose tags are an engine's release versions (`<repository>:[v]<version>`): every repository an
# entry's image is in, named as `image_name` normalises it. An image of one of them is that engine at its tag's
# version, whether or not the table names the tag (the guard holds any other tag of it as unknown).
def engine_repositories() -> dict[str, str]:
    """Repository -> engine, from the table's images (read at each call: the table is the one source)."""
    found: dict[str, str] = {}
    for entry in ENGINE_RELEASES:
        if entry.image is not None:
            found.setdefault(image_name(entry.image)[0], entry.engine)
    return found


# Engines whose releases the table can judge from recorded ranges at any version (not only the listed ones).
_BY_RANGE = {"vllm-tpu": _vllm_tpu}


def release(engine: str, version: str) -> EngineRelease | None:
    """The table's entry for `engine` at `version` (`v` prefix optional); for an engine recorded by ranges, an entry
    for any other parseable version from those ranges; else None."""
    want = version.removeprefix("v")
    listed = next((r for r in ENGINE_RELEASES if r.engine == engine and r.version == want), None)
    if listed is not None or engine not in _BY_RANGE or not VERSION_TAG.fullmatch(version):
        return listed
    return _BY_RANGE[engine](want)


def is_listed(entry: EngineRelease) -> bool:
    """Whether the table lists this release (its advisories were looked for), not only judged it by ranges."""
    return entry in ENGINE_RELEASES


def engine_image(ref: str) -> tuple[str, str, EngineRelease | None] | None:
    """For an image of an engine repository (engine_repositories, Docker Hub aliases normalised): the engine, the
    image's tag and the release the tag is (None: the tag is not a release version, e.g. `nightly`, `latest`). None
    for an image of no engine repository."""
    repository, tag = image_name(ref)
    engine = engine_repositories().get(repository)
    if engine is None:
        return None
    named = next((r for r in ENGINE_RELEASES if r.image is not None and image_name(r.image) == (repository, tag)), None)
    return engine, tag, named or release(engine, tag)


def release_of_image(ref: str) -> EngineRelease | None:
    """The entry of the engine release an image reference runs: the entry naming that image (a `tag@digest`
    reference matches its tag; Docker Hub's aliases are one registry), else, for an engine repository, the release
    at its tag's version (`v` optional); None when the image is no engine's or its tag is not a version."""
    found = engine_image(ref)
    return None if found is None else found[2]


def open_advisories(engine: str, version: str, min_severity: Severity = "high") -> tuple[Advisory, ...]:
    """The advisories recorded against `engine` at `version` that it does not yet fix, at `min_severity` or above
    (an unknown release: none known)."""
    entry = release(engine, version)
    if entry is None:
        return ()
    floor = SEVERITIES.index(min_severity)
    return tuple(
        a
        for a in entry.advisories
        if SEVERITIES.index(a.severity) >= floor and version_key(entry.version) < version_key(a.fixed_in)
    )


def broken_features(engine: str, version: str) -> dict[str, Breakage]:
    """Feature key -> the breakage recorded for `engine` at `version` (an unknown release: none known)."""
    entry = release(engine, version)
    return {} if entry is None else {b.feature: b for b in entry.breaks}
