"""The time-to-serve estimate (stacks/reports/time_to_serve.py): what summary.md shows per workload, that each input is read
from its one source (the catalog's network bandwidth, the version matrix's image sizes, the pool's image levers, the
plan's startup path, the assumption table), and the goal of issue 26 on the three cases of examples/time-to-serve.

Sources of the rules the model encodes:
- the kubelet pulls images one after the other by default:
  https://kubernetes.io/docs/concepts/containers/images/#serial-and-parallel-image-pulls ("By default, the kubelet
  pulls images serially");
- a startup probe first runs after initialDelaySeconds, then every periodSeconds, and readiness waits for it:
  https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/ and the Probe fields of
  core/v1 (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#lifecycle);
- per-host network bandwidth: https://cloud.google.com/tpu/docs/v6e ("Per-host NIC configuration 4 x 200 Gbps NIC",
  "Chips per host 8"), https://cloud.google.com/tpu/docs/v5e ("2 x 100 Gbps NIC"), https://cloud.google.com/tpu/docs/v5p
  ("Data center network (DCN) bandwidth per chip (Gbps) 50").
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from stacks.facts import catalog, versions
from stacks.reports import time_to_serve
from stacks.reports.time_to_serve import (
    ASSUMPTIONS,
    PHASES,
    Assumption,
    duration,
    estimate,
    estimates,
    host_read_rate,
)
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.startup import StartupPath
from tests.conftest import EXAMPLES, recorded
from tooling.harness.offline import parse_stack_file
from tooling.review import summary
from workloads.registry import WORKLOAD_TYPES

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "examples" / "time-to-serve" / "Pulumi.time-to-serve.yaml"
VLLM = versions.IMAGES["vllmTpu"]
# issue 26's goal: warm-capacity time to serve, seconds
GOAL = {"llama8b": 120, "llama70b": 240, "llama3-405b": 300, "llama405b-vllm": 300}


@pytest.fixture(scope="module")
def cases():
    return parse_stack_file(CASES)


def plan_of(cfg, name):
    return next(p for p in cfg.workloads if p.name == name)


def section(page: str, title: str) -> list[str]:
    body = page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return body.strip().splitlines()


# ---- what the user sees ------------------------------------------------------------------------------------------


def test_summary_shows_one_row_per_workload_beside_the_cost(cases):
    page = summary.summary(cases, recorded(CASES, True))
    assert page.index("## Warnings") < page.index("## Estimated cost") < page.index("## Time to serve")
    lines = section(page, "Time to serve")
    header = next(line for line in lines if line.startswith("| workload"))
    assert header == (
        "| workload | capacity | image | start | weights | compile | readiness | warm capacity | from no capacity "
        "| from zero | floor | ratio |"
    )
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines if line.startswith("| llama")}
    assert sorted(rows) == ["llama3-405b", "llama405b-vllm", "llama70b", "llama8b"]
    for found in estimates(cases):
        cells = [c.strip() for c in rows[found.workload].strip("|").split("|")]
        assert cells[1:7] == [duration(found.phases[p]) for p in PHASES]
        totals = [duration(found.warm), duration(found.cold), "-", duration(found.floor), f"{found.ratio:.1f}x"]
        assert cells[7:] == totals  # none of these scales to zero: no `from zero` figure
        assert found.cold == found.warm + found.phases["capacity"] and found.floor < found.warm


def test_every_workload_type_gets_an_estimate():
    """Over the registry: each type appears in some example, and each of its workloads gets a finite estimate."""
    seen: set[str] = set()
    for path in EXAMPLES:
        cfg = parse_stack_file(path)
        found = {e.workload: e for e in estimates(cfg)}
        for plan in cfg.workloads:
            seen.add(plan.workload.type)
            e = found[plan.name]
            assert all(math.isfinite(v) and v >= 0 for v in e.phases.values()), (path.name, e)
            assert 0 < e.floor <= e.warm < e.cold, (path.name, e)
    assert seen == set(WORKLOAD_TYPES)


def test_a_type_that_does_not_say_how_it_starts_is_modelled_as_today_and_noted(cases, monkeypatch):
    served = plan_of(cases, "llama8b").image  # through the stack's remote repository
    monkeypatch.setattr(type(plan_of(cases, "llama8b")), "startup", property(lambda self: None))
    e = estimate(plan_of(cases, "llama8b"), (served,))
    assert any("does not say how a replica starts" in n for n in e.notes)
    assert e.phases["compile"] == ASSUMPTIONS["compile_cold"].value  # no compile cache
    # the pool streams its images (cluster.images.streaming is on by default): the fallback still starts streamed
    assert plan_of(cases, "llama8b").pool.image_streaming
    assert e.phases["image"] == ASSUMPTIONS["image_stream_start"].value
    monkeypatch.setattr(PoolPlan, "image_streaming", property(lambda self: False))
    pulled = estimate(plan_of(cases, "llama8b"), (VLLM,))
    assert pulled.phases["image"] == pytest.approx(versions.IMAGE_RECORDS["vllmTpu"].size_gb / 0.1)


# ---- each input from its one source ------------------------------------------------------------------------------


def _with_startup(monkeypatch, plan, startup: StartupPath):
    monkeypatch.setattr(type(plan), "startup", property(lambda self: startup))


def test_the_weights_phase_reads_the_catalogs_network_bandwidth(cases, monkeypatch):
    plan = plan_of(cases, "llama8b")
    _with_startup(monkeypatch, plan, StartupPath(images=(VLLM,), weights="gcs-stream", stream_concurrency=64))
    before = estimate(plan)
    # 64 streams x 0.1 GB/s, capped by gcs_host_read_rate (5 GB/s): the v6e-8 node's 800 Gbps does not bind
    assert before.phases["weights"] == pytest.approx(round(plan.weights_bytes / 5e9, 1))
    slow = dataclasses.replace(plan.shape.generation, dcn_gbps_per_chip=1.0)  # 8 Gbps per node = 1 GB/s
    slow_plan = dataclasses.replace(
        plan, pool=dataclasses.replace(plan.pool, shape=dataclasses.replace(plan.shape, generation=slow))
    )
    after = estimate(slow_plan)
    assert after.phases["weights"] == pytest.approx(round(plan.weights_bytes / 1e9, 1))
    assert after.floor > before.floor  # the floor reads the same bandwidth


def test_the_image_phase_reads_the_version_matrix_sizes_and_the_pools_levers(cases, monkeypatch):
    plan = plan_of(cases, "llama8b")
    _with_startup(monkeypatch, plan, StartupPath(images=(VLLM, VLLM), weights="gcs-stream"))
    monkeypatch.setattr(PoolPlan, "image_streaming", property(lambda self: False))  # cluster.images.streaming off
    pull = ASSUMPTIONS["image_pull_rate"].value
    assert estimate(plan).phases["image"] == pytest.approx(6.0 / pull)  # one image, pulled once
    monkeypatch.setitem(
        versions.IMAGE_RECORDS, "vllmTpu", dataclasses.replace(versions.IMAGE_RECORDS["vllmTpu"], size_gb=9.0)
    )
    assert estimate(plan).phases["image"] == pytest.approx(9.0 / pull)
    monkeypatch.setattr(PoolPlan, "image_streaming", property(lambda self: True))
    # Docker Hub's reference never streams (https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming
    # "Requirements": images in Artifact Registry), nor is one from Google's own projects said to (stacks/facts/images.py):
    # pulled whole, noted; the floor counts it streamed
    e = estimate(plan)
    stream = ASSUMPTIONS["image_stream_start"].value
    assert e.phases["image"] == pytest.approx(9.0 / pull) and any("counted pulled whole" in n for n in e.notes)
    tpu_image = "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0"
    _with_startup(monkeypatch, plan, StartupPath(images=(tpu_image,), weights="gcs-stream"))
    assert any(tpu_image in n and "counted pulled whole" in n for n in estimate(plan).notes)
    served = plan.image  # the stack's remote repository, in the cluster's project: streamed
    assert served.startswith(f"us-east5-docker.pkg.dev/{plan.project}/")
    _with_startup(monkeypatch, plan, StartupPath(images=(served, served), weights="gcs-stream"))
    streamed = estimate(plan)
    assert streamed.phases["image"] == stream and not any("pulled whole" in n for n in streamed.notes)
    monkeypatch.setattr(PoolPlan, "preloaded_images", property(lambda self: (served,)))
    assert estimate(plan).phases["image"] == 0
    # the floor and the image phase agree: a streamed image counts image_stream_start in both, a preloaded one nothing
    assert streamed.floor - estimate(plan).floor == pytest.approx(stream)


def test_the_startup_path_decides_weights_compile_and_readiness(cases, monkeypatch):
    plan = plan_of(cases, "llama70b")  # 4 hosts of ct6e-standard-4t
    assert plan.shape.hosts == 4 and plan.shape.host_nic_gbps == 400
    size = plan.weights_bytes
    assert size == catalog.weight_bytes(70, 16)
    fuse = StartupPath(images=(VLLM,), weights="gcs-fuse", compile_cache="gcs-fuse", startup_initial_delay_s=600)
    _with_startup(monkeypatch, plan, fuse)
    e = estimate(plan)
    assert e.phases["weights"] == pytest.approx(round(size / 0.4e9, 1))  # every host reads all of it through FUSE
    assert e.phases["compile"] == ASSUMPTIONS["compile_warm_fuse"].value
    up = e.phases["start"] + e.phases["weights"] + e.phases["compile"]
    assert up < 600 and e.phases["readiness"] == pytest.approx(600 - up)  # up, then waiting for the first probe
    shared = dataclasses.replace(fuse, weights="gcs-stream", distributed_load=True, compile_cache="local-copy")
    _with_startup(monkeypatch, plan, dataclasses.replace(shared, startup_initial_delay_s=0, startup_period_s=5))
    e = estimate(plan)
    # its share, at the streamer's default 8 object-store streams (RUNAI_OBJECT_STORE_CONCURRENCY) x 0.1 GB/s
    assert e.phases["weights"] == pytest.approx(round(size / 4 / 0.8e9, 1))
    # a local copy pulled one blob at a time: 2 GB at one stream's 0.1 GB/s (compile_cache_gcs_read_rate)
    assert e.phases["compile"] == pytest.approx(30 + 2 / 0.1)
    assert 0 <= e.phases["readiness"] < 5
    # the vLLM pull keeps CACHE_PULL_WORKERS (16) downloads in flight: 2 GB at 16 x 0.1 GB/s
    _with_startup(monkeypatch, plan, dataclasses.replace(shared, compile_cache_pull_streams=16))
    assert estimate(plan).phases["compile"] == pytest.approx(round(30 + 2 / 1.6, 1))


def test_every_figure_is_an_assumption_read_when_the_estimate_runs(cases, monkeypatch):
    plan = plan_of(cases, "llama3-405b")
    monkeypatch.setattr(type(plan), "startup", property(lambda self: None))
    for name in ("compile_cold", "runtime_start", "node_provision_multi_host"):
        before = estimate(plan)
        monkeypatch.setitem(ASSUMPTIONS, name, Assumption(ASSUMPTIONS[name].value + 100, "s", "test"))
        after = estimate(plan)
        assert after.cold == pytest.approx(before.cold + 100, abs=10), name
    assert time_to_serve.assumption_rows()[0][0] == f"`{next(iter(ASSUMPTIONS))}`"


# ---- issue 26's goal on the three cases --------------------------------------------------------------------------


def test_the_three_cases_serve_from_warm_capacity_within_the_goal(cases):
    """Llama 3.1 8B on one v6e-8 host <= 2 min and 70B on a v6e 4x4 slice <= 4 min (vLLM), with the levers the example
    and the workload types set. A miss lists every phase of the workload that missed. The 405B Pathways case is
    held to its honest figure by the next test."""
    over = []
    for e in estimates(cases):
        if e.workload == "llama3-405b":
            continue
        goal = GOAL[e.workload]
        if e.warm > goal:
            phases = ", ".join(f"{p} {duration(v)}" for p, v in e.phases.items() if p != "capacity" and v > 0)
            over.append(f"{e.workload}: {duration(e.warm)} > {duration(goal)} ({phases}; {'; '.join(e.notes)})")
    assert not over, "\n".join(over)


def test_the_405b_pathways_case_misses_the_goal_without_a_pathways_compile_cache(cases, monkeypatch):
    """JetStream + Pathways, 405B int8 on v6e 4x4. pathwaysutils turns JAX's compile cache off under Pathways
    (AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py), so compilation is cold whatever the stack
    sets. Pathways persistence (the example's pathwaysPersistence, ENABLE_PATHWAYS_PERSISTENCE=1: each worker reads
    its own shards, persistence/orbax_handler.py) cuts the restore to a quarter; without it the JAX client reads it
    all. Neither figure meets 5 min (docs/time-to-serve.md says so); only a Pathways compile cache that outlives a
    replica, which no source documents, would, and only together with persistence."""
    plan = plan_of(cases, "llama3-405b")
    assert plan.startup.distributed_load  # the example opts in
    with_persistence = estimate(plan)
    assert with_persistence.phases["compile"] == ASSUMPTIONS["compile_cold"].value
    # 4 workers, each its quarter at checkpoint_gcs_read_rate (2 GB/s)
    assert with_persistence.phases["weights"] == pytest.approx(plan.weights_bytes / 4 / 2.0e9, abs=0.1)
    base = plan.startup
    _with_startup(monkeypatch, plan, dataclasses.replace(base, distributed_load=False))
    without = estimate(plan)
    assert without.phases["weights"] == pytest.approx(plan.weights_bytes / 2.0e9, abs=0.1)  # one reader
    assert GOAL["llama3-405b"] < with_persistence.warm < without.warm
    # a hypothetical cache hit (no source documents one under Pathways): with persistence it would meet the goal
    hit = dataclasses.replace(base, compile_cache="gcs", compile_cache_doubt=None)
    _with_startup(monkeypatch, plan, hit)
    assert estimate(plan).warm <= GOAL["llama3-405b"]
    _with_startup(monkeypatch, plan, dataclasses.replace(hit, distributed_load=False))
    assert estimate(plan).warm > GOAL["llama3-405b"]


def test_the_405b_vllm_path_meets_the_goal_beside_the_pathways_one(cases, monkeypatch):
    """Issue 38 #5: Llama 3.1 405B (bf16) on vLLM multi-host, a v6e 4x8 slice (8 hosts), with its persistent XLA
    compile cache copied to local disk, against the Pathways case in the same example. Every figure is the model's
    (catalog, version matrix, ASSUMPTIONS), none set for this case: each host streams the whole checkpoint (vllm 0.27.0
    docs/models/extensions/runai_model_streamer.md: distributed streaming only on CUDA and ROCm) at its streams' rate,
    and compilation is a warm local cache (compile_warm_local plus the copy). The compile cache is what buys it:
    counted cold the same path misses 5 min."""
    fast, pathways = plan_of(cases, "llama405b-vllm"), plan_of(cases, "llama3-405b")
    assert fast.shape.hosts == 8 and fast.tensor_parallel_size == 32 and not fast.startup.distributed_load
    found = estimate(fast)
    assert found.warm <= GOAL["llama405b-vllm"] < estimate(pathways).warm
    streams = fast.startup.stream_concurrency
    rate = min(streams * ASSUMPTIONS["gcs_stream_rate"].value * 1e9, host_read_rate(fast.shape))
    assert found.phases["weights"] == pytest.approx(fast.weights_bytes / rate, abs=0.1)
    assert found.phases["compile"] == pytest.approx(
        ASSUMPTIONS["compile_warm_local"].value + found.compile_copy, abs=0.1
    )
    _with_startup(monkeypatch, fast, dataclasses.replace(fast.startup, compile_cache="none"))
    assert estimate(fast).warm > GOAL["llama405b-vllm"]


def test_each_startup_literal_has_its_own_figure(cases, monkeypatch):
    """checkpoint-gcs at checkpoint_gcs_read_rate; a `gcs` compile cache warm, read entry by entry from the bucket;
    a doubted cache cold, noted; a batch job (`job`) with no weights, compile or probe, noted."""
    plan = plan_of(cases, "llama8b")  # one v6e-8 host: the NIC (100 GB/s) binds no loader
    size = plan.weights_bytes
    _with_startup(monkeypatch, plan, StartupPath(images=(VLLM,), weights="checkpoint-gcs", compile_cache="gcs"))
    e = estimate(plan)
    assert e.phases["weights"] == pytest.approx(round(size / (ASSUMPTIONS["checkpoint_gcs_read_rate"].value * 1e9), 1))
    warm_gcs = ASSUMPTIONS["compile_warm_local"].value + 2 / ASSUMPTIONS["compile_cache_gcs_read_rate"].value
    assert e.phases["compile"] == pytest.approx(warm_gcs) and warm_gcs < ASSUMPTIONS["compile_cold"].value
    fuse = StartupPath(images=(VLLM,), weights="checkpoint-fuse", compile_cache="gcs", compile_cache_doubt="why")
    _with_startup(monkeypatch, plan, fuse)
    e = estimate(plan)
    assert e.phases["weights"] == pytest.approx(round(size / 0.4e9, 1))  # checkpoint_fuse_read_rate
    assert e.phases["compile"] == ASSUMPTIONS["compile_cold"].value and "compile counted cold: why" in e.notes[0]
    _with_startup(monkeypatch, plan, StartupPath(images=(VLLM,), weights="job"))
    e = estimate(plan)
    assert (e.phases["weights"], e.phases["compile"], e.phases["readiness"]) == (0, 0, 0)
    floor = ASSUMPTIONS["runtime_start"].value + ASSUMPTIONS["image_stream_start"].value  # its one image streamed
    assert e.floor == floor and any("a batch job, not a server" in n for n in e.notes)


def test_every_image_of_every_workload_in_every_example_has_a_size(monkeypatch):
    """With image streaming off (every image pulled whole), no image of any workload in any example, pinned or
    rewritten to the stack's Artifact Registry remote repository (stacks/facts/images.py origin), lacks a size."""
    monkeypatch.setattr(PoolPlan, "image_streaming", property(lambda self: False))
    missing = [
        n for path in EXAMPLES for e in estimates(parse_stack_file(path)) for n in e.notes if "no recorded size" in n
    ]
    assert not missing, missing


def test_each_nodes_network_bandwidth_follows_the_generation_pages():
    """v6e: 4 x 200 Gbps per 8-chip host; v5e: 2 x 100 Gbps per 8-chip host; v5p: 50 Gbps per chip (module sources).
    A VM with part of a host's chips gets that share (an assumption, docs/time-to-serve.md)."""
    nic = {
        (tpu, topology, machine): catalog.slice_shape(tpu, topology, machine).host_nic_gbps
        for tpu, topology, machine in (
            ("v6e", "2x4", "ct6e-standard-8t"),
            ("v6e", "4x4", "ct6e-standard-4t"),
            ("v5e", "2x4", "ct5lp-hightpu-8t"),
            ("v5e", "4x4", "ct5lp-hightpu-4t"),
            ("v5p", "2x2x2", "ct5p-hightpu-4t"),
            ("v4", "2x2x2", "ct4p-hightpu-4t"),
        )
    }
    assert list(nic.values()) == [800, 400, 200, 100, 200, None]


def test_every_image_a_workload_type_runs_on_tpu_has_a_size_and_says_where_it_comes_from():
    """Over the registry: the image phase reads each pinned TPU image's size from the version matrix."""
    for kind in WORKLOAD_TYPES.values():
        for key in kind.tpu_images:
            record = versions.IMAGE_RECORDS[key]
            assert record.size_gb and record.size_gb > 0, (kind.name, key)
            assert record.size_source.startswith("assumption: ") or "http" in record.size_source, (kind.name, key)


def every_catalog_shape() -> list[catalog.SliceShape]:
    return [s for g in catalog.GENERATIONS.values() for t in catalog.topologies(g) for s in catalog.shapes(g, t)]


def test_no_host_reads_faster_than_its_nic_or_the_bucket_on_any_catalog_shape():
    """The model's per-host rates, over every catalog shape (each generation, topology and machine type), every
    weights source and streamer or pull concurrency from one to thousands: a read from gs:// (Run:ai streams, a
    checkpoint restored by the server, the compile-cache copy) never above `gcs_host_read_rate` nor the host's NIC,
    any read never above the NIC, and the floor's per-host rate the lower of the two. The assumption once stated
    beside gcs_host_read_rate, "below the node's NIC on every generation in the catalog", is false: v5e's 1-chip VM
    has 25 Gbit/s (3.1 GB/s; https://cloud.google.com/tpu/docs/v5e "2 x 100 Gbps NIC" per 8-chip host)."""
    import typing

    from stacks.serving.startup import WeightsSource

    gcs = ASSUMPTIONS["gcs_host_read_rate"].value * 1e9
    nic_bound = set()
    for shape in every_catalog_shape():
        nic = shape.host_nic_gbps * 1e9 / 8 if shape.host_nic_gbps else math.inf
        bound = min(gcs, nic)
        assert time_to_serve.host_read_rate(shape) == pytest.approx(bound), shape
        if nic < gcs:
            nic_bound.add(shape.machine_type)
        for streams in (1, 8, 10_000):
            for weights in typing.get_args(WeightsSource):
                startup = StartupPath(
                    images=(), weights=weights, stream_concurrency=streams, compile_cache_pull_streams=streams
                )
                if weights == "job":
                    continue
                rate = time_to_serve.weights_rate(shape, startup)
                assert rate <= nic, (shape, weights, streams)
                if weights in ("gcs-stream", "checkpoint-gcs"):
                    assert rate <= bound, (shape, weights, streams)
                assert time_to_serve.copy_rate(shape, startup) <= bound, (shape, streams)
    assert nic_bound == {"ct5lp-hightpu-1t"}


def test_a_v5e_1x1_replica_reads_at_its_nic(cases, monkeypatch):
    """On v5e 1x1 (25 Gbit/s) a streamed model and a parallel compile-cache pull go at the NIC, not at
    gcs_host_read_rate; so does the floor."""
    plan = plan_of(cases, "llama8b")
    small = catalog.slice_shape("v5e", "1x1")
    assert small.machine_type == "ct5lp-hightpu-1t" and small.host_nic_gbps == 25
    plan = dataclasses.replace(plan, pool=dataclasses.replace(plan.pool, shape=small))
    startup = StartupPath(
        images=(VLLM,),
        weights="gcs-stream",
        stream_concurrency=1000,
        compile_cache="local-copy",
        compile_cache_pull_streams=1000,
    )
    _with_startup(monkeypatch, plan, startup)
    e = estimate(plan)
    nic = 25e9 / 8
    assert e.phases["weights"] == pytest.approx(round(plan.weights_bytes / nic, 1))
    assert e.compile_copy == pytest.approx(round(ASSUMPTIONS["compile_cache_size"].value * 1e9 / nic, 1))
    fixed = sum(ASSUMPTIONS[a].value for a in ("runtime_start", "compile_warm_local", "image_stream_start"))
    assert e.floor == pytest.approx(fixed + plan.weights_bytes / nic, abs=0.1)  # its one image streamed
