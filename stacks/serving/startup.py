"""How one replica of a workload comes up: the levers the time-to-serve model reads (issue 26).

Each workload type's plan says how its replicas start (WorkloadPlan.startup); each field is decided by a setting of
the stack, not assumed. The pool's own levers (image streaming, preloaded images) are PoolPlan properties. The
time-to-serve estimate (stacks/reports/time_to_serve.py) reads these and nothing else about a workload's start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

WeightsSource = Literal["hub", "gcs-fuse", "gcs-stream", "checkpoint-fuse", "checkpoint-gcs", "job"]
"""Where a replica reads its weights at start: `hub` downloads from the Hugging Face Hub; `gcs-fuse` reads files
through the GCS FUSE CSI driver; `gcs-stream` streams `gs://` objects (vLLM's Run:ai model streamer);
`checkpoint-fuse` restores an Orbax/MaxText checkpoint through GCS FUSE; `checkpoint-gcs` restores a checkpoint
the server reads from `gs://` itself (MaxText load_parameters_path, Saxml's checkpoint); `job`: a batch job whose
own program loads what it loads (the stack does not know)."""

CompileCache = Literal["none", "gcs-fuse", "local-copy", "local", "gcs"]
"""Where a replica's persistent JAX/XLA compile cache lives: `none` (it compiles every start); `gcs-fuse` (read
through FUSE); `local-copy` (copied from the bucket to local disk before start); `local` (node-local only); `gcs`
(JAX reads and writes the cache at `gs://` itself, entry by entry: jax-ml/jax docs/persistent_compilation_cache.md,
its section on Google Cloud)."""

STARTUP_PERIOD_S = 5
"""periodSeconds of every server's startup probe: a warm replica is ready within this of its server answering."""


def startup_probe(handler: dict[str, Any], cold_start_s: int, period_s: int = STARTUP_PERIOD_S) -> dict[str, Any]:
    """A startup probe with no fixed initial delay: probed every `period_s` from the container's start, for as long
    as the cold case needs (`cold_start_s`, the type's budget, rounded up to whole periods). A warm replica is ready
    when its server answers; a cold one still has its whole budget. `handler` is the probe's action (httpGet)."""
    return {
        **handler,
        "initialDelaySeconds": 0,
        "periodSeconds": period_s,
        "failureThreshold": math.ceil(cold_start_s / period_s),
    }


@dataclass(frozen=True)
class StartupPath:
    """How one replica of a workload starts, lever by lever."""

    images: tuple[str, ...]
    """Every image a replica's TPU pods pull (pinned refs from stacks/facts/versions.py)."""
    weights: WeightsSource
    hub_offline: bool = False
    """The server never contacts the Hugging Face Hub (`HF_HUB_OFFLINE=1`)."""
    stream_concurrency: int | None = None
    """Run:ai streamer concurrency per host, when streaming."""
    distributed_load: bool = False
    """Hosts of a multi-host replica each load their own share of the weights (not all of them, each)."""
    compile_cache: CompileCache = "none"
    compile_cache_doubt: str | None = None
    """Why a source says the server may not read the compile cache the plan gives it (with the source); the
    time-to-serve model then counts compilation cold. None: nothing says so."""
    warmup_job: bool = False
    """A warm-up Job fills the compile cache once per model, slice shape and image."""
    startup_initial_delay_s: int = 0
    """initialDelaySeconds of the server's startup probe (0: probed from the start)."""
    startup_period_s: int = 10
    staged_weights: str | None = None
    """gs:// prefix a staging Job fills once (per model and revision) before any replica starts; None: not staged."""
    compile_cache_url: str | None = None
    """gs:// prefix of the persistent compile cache (keyed by workload, image tag and slice shape); None: none."""
    compile_cache_pull_streams: int = 1
    """Downloads in flight when a `local-copy` cache is copied to local disk before the server starts."""
    cold_start_s: int | None = None
    """What the server's startup probe allows before it restarts the container (the cold case: compile from
    scratch); None when the server has no startup probe."""


COMPILE_CACHE_ROOT = "compile-cache/"
"""The stack bucket's prefix of every persistent compile cache: compile-cache/<workload>/<image tag>/<slice>/."""


def image_tag(ref: str) -> str:
    """The part of an image reference that changes with the build: its digest (as `sha256-<hex>`) or its tag."""
    if "@" in ref:
        return ref.rsplit("@", 1)[1].replace(":", "-")
    last = ref.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def compile_cache_prefix(workload: str, image: str, slice_shape: str) -> str:
    """The stack bucket prefix of one workload's compile cache for one image and slice shape (e.g. v6e-2x4): a
    compiled executable is only valid for the compiler (the image) and the devices (the slice) that made it, so a
    new image or shape starts a new prefix instead of reading stale entries."""
    return f"{COMPILE_CACHE_ROOT}{workload}/{image_tag(image)}/{slice_shape}/"


def compile_cache_grant_prefix(workload: str) -> str:
    """The prefix a workload's identity may write: its own compile caches, every image and shape."""
    return f"{COMPILE_CACHE_ROOT}{workload}/"
