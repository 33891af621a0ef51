"""LoRA adapters of a vLLM workload (issue 38 #2): flags, staging, local copies, the TPU generation's support
matrix, the engine release table, and adapter names routed to their base model's pool.

Sources:
- vllm 0.27.0 (the pinned image's vLLM; workloads/vllm/serve_flags.json is its parser's oracle): --enable-lora,
  --max-loras, --max-lora-rank (vllm/config/lora.py LoRAConfig, MaxLoRARanks), --lora-modules (cli_args.py
  FrontendArgs.lora_modules: a list, LoRAParserAction `name=path`); runtime loading only with
  VLLM_ALLOW_RUNTIME_LORA_UPDATING (vllm/entrypoints/serve/lora/api_router.py: "should ONLY be used for local
  development").
- vllm-project/tpu-inference@v0.27.0:support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv:
  "LoRA_Torch" CorrectnessTest Passing on both; no release matrix for other generations.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks import naming
from stacks.config import ConfigError
from stacks.facts import releases, versions
from tests.test_body_routing import two_models
from tests.test_gateway import parse_config
from tooling.review import model_routing, summary
from workloads.vllm import flags, lora
from workloads.vllm.config import LORA_RANKS

SQL = {"name": "qwen-sql", "source": "gs://adapters-bucket/qwen/sql/", "maxRank": 16}
HF = {"name": "qwen-chat", "source": "some-org/qwen3-8b-chat-lora@0123abcd", "maxRank": 64}
MIRROR = Path("/work/.mirror/vllm-project+tpu-inference/repo")


def problems_of(cfg: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(copy.deepcopy(cfg))
    return [str(p) for p in err.value.problems]


def qwen(cfg):
    return next(w for w in cfg.workloads if w.name == "qwen")


def test_every_lora_flag_the_stack_renders_is_one_the_pinned_vllm_parses():
    kinds = flags.serve_flags()["flags"]
    assert kinds["enable-lora"] == "boolean"  # --enable-lora renders from true
    assert kinds["max-loras"] == kinds["max-lora-rank"] == kinds["lora-modules"] == "value"
    assert 16 in LORA_RANKS and 2 not in LORA_RANKS  # vllm/config/lora.py MaxLoRARanks


def test_adapters_are_served_from_local_copies_with_the_lora_flags():
    cfg = parse_config(two_models(loras=[SQL, HF]))
    plan = qwen(cfg)
    args = plan.serve_args()
    assert ["--enable-lora", "--max-loras=2", "--max-lora-rank=64"] == [
        a for a in args if a.startswith(("--enable-lora", "--max-lora"))
    ]
    i = args.index("--lora-modules")
    assert args[i + 1 :] == ["qwen-sql=/model-files/lora/0", "qwen-chat=/model-files/lora/1"]
    # every flag-shaped argument is one vLLM parses (the oracle)
    for a in args:
        if a.startswith("--"):
            name, _, value = a[2:].partition("=")
            assert flags.arg_problem(name, value if value else True) is None or name == "lora-modules", a
    assert flags.arg_problem("lora-modules", "qwen-sql=/model-files/lora/0") is None
    (server,) = [m for m in plan.pod_manifests() if m["kind"] == "Deployment"]
    pull = next(c for c in server["spec"]["template"]["spec"]["initContainers"] if c["name"] == "model-files-pull")
    copies = json.loads(pull["env"][0]["value"])
    assert copies == [
        {
            "name": "adapter qwen-sql",
            "url": "gs://adapters-bucket/qwen/sql/",
            "dir": "/model-files/lora/0",
            "require": "adapter_config.json",
        },
        {
            "name": "adapter qwen-chat",
            "url": f"gs://{plan.bucket}/models/some-org/qwen3-8b-chat-lora/0123abcd/",
            "dir": "/model-files/lora/1",
            "require": "adapter_config.json",
        },
    ]
    mounts = server["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "model-files", "mountPath": "/model-files"} in mounts
    # read-only on the adapters: the other bucket (grantModelRead) and the staged prefix of the stack bucket
    grants = {(g.bucket, g.role, g.prefix) for g in plan.grants()}
    assert ("adapters-bucket", "roles/storage.objectViewer", None) in grants
    assert any(b == plan.bucket and p == "models/some-org/qwen3-8b-chat-lora/0123abcd/" for b, _, p in grants)


def test_a_hugging_face_adapter_is_staged_by_the_weights_job():
    plan = qwen(parse_config(two_models(loras=[HF])))
    job = next(m for m in plan.pod_manifests() if m["kind"] == "Job")
    items = json.loads(
        next(e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "ITEMS")
    )
    assert items == [
        {"repo": "Qwen/Qwen3-8B", "revision": "main", "prefix": "models/Qwen/Qwen3-8B/main/"},
        {
            "repo": "some-org/qwen3-8b-chat-lora",
            "revision": "0123abcd",
            "prefix": "models/some-org/qwen3-8b-chat-lora/0123abcd/",
        },
    ]
    assert [g.prefix for g in plan.stage_grants()] == [i["prefix"] for i in items]
    # a workload without Hugging Face adapters keeps its Job's name (no new staging run for an unchanged model)
    plain = qwen(parse_config(two_models()))
    assert plain.stage_job_name.endswith(naming.short_hash("Qwen/Qwen3-8B@main", 8))
    assert plan.stage_job_name != plain.stage_job_name


def test_adapter_names_reach_their_base_models_pool(run):
    rec = run(two_models(loras=[SQL]))
    found = {r.name: r for r in summary.model_routes(rec)}
    assert model_routing.problems(list(found.values())) == []
    assert found["qwen-sql"].pools == ("qwen/qwen",) and found["qwen-sql"].header == "Qwen/Qwen3-8B"
    assert found["google/gemma-3-12b-it"].pools == ("gemma/gemma",)


def test_an_adapter_named_like_another_workloads_model_is_refused():
    found = problems_of(two_models(loras=[{**SQL, "name": "google/gemma-3-12b-it"}]))
    assert any("'google/gemma-3-12b-it'" in p and "workloads[1]" in p for p in found)


def test_bad_sources_ranks_and_duplicate_names_are_refused():
    (rank,) = problems_of(two_models(loras=[{**SQL, "maxRank": 12}]))
    assert rank.startswith("tpu-serving:workloads[0].loras[0].maxRank: 12") and "16, 32, 64" in rank
    text = "\n".join(
        problems_of(two_models(loras=[{**SQL, "source": "qwen/sql"}, SQL, {**SQL, "name": "b", "source": "s3://x/y"}]))
    )
    assert "loras[0].source" in text and "<org>/<name>@<revision>" in text
    assert "loras[1].name" in text and "'qwen-sql' is loras[0]'s name too" in text
    assert "loras[2].source" in text


def test_lora_is_refused_where_the_support_matrix_does_not_pass_it():
    cfg = two_models(loras=[SQL])
    for pool in cfg["tpu-serving:tpuPools"]:
        pool.update({"tpu": "v5e", "topology": "2x4", "zone": "us-west4-a"})
    cfg["gcp:region"] = "us-west4"
    (found,) = [p for p in problems_of(cfg) if ".loras:" in p or ".loras " in p or p.endswith("loras")] or [
        p for p in problems_of(cfg) if "LoRA" in p
    ]
    assert "not supported on v5e" in found and "support_matrices/release" in found
    assert found.endswith("allowed: a pool of tpu7x, v6e")


def test_lora_is_refused_on_an_engine_release_that_breaks_it(monkeypatch):
    # the release table's hook (stacks/facts/releases.py broken_features), with a breakage a release could carry
    broken = releases.Breakage("lora", "adapters fail to load", "https://example.invalid/issue")
    monkeypatch.setattr(releases, "broken_features", lambda engine, version: {"lora": broken})
    (found,) = [p for p in problems_of(two_models(loras=[SQL])) if "LoRA" in p]
    pinned = versions.IMAGES["vllmTpu"].rsplit(":v", 1)[1]  # the release the workload runs: the matrix's pin
    assert f"vllm-tpu {pinned}" in found and "adapters fail to load" in found


@pytest.mark.skipif(
    not MIRROR.is_dir(), reason=f"no tpu-inference clone at {MIRROR} (fetch vllm-project/tpu-inference)"
)
def test_the_support_matrix_table_is_the_upstream_csv():
    import csv
    import io

    for generation, folder in lora.MATRIX_DIRS.items():
        text = subprocess.run(
            [
                "git",
                "-C",
                str(MIRROR),
                "show",
                f"v0.27.0:support_matrices/release/{folder}/vllm/feature_support_matrix.csv",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = {r["Feature"]: r["CorrectnessTest"].split()[-1] for r in csv.DictReader(io.StringIO(text))}
        for feature, status in lora.TPU_FEATURES[generation].items():
            assert rows[feature] == status, (generation, feature)


# llm-d/llm-d-router@v0.10.0:pkg/epp/framework/plugins/scheduling/scorer/loraaffinity/lora_affinity.go:29
# (LoraAffinityScorerType = "lora-affinity-scorer"; LoraAffinityScorerFactory ignores its parameters decoder), fed by
# the core-metrics-extractor's active/waiting adapter sets from vllm:lora_requests_info
# (pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go:95, plugin type "core-metrics-extractor").
UPSTREAM_LORA_SCORER = "lora-affinity-scorer"


def test_a_pool_serving_adapters_scores_adapter_affinity_and_the_review_shows_it(run):
    rec = run(two_models(loras=[SQL]))
    releases = summary._releases(rec)
    picker = {r["name"]: model_routing._picker_config(r["values"]) for r in releases if r["values"].get("router")}
    qwen_cfg, gemma_cfg = picker["qwen"], picker["gemma"]
    # the plugin is declared without parameters (the factory reads none) beside the extractor that feeds it
    assert {"type": UPSTREAM_LORA_SCORER} in qwen_cfg["plugins"]
    assert {"type": "core-metrics-extractor"} in qwen_cfg["plugins"]
    (default,) = qwen_cfg["schedulingProfiles"]
    assert {"pluginRef": UPSTREAM_LORA_SCORER, "weight": 1} in default["plugins"]
    # a pool no adapter reaches keeps the chart's three scorers
    assert all(p["type"] != UPSTREAM_LORA_SCORER for p in gemma_cfg["plugins"])
    section = "\n".join(summary.model_routing_lines(rec))
    assert "- `qwen/qwen`: `queue-scorer` (weight 2)" in section and f"`{UPSTREAM_LORA_SCORER}` (weight 1)" in section
    assert model_routing.lora_problems(summary.model_routes(rec), summary.pool_scorers(rec)) == []


def test_a_pool_adapters_reach_without_the_affinity_scorer_is_a_finding(run):
    rec = run(two_models(loras=[SQL]))
    scorers = summary.pool_scorers(rec)
    scorers["qwen/qwen"].pop(UPSTREAM_LORA_SCORER)
    (found,) = model_routing.lora_problems(summary.model_routes(rec), scorers)
    assert found == f"pool qwen/qwen: adapters reach it, but its picker runs no {UPSTREAM_LORA_SCORER}"


def _server_env(manifest: dict[str, Any]) -> dict[str, Any]:
    tpl = manifest["spec"]
    if manifest["kind"] == "LeaderWorkerSet":
        tpl = tpl["leaderWorkerTemplate"]["leaderTemplate"] or tpl["leaderWorkerTemplate"]["workerTemplate"]
    else:
        tpl = tpl["template"]
    (server,) = [c for c in tpl["spec"]["containers"] if c["name"] == "vllm"] or tpl["spec"]["containers"][:1]
    return {e["name"]: e.get("value") for e in server.get("env") or []}


def test_every_vllm_server_with_adapters_runs_the_vllm_model_implementation(run):
    """LoRA on TPU runs on tpu-inference's vLLM (torch) model path only: upstream's LoRA tests set
    MODEL_IMPL_TYPE=vllm (vllm-project/tpu-inference@v0.27.0:.buildkite/features/LoRA_Torch.yml:24,
    .buildkite/pipeline_jax.yml:202,211,295 — v0.27.0 sources); in the pinned tpu-inference 0.32.0 wheel the JAX
    loader sets lora_manager None (tpu_inference/models/common/model_loader.py:541) and "auto" picks JAX for
    Llama/Qwen2. Every vLLM server manifest of a workload with loras carries it; one without loras does not."""
    cfg = parse_config(two_models(loras=[SQL]))
    servers = [
        (w.name, m)
        for w in cfg.workloads
        if w.workload.type == "vllm"
        for m in w.pod_manifests()
        if m["kind"] in ("Deployment", "LeaderWorkerSet")
    ]
    assert {n for n, _ in servers} == {"qwen", "gemma"}
    for name, m in servers:
        assert (_server_env(m).get("MODEL_IMPL_TYPE") == "vllm") == (name == "qwen"), (name, m["metadata"]["name"])


def test_every_rendered_server_serving_adapters_runs_the_vllm_model_implementation():
    """The same rule over every example's rendered servers (tests/golden): a container with --enable-lora has
    MODEL_IMPL_TYPE=vllm."""
    seen = 0
    for path in sorted(Path(__file__).parent.joinpath("golden").glob("*/k8s/*/*.yaml")):
        doc = yaml.safe_load(path.read_text())
        spec = doc.get("inputs", doc).get("spec") or {}
        templates = [spec.get("template")] + [
            (spec.get("leaderWorkerTemplate") or {}).get(k) for k in ("leaderTemplate", "workerTemplate")
        ]
        for tpl in filter(None, templates):
            for c in (tpl.get("spec") or {}).get("containers") or []:
                if "--enable-lora" in (c.get("args") or []) + (c.get("command") or []):
                    seen += 1
                    env = {e["name"]: e.get("value") for e in c.get("env") or []}
                    assert env.get("MODEL_IMPL_TYPE") == "vllm", path
    assert seen, "an example serves LoRA adapters (multi-model-endpoint)"


def test_runtime_adapter_loading_stays_off_so_an_adapter_change_is_a_new_pod_template():
    """vllm 0.27.0 vllm/entrypoints/serve/lora/api_router.py: /v1/load_lora_adapter only with
    VLLM_ALLOW_RUNTIME_LORA_UPDATING, "should ONLY be used for local development" and unauthenticated behind the
    gateway: never set; an added adapter changes the server's pod template (its args), so the replicas roll
    (docs/workloads/vllm.md, LoRA adapters)."""
    one, two = (qwen(parse_config(two_models(loras=loras))) for loras in ([SQL], [SQL, HF]))
    (a,) = [m for m in one.pod_manifests() if m["kind"] == "Deployment"]
    (b,) = [m for m in two.pod_manifests() if m["kind"] == "Deployment"]
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in _server_env(a) | _server_env(b)
    assert a["spec"]["template"] != b["spec"]["template"]
