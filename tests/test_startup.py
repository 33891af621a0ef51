"""How a replica starts (issue 26, stacks/serving/startup.py): every workload type's plan says it (WorkloadPlan.startup), and
what it says is what the registered manifests do, checked over every workload registry entry on every shipped stack
file that runs it, and on a type only this test adds.

Outside rules relied on, each cited where the manifests set them:
- vLLM streams gs:// safetensors with `--load-format runai_streamer`, tuned with `--model-loader-extra-config
  '{"concurrency": N}'`; the streamer's distributed mode "is currently only possible on CUDA and ROCM devices"
  (vllm 0.27.0 docs/models/extensions/runai_model_streamer.md), so no TPU replica asks for it.
- huggingface_hub makes no request to the Hub with HF_HUB_OFFLINE=1.
- vLLM's TPU backend points JAX's persistent cache at VLLM_XLA_CACHE_PATH (tpu-inference@v0.27.0
  tpu_inference/runner/compilation_manager.py, and the pinned engine's 0.32.0 wheel alike); tpu-inference's CI pulls its GCS cache to local disk before the
  server and pushes it back after (tpu-inference@v0.27.0 .buildkite/xla_autotune/README.md "JAX compile cache").
- MaxText sets JAX's cache directory from its `jax_cache_dir` argument (AI-Hypercomputer/maxtext MaxText/pyconfig.py),
  and JAX reads and writes a gs:// cache directory itself (jax-ml/jax docs/persistent_compilation_cache.md).
- pulumi-kubernetes 4.34.2 awaits a batch/v1 Job until its Complete condition (pulumi_kubernetes/batch/v1/Job.py:
  "This resource waits until its status is ready"), so a server registered after the staging Job starts after it.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from typing import Any

import pytest

from stacks import naming
from stacks.facts import catalog
from stacks.serving.startup import StartupPath, compile_cache_prefix, image_tag, startup_probe
from tests.conftest import make_config, session_run
from tests.test_pod_placement import stacks_with, tpu_pods, workload_objects
from tests.test_workload_registry import ECHO_CONFIG, EchoPlan, echo_registered  # noqa: F401 (a fixture)
from tooling.harness.offline import Recording
from tooling.scans.fuzz import parse
from workloads import registry
from workloads.vllm import staging


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def _flags(container: dict[str, Any]) -> list[str]:
    """Every `--flag=value` and `key=value` argument of a container, from args or an `sh -c` command line."""
    command = container.get("command") or []
    if command[:2] == ["sh", "-c"]:
        return shlex.split(command[2])
    return [str(w) for w in [*command, *(container.get("args") or [])]]


def _servers(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The containers that hold the chips (the servers)."""
    return [
        c
        for pod in pods
        for c in pod.get("containers", [])
        if catalog.TPU_RESOURCE in ((c.get("resources") or {}).get("limits") or {})
    ]


def startup_problems(plan: Any, startup: StartupPath | None, rec: Recording) -> list[str]:
    """Every way the plan's StartupPath disagrees with the objects registered for the workload."""
    if startup is None:
        return ["WorkloadPlan.startup is None: the time-to-serve estimate cannot read how a replica starts"]
    objects = workload_objects(rec, plan.name)
    pods = [pod for obj in objects for pod in tpu_pods(obj)]
    containers = [c for pod in pods for c in _containers(pod)]
    servers = _servers(pods)
    out: list[str] = []
    images = {c["image"] for c in containers}
    if images and images != set(startup.images):
        out.append(f"images {sorted(startup.images)} but the TPU pods run {sorted(images)}")
    for obj in objects:
        if obj["kind"] == "PathwaysJob" and image_tag(startup.images[0]) != obj["spec"]["pathwaysVersion"]:
            out.append(f"images {startup.images} but the PathwaysJob runs {obj['spec']['pathwaysVersion']}")
    # the Hub: offline in every server iff hub_offline; then no token anywhere on a TPU host
    offline = {_env(c).get("HF_HUB_OFFLINE") == "1" for c in servers}
    if offline and offline != {startup.hub_offline}:
        out.append(f"hub_offline={startup.hub_offline} but HF_HUB_OFFLINE=1 on servers: {offline}")
    if startup.hub_offline and any("HF_TOKEN" in _env(c) for c in containers):
        out.append("hub_offline but a TPU pod still carries HF_TOKEN")
    # weights
    flags = [f for c in containers for f in _flags(c)]
    streamed = "--load-format=runai_streamer" in flags
    if streamed != (startup.weights == "gcs-stream"):
        out.append(f"weights={startup.weights} but runai_streamer {'is' if streamed else 'is not'} set")
    extra = [json.loads(f.split("=", 1)[1]) for f in flags if f.startswith("--model-loader-extra-config=")]
    if streamed and (not extra or {e.get("concurrency") for e in extra} != {startup.stream_concurrency}):
        out.append(f"stream_concurrency={startup.stream_concurrency} but the servers stream with {extra}")
    # distributed: the Run:ai streamer's `distributed` loader option, or Pathways persistence on the JAX client (each
    # Pathways worker restores its own shards: AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py)
    persistence = any(_env(c).get("ENABLE_PATHWAYS_PERSISTENCE") == "1" for c in containers)
    if (any("distributed" in e for e in extra) or persistence) != startup.distributed_load:
        out.append(f"distributed_load={startup.distributed_load} but the loader config is {extra}")
    if startup.weights == "gcs-stream" and not any(f == f"--model={plan.weights_url}" for f in flags):
        out.append(f"streams but no server reads --model={plan.weights_url}")
    out += _staging_problems(plan, startup, rec, objects)
    out += _cache_problems(startup, pods, containers, flags, len(getattr(plan, "roles", (None,))))
    out += _probe_problems(startup, containers)
    return out


def _server_names(plan: Any) -> set[str]:
    """The workload's server, or each of its server sets (a disaggregated vLLM workload's prefill and decode)."""
    return {plan.name, *(plan.role_name(r) for r in getattr(plan, "roles", ()))}


def _staging_problems(plan: Any, startup: StartupPath, rec: Recording, objects: list[dict[str, Any]]) -> list[str]:
    """A staged model: one Job that fills exactly that prefix, on the system pool, and every server registered
    after it (dependencies as recorded)."""
    jobs = [o for o in objects if o["kind"] == "Job" and o["metadata"].get("labels", {}).get("role") == "stage-weights"]
    if startup.staged_weights is None:
        return [f"no staged weights, but staging Jobs {[j['metadata']['name'] for j in jobs]}"] if jobs else []
    if len(jobs) != 1:
        return [f"staged_weights={startup.staged_weights} but {len(jobs)} staging Jobs"]
    (job,) = jobs
    env = _env(job["spec"]["template"]["spec"]["containers"][0])
    # the model's prefix is the Job's first item (its Hugging Face adapters' follow: workloads/vllm/plan.py stage_items)
    prefix = json.loads(env["ITEMS"])[0]["prefix"]
    if f"gs://{env['BUCKET']}/{prefix}" != startup.staged_weights:
        return [f"the staging Job fills gs://{env['BUCKET']}/{prefix}, not {startup.staged_weights}"]
    (job_reg,) = [
        r for r in rec.of_type("kubernetes:batch/v1:Job") if r.inputs["metadata"]["name"] == job["metadata"]["name"]
    ]
    servers = [
        r
        for r in rec.resources
        if r.custom
        and (r.inputs.get("metadata") or {}).get("name") in _server_names(plan)
        and r.type in ("kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    ]
    if not servers or any(job_reg.urn not in r.dependencies for r in servers):
        return ["a server is not registered after the staging Job"]
    return []


def _cache_problems(
    startup: StartupPath, pods: list[dict[str, Any]], containers: list[dict[str, Any]], flags: list[str], sets: int = 1
) -> list[str]:
    """`sets`: the workload's server sets, each with its own serving pod template (one writer per replica each)."""
    out: list[str] = []
    cache_args = [f.split("=", 1)[1] for f in flags if f.startswith("jax_cache_dir=")]
    xla_paths = {_env(c).get("VLLM_XLA_CACHE_PATH") for c in containers} - {None}
    pulled = [
        f"gs://{_env(c)['CACHE_BUCKET']}/{_env(c)['CACHE_PREFIX']}" for c in containers if "CACHE_PREFIX" in _env(c)
    ]
    if startup.compile_cache == "none" and (cache_args or xla_paths or pulled):
        out.append(f"compile_cache=none but {cache_args or xla_paths or pulled}")
    if startup.compile_cache == "gcs" and set(cache_args) != {startup.compile_cache_url}:
        out.append(f"compile cache {startup.compile_cache_url} but jax_cache_dir={cache_args}")
    if startup.compile_cache == "local-copy":
        mounted = {
            m["mountPath"]
            for pod in pods
            for v in pod.get("volumes", [])
            if "emptyDir" in v
            for c in pod.get("containers", [])
            for m in c.get("volumeMounts", [])
            if m["name"] == v["name"]
        }
        if not xla_paths or not xla_paths <= mounted:
            out.append(f"local-copy but VLLM_XLA_CACHE_PATH {xla_paths} is not on local disk {mounted}")
        if not all(any("CACHE_PREFIX" in _env(c) for c in pod.get("initContainers", [])) for pod in pods):
            out.append("local-copy but a TPU pod does not pull the cache before its server starts")
        if set(pulled) != {startup.compile_cache_url}:
            out.append(f"compile cache {startup.compile_cache_url} but the pods copy {set(pulled)}")
        workers = {
            int(_env(c).get("CACHE_PULL_WORKERS") or 1)
            for pod in pods
            for c in pod.get("initContainers", [])
            if "CACHE_PREFIX" in _env(c)  # the compile-cache pull (not the adapters' and draft's copy)
        }
        if workers != {startup.compile_cache_pull_streams}:
            out.append(f"compile_cache_pull_streams={startup.compile_cache_pull_streams} but the pulls keep {workers}")
        pushers = [pod for pod in pods if any("CACHE_PUSH_INTERVAL" in _env(c) for c in pod["containers"])]
        if len(pushers) != sets:
            out.append(f"{len(pushers)} pod templates push the cache: one writer per replica, its serving pod")
    return out


def _probe_problems(startup: StartupPath, containers: list[dict[str, Any]]) -> list[str]:
    probes = [c["startupProbe"] for c in containers if "startupProbe" in c]
    if startup.cold_start_s is None:
        return [f"no cold-start budget but startup probes {probes}"] if probes else []
    if not probes:
        return [f"a cold-start budget of {startup.cold_start_s}s but no startup probe"]
    out = []
    for probe in probes:
        delay, period = probe.get("initialDelaySeconds", 0), probe.get("periodSeconds", 10)
        allowed = period * probe.get("failureThreshold", 3)
        if (delay, period) != (startup.startup_initial_delay_s, startup.startup_period_s):
            out.append(f"probe delay/period {(delay, period)} but StartupPath says {startup}")
        if not startup.cold_start_s <= allowed < startup.cold_start_s + period:
            out.append(f"the probe allows {allowed}s, not the cold-start budget {startup.cold_start_s}s")
    return out


def plans_of(type_name: str) -> list[tuple[str, Any, Recording]]:
    """(case, plan, recording) of every workload of the type in every shipped stack file, as shipped and with
    capacity lists (tests/test_pod_placement.py stacks_with)."""
    kind, out = registry.WORKLOAD_TYPES[type_name], []
    for case, config, stack in stacks_with(type_name):
        parsed, rec = parse(config, stack), session_run(config, stack=stack)
        out += [(case, plan, rec) for plan in parsed.workloads if isinstance(plan.workload, kind.config)]
    return out


@pytest.mark.parametrize("type_name", list(registry.WORKLOAD_TYPES))
def test_every_type_says_how_its_replicas_start_as_its_manifests_do(type_name):
    cases = plans_of(type_name)
    assert cases, f"no shipped stack file runs workload type {type_name!r}"
    for case, plan, rec in cases:
        assert startup_problems(plan, plan.startup, rec) == [], (case, plan.name)


def test_no_server_waits_a_fixed_delay_before_its_first_probe():
    """Issue 26, readiness: a warm replica is ready when its server answers."""
    for type_name in registry.WORKLOAD_TYPES:
        for case, plan, _ in plans_of(type_name):
            assert plan.startup.startup_initial_delay_s == 0, (case, plan.name)


VLLM_8B = {"type": "vllm", "name": "llm", "pool": "v5e-2x4", "model": "meta-llama/Llama-3.1-8B"}


def test_the_check_catches_a_startup_path_that_disagrees(run):
    """The rule is not vacuous: each lever said otherwise than the manifests do is reported."""
    config = make_config(tpu_serving__workloads=[VLLM_8B])
    rec, (plan,) = run(config), parse(config, "dev").workloads
    truth = plan.startup
    assert startup_problems(plan, truth, rec) == []
    for lie in (
        {"hub_offline": False},
        {"weights": "hub"},
        {"stream_concurrency": 7},
        {"distributed_load": True},
        {"compile_cache": "none"},
        {"compile_cache_url": "gs://elsewhere/"},
        {"staged_weights": None},
        {"startup_initial_delay_s": 240},
        {"cold_start_s": 60},
        {"images": ("other:1",)},
    ):
        assert startup_problems(plan, dataclasses.replace(truth, **lie), rec), lie
    assert startup_problems(plan, None, rec)


def test_a_type_added_to_the_registry_is_held_to_the_same_rule(run, echo_registered):  # noqa: F811
    """A type only this test adds: without a StartupPath it fails the rule; with one that says what its pods do
    (one image, a startup probe without delay), it passes."""
    rec = run(make_config(tpu_serving__workloads=[ECHO_CONFIG]))
    (plan,) = parse(make_config(tpu_serving__workloads=[ECHO_CONFIG]), "dev").workloads
    assert isinstance(plan, EchoPlan)
    assert startup_problems(plan, plan.startup, rec)  # the test type says nothing: the rule reports it
    said = StartupPath(images=("registry.example.com/echo:1.0",), weights="job")
    assert startup_problems(plan, said, rec) == []
    assert startup_problems(plan, dataclasses.replace(said, cold_start_s=600), rec)  # it has no startup probe


def test_startup_probe_allows_the_cold_case_from_the_start():
    probe = startup_probe({"httpGet": {"path": "/health", "port": 8000}}, 3600)
    assert probe["initialDelaySeconds"] == 0
    assert (
        probe["periodSeconds"] * probe["failureThreshold"]
        >= 3600
        > probe["periodSeconds"] * (probe["failureThreshold"] - 1)
    )
    assert startup_probe({}, 10001, period_s=5)["failureThreshold"] == 2001  # rounded up to whole periods


def test_compile_cache_prefix_is_keyed_by_workload_image_and_slice():
    assert (
        compile_cache_prefix("llm", "docker.io/vllm/vllm-tpu:v0.27.0", "v6e-2x4")
        == "compile-cache/llm/v0.27.0/v6e-2x4/"
    )
    assert image_tag("us-docker.pkg.dev/p/r/img@sha256:abc") == "sha256-abc"
    assert image_tag("localhost:5000/img") == "latest"


def test_vllm_weights_are_staged_per_model_and_revision_and_streamed(run):
    """An HF id: staged under models/<id>/<revision>/ by a Job on the system pool whose identity writes only that
    prefix; the server reads it (never the Hub) and its identity only reads it."""
    wl = {"type": "vllm", "name": "llm", "pool": "v5e-2x4", "model": "meta-llama/Llama-3.1-8B", "revision": "abc123"}
    rec = run(make_config(tpu_serving__workloads=[wl]))
    (plan,) = parse(make_config(tpu_serving__workloads=[wl]), "dev").workloads
    assert plan.staged_prefix == "models/meta-llama/Llama-3.1-8B/abc123/"
    objects = {(o["kind"], o["metadata"]["name"]): o for o in workload_objects(rec, "llm")}
    job = objects[("Job", plan.stage_job_name)]
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == naming.SYSTEM_POOL_SELECTOR
    assert pod["serviceAccountName"] == plan.stage_service_account != plan.service_account
    # none of the server's selectors (Service, PodMonitoring, InferencePool: app=<name>) picks the staging pod
    assert not plan.labels.items() <= job["spec"]["template"]["metadata"]["labels"].items()
    assert _env(pod["containers"][0])["MARKER"] == staging.STAGED_MARKER
    grants = {(g.bucket, g.role, g.prefix) for g in plan.stage_grants()}
    assert grants == {(plan.bucket, "roles/storage.objectUser", plan.staged_prefix)}
    assert ("roles/storage.objectViewer", plan.staged_prefix) in {(g.role, g.prefix) for g in plan.grants()}
    assert plan.staged_prefix not in {g.prefix for g in plan.grants() if g.role == "roles/storage.objectUser"}
    # another revision is another prefix and another Job
    (other,) = parse(make_config(tpu_serving__workloads=[{**wl, "revision": "def456"}]), "dev").workloads
    assert (other.staged_prefix, other.stage_job_name) != (plan.staged_prefix, plan.stage_job_name)
    # the Job gives up when `pulumi up` does (its customTimeouts, not recorded by the mocks)
    assert job["spec"]["activeDeadlineSeconds"] == staging.STAGE_TIMEOUT_MINUTES * 60


def test_vllm_gs_model_is_streamed_without_staging(run):
    wl = {"type": "vllm", "name": "llm", "pool": "v5e-2x4", "model": "gs://weights/llama-8b"}
    rec = run(make_config(tpu_serving__workloads=[wl]))
    assert not rec.of_type("kubernetes:batch/v1:Job")
    (plan,) = parse(make_config(tpu_serving__workloads=[wl]), "dev").workloads
    assert plan.startup.staged_weights is None and plan.startup.hub_offline
    assert startup_problems(plan, plan.startup, rec) == []
