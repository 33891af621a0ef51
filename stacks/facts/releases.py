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
    "pd-disaggregation": "vLLM prefill/decode disaggregation over the TPU KV connector (tpu-inference)",
    "speculative-decoding": "speculative decoding (a draft model or n-gram proposer)",
    "lora": "serving LoRA adapters loaded at startup",
    "lora-runtime-loading": "loading and unloading LoRA adapters at runtime (/v1/load_lora_adapter)",
    "multi-host": "one model served across the hosts of a multi-host TPU slice",
    "prefix-caching": "automatic prefix caching of the KV cache",
}

_NOTHING_FOUND = "no advisory found"


ENGINE_RELEASES: tuple[EngineRelease, ...] = (
    # ---- vLLM on TPU: the vllm-tpu package (vLLM + tpu-inference at the same version) and its image ----
    EngineRelease(
        "vllm-tpu",
        "0.27.0",
        "docker.io/vllm/vllm-tpu:v0.27.0",
        "2026",
        "PyPI vllm-tpu 0.27.0 (requirements pin tpu-inference==0.27.0); vllm-project/tpu-inference@v0.27.0",
        (),
        (),
    ),
    # ---- the other pinned engine images (stacks/facts/versions.py IMAGE_RECORDS): no advisory or breakage found ----
    EngineRelease(
        "jetstream-maxtext",
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
        "jetstream-pathways",
        "0.2.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0",
        "unknown",
        f"{_NOTHING_FOUND} for AI-Hypercomputer/JetStream (GitHub advisory and issue index searched 2026-11-29); "
        "image: kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways",
        (),
        (),
    ),
    EngineRelease(
        "jetstream-http",
        "0.2.3",
        "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3",
        "unknown",
        f"{_NOTHING_FOUND} for AI-Hypercomputer/JetStream or ai-on-gke's http-server (GitHub advisory and issue "
        "index searched 2026-11-29); image: kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways",
        (),
        (),
    ),
    EngineRelease(
        "saxml",
        "1.1.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-model-server:v1.1.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml",
        (),
        (),
    ),
    EngineRelease(
        "saxml-admin",
        "1.1.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-admin-server:v1.1.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-admin-server.yaml",
        (),
        (),
    ),
    EngineRelease(
        "saxml-http",
        "1.0.0",
        "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.0.0",
        "unknown",
        f"{_NOTHING_FOUND} for google/saxml (GitHub advisory and issue index searched 2026-11-29); image: "
        "kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-http.yaml",
        (),
        (),
    ),
)


def version_key(version: str) -> tuple[int, ...]:
    """A release version as comparable numbers: `v0.28.0` -> (0, 28, 0); a suffix (`.post1`, `rc1`) is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", version.removeprefix("v").split("+")[0])[:3])


def release(engine: str, version: str) -> EngineRelease | None:
    """The table's entry for `engine` at `version` (`v` prefix optional), else None."""
    want = version.removeprefix("v")
    return next((r for r in ENGINE_RELEASES if r.engine == engine and r.version == want), None)


def release_of_image(ref: str) -> EngineRelease | None:
    """The entry whose image is `ref` (a `tag@digest` reference matches its tag), else None."""
    tag = ref.split("@", 1)[0]
    return next((r for r in ENGINE_RELEASES if r.image is not None and r.image == tag), None)


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
