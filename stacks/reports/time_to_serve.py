"""Time to serve: how long a new replica of each workload takes from its pod's creation to Ready, phase by phase.

A pure estimate (issue 26). It reads the workload's plan (its pool's shape and image levers, `WorkloadPlan.startup`
and `weights_bytes`), the TPU catalog (each node's network bandwidth, stacks/facts/catalog.py), the version matrix (image
sizes, stacks/facts/versions.py) and the figures in ASSUMPTIONS below, and nothing else: every figure is either read from
one of those sources or is a named assumption in that one table, which a real deploy calibrates (`make smoke` prints
the measured phases beside these, docs/time-to-serve.md).

Phases, in the order a replica goes through them:
- capacity   a node for the pod: none on warm capacity (a node of the pool is up and free); from no capacity, node
             provisioning (a whole slice for a multi-host pool);
- image      every image a replica's pods run, pulled one after the other (the kubelet's default, serial pulls:
             https://kubernetes.io/docs/concepts/containers/images/#serial-and-parallel-image-pulls), less the images
             preloaded on the pool's nodes; with image streaming, each image's container starts after its first reads;
- start      the runtime: process start, imports, TPU runtime initialisation;
- weights    the weights each host reads (all of them, or its share when the hosts load distributed) at the rate its
             loader reaches (Hub, GCS FUSE, Run:ai streams, a checkpoint restored through FUSE or from gs://
             directly), never above what the host reads from the bucket (host_read_rate: gcs_host_read_rate or its
             NIC, the lower) for reads from gs://, nor its NIC (catalog); none for a batch job (`job`), whose
             row ends when its hosts' runtime is up;
- compile    XLA compilation: cold without a compile cache, or when a source doubts the cache the plan sets is read
             (StartupPath.compile_cache_doubt); a warm cache read locally, through GCS FUSE or from gs:// by JAX;
- readiness  the wait for the first startup probe after the server is up (initialDelaySeconds, then every period).

The floor is what no setting can remove: the weights at what each host reads from the bucket at most (host_read_rate),
shared by every host of the replica, the runtime start, a warm local compile cache and every image streamed
(`image_stream_start` each: the same figure the image phase counts for a streamed image, or the image's whole pull
where that is quicker; only a preloaded image costs nothing, and none is built), with no probe wait.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stacks.facts import images, versions
from stacks.serving.startup import StartupPath

if TYPE_CHECKING:
    from stacks.facts.catalog import SliceShape
    from stacks.serving.workload_plan import WorkloadPlan
    from stacks.serving.workload_type import WorkloadType
    from stacks.stack_config import StackConfig

GB = 10**9
# The Run:ai model streamer's concurrency when the plan sets none: "8 for reading from object storage"
# (run-ai/runai-model-streamer docs/src/env-vars.md, RUNAI_STREAMER_CONCURRENCY, "Default value").
RUNAI_OBJECT_STORE_CONCURRENCY = 8


@dataclass(frozen=True)
class Assumption:
    """A figure no source the project cites states: its value, unit and what it rests on."""

    value: float
    unit: str
    why: str


# Every figure of the model that is not read from the catalog, the version matrix or the plan. A deploy that measures
# otherwise (`make smoke`) changes it here, and only here.
ASSUMPTIONS: dict[str, Assumption] = {
    "node_provision_single_host": Assumption(
        300,
        "s",
        "a single-host TPU node from the autoscaler's scale-up to Ready (VM, boot, node registration, TPU "
        "device plugin); no published figure, and a stockout waits longer",
    ),
    "node_provision_multi_host": Assumption(
        480,
        "s",
        "a multi-host slice (its node pool grown as a whole) until its last node is Ready; no published figure",
    ),
    "schedule": Assumption(5, "s", "a pending pod bound to a free node and its sandbox started"),
    "image_pull_rate": Assumption(
        0.1, "GB/s", "an image pull (download and unpack of compressed layers, unpack-bound) on a TPU node's boot disk"
    ),
    "image_stream_start": Assumption(
        15,
        "s",
        "a container's start on a streamed image, which reads what it needs on demand (GKE image streaming: "
        "https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming gives no figure)",
    ),
    "runtime_start": Assumption(
        30, "s", "process start, Python imports, libtpu initialisation and server set-up, once the image is there"
    ),
    "hub_download_rate": Assumption(0.2, "GB/s", "one host downloading safetensors from the Hugging Face Hub"),
    "gcs_fuse_read_rate": Assumption(
        0.4, "GB/s", "one reader of large files through GCS FUSE without parallel downloads (the driver's defaults)"
    ),
    "gcs_stream_rate": Assumption(0.1, "GB/s", "one Run:ai model streamer stream from a GCS object"),
    "gcs_host_read_rate": Assumption(
        5.0,
        "GB/s",
        "what one host reads from a bucket in its region with many parallel streams (GCS states no per-VM figure); "
        "never above the host's NIC, which is lower on small VMs (v5e 1x1: 25 Gbit/s, 3.1 GB/s): the model takes "
        "the lower of the two per host (host_read_rate)",
    ),
    "checkpoint_fuse_read_rate": Assumption(
        0.4, "GB/s", "an Orbax/MaxText checkpoint restore through GCS FUSE on one host"
    ),
    "checkpoint_gcs_read_rate": Assumption(
        2.0,
        "GB/s",
        "an Orbax/MaxText checkpoint restored by the server from gs:// itself (tensorstore's gcs driver, many "
        "requests in flight: https://google.github.io/tensorstore/kvstore/gcs, gcs_request_concurrency): above one "
        "FUSE reader, below gcs_host_read_rate for deserialising and copying to the TPUs; no published figure",
    ),
    "compile_cold": Assumption(
        600, "s", "XLA compilation of a server's prefill and decode shapes with no cache (model warm-up included)"
    ),
    "compile_warm_local": Assumption(30, "s", "loading compiled executables from a cache on local disk"),
    "compile_warm_fuse": Assumption(
        120, "s", "the same cache read through GCS FUSE (many small files, each a round trip to the bucket)"
    ),
    "compile_cache_size": Assumption(2, "GB", "a server's persistent compile cache, copied to local disk first"),
    "compile_cache_gcs_read_rate": Assumption(
        0.1,
        "GB/s",
        "one stream reading compile-cache entries from gs:// (JAX reading its cache there itself: one entry at a "
        "time, as each function is compiled, jax-ml/jax docs/persistent_compilation_cache.md; or one thread of a "
        "copy to local disk), at gcs_stream_rate's figure",
    ),
}

PHASES = ("capacity", "image", "start", "weights", "compile", "readiness")
"""The phase columns, in order; `capacity` is node provisioning from no capacity (zero on warm capacity)."""


def assumed(name: str) -> float:
    """The value of a named assumption (ASSUMPTIONS), read when the estimate runs."""
    return ASSUMPTIONS[name].value


@dataclass(frozen=True)
class Estimate:
    """One workload's modelled time to serve, seconds per phase."""

    workload: str
    phases: dict[str, float]
    floor: float
    notes: tuple[str, ...] = field(default=())
    # What a request at zero replicas waits before a replica is asked for (KEDA's polling,
    # WorkloadPlan.activation_seconds); None when the workload never runs at zero (minReplicas above 0).
    activation: float | None = None
    compile_copy: float = 0.0
    """The part of `compile` spent copying the cache to local disk before the server starts (an init container)."""

    @property
    def warm(self) -> float:
        """Total on warm capacity: every phase but node provisioning, and the pod's scheduling."""
        return assumed("schedule") + sum(v for k, v in self.phases.items() if k != "capacity")

    @property
    def cold(self) -> float:
        """Total from no capacity: node provisioning, then the same."""
        return self.warm + self.phases["capacity"]

    @property
    def from_zero(self) -> float | None:
        """What the first request waits at zero replicas (scale to zero): the activation, node provisioning and
        the warm phases; None when the workload never runs at zero."""
        return None if self.activation is None else self.activation + self.cold

    @property
    def ratio(self) -> float:
        """Warm-capacity total over the floor."""
        return self.warm / self.floor if self.floor else math.inf


def default_startup(images: tuple[str, ...]) -> StartupPath:
    """What the model assumes for a type whose plan does not say how its replicas start: its pinned TPU images
    pulled, weights read through GCS FUSE, no compile cache, probed from the start."""
    return StartupPath(images=images, weights="gcs-fuse")


def _image_seconds(plan: WorkloadPlan, startup: StartupPath, notes: list[str]) -> float:
    """Streamed images at `image_stream_start` each, only where a source says they stream (stacks.facts.images
    .stream_confirmed: the pool streams and the image is in the stack project's Artifact Registry); every other image
    pulled whole, at its size; preloaded images nothing."""
    refs = [ref for ref in dict.fromkeys(startup.images) if ref not in plan.pool.preloaded_images]
    streamed = [r for r in refs if plan.pool.image_streaming and images.stream_confirmed(r, plan.project)]
    pulled = [r for r in refs if r not in streamed]
    if plan.pool.image_streaming and pulled:
        notes.append(
            f"{plan.name}: {', '.join(pulled)} counted pulled whole: no source says GKE streams an image from "
            "outside the cluster's project's Artifact Registry (stacks/facts/images.py)"
        )
    total = 0.0
    for ref in pulled:
        record = versions.image_record(ref)
        if record is None or record.size_gb is None:
            notes.append(f"{plan.name}: image {ref} has no recorded size (stacks/facts/versions.py): counted as none")
            continue
        total += record.size_gb
    return assumed("image_stream_start") * len(streamed) + total / assumed("image_pull_rate")


def _floor_image_seconds(plan: WorkloadPlan, startup: StartupPath) -> float:
    """The image part of the floor: every image not preloaded streamed (`image_stream_start` each), the least any
    lever the stack builds gives (no preloaded images are built: PoolPlan.preloaded_images); an image whose whole
    pull takes less (a small sidecar's) counts that pull, as the image phase does, so the floor never exceeds it."""
    refs = [ref for ref in dict.fromkeys(startup.images) if ref not in plan.pool.preloaded_images]
    total = 0.0
    for ref in refs:
        record = versions.image_record(ref)
        pull = record.size_gb / assumed("image_pull_rate") if record and record.size_gb is not None else math.inf
        total += min(assumed("image_stream_start"), pull)
    return total


def nic_rate(shape: SliceShape) -> float | None:
    """Bytes per second one node of the shape moves at most: its network bandwidth (catalog; None: no figure)."""
    gbps = shape.host_nic_gbps
    return gbps * GB / 8 if gbps else None


def host_read_rate(shape: SliceShape) -> float:
    """Bytes per second one node of the shape reads from a bucket in its region at most: `gcs_host_read_rate`, or
    its NIC where that is lower."""
    gcs, nic = assumed("gcs_host_read_rate") * GB, nic_rate(shape)
    return min(gcs, nic) if nic else gcs


def weights_rate(shape: SliceShape, startup: StartupPath) -> float:
    """Bytes per second the loader reaches on one host: its own rate, never above what the host reads from the
    bucket (streams from gs://) nor its NIC (any source)."""
    if startup.weights == "hub":
        rate = assumed("hub_download_rate") * GB
    elif startup.weights == "gcs-stream":
        streams = startup.stream_concurrency or RUNAI_OBJECT_STORE_CONCURRENCY
        rate = min(streams * assumed("gcs_stream_rate") * GB, host_read_rate(shape))
    elif startup.weights == "checkpoint-fuse":
        rate = assumed("checkpoint_fuse_read_rate") * GB
    elif startup.weights == "checkpoint-gcs":
        rate = min(assumed("checkpoint_gcs_read_rate") * GB, host_read_rate(shape))
    else:
        rate = assumed("gcs_fuse_read_rate") * GB
    nic = nic_rate(shape)
    return min(rate, nic) if nic else rate


def _weights_seconds(plan: WorkloadPlan, startup: StartupPath) -> float:
    if startup.weights == "job":
        return 0.0  # a batch job's program loads what it loads, after its hosts are up: not a serving start
    size = plan.weights_bytes or 0
    per_host = size / plan.shape.hosts if startup.distributed_load else size
    return per_host / weights_rate(plan.shape, startup)


def _compile_seconds(shape: SliceShape, startup: StartupPath) -> float:
    cache = startup.compile_cache
    if startup.compile_cache_doubt is not None:
        return assumed("compile_cold")  # a cache the plan sets but a source says may not be read: counted cold
    if cache == "gcs":
        return assumed("compile_warm_local") + assumed("compile_cache_size") / assumed("compile_cache_gcs_read_rate")
    if cache == "gcs-fuse":
        return assumed("compile_warm_fuse")
    if cache == "local-copy":
        return assumed("compile_warm_local") + _copy_seconds(shape, startup)
    # none: nothing kept; local: a new node's disk holds no cache yet
    return assumed("compile_cold")


def copy_rate(shape: SliceShape, startup: StartupPath) -> float:
    """Bytes per second a compile-cache copy reaches on one host: `compile_cache_pull_streams` entries in flight,
    each at one stream's rate, up to what the host reads from the bucket (host_read_rate)."""
    streams = max(startup.compile_cache_pull_streams, 1)
    return min(streams * assumed("compile_cache_gcs_read_rate") * GB, host_read_rate(shape))


def _copy_seconds(shape: SliceShape, startup: StartupPath) -> float:
    """A `local-copy` cache copied before the server starts (copy_rate); 0 for any other cache."""
    if startup.compile_cache != "local-copy" or startup.compile_cache_doubt is not None:
        return 0.0
    return assumed("compile_cache_size") * GB / copy_rate(shape, startup)


def _readiness_seconds(startup: StartupPath, up: float) -> float:
    """From the server being up (`up` seconds after the container started) to the first startup probe that finds it
    so: probes run at initialDelaySeconds, then every periodSeconds."""
    delay, period = startup.startup_initial_delay_s, max(startup.startup_period_s, 1)
    first = delay if up <= delay else delay + math.ceil((up - delay) / period) * period
    return first - up


def estimate(plan: WorkloadPlan, default_images: tuple[str, ...] = ()) -> Estimate:
    """The time to serve of one workload. `default_images`: the pinned images its type runs, used when the plan
    does not say how its replicas start (then a note says so)."""
    notes: list[str] = []
    startup = plan.startup
    if startup is None:
        startup = default_startup(default_images)
        notes.append(
            f"{plan.name}: its type does not say how a replica starts (WorkloadPlan.startup): modelled as its pinned "
            "images pulled, weights read through GCS FUSE, no compile cache and a startup probe from the start"
        )
    if startup.weights == "job":
        notes.append(
            f"{plan.name}: a batch job, not a server: its row is its TPU hosts up (capacity, image, start); what its "
            "program loads and compiles is its own, and no probe says when it is ready"
        )
    if startup.compile_cache_doubt is not None:
        notes.append(f"{plan.name}: compile counted cold: {startup.compile_cache_doubt}")
    if plan.weights_bytes is None and startup.weights != "job":
        notes.append(f"{plan.name}: its type does not say how large its weights are (WorkloadPlan.weights_bytes)")
    if plan.shape.host_nic_gbps is None:
        notes.append(
            f"{plan.name}: the catalog has no network bandwidth for {plan.shape.generation.name}: weights at the "
            "loader's rate, the floor at gcs_host_read_rate"
        )
    provision = "node_provision_multi_host" if plan.shape.multi_host else "node_provision_single_host"
    serves = startup.weights != "job"  # a batch job's row ends when its hosts' runtime is up
    start, weights = assumed("runtime_start"), _weights_seconds(plan, startup)
    compile_ = _compile_seconds(plan.shape, startup) if serves else 0.0
    phases = {
        "capacity": assumed(provision),
        "image": _image_seconds(plan, startup, notes),
        "start": start,
        "weights": weights,
        "compile": compile_,
        "readiness": _readiness_seconds(startup, start + weights + compile_) if serves else 0.0,
    }
    floor_weights = (plan.weights_bytes or 0) / (plan.shape.hosts * host_read_rate(plan.shape)) if serves else 0.0
    floor = start + floor_weights + (assumed("compile_warm_local") if serves else 0.0)
    floor += _floor_image_seconds(plan, startup)
    copy = round(_copy_seconds(plan.shape, startup), 1) if serves else 0.0
    activation = plan.activation_seconds or None  # a scale-to-zero workload's wait for KEDA to see its queue
    return Estimate(
        plan.name, {k: round(v, 1) for k, v in phases.items()}, round(floor, 1), tuple(notes), activation, copy
    )


def type_images(plan: WorkloadPlan, workload_types: Mapping[str, WorkloadType]) -> tuple[str, ...]:
    """The pinned TPU images of the plan's workload type (`estimate`'s default_images)."""
    kind = workload_types.get(plan.workload.type)
    return tuple(versions.IMAGES[key] for key in kind.tpu_images) if kind else ()


def from_zero(workload_types: Mapping[str, WorkloadType], plan: WorkloadPlan) -> float | None:
    """What the plan's first request waits at zero replicas (Estimate.from_zero), with its type's pinned TPU images
    as the fallback: the function the orchestrator hands the plans (WorkloadContext.from_zero)."""
    return estimate(plan, type_images(plan, workload_types)).from_zero


def server_await(workload_types: Mapping[str, WorkloadType], plan: WorkloadPlan) -> float:
    """How long `pulumi up` waits for a new server at most (WorkloadPlan.server_await_minutes): a replica from no
    capacity (Estimate.cold's scheduling, node provisioning, images and the compile-cache copy before the server
    starts), then the longer of the modelled start (start, weights, compile, readiness) and the cold start its startup
    probe allows before the kubelet restarts it (StartupPath.cold_start_s after its initial delay): a server slower
    than that is failing, not slow. On an autoscaled pool that starts empty this covers the autoscaler's node
    provisioning (the `capacity` phase, an assumption a real deploy calibrates); a stockout lasts longer."""
    found = estimate(plan, type_images(plan, workload_types))
    phases = found.phases
    modelled = phases["start"] + phases["weights"] + phases["compile"] + phases["readiness"]
    startup = plan.startup
    allowed = startup.startup_initial_delay_s + startup.cold_start_s if startup and startup.cold_start_s else 0.0
    head = assumed("schedule") + phases["capacity"] + phases["image"]
    return head + max(modelled, found.compile_copy + allowed)


def estimates(cfg: StackConfig) -> list[Estimate]:
    """One estimate per workload of the stack, with each type's pinned TPU images as the fallback."""
    return [estimate(plan, type_images(plan, cfg.workload_types)) for plan in cfg.workloads]


def duration(seconds: float) -> str:
    """`1m 05s`, `45s`, `1h 02m`."""
    whole = round(seconds)
    if whole >= 3600:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    if whole >= 60:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole}s"


def summary_lines(found: list[Estimate]) -> list[str]:
    """The summary.md section: one row per workload, the phases, both totals, the floor and the ratio."""
    if not found:
        return ["No workloads."]
    header = ["workload", *PHASES, "warm capacity", "from no capacity", "from zero", "floor", "ratio"]
    lines = [
        "A new replica from its pod's creation to Ready, modelled from the config, the TPU catalog, the version "
        "matrix and the named assumptions of `stacks/reports/time_to_serve.py` (docs/time-to-serve.md; `make smoke` "
        "measures a real rollout). `capacity` is node provisioning, paid only from no capacity; the floor is the "
        "weights at what each host reads from the bucket at most (`gcs_host_read_rate`, or its network bandwidth "
        "where lower), the runtime start, a warm local compile cache and each image "
        "streamed; the image column streams only images in the stack project's Artifact Registry (the only ones a "
        "source says GKE streams) and counts every other image pulled whole. `from zero`, for a workload KEDA "
        "scales to zero (autoscaling.minReplicas 0), is what its first request waits: KEDA's polling, then the "
        "whole start from no capacity.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for e in found:
        cells = [duration(e.phases[p]) for p in PHASES]
        zero = "-" if e.from_zero is None else duration(e.from_zero)
        row = [e.workload, *cells, duration(e.warm), duration(e.cold), zero, duration(e.floor), f"{e.ratio:.1f}x"]
        lines.append("| " + " | ".join(row) + " |")
    notes = [n for e in found for n in e.notes]
    if notes:
        lines += ["", *(f"- {n}" for n in notes)]
    return lines


def assumption_rows() -> list[list[str]]:
    """The assumption table for docs/time-to-serve.md: name, value, what it rests on."""
    return [[f"`{name}`", f"{a.value:g} {a.unit}", a.why] for name, a in ASSUMPTIONS.items()]
