"""How one replica of a workload comes up: the levers the time-to-serve model reads (issue 26).

Each workload type's plan says how its replicas start (WorkloadPlan.startup); each field is decided by a setting of
the stack, not assumed. The pool's own levers (image streaming, preloaded images) are PoolPlan properties. The
time-to-serve estimate (stacks/time_to_serve.py) reads these and nothing else about a workload's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

WeightsSource = Literal["hub", "gcs-fuse", "gcs-stream", "checkpoint-fuse"]
"""Where a replica reads its weights at start: `hub` downloads from the Hugging Face Hub; `gcs-fuse` reads files
through the GCS FUSE CSI driver; `gcs-stream` streams `gs://` objects (vLLM's Run:ai model streamer);
`checkpoint-fuse` restores an Orbax/MaxText checkpoint through GCS FUSE."""

CompileCache = Literal["none", "gcs-fuse", "local-copy", "local"]
"""Where a replica's persistent JAX/XLA compile cache lives: `none` (it compiles every start); `gcs-fuse` (read
through FUSE); `local-copy` (copied from the bucket to local disk before start); `local` (node-local only)."""


@dataclass(frozen=True)
class StartupPath:
    """How one replica of a workload starts, lever by lever."""

    images: tuple[str, ...]
    """Every image a replica's TPU pods pull (pinned refs from stacks/versions.py)."""
    weights: WeightsSource
    hub_offline: bool = False
    """The server never contacts the Hugging Face Hub (`HF_HUB_OFFLINE=1`)."""
    stream_concurrency: int | None = None
    """Run:ai streamer concurrency per host, when streaming."""
    distributed_load: bool = False
    """Hosts of a multi-host replica each load their own share of the weights (not all of them, each)."""
    compile_cache: CompileCache = "none"
    warmup_job: bool = False
    """A warm-up Job fills the compile cache once per model, slice shape and image."""
    startup_initial_delay_s: int = 0
    """initialDelaySeconds of the server's startup probe (0: probed from the start)."""
    startup_period_s: int = 10
