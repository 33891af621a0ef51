"""Issue 37 items 3-5: releases as a gated train. A workload's `rollout` runs the current release and a candidate as
two server sets (slots a and b, stacks/serving/release.py), each with its own InferencePool, under one HTTPRoute
whose backend weights the stack owns; the gate's inference-perf Job benchmarks the candidate
(stacks/serving/benchmark.py); `make promote` decides on recorded results and writes the stack file
(tooling/operations/promote.py)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from stacks.facts import images
from stacks.problems import ConfigError
from stacks.serving import benchmark, gateway
from stacks.serving import release as releases
from tests.conftest import recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import load_stack_file, parse_config
from tooling.operations import promote
from tooling.oracles.schemas import crd_dir, validate_objects

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples/vllm-canary/Pulumi.vllm-canary.yaml"
FIXTURES = ROOT / "tests/fixtures/promote"
SCHEMA = json.loads((ROOT / "tests/data/inference_perf_config_schema.json").read_text())
needs_crds = pytest.mark.skipif(crd_dir() is None, reason="no CRDs in ../shared/reference or .cache/crds")


def example() -> dict[str, Any]:
    return copy.deepcopy(load_stack_file(EXAMPLE))


def workload(cfg: dict[str, Any]) -> dict[str, Any]:
    return cfg["tpu-serving:workloads"][0]


def parsed(cfg: dict[str, Any]):
    return parse_config(cfg, "vllm-canary")


def problems(cfg: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parsed(cfg)
    return [str(p) for p in err.value.problems]


# ---- the config: two server sets, their rules ---------------------------------------------------------------


def test_a_candidate_runs_as_a_second_server_set_in_the_other_slot():
    cfg = parsed(example())
    sets = {w.name: w for w in cfg.workloads}
    assert set(sets) == {"chat", "chat-b"}
    current, candidate = sets["chat"], sets["chat-b"]
    assert current.release.role == releases.CURRENT and current.release.weight == 90
    assert candidate.release.role == releases.CANDIDATE and candidate.release.weight == 10
    # the candidate is the workload with the candidate's fields; the rest is the workload's
    assert candidate.workload.args == {"max-num-seqs": 256, "enable-prefix-caching": True}
    assert candidate.workload.replicas == 1 and current.workload.replicas == 2
    assert candidate.workload.slo == current.workload.slo and candidate.namespace == current.namespace == "chat"
    assert "--max-num-seqs=256" in candidate.serve_args() and "--max-num-seqs=256" not in current.serve_args()


def test_slot_b_runs_the_current_release_after_a_flip():
    cfg = example()
    workload(cfg)["rollout"]["slot"] = "b"
    sets = {w.name: w.release for w in parsed(cfg).workloads}
    assert sets["chat-b"].role == releases.CURRENT and sets["chat"].role == releases.CANDIDATE


def test_a_rollout_without_a_candidate_changes_nothing_of_the_workload():
    """Adding `rollout` to a live workload: the same objects, the route without weights (a clean `pulumi up`)."""
    cfg = example()
    del workload(cfg)["rollout"]
    plain = parsed(cfg)
    workload(cfg)["rollout"] = {"strategy": "canary"}
    ruled = parsed(cfg)
    assert [w.name for w in ruled.workloads] == ["chat"]
    assert ruled.workloads[0].pod_manifests() == plain.workloads[0].pod_manifests()
    assert ruled.gateway_plan.backends[0].weight is None
    route = gateway.http_route_manifest(*ruled.gateway_plan.backends)
    assert route == gateway.http_route_manifest(*plain.gateway_plan.backends)


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"strategy": "blueGreen", "weight": 10}, "rollout.weight", "is not 0 or 100"),
        ({"weight": 30}, "rollout.weight", "one of steps"),
        ({"steps": [50, 10, 100]}, "rollout.steps", "must increase"),
        ({"steps": [10, 50]}, "rollout.steps", "end at 100"),
        ({"mirror": True}, "rollout.mirror", "RequestMirror"),
        ({"gate": {"scenario": "nope"}}, "rollout.gate.scenario", "not a benchmark scenario"),
        ({"candidate": None, "weight": 10}, "rollout.weight", "without a candidate"),
        ({"candidate": {"model": "meta-llama/Llama-3.1-8B-Instruct"}}, "rollout.candidate", "served-model-name"),
        ({"candidate": {"replicas": 3}}, "rollout.candidate", "pool 'v6e-2x2' has 4 TPU host(s)"),
        ({"candidate": {"pool": "nope"}}, "rollout.candidate.pool", "not a TPU pool"),
    ],
)
def test_a_rollout_the_stack_cannot_run_is_refused_at_its_key(change, key, words):
    cfg = example()
    workload(cfg)["rollout"].update(change)
    found = problems(cfg)
    assert any(f"workloads[0].{key}:" in p and words in p for p in found), found


@needs_crds
def test_mirroring_is_refused_citing_why_and_the_pinned_gateway_api_says_so():
    """Issue 37 item 3, mirroring (optional): GKE's Gateway implements RequestMirror (kubernetes-sigs/gateway-api
    conformance/reports/v1.1.0/gke-gateway/standard-1.30.3-{rilb,rxlb}-report.yaml and v1.4.0/gke-gateway/
    standard-1.34.4-rxlb-report.yaml: HTTPRouteRequestMirror supported), tested to a Service; a mirror to any other
    kind is implementation-specific in the pinned Gateway API CRD (gateway-api@v1.6.1, read here), and neither GKE's
    GatewayClass capabilities page nor gateway-api-inference-extension@v1.6.0 (no mirror conformance test)
    documents one to an InferencePool. The refusal says so and what to do instead."""
    import yaml

    crd = yaml.safe_load((crd_dir() / "gateway.networking.k8s.io_httproutes.yaml").read_text())
    (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    rule = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["rules"]["items"]
    mirror = rule["properties"]["filters"]["items"]["properties"]["requestMirror"]["properties"]["backendRef"]
    assert "Support: Extended for Kubernetes Service" in mirror["description"]
    assert "Support: Implementation-specific for any other resource" in mirror["description"]
    cfg = example()
    workload(cfg)["rollout"]["mirror"] = True
    (found,) = [p for p in problems(cfg) if "rollout.mirror" in p]
    for words in ("HTTPRouteRequestMirror", "implementation-specific", "InferencePool", "canary step"):
        assert words in found, found


def test_the_candidate_is_refused_before_it_is_created_when_its_pool_cannot_hold_both_sets():
    """Preflight of a release: the pool's capacity arithmetic (hosts at the replicas' maximum) with both sets; the
    problem names every set's hosts and the fixes."""
    cfg = example()
    workload(cfg)["rollout"]["candidate"]["replicas"] = 3
    (found,) = [p for p in problems(cfg) if "rollout.candidate:" in p]
    assert "'chat' 2" in found and "'chat-b' 3" in found and "need 5" in found


def test_slot_bs_name_is_no_other_workloads():
    cfg = example()
    other = copy.deepcopy(workload(cfg))
    del other["rollout"]
    cfg["tpu-serving:workloads"].append({**other, "name": "chat-b", "namespace": "chat", "replicas": 1})
    cfg["tpu-serving:tpuPools"][0]["autoscaling"]["maxNodes"] = 6
    assert any("workloads[1].name: 'chat-b' is also the name of a rollout" in p for p in problems(cfg))


def test_a_rollout_needs_the_gateway_and_a_latency_slo():
    cfg = example()
    cfg["tpu-serving:gateway"] = {"enabled": False}
    del workload(cfg)["slo"]
    found = problems(cfg)
    assert any("rollout: needs the workload served through the Inference Gateway" in p for p in found), found
    assert any("rollout: needs slo.timeToFirstToken" in p for p in found), found


OLD_PIN = "docker.io/vllm/vllm-tpu:v0.27.0"  # vllm-tpu 0.27.0: open high advisories (tests/test_version_guard.py)
ADVISORIES = ("CVE-2026-93592", "PYSEC-2026-4353")


def test_the_version_guard_holds_the_candidates_engine_too_and_one_acknowledgement_covers_both_sets():
    cfg = example()
    cfg["tpu-serving:environment"] = "prod"
    workload(cfg)["rollout"]["candidate"]["image"] = OLD_PIN
    found = [p for p in problems(cfg) if "advisory" in p]
    assert len(found) == 2 and all(p.startswith("tpu-serving:workloads[0].rollout.candidate.image: ") for p in found)
    # the same image in both sets: each advisory is said once, at the current release's key
    workload(cfg)["image"] = OLD_PIN
    found = [p for p in problems(cfg) if "advisory" in p]
    assert len(found) == 2 and all(p.startswith("tpu-serving:workloads[0].image: ") for p in found), found
    # acknowledged once for the workload: both sets run, neither acknowledgement is stale
    workload(cfg)["acknowledgeAdvisories"] = [{"id": a, "reason": "not exposed"} for a in ADVISORIES]
    warned = [w for w in parsed(cfg).warnings if "acknowledgeAdvisories" in w]
    assert len(warned) == 2 and all("acknowledged (not exposed)" in w for w in warned), warned


# ---- the rendered objects -------------------------------------------------------------------------------------


def objects() -> list[dict[str, Any]]:
    return kubernetes_objects(recorded(EXAMPLE, True))


def test_the_example_renders_two_pools_one_weighted_route_and_the_gate_job():
    objs = objects()
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objs}
    assert {("Deployment", "chat"), ("Deployment", "chat-b"), ("Service", "chat"), ("Service", "chat-b")} <= kinds
    (route,) = [o for o in objs if o["kind"] == "HTTPRoute"]
    refs = route["spec"]["rules"][0]["backendRefs"]
    assert [(r["kind"], r["name"], r["weight"]) for r in refs] == [
        ("InferencePool", "chat", 90),
        ("InferencePool", "chat-b", 10),
    ]
    (job,) = [o for o in objs if o["kind"] == "Job" and o["metadata"]["labels"].get("role") == "benchmark"]
    assert job["metadata"]["name"].startswith("chat-gate-")
    pod = job["spec"]["template"]["spec"]
    # the pinned image, pulled from quay.io as it is (stacks/facts/images.py DIRECT)
    assert pod["containers"][0]["image"] == benchmark.default_image()
    assert images.registry_of(benchmark.default_image()) in images.DIRECT
    assert pod["serviceAccountName"].startswith("chat-b-") and pod["serviceAccountName"].endswith("-gate")
    assert "http://chat-b.chat.svc:8000/health" in pod["initContainers"][0]["command"]
    assert job["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"


def test_each_set_has_its_own_inference_pool():
    cfg = parsed(example())
    pools = [gateway.inference_pool_manifest(b) for b in cfg.gateway_plan.backends]
    assert [(p["metadata"]["name"], p["spec"]["selector"]["matchLabels"]["app"]) for p in pools] == [
        ("chat", "chat"),
        ("chat-b", "chat-b"),
    ]


@needs_crds
def test_every_new_object_validates_against_its_upstream_schema():
    """The HTTPRoute with two weighted InferencePool backendRefs against the Gateway API v1.6.1 CRD, both
    InferencePools against inference.networking.k8s.io v1.6.0 (../shared/reference/crds), the Job, ConfigMap and
    the rest against kubernetes-validate."""
    cfg = parsed(example())
    pools = [gateway.inference_pool_manifest(b) for b in cfg.gateway_plan.backends]
    report = validate_objects([*objects(), *pools], "1.35")
    assert report.errors == []
    assert report.checked >= 50


def test_the_gate_config_validates_against_inference_perfs_schema():
    """Each scenario's inference-perf config against the JSON Schema of inference-perf 0.7.0's Config
    (tests/data/inference_perf_config_schema.json, recorded from the wheel), which forbids unknown keys."""
    target = benchmark.Target("http://c.ns.svc:8000", "/health", "vllm", "org/m", "org/m", None)
    for scenario in benchmark.SCENARIOS.values():
        cfg = benchmark.config(scenario, target, bucket="b", path="benchmarks/x/y", ttft_s=1.0, tpot_s=0.1)
        jsonschema.validate(cfg, SCHEMA)
    rendered = [o for o in objects() if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("chat-gate-")]
    (config_map,) = rendered
    jsonschema.validate(json.loads(config_map["data"][benchmark.CONFIG_FILE]), SCHEMA)
    bad = {**benchmark.config(benchmark.SCENARIOS["chat"], target, bucket="b", path="p", ttft_s=1, tpot_s=None)}
    bad["load"] = {**bad["load"], "rates": [1]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def test_the_gate_writes_only_its_workloads_benchmark_prefix():
    (grant,) = benchmark.grants("bkt", "chat")
    assert (grant.bucket, grant.role, grant.prefix) == ("bkt", "roles/storage.objectUser", "benchmarks/chat/")
    cfg = parsed(example())
    candidate = next(w for w in cfg.workloads if w.release.candidate)
    (config_map, _) = candidate.gate_manifests()
    storage = json.loads(config_map["data"][benchmark.CONFIG_FILE])["storage"]["google_cloud_storage"]
    assert storage["path"].startswith("benchmarks/chat/") and storage["bucket_name"] == candidate.bucket


def test_a_new_step_runs_a_new_gate_job():
    cfg = example()
    first = next(w for w in parsed(cfg).workloads if w.release.candidate).gate_job_name
    workload(cfg)["rollout"]["weight"] = 50
    second = next(w for w in parsed(cfg).workloads if w.release.candidate).gate_job_name
    assert first and second and first != second


def test_each_sets_slos_and_gateway_alerts_read_its_own_series():
    """The candidate's burn-rate SLOs (the rollback trigger) filter on its own pods' `app` label; its gateway rules
    on its own picker's `job` (its PodMonitoring, named after the router release)."""
    cfg = parsed(example())
    by_name = {w.name: w for w in cfg.alerts_plan.workloads}
    for name in ("chat", "chat-b"):
        assert {o.key for o in by_name[name].objectives} == {f"{name}-ttft", f"{name}-tpot", f"{name}-availability"}
        assert all(f'metric.labels.app="{name}"' in o.metric_filter for o in by_name[name].objectives)
        errors = next(r for r in by_name[name].rules if r.key == f"{name}-gateway-errors")
        assert f'job="{name}"' in errors.query


# ---- the gate's decision, on recorded results, both ways ------------------------------------------------------

ACCEPTED = {"ttftP90Seconds": 0.42, "tpotP90Seconds": 0.031, "outputTokensPerSecond": 980, "goodput": 0.97}
GATE = {"maxRegression": 0.1, "minGoodput": 0.9}


def result(name: str) -> promote.Result:
    return promote.read_summary(json.loads((FIXTURES / name).read_text()), f"gs://b/{name}")


def decide(name: str | None, *, weight: int = 10, strategy: str = "canary", burning=(), accepted=ACCEPTED):
    return promote.decide(
        strategy=strategy,
        steps=[10, 50, 100],
        weight=weight,
        gate=GATE,
        accepted=accepted,
        result=result(name) if name else None,
        expected_requests=600,
        burning=list(burning),
    )


def test_the_summary_is_read_as_inference_perf_writes_it():
    got = result("pass.json")
    assert (got.ttft_p90_s, got.tpot_p90_s, got.output_tokens_per_s) == (0.44, 0.03, 1012.0)
    assert got.goodput == pytest.approx(0.97) and (got.requests, got.failures) == (598, 0)


@pytest.mark.parametrize(("weight", "expected"), [(0, ("advance", 10)), (10, ("advance", 50)), (50, ("advance", 100))])
def test_a_passing_candidate_advances_step_by_step(weight, expected):
    decision = decide("pass.json", weight=weight)
    assert (decision.action, decision.weight) == expected


def test_a_passing_candidate_at_100_is_promoted_and_blue_green_switches_whole():
    assert decide("pass.json", weight=100).action == "promote"
    assert (decide("pass.json", weight=0, strategy="blueGreen").weight) == 100


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("regressed.json", "ttft p90 0.59 s > accepted 0.42 s"),
        ("low-goodput.json", "goodput 0.72 below"),
        ("errors.json", "40 of 600 requests failed"),
        (None, "benchmark failed"),
    ],
)
def test_a_failing_candidate_is_rolled_back(name, words):
    decision = decide(name, weight=50)
    assert (decision.action, decision.weight) == ("rollback", 0) and words in decision.reason


def test_the_candidates_burn_rate_rolls_it_back_whatever_the_benchmark():
    decision = decide("pass.json", burning=["chat-b: TTFT within 1 s burns 20x (> 14.4x)"])
    assert decision.action == "rollback" and "error budget" in decision.reason


def test_an_inconclusive_run_holds_the_weight():
    decision = decide("short.json", weight=50)
    assert (decision.action, decision.weight) == ("hold", 50)


def test_without_an_accepted_result_the_slos_alone_decide():
    assert decide("regressed.json", accepted=None).action == "advance"
    assert decide("low-goodput.json", accepted=None).action == "rollback"


# ---- the same decisions on upstream's recorded reports (tests/fixtures/promote/recorded/ORIGIN.md) -------------
# Three real inference-perf runs at the same load (1 request/s for 60 s) against vLLM serving Llama 3.1 8B: the
# baseline, the same with prefix caching and chunked prefill (as good or better), and with EAGLE speculative
# decoding (slower per token). The baseline's result is the accepted one, as `make promote` writes it.

RECORDED = FIXTURES / "recorded"


def recorded_result(name: str) -> promote.Result:
    return promote.read_summary(json.loads((RECORDED / f"{name}.json").read_text()), f"gs://b/{name}")


def accepted_from(res: promote.Result) -> dict[str, Any]:
    """The accepted result as a full promotion writes it into the stack file (promote.apply)."""
    cfg = example()
    entry = workload(cfg)
    promote.apply(entry, promote.Decision("promote", 0, "test"), res, "2026-11-29T10:00:00Z")
    return dict(entry["rollout"]["accepted"])


def decide_recorded(name: str, *, weight: int, burning=()) -> promote.Decision:
    doc = json.loads((RECORDED / f"{name}.json").read_text())
    sent = doc["load_summary"]["requested_rate"] * 60  # the stage's rate for its 60 s (ORIGIN.md)
    return promote.decide(
        strategy="canary",
        steps=[10, 50, 100],
        weight=weight,
        gate=GATE,
        accepted=accepted_from(recorded_result("vllm")),
        result=recorded_result(name),
        expected_requests=int(sent),
        burning=list(burning),
    )


def test_recorded_reports_are_read_where_inference_perf_writes_the_numbers():
    got = recorded_result("vllm")
    assert got.ttft_p90_s == pytest.approx(0.0350, abs=5e-4) and got.tpot_p90_s == pytest.approx(0.0035, abs=5e-5)
    assert got.output_tokens_per_s == pytest.approx(64.2, abs=0.05) and (got.requests, got.failures) == (60, 0)
    assert got.goodput is None  # these runs set no report.goodput constraints


@pytest.mark.parametrize(("weight", "expected"), [(10, ("advance", 50)), (50, ("advance", 100)), (100, ("promote", 0))])
def test_a_recorded_better_release_advances_to_promotion(weight, expected):
    decision = decide_recorded("vllm-chunking_and_prefix_caching", weight=weight)
    assert (decision.action, decision.weight) == expected, decision.reason


def test_a_recorded_slower_release_is_rolled_back_naming_what_regressed():
    decision = decide_recorded("vllm-eagle", weight=10)
    assert (decision.action, decision.weight) == ("rollback", 0)
    assert "ttft p90" in decision.reason and "tpot p90" in decision.reason


def test_a_recorded_good_release_is_rolled_back_when_its_burn_rate_alert_fires():
    decision = decide_recorded("vllm-chunking_and_prefix_caching", weight=50, burning=["chat-b TTFT burns 20x"])
    assert (decision.action, decision.weight) == ("rollback", 0) and "error budget" in decision.reason


# ---- writing the decision into the stack file ------------------------------------------------------------------


def written(decision: promote.Decision, res: promote.Result | None) -> tuple[str, dict[str, Any]]:
    """The example stack file after `apply`, as text (comments kept) and as the program reads it."""
    text = EXAMPLE.read_text()
    yaml = promote.stack_yaml(text)
    doc = yaml.load(text)
    promote.apply(doc["config"]["tpu-serving:workloads"][0], decision, res, "2026-11-29T10:00:00Z")
    out = io.StringIO()
    yaml.dump(doc, out)
    text = out.getvalue()
    return text, YAML(typ="safe").load(text)["config"]


def test_an_advance_rewrites_the_weight_and_keeps_the_files_comments():
    text, cfg = written(promote.Decision("advance", 50, "passed"), result("pass.json"))
    rollout = workload(cfg)["rollout"]
    assert rollout["weight"] == 50 and rollout["lastDecision"]["action"] == "advance"
    assert "# written by `make promote`" in text and text.startswith("# yaml-language-server")
    weights = {w.name: w.release.weight for w in parsed(cfg).workloads}
    assert weights == {"chat": 50, "chat-b": 50}


def test_a_rollback_removes_the_candidate_and_the_next_render_has_one_pool():
    _, cfg = written(promote.Decision("rollback", 0, "regressed"), result("regressed.json"))
    assert "candidate" not in workload(cfg)["rollout"] and workload(cfg)["rollout"]["weight"] == 0
    stack = parsed(cfg)
    assert [w.name for w in stack.workloads] == ["chat"]
    (backend,) = stack.gateway_plan.backends
    assert gateway.http_route_manifest(backend)["spec"]["rules"][0]["backendRefs"][0].get("weight") is None


def test_a_promotion_flips_the_slot_so_the_candidates_servers_become_the_current_release_unchanged():
    before = {w.name: w for w in parsed(example()).workloads}
    res = result("pass.json")
    _, cfg = written(promote.Decision("promote", 0, "passed at 100"), res)
    rollout = workload(cfg)["rollout"]
    assert rollout["slot"] == "b" and "candidate" not in rollout and rollout["accepted"]["source"] == res.source
    assert workload(cfg)["args"] == {"max-num-seqs": 256, "enable-prefix-caching": True}
    assert workload(cfg)["replicas"] == 2  # the canary's size is not promoted
    after = {w.name: w for w in parsed(cfg).workloads}
    assert list(after) == ["chat-b"] and after["chat-b"].release.role == releases.CURRENT
    # the same server, only scaled back to the workload's replicas: no restart of the candidate's pods
    old, new = before["chat-b"].pod_manifests()[0], after["chat-b"].pod_manifests()[0]
    assert old["spec"]["template"] == new["spec"]["template"]


def test_a_candidate_on_a_stack_exporting_to_a_fleet_is_warned_of():
    """A fleet's Gateway routes to each exported pool by its own rules: it does not weigh the two sets."""
    cfg = copy.deepcopy(load_stack_file(ROOT / "examples/fleet/Pulumi.fleet-us-east5.yaml"))
    cfg["tpu-serving:tpuPools"][0]["autoscaling"]["maxNodes"] = 3
    workload(cfg)["slo"] = {"timeToFirstToken": {"thresholdSeconds": 1}}
    workload(cfg)["rollout"] = {"candidate": {"args": {"max-num-seqs": 128}}}
    warned = parse_config(cfg, "fleet-us-east5").warnings
    assert any("llama8b: a rollout candidate on a stack exporting to a fleet" in w for w in warned), warned
    del workload(cfg)["rollout"]["candidate"]
    assert not any("exporting to a fleet" in w for w in parse_config(cfg, "fleet-us-east5").warnings)


# ---- the thin I/O: kubectl's Job status, the Monitoring API's burn rates ------------------------------------------


def test_the_gate_job_is_awaited_until_kubernetes_says_complete_or_failed(monkeypatch):
    """batch/v1 JobStatus.conditions: type Complete or Failed with status "True" (kubernetes-validate's Job schema;
    https://kubernetes.io/docs/concepts/workloads/controllers/job/#job-termination-and-cleanup)."""
    answers = iter(
        [
            {"status": {"active": 1}},
            {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}},
            {"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}},
        ]
    )
    calls = []
    monkeypatch.setattr(promote, "_run", lambda *args, env=None: calls.append(args) or json.dumps(next(answers)))
    monkeypatch.setattr(promote.time, "sleep", lambda s: None)
    assert promote.wait_for_job("/k", "chat", "chat-gate-1", 60) is True
    assert calls[0] == ("kubectl", "-n", "chat", "get", "job", "chat-gate-1", "-o", "json")
    assert promote.wait_for_job("/k", "chat", "chat-gate-1", 60) is False


def test_a_burn_rate_counts_only_when_both_fast_lookbacks_exceed_the_rate(monkeypatch):
    rates = {"3600s": 20.0, "300s": 30.0}

    def monitoring(path, token, **query):
        if path.endswith("serviceLevelObjectives"):
            return {
                "serviceLevelObjectives": [
                    {"name": "projects/p/services/s/serviceLevelObjectives/1", "displayName": "ttft"}
                ]
            }
        lookback = query["filter"].rsplit('"', 2)[-2]
        return {"timeSeries": [{"points": [{"value": {"doubleValue": rates[lookback]}}]}]}

    monkeypatch.setattr(promote, "_run", lambda *args, env=None: "token\n")
    monkeypatch.setattr(promote, "_monitoring", monitoring)
    assert promote.burning("p", "s") == ["ttft burns 20x (> 14.4x)"]
    rates["300s"] = 3.0  # the short lookback recovered: the alert's condition no longer holds
    assert promote.burning("p", "s") == []


def test_promote_reports_a_failing_command_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / EXAMPLE.name).write_text(EXAMPLE.read_text())
    monkeypatch.chdir(tmp_path)

    def fail(*args, env=None):
        raise RuntimeError(f"{args[0]}: not found")

    monkeypatch.setattr(promote, "_run", fail)
    assert promote.main(["vllm-canary"]) == 1
    assert capsys.readouterr().err.strip() == "make promote: pulumi: not found"
    assert (tmp_path / EXAMPLE.name).read_text() == EXAMPLE.read_text()  # nothing written


def test_promote_end_to_end_on_recorded_answers_advances_the_example(tmp_path, monkeypatch, capsys):
    """The I/O in order: the stack's kubeconfig, the gate Job's status, its summary from the bucket, the candidate's
    SLOs; then the stack file rewritten (the next step), its comments kept."""
    (tmp_path / EXAMPLE.name).write_text(EXAMPLE.read_text())
    monkeypatch.chdir(tmp_path)
    calls = []

    def run(*args, env=None):
        calls.append(args[:3])
        if args[:3] == ("kubectl", "-n", "chat"):
            return json.dumps({"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
        if args[:3] == ("gcloud", "storage", "cat"):
            assert args[3].startswith("gs://my-tpu-project-tpu-serving-vllm-canary/benchmarks/chat/chat-gate-")
            return (FIXTURES / "pass.json").read_text()
        return "token" if args[0] == "gcloud" else "apiVersion: v1\nkind: Config\n"

    monkeypatch.setattr(promote, "_run", run)
    monkeypatch.setattr(promote, "_monitoring", lambda path, token, **q: {})
    assert promote.main(["vllm-canary"]) == 0
    assert [c[0] for c in calls] == ["pulumi", "kubectl", "gcloud", "gcloud"]
    text = (tmp_path / EXAMPLE.name).read_text()
    rollout = workload(YAML(typ="safe").load(text)["config"])["rollout"]
    assert rollout["weight"] == 50 and rollout["lastDecision"]["action"] == "advance"
    assert "# written by `make promote`" in text
    assert "chat: advance -> weight 50" in capsys.readouterr().out


# ---- the candidate's size follows its weight (issue 37 review, finding 3) ------------------------------------------
# Argo Rollouts sizes a canary under traffic routing by its weight (argoproj/argo-rollouts utils/replicaset/canary.go
# GetCanaryReplicasOrWeight, trafficWeightToReplicas: ceil(weight * replicas / 100)); the stack derives the
# candidate's replicas the same way, at least 1, and counts it at its largest step in the preflight.


@pytest.mark.parametrize("weight, replicas", [(0, 1), (10, 1), (50, 1), (100, 2)])
def test_the_candidates_replicas_follow_its_weight(weight, replicas):
    cfg = example()
    workload(cfg)["rollout"]["weight"] = weight
    sets = {w.name: w for w in parsed(cfg).workloads}
    assert sets["chat-b"].workload.replicas == replicas and sets["chat"].workload.replicas == 2
    assert releases.candidate_replicas(weight, 2) == replicas
    assert releases.candidate_replicas(51, 4) == 3 and releases.candidate_replicas(1, 8) == 1


def test_a_fixed_candidate_size_too_small_for_a_step_is_refused_naming_the_step():
    cfg = example()
    workload(cfg)["rollout"]["candidate"]["replicas"] = 1
    (found,) = [p for p in problems(cfg) if "step 100" in p]
    assert found.startswith("tpu-serving:workloads[0].rollout: step 100: at weight 100%")
    assert "needs 2 replica(s)" in found and "rollout.candidate.replicas is 1" in found
    workload(cfg)["rollout"]["candidate"]["replicas"] = 2
    assert parsed(cfg).workloads


def test_the_preflight_counts_the_candidate_at_its_largest_step():
    """At weight 10 the candidate runs 1 replica, but the pool must hold 2 + 2 at weight 100: a pool of 3 is
    refused before the candidate is created, naming the candidate's hosts at its largest step."""
    cfg = example()
    cfg["tpu-serving:tpuPools"][0]["autoscaling"]["maxNodes"] = 3
    (found,) = [p for p in problems(cfg) if "rollout.candidate:" in p]
    assert "at its largest step" in found and "'chat-b' 2" in found and "need 4" in found


def test_the_train_cost_counts_the_candidate_at_each_steps_size():
    from stacks.reports import cost

    sets = {w.name: w for w in parsed(example()).workloads}
    rows = cost.release_steps(
        sets["chat"], sets["chat-b"], [10, 50, 100], 300, lambda w: releases.candidate_replicas(w, 2)
    )
    assert [r.candidate_chips for r in rows] == [0, 4, 4, 4, 8, 0]


# ---- a hold or a rollback runs a new gate (issue 37 review, finding 4) ----------------------------------------------
# inference-perf does not overwrite a report already in the bucket (kubernetes-sigs/inference-perf v0.7.0, PyPI wheel
# inference_perf/client/filestorage/gcs.py GoogleCloudStorageClient.save_report: `if blob.exists(): ... Skipping
# upload`), and a Job's pod template cannot change: the gate of a new attempt needs a new Job name and report path.


def _gate(cfg: dict[str, Any]) -> tuple[str, str]:
    candidate = next(w for w in parsed(cfg).workloads if w.release.candidate)
    assert candidate.gate_job_name is not None
    (config_map, job) = candidate.gate_manifests()
    path = json.loads(config_map["data"][benchmark.CONFIG_FILE])["storage"]["google_cloud_storage"]["path"]
    assert job["metadata"]["name"] == candidate.gate_job_name and path.endswith(candidate.gate_job_name)
    return candidate.gate_job_name, path


def test_a_hold_runs_a_new_gate_job_writing_a_new_report_path():
    before = _gate(example())
    _, cfg = written(promote.Decision("hold", 10, "inconclusive"), result("pass.json"))
    assert workload(cfg)["rollout"]["attempt"] == 1 and workload(cfg)["rollout"]["weight"] == 10
    after = _gate(cfg)
    assert after[0] != before[0] and after[1] != before[1]
    workload(cfg)["rollout"]["attempt"] = 2  # a second hold: again a new one
    assert _gate(cfg)[0] not in (before[0], after[0])


def test_a_candidate_proposed_again_after_a_rollback_runs_a_new_gate():
    original = example()
    before = _gate(original)
    _, cfg = written(promote.Decision("rollback", 0, "regressed"), result("regressed.json"))
    assert workload(cfg)["rollout"]["attempt"] == 1
    workload(cfg)["rollout"]["candidate"] = copy.deepcopy(workload(original)["rollout"]["candidate"])
    workload(cfg)["rollout"]["weight"] = 10
    assert _gate(cfg)[0] != before[0]


def test_an_advance_keeps_the_attempt_and_attempt_0_keeps_the_live_jobs_name():
    _, cfg = written(promote.Decision("advance", 50, "passed"), result("pass.json"))
    assert "attempt" not in workload(cfg)["rollout"]
    assert benchmark.job_name("chat", "x", 10, "chat", 0) == benchmark.job_name("chat", "x", 10, "chat")


# ---- `make promote` changes only the rollout's lines (issue 37 review, finding 5) -----------------------------------
# ruamel.yaml's round trip dumps with its own indentation unless told the file's (ruamel.yaml 0.19.1, installed:
# emitter.py Emitter.__init__ best_sequence_indent = 2, best_map_indent = best_sequence_indent; main.py YAML
# sequence_dash_offset = 0), which reindents every list of the examples (sequence 4, offset 2): promote.stack_yaml
# guesses the file's (ruamel.yaml.util.load_yaml_guess_indent).


def _block(lines: list[str], start: int) -> range:
    """The lines of the mapping entry at `start` (those indented deeper than it)."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    return range(start, end)


def _changed(before: str, after: str) -> tuple[set[int], set[int]]:
    import difflib

    old, new = before.splitlines(), after.splitlines()
    removed: set[int] = set()
    added: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            removed.update(range(i1, i2))
            added.update(range(j1, j2))
    return removed, added


def test_every_stack_file_round_trips_unchanged():
    for path in sorted((ROOT / "examples").glob("*/Pulumi.*.yaml")):
        text = path.read_text()
        yaml = promote.stack_yaml(text)
        out = io.StringIO()
        yaml.dump(yaml.load(text), out)
        assert out.getvalue() == text, path


@pytest.mark.parametrize("action, weight", [("advance", 50), ("hold", 10), ("rollback", 0), ("promote", 0)])
def test_promote_changes_only_the_rollouts_lines_on_every_example_with_one(action, weight):
    paths = [p for p in sorted((ROOT / "examples").glob("*/Pulumi.*.yaml")) if "\n      rollout:" in p.read_text()]
    assert paths
    for path in paths:
        text = path.read_text()
        yaml = promote.stack_yaml(text)
        doc = yaml.load(text)
        for entry in doc["config"]["tpu-serving:workloads"]:
            if "rollout" in entry and "candidate" in entry["rollout"]:
                promote.apply(
                    entry, promote.Decision(action, weight, "why"), result("pass.json"), "2026-11-29T10:00:00Z"
                )
        out = io.StringIO()
        yaml.dump(doc, out)
        old, new = text.splitlines(), out.getvalue().splitlines()
        allowed_old = {i for n, line in enumerate(old) if line.strip() == "rollout:" for i in _block(old, n)}
        allowed_new = {i for n, line in enumerate(new) if line.strip() == "rollout:" for i in _block(new, n)}
        removed, added = _changed(text, out.getvalue())
        promoted = {f"{key}:" for key in ("args", "image", "model", "revision", "maxModelLen", "paramsBillion", "pool")}
        if action == "promote":  # the candidate's fields become the workload's: its own keys' blocks change too
            allowed_old |= {
                i for n, line in enumerate(old) if line.strip().split(" ")[0] in promoted for i in _block(old, n)
            }
            allowed_new |= {
                i for n, line in enumerate(new) if line.strip().split(" ")[0] in promoted for i in _block(new, n)
            }
        assert removed <= allowed_old, (path, [old[i] for i in sorted(removed - allowed_old)])
        assert added <= allowed_new, (path, [new[i] for i in sorted(added - allowed_new)])
        assert added, path


# ---- the gate's scenario fits the candidate's context (issue 37 review, finding 6) ---------------------------------
# vLLM refuses a request whose prompt plus max_tokens exceeds --max-model-len with HTTP 400 ("This model's maximum
# context length is N tokens. However, you requested M output tokens ...", vllm-project/vllm's OpenAI server input
# validation), and inference-perf sends the output length as max_tokens with ignore_eos (benchmark.config).


@pytest.mark.parametrize("where", ["workload", "candidate"])
def test_a_scenario_longer_than_max_model_len_is_refused_at_the_gate_scenario(where):
    cfg = example()
    workload(cfg)["rollout"]["gate"]["scenario"] = "long-context"  # up to 3800 + 256 = 4056 tokens
    assert benchmark.SCENARIOS["long-context"].max_tokens() == 4056
    assert parsed(cfg).workloads  # maxModelLen 4096 holds it
    if where == "workload":
        workload(cfg)["maxModelLen"] = 4000
        words = "than the candidate's maxModelLen 4000"
    else:
        workload(cfg)["rollout"]["candidate"]["maxModelLen"] = 2048
        words = "than the candidate's rollout.candidate.maxModelLen 2048"
    (found,) = [p for p in problems(cfg) if "rollout.gate.scenario" in p]
    assert found.startswith("tpu-serving:workloads[0].rollout.gate.scenario: 'long-context' sends up to 3800")
    assert words in found and "chat" in found


def test_every_scenario_fits_the_example():
    for name in benchmark.SCENARIOS:
        cfg = example()
        workload(cfg)["rollout"]["gate"]["scenario"] = name
        assert parsed(cfg).workloads, name


# ---- the candidate's burn-rate alerts say what to do (issue 37 review, finding 7) ------------------------------------


def test_the_candidates_burn_rate_policies_say_it_is_a_candidate_and_to_run_make_promote():
    """Rollback is the operator's (or a scheduled CI job's, .github/workflows/promote.yml) `make promote`, which
    rolls back on a firing fast burn rate: the candidate's policies' documentation (AlertPolicy documentation.content,
    as registered: the golden render) says so; the current release's do not."""
    plans = {w.name: w for w in parsed(example()).alerts_plan.workloads}
    assert plans["chat-b"].burn_command.startswith("make promote STACK=")
    assert "release candidate of chat" in plans["chat-b"].burn_note
    assert "make promote" not in plans["chat"].burn_command and plans["chat"].burn_note == ""
    golden = ROOT / "tests/golden/vllm-canary/gcp"
    for window in ("fast", "slow"):
        candidate = (golden / f"monitoring.AlertPolicy-alerts-chat-b-ttft-{window}-burn.yaml").read_text()
        current = (golden / f"monitoring.AlertPolicy-alerts-chat-ttft-{window}-burn.yaml").read_text()
        assert "release candidate of chat" in candidate and "make promote STACK=<stack>" in candidate
        assert "make promote" not in current


def test_the_candidates_release_label_is_the_same_at_every_step():
    """The dashboard draws one line per release (the gate's `release` label): the candidate's replicas, which follow
    its weight, are not part of it."""
    labels = set()
    for weight in (0, 10, 50, 100):
        cfg = example()
        workload(cfg)["rollout"]["weight"] = weight
        labels.add(next(w for w in parsed(cfg).workloads if w.release.candidate).release_label)
    assert len(labels) == 1


def test_the_release_label_ignores_the_trains_state_and_fields_left_unset():
    """The same release keeps its label when the train's own state moves (a hold's attempt) and when the workload's
    config model gains an optional field left unset (issue 38's `disaggregation` relabelled a running canary)."""
    cfg = example()
    before = next(w for w in parsed(cfg).workloads if w.release.candidate)
    workload(cfg)["rollout"]["attempt"] = 3
    after = next(w for w in parsed(cfg).workloads if w.release.candidate)
    assert after.release_label == before.release_label
    unset = before.workload.model_dump(mode="json", exclude_none=True)
    assert "disaggregation" not in unset  # the field exists, unset
    assert "disaggregation" in before.workload.model_dump(mode="json")
