"""Shared fixtures: stack configs as plain dicts and the offline runner."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.harness.offline import ROOT, Recording, load_stack_file, recorded_outputs, run_program
from tooling.oracles import crds
from tooling.review.fleet_render import is_fleet
from tooling.review.render import stack_name

ALL_EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/Pulumi.*.yaml"))
# Fleet stacks (tpu-serving:fleet; docs/fleet.md) build no platform of their own: tests/test_fleet.py covers them,
# the tests of regional stacks iterate the others.
FLEET_FILES = [p for p in ALL_EXAMPLES if is_fleet(load_stack_file(p))]
EXAMPLES = [p for p in ALL_EXAMPLES if p not in FLEET_FILES]
STACK_FILES = [ROOT / "Pulumi.dev.yaml", *EXAMPLES]


def load_large_yaml(path: Path) -> Any:
    """An upstream CRD file (hundreds of kB): libyaml's loader where present, the pure-Python one takes seconds."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def reference_dir() -> Path:
    """`../shared/reference`, or the directory named by TPU_SERVING_REFERENCE (tooling/oracles/crds.py reference_dir: the
    CRD lookup uses the same folder). A user's clone has none: read a file in it through `reference_file`."""
    return crds.reference_dir()


def reference_file(relative: str) -> Path:
    """An upstream file of the reference folder, or skip the calling test saying which file is missing (a user's
    clone has no ../shared/reference; `make test` must pass there)."""
    path = reference_dir() / relative
    if not path.exists():
        pytest.skip(f"upstream file missing: {path} (../shared/reference or $TPU_SERVING_REFERENCE)")
    return path


BASE: dict[str, Any] = {
    "gcp:project": "tpu-test-project",
    "gcp:region": "us-east5",
    "tpu-serving:environment": "dev",
    "tpu-serving:cluster": {},
    "tpu-serving:bucket": {},
    "tpu-serving:tpuPools": [
        {"name": "v6e-4x4", "tpu": "v6e", "topology": "4x4", "zone": "us-east5-b"},
        {
            "name": "v5e-2x4",
            "tpu": "v5e",
            "topology": "2x4",
            "zone": "us-east5-a",
            "autoscaling": {"minNodes": 0, "maxNodes": 3},
        },
    ],
}


def workload_grants(rec: Recording) -> list[Any]:
    """The stack's object grants: less the access-log writer's on the log bucket (components/bucket.py) and the
    storage.buckets.get binding each identity holds beside them (tests/test_bucket_get.py checks those)."""
    return [
        r
        for r in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if r.name != "bucket-logs-writer" and not is_bucket_get(r)
    ]


def is_bucket_get(member: Any) -> bool:
    """A storage.buckets.get binding (components/workload_identity.py register_grants): the stack's custom role or,
    on another bucket, roles/storage.legacyBucketReader."""
    role = member.inputs["role"]
    return "/roles/tpuServingBucketGet_" in role or role == "roles/storage.legacyBucketReader"


def without_scan_skips(annotations: dict[str, str]) -> dict[str, str]:
    """An object's annotations less the checkov findings it accepts (stacks/security/scan_exceptions.py)."""
    return {k: v for k, v in annotations.items() if not k.startswith("checkov.io/skip")}


def stack_ksa(name: str, stack: str = "dev") -> str:
    """The name a Kubernetes ServiceAccount with Google access gets in `stack` (unique per stack)."""
    from stacks import naming

    return naming.stack_service_account(name, naming.stack_identity_suffix("tpu-serving", stack))


def make_config(**changes: Any) -> dict[str, Any]:
    """BASE with keys replaced; a key given as None is removed. Keys use '__' for ':' (tpu_serving__cluster)."""
    config = copy.deepcopy(BASE)
    for key, value in changes.items():
        real = key.replace("tpu_serving__", "tpu-serving:").replace("gcp__", "gcp:")
        if value is None:
            config.pop(real, None)
        else:
            config[real] = value
    return config


def on_pool(selector: dict[str, str], pool: str) -> dict[str, str]:
    """An upstream manifest's TPU node selector as the stack renders it: the same, plus the label of the workload's
    own pool (stacks/serving/pool_plan.py PoolPlan.pool_selector), which no upstream manifest has."""
    from stacks import naming

    return {**selector, naming.POOL_LABEL: pool}


def pool(**fields: Any) -> dict[str, Any]:
    base = {"name": "p", "tpu": "v6e", "topology": "4x4", "zone": "us-east5-b"}
    base.update(fields)
    return base


_RUNS: dict[str, Recording] = {}
_SHARED: list[Path] = []  # where this session's xdist workers share recordings (empty without xdist)


def session_run(
    config: dict[str, Any], *, preview: bool = False, stack: str = "dev", stack_outputs: dict | None = None
) -> Recording:
    """The recording of a successful run, once per session: kept in this process, and pickled for the other xdist
    workers of the session (keyed by config, mode, stack and the outputs its StackReferences read). A failing run
    raises and is not kept. Shared: callers only read it (the `run` fixture hands out copies)."""
    key = json.dumps([config, preview, stack, stack_outputs or {}], sort_keys=True, default=repr)
    if key not in _RUNS:
        shared = _SHARED[0] / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.pickle" if _SHARED else None
        if shared and shared.exists():
            _RUNS[key] = pickle.loads(shared.read_bytes())
        else:
            _RUNS[key] = run_program(config, preview=preview, stack=stack, stack_outputs=stack_outputs)
            if shared:  # written whole, then renamed: a sibling never reads half a file
                partial = shared.with_suffix(f".{os.getpid()}.partial")
                partial.write_bytes(pickle.dumps(_RUNS[key]))
                partial.replace(shared)
    return _RUNS[key]


@pytest.fixture
def run(request):
    """run(config, preview=False, stack='dev') -> Recording.

    A successful run is kept for the session (session_run) and each caller gets its own deep copy: many tests read
    the same config (BASE alone is run by ~20 tests). Not kept: runs with other options (`recording=`, `program=`,
    `secret_keys=`), failing runs, and every run of a test that uses `monkeypatch` (it may change what the program
    reads: environment, versions, catalog)."""
    cacheable = "monkeypatch" not in request.fixturenames

    def _run(config: dict[str, Any], *, preview: bool = False, stack: str = "dev", **kw) -> Recording:
        if kw or not cacheable:
            return run_program(config, preview=preview, stack=stack, **kw)
        return copy.deepcopy(session_run(config, preview=preview, stack=stack))

    return _run


@functools.cache
def recorded(path: Path, preview: bool) -> Recording:
    """One run per stack file and mode for the whole session (tests only read recordings)."""
    return session_run(
        load_stack_file(path), stack=stack_name(path), preview=preview, stack_outputs=recorded_outputs(path)
    )


@pytest.fixture(autouse=True)
def _render_reuses_session_runs(request):
    """`tooling.review.render` (render_stack, main) runs stack files through session_run too, as a copy: the render tests
    evaluate the same shipped stacks the recordings did. Not under `monkeypatch` (see `run`)."""
    from tooling.review import render

    if "monkeypatch" in request.fixturenames:
        yield
        return

    def run_stack_file(path: Path, *, preview: bool = False, stack: str | None = None) -> Recording:
        config, outputs = load_stack_file(path), recorded_outputs(path)
        return copy.deepcopy(
            session_run(config, preview=preview, stack=stack or stack_name(path), stack_outputs=outputs)
        )

    original, render.run_stack_file = render.run_stack_file, run_stack_file
    try:
        yield
    finally:
        render.run_stack_file = original


@pytest.fixture(scope="session", autouse=True)
def _program_loaded_and_frozen(tmp_path_factory) -> None:
    """Once per test process: run the program once (BASE, kept for the `run` fixture), so that it and the provider
    SDKs it loads are imported, then move those long-lived objects out of the cyclic garbage collector's view
    (gc.freeze): without it every full collection re-walks the SDKs' millions of objects, a quarter of the
    suite's CPU. A program that fails here is left to the tests that run BASE to report."""
    import gc

    if os.environ.get("PYTEST_XDIST_WORKER"):  # xdist gives each session's workers <basetemp>/popen-gwN
        _SHARED.append(tmp_path_factory.getbasetemp().parent / "recordings")
        _SHARED[0].mkdir(exist_ok=True)
    try:
        session_run(BASE)
    except Exception:  # noqa: BLE001
        pass
    gc.collect()
    gc.freeze()
    # and a full collection every 100 young ones instead of 10: the tests' own long-lived data (recordings,
    # validators' schemas) made the remaining full collections a tenth of the CPU; peak memory stays ~300 MB
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, 100)
