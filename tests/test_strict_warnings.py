"""Every warning the program can print has a way in the stack's config to resolve it while `STRICT=1` stays on
(issue 34 item 13: staging and prod render with --strict, and a Hugging Face model without a token warned whether or
not it was gated, with no key to say it is public; `gated: false` is that key now).

Which code can warn is read from the program's source (every function that emits or forwards warning text: named
`*warning*`, filling a `warnings` list, returning a list of texts with its result, or calling `pulumi.log.warn`), and
each such function has its cases below: a staging or prod config that triggers the warning, and a change to it that
resolves the warning in the same environment. A new warning function without a case fails the first test."""

from __future__ import annotations

import ast
import copy
from typing import Any

import pytest

from stacks.reports import cost
from tests.conftest import STACK_FILES
from tooling.harness.offline import ROOT, load_stack_file
from tooling.scans import fuzz

PROGRAM = ("stacks", "workloads", "components")


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) >= 20
    )


def _warns(fn: ast.FunctionDef) -> bool:
    nodes = list(ast.walk(fn))
    return (
        "warning" in fn.name
        or any(isinstance(n, ast.Name) and n.id == "warnings" for n in nodes)
        or any(  # <object>.warnings.append(...)
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("append", "extend")
            and isinstance(n.func.value, ast.Attribute)
            and n.func.value.attr == "warnings"
            for n in nodes
        )
        or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "warn" for n in nodes)
        or any(isinstance(n, ast.Attribute) and n.attr == "warnings_at" for n in nodes)  # a piece's visit files one
        or any(
            isinstance(n, ast.Return)
            and isinstance(n.value, ast.Tuple)
            and any(isinstance(e, ast.List) and any(_is_text(x) for x in e.elts) for e in n.value.elts)
            for n in nodes
        )
    )


def warning_functions() -> set[str]:
    """`<file>:<function>` of every program function that emits or forwards a warning."""
    found = set()
    for folder in PROGRAM:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for fn in ast.walk(ast.parse(path.read_text())):
                if isinstance(fn, ast.FunctionDef) and _warns(fn):
                    found.add(f"{path.relative_to(ROOT)}:{fn.name}")
    return found


# Functions that only pass on what others emit (each emitter has its own cases), or hold a `warnings` list they
# never write to.
FORWARDS = {
    "stacks/pulumi_config.py:load_stack_config": "logs StackConfig.warnings with pulumi.log.warn",
    "stacks/workload_checks.py:check": "collects each workload type's warnings",
    "stacks/workload_checks.py:_resolve": "collects one server set's type warnings (check dedupes a candidate's)",
    "stacks/serving/workload_type.py:of": "wraps a type's plan with its warnings",
    "stacks/serving/workload_type.py:resolver": "passes a warnings list to the type's check",
    "stacks/serving/workload_type.py:resolve": "passes a warnings list to the type's check",
    "stacks/config.py:_stack_config": "puts the warnings the pieces filed into the StackConfig",
    "stacks/pieces/context.py:warnings_at": "where a piece's visit files a warning",
    "stacks/pieces/context.py:warnings": "the filed warnings, in order",
    "stacks/pieces/cluster.py:visit": "files cluster.py:warnings (cases below)",
    "stacks/pieces/bucket.py:visit": "files bucket.py:warnings (cases below)",
    "stacks/pieces/tpu_pools.py:visit": "files tpu_pools.py:warnings (cases below)",
    "stacks/pieces/gateway.py:visit": "files gateway.py:warnings (cases below)",
    "stacks/workload_checks.py:visit": "passes the warnings slot to check",
    "workloads/jetstream_pathways/checks.py:check": "only catalog.sizing_warning's text (cases below)",
    "workloads/saxml/checks.py:_check_models_fit": "only catalog.sizing_warning's text (cases below)",
    "workloads/saxml/checks.py:check": "passes the warnings list to _check_models_fit",
    "workloads/pathways_job/checks.py:check": "passes the warnings list to _check_job",
    "stacks/pieces/tpu_pools.py:warnings": "joins zone_warnings and warm_slice_warnings (cases below)",
    "stacks/pieces/tpu_pools.py:_zone_warning": "catalog.zone_warning's text (cases below)",
    "stacks/facts/catalog.py:_single_tenant_warning": "called by catalog.zone_warning (case below)",
}

CLEAN: dict[str, Any] = {
    "gcp:project": "tpu-test-project",
    "gcp:region": "us-central1",
    "tpu-serving:environment": "staging",
    "tpu-serving:tpuPools": [
        {
            "name": "v5e-2x4",
            "tpu": "v5e",
            "topology": "2x4",
            "zone": "us-central1-a",
            "autoscaling": {"minNodes": 0, "maxNodes": 2},
        }
    ],
    "tpu-serving:workloads": [
        {"type": "vllm", "name": "qwen", "pool": "v5e-2x4", "model": "Qwen/Qwen3-8B", "gated": False}
    ],
}
V6E = {"name": "v6e-2x4", "tpu": "v6e", "topology": "2x4", "zone": "us-central1-b"}
V5P = {"name": "v5p", "tpu": "v5p", "topology": "2x2x1", "zone": "us-east5-a"}
GATEWAY = {"tpu-serving:gateway": {"enabled": True}, "tpu-serving:cluster": {"minMasterVersion": "1.34.1-gke.1127000"}}
MULTI_HOST = {"name": "mh", "tpu": "v5e", "topology": "4x4", "zone": "us-central1-a"}
WARM = {**MULTI_HOST, "slices": 2, "warmSlices": 1}
JETSTREAM = {
    "type": "jetstream",
    "name": "gemma",
    "pool": "v5e-2x4",
    "model": "gemma-7b",
    "checkpoint": "gs://ckpt/gemma",
}


def _vllm(**fields: Any) -> dict[str, Any]:
    return {**CLEAN["tpu-serving:workloads"][0], **fields}


def _queue_scaled(minimum: int) -> dict[str, Any]:
    """The vLLM workload autoscaled on the gateway's queue from `minimum` replicas."""
    metric = {"name": "epp_flow_control_queue_size", "target": 10}
    return _vllm(autoscaling={"minReplicas": minimum, "maxReplicas": 2, "metrics": [metric]})


OLD_VLLM = "docker.io/vllm/vllm-tpu:v0.27.0"  # open high advisories (stacks/facts/releases.py)
VLLM_ACKS = [
    {"id": "CVE-2026-93592", "reason": "no embedding or pooling model is served"},
    {"id": "PYSEC-2026-4353", "reason": "no disaggregated endpoint is exposed"},
]

# (function, case id, trigger: changes to CLEAN, resolution: changes to the trigger, a fragment of the warning)
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = [
    (
        "stacks/serving/version_guard.py:check_advisories",
        "open-advisory-outside-prod",
        {"tpu-serving:workloads": [_vllm(image=OLD_VLLM)]},
        {"tpu-serving:workloads": [_vllm()]},
        "prod refuses it unless acknowledged",
    ),
    (
        "stacks/serving/version_guard.py:check_advisories",
        "acknowledged-advisory-in-prod",
        {
            "tpu-serving:environment": "prod",
            "tpu-serving:workloads": [_vllm(image=OLD_VLLM, acknowledgeAdvisories=VLLM_ACKS)],
        },
        {"tpu-serving:workloads": [_vllm()]},
        "acknowledged (no embedding or pooling model is served)",
    ),
    (
        "stacks/serving/version_guard.py:check_advisories",
        "stale-acknowledgement",
        {"tpu-serving:workloads": [_vllm(acknowledgeAdvisories=VLLM_ACKS[:1])]},
        {"tpu-serving:workloads": [_vllm()]},
        "is not an open advisory of the engine release this workload runs",
    ),
    (
        "stacks/pieces/bucket.py:warnings",
        "force-destroy-override",
        {"tpu-serving:bucket": {"forceDestroy": True}},
        {"tpu-serving:bucket": {}},
        "forceDestroy=true overrides the staging profile",
    ),
    (
        "stacks/pieces/cluster.py:warnings",
        "private-nodes-off",
        {"tpu-serving:cluster": {"privateNodes": False}},
        {"tpu-serving:cluster": {"privateNodes": True}},
        "privateNodes=false",
    ),
    (
        "stacks/pieces/cluster.py:warnings",
        "open-ip-endpoint",
        {"tpu-serving:environment": "dev", "tpu-serving:cluster": {"controlPlaneEndpoint": "ip"}},
        {
            "tpu-serving:cluster": {
                "controlPlaneEndpoint": "ip",
                "masterAuthorizedNetworks": [{"cidrBlock": "203.0.113.0/24", "displayName": "operators"}],
            }
        },
        "controlPlaneEndpoint=ip with no masterAuthorizedNetworks",
    ),
    (
        "stacks/pieces/environment.py:profile",
        "decommission",
        {"tpu-serving:decommission": True},
        {"tpu-serving:decommission": False},
        "decommission=true",
    ),
    (
        "stacks/pieces/environment.py:visit",
        "paused",
        {"tpu-serving:paused": True},
        {"tpu-serving:paused": False},
        "paused=true",
    ),
    (
        "stacks/pieces/gateway.py:warnings",
        "gateway-routes-nothing",
        {**GATEWAY, "tpu-serving:workloads": [_vllm(gateway=False)]},
        {"tpu-serving:workloads": [_vllm(gateway=True)]},
        "the Gateway routes nothing",
    ),
    (
        "stacks/pieces/environment.py:placeholder_warnings",
        "placeholder-project",
        {"gcp:project": "my-tpu-project"},
        {"gcp:project": "acme-llm-serving"},
        "is the examples' placeholder",
    ),
    (
        "stacks/pieces/tpu_pools.py:zone_warnings",
        "zone-not-listed",
        {"tpu-serving:tpuPools": [{**CLEAN["tpu-serving:tpuPools"][0], "zone": "us-central1-f"}]},
        {
            "tpu-serving:tpuPools": [
                {**CLEAN["tpu-serving:tpuPools"][0], "zone": "us-central1-f", "zoneConfirmed": True}
            ]
        },
        "is not listed in us-central1-f",
    ),
    (
        "stacks/facts/catalog.py:zone_warning",
        "single-tenant-zone",
        {
            "gcp:region": "us-east5",
            "tpu-serving:tpuPools": [{**CLEAN["tpu-serving:tpuPools"][0], "zone": "us-east5-a"}],
        },
        {
            "tpu-serving:tpuPools": [
                {
                    **CLEAN["tpu-serving:tpuPools"][0],
                    "zone": "us-east5-a",
                    "capacity": "reservation",
                    "reservation": "r",
                }
            ]
        },
        "is single-tenant (reserved capacity) only",
    ),
    (
        "stacks/pieces/tpu_pools.py:warm_slice_warnings",
        "warm-slices-on-spot",
        {
            "tpu-serving:tpuPools": [
                *CLEAN["tpu-serving:tpuPools"],
                {**WARM, "capacity": "spot"},
            ]
        },
        {
            "tpu-serving:tpuPools": [
                *CLEAN["tpu-serving:tpuPools"],
                {**WARM, "capacity": "reservation", "reservation": "r"},
            ]
        },
        "`pulumi up` creates no slice",
    ),
    (
        "stacks/pieces/gateway.py:from_zero_warnings",
        "scale-from-zero-behind-the-gateway",
        {**GATEWAY, "tpu-serving:monitoring": {"adapter": "keda"}, "tpu-serving:workloads": [_queue_scaled(0)]},
        {"tpu-serving:workloads": [_queue_scaled(1)]},
        "scales to zero behind the gateway",
    ),
    (
        "workloads/vllm/checks.py:_check_model",
        "hugging-face-model-without-a-token",
        {"tpu-serving:workloads": [{k: v for k, v in _vllm().items() if k != "gated"}]},
        {"tpu-serving:workloads": [_vllm(gated=False)]},
        "is staged from Hugging Face without a token",
    ),
    (
        "workloads/vllm/checks.py:check",
        "image-outside-the-matrix",
        {"tpu-serving:workloads": [_vllm(image="docker.io/vllm/vllm-tpu:nightly")]},
        {"tpu-serving:workloads": [_vllm()]},
        "is not in the version matrix",
    ),
    (
        "workloads/vllm/checks.py:check",
        "experimental-generation",
        {"gcp:region": "us-east5", "tpu-serving:tpuPools": [V5P], "tpu-serving:workloads": [_vllm(pool="v5p")]},
        {"tpu-serving:tpuPools": [{**V6E, "zone": "us-east5-b"}], "tpu-serving:workloads": [_vllm(pool="v6e-2x4")]},
        "vLLM's TPU backend calls v5p",
    ),
    (
        # vllm-project/tpu-inference@v0.27.0:support_matrices/release/v5e: none (v6e: multi-host Untested)
        "workloads/vllm/checks.py:_multi_host_warning",
        "multi-host-vllm-off-the-support-matrix",
        {
            "tpu-serving:addons": {"lws": {"enabled": True}},
            "tpu-serving:tpuPools": [MULTI_HOST],
            "tpu-serving:workloads": [_vllm(pool="mh")],
        },
        {"tpu-serving:tpuPools": CLEAN["tpu-serving:tpuPools"], "tpu-serving:workloads": [_vllm()]},
        "is not tested upstream: ",
    ),
    (
        "workloads/vllm/checks.py:_serving_warnings",
        "tensor-parallel-not-dividing-heads",
        {
            "tpu-serving:hfToken": {"secure": "v1:x"},
            "tpu-serving:tpuPools": [*CLEAN["tpu-serving:tpuPools"], V6E],
            "tpu-serving:workloads": [
                _vllm(model="meta-llama/Llama-3.1-70B", pool="v6e-2x4", gated=True, args={"tensor-parallel-size": 6})
            ],
        },
        {"tpu-serving:workloads": [_vllm(model="meta-llama/Llama-3.1-70B", pool="v6e-2x4", gated=True)]},
        "does not divide meta-llama/Llama-3.1-70B's 64 attention heads",
    ),
    (
        "stacks/facts/catalog.py:sizing_warning",
        "vllm-weights-larger-than-a-slice",
        {
            "tpu-serving:hfToken": {"secure": "v1:x"},
            "tpu-serving:workloads": [_vllm(model="meta-llama/Llama-3.1-70B", gated=True)],
        },
        {
            "tpu-serving:tpuPools": [*CLEAN["tpu-serving:tpuPools"], V6E],
            "tpu-serving:workloads": [_vllm(model="meta-llama/Llama-3.1-70B", gated=True, pool="v6e-2x4")],
        },
        "needs about 140 GB of HBM",
    ),
    (
        "workloads/jetstream/checks.py:check",
        "disputed-metric-series",
        {
            "tpu-serving:workloads": [
                {
                    **JETSTREAM,
                    "autoscaling": {
                        "minReplicas": 1,
                        "maxReplicas": 2,
                        "metrics": [{"name": "jetstream_slots_used_percentage", "target": 0.8}],
                    },
                }
            ]
        },
        {
            "tpu-serving:workloads": [
                {
                    **JETSTREAM,
                    "autoscaling": {
                        "minReplicas": 1,
                        "maxReplicas": 2,
                        "metrics": [{"name": "jetstream_prefill_backlog_size", "target": 10}],
                    },
                }
            ]
        },
        "sources conflict on whether",
    ),
    (
        "workloads/jetstream/checks.py:check",
        "jetstream-image-outside-the-matrix",
        {"tpu-serving:workloads": [{**JETSTREAM, "images": {"server": "example.com/maxengine:mine"}}]},
        {"tpu-serving:workloads": [JETSTREAM]},
        "is not in the version matrix",
    ),
    (
        "stacks/workload_checks.py:_check_images",
        "matrix-image-at-another-tag-in-dev",
        {
            "tpu-serving:environment": "dev",  # the pack's images-pinned warns there; staging and prod refuse
            "tpu-serving:workloads": [
                {**JETSTREAM, "images": {"http": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.4"}}
            ],
        },
        {"tpu-serving:workloads": [JETSTREAM]},
        "is not the version matrix's pin",
    ),
    (
        "workloads/pathways_job/checks.py:_check_job",
        "interactive-head-colocated",
        {
            "tpu-serving:addons": {"pathwaysJob": {"enabled": True}},
            "tpu-serving:tpuPools": [MULTI_HOST],
            "tpu-serving:workloads": [
                {"type": "pathways-job", "name": "pw", "pool": "mh", "deploymentMode": "colocate_head_with_workers"}
            ],
        },
        {"tpu-serving:workloads": [{"type": "pathways-job", "name": "pw", "pool": "mh"}]},
        "colocate_head_with_workers mode",
    ),
    (
        "stacks/reports/cost.py:estimate",
        "system-pool-without-a-price",
        {"tpu-serving:cluster": {"systemPool": {"machineType": "c3-standard-4"}}},
        {"tpu-serving:cluster": {"systemPool": {"machineType": "e2-standard-4"}}},
        "no price for system pool machine type",
    ),
    (
        "components/platform.py:build_stack",
        "cost-estimate-warnings-logged",
        {"tpu-serving:cluster": {"systemPool": {"machineType": "c3-standard-4"}}},
        {"tpu-serving:cluster": {"systemPool": {"machineType": "e2-standard-4"}}},
        "no price for system pool machine type",
    ),
]


def _changed(config: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(config)
    out.update(copy.deepcopy(changes))
    return out


def warnings_of(config: dict[str, Any]) -> list[str]:
    """Every warning `make render` prints for the config, before resources: the config's and the cost estimate's
    (components/platform.py logs those as `cost estimate: ...`)."""
    cfg = fuzz.parse(config, "s")
    return [*cfg.warnings, *(f"cost estimate: {w}" for w in cost.estimate(cfg).warnings)]


def test_every_warning_function_has_its_cases():
    covered = {case[0] for case in CASES} | set(FORWARDS)
    found = warning_functions()
    assert found - covered == set(), "a function that warns without a case here: add one (or FORWARDS)"
    assert covered - found == set(), "a case for a function that no longer warns"


def test_the_clean_config_has_no_warning():
    assert warnings_of(CLEAN) == []


@pytest.mark.parametrize("function,case,trigger,resolution,fragment", CASES, ids=[c[1] for c in CASES])
def test_each_warning_is_resolved_in_config_with_strict_on(function, case, trigger, resolution, fragment):
    warned = _changed(CLEAN, trigger)
    assert any(fragment in w for w in warnings_of(warned)), warnings_of(warned)
    resolved = _changed(warned, resolution)
    assert resolved["tpu-serving:environment"] == warned["tpu-serving:environment"]  # no way out through dev
    assert not [w for w in warnings_of(resolved) if fragment in w]


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_warning_of_a_shipped_stack_as_staging_is_one_with_a_case(path):
    """The shipped stacks, made staging stacks: each warning they print is one a case above resolves."""
    config = {**load_stack_file(path), "tpu-serving:environment": "staging"}
    try:
        warned = warnings_of(config)
    except Exception as err:  # noqa: BLE001 - a stack staging refuses has no warnings to read
        pytest.skip(f"{path.name} is refused as a staging stack: {str(err).splitlines()[0]}")
    fragments = [case[4] for case in CASES]
    assert [w for w in warned if not any(f in w for f in fragments)] == []
