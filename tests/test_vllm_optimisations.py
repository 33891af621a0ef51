"""Typed serving optimisations of a vLLM workload (issue 38 #4): speculative decoding and the picker's routing mode.

Sources:
- vllm 0.27.0 vllm/config/speculative.py SpeculativeConfig (method: SpeculativeMethod incl. "ngram", "eagle3";
  model; num_speculative_tokens > 0; prompt_lookup_max >= 1) and vllm/engine/arg_utils.py (--speculative-config
  parsed with json.loads); workloads/vllm/serve_flags.json (the pinned parser's oracle).
- vllm-project/tpu-inference@v0.27.0 support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv:
  "Speculative Decoding: Ngram" and "Speculative Decoding: Eagle3" Passing.
- llm-d/llm-d-router@v0.10.0 config/charts/routerlib/values.yaml: latencyPredictor images tagged `latest`;
  `tokenizer` sidecar for the precise prefix producer (pkg/epp/framework/plugins/requestcontrol/dataproducer/README.md).
"""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import reference_file
from tests.test_body_routing import two_models
from tests.test_gateway import parse_config
from tests.test_vllm_lora import problems_of, qwen
from workloads.vllm import flags

NGRAM = {"method": "ngram", "numTokens": 4, "promptLookupMax": 4}
EAGLE = {"method": "eagle3", "numTokens": 3, "draftModel": "some-org/eagle3-qwen3-8b@abc123"}


def _spec_arg(plan) -> dict:
    (arg,) = [a for a in plan.serve_args() if a.startswith("--speculative-config=")]
    assert flags.arg_problem("speculative-config", arg.split("=", 1)[1]) is None
    return json.loads(arg.split("=", 1)[1])


def test_ngram_renders_the_speculative_config_json():
    plan = qwen(parse_config(two_models(speculative=NGRAM)))
    assert _spec_arg(plan) == {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}
    assert plan.local_copies == []


def test_eagle3_stages_its_draft_and_reads_it_from_local_disk():
    plan = qwen(parse_config(two_models(speculative=EAGLE)))
    assert _spec_arg(plan) == {"method": "eagle3", "num_speculative_tokens": 3, "model": "/model-files/draft"}
    assert ("some-org/eagle3-qwen3-8b", "abc123", "models/some-org/eagle3-qwen3-8b/abc123/") in plan.stage_items
    (copy,) = plan.local_copies
    assert copy["dir"] == "/model-files/draft" and copy["require"] == "config.json"
    assert copy["url"] == f"gs://{plan.bucket}/models/some-org/eagle3-qwen3-8b/abc123/"
    assert any(g.prefix == "models/some-org/eagle3-qwen3-8b/abc123/" for g in plan.grants())


def test_bad_speculative_combinations_name_key_value_and_what_is_allowed():
    (typo,) = problems_of(two_models(speculative={**NGRAM, "method": "eagle"}))
    assert typo.startswith("tpu-serving:workloads[0].speculative.method") and "ngram" in typo and "eagle3" in typo
    found = "\n".join(problems_of(two_models(speculative={"method": "eagle3", "numTokens": 2, "promptLookupMax": 3})))
    assert (
        "speculative.draftModel: eagle3 needs" in found
        and "speculative.promptLookupMax: only for method ngram" in found
    )
    found = "\n".join(problems_of(two_models(speculative={**NGRAM, "draftModel": "gs://b/d/"})))
    assert "speculative.draftModel: ngram drafts from the prompt" in found
    found = "\n".join(problems_of(two_models(speculative=NGRAM, args={"speculative_config": "{}"})))
    assert "args: speculative-config is the stack's" in found


def test_speculative_decoding_is_refused_off_the_support_matrix():
    cfg = two_models(speculative=NGRAM)
    for pool in cfg["tpu-serving:tpuPools"]:
        pool.update({"tpu": "v5e", "topology": "2x4", "zone": "us-west4-a"})
    cfg["gcp:region"] = "us-west4"
    (found,) = [p for p in problems_of(cfg) if "speculative" in p]
    assert "speculative.method" in found and "not supported on v5e" in found and "tpu7x, v6e" in found


@pytest.mark.parametrize("mode", ["precise-prefix", "predicted-latency"])
def test_routing_modes_the_pinned_router_cannot_serve_are_refused(mode):
    (found,) = problems_of(two_models(routing=mode))
    assert found.startswith(f"tpu-serving:workloads[0].routing: '{mode}' is refused") and found.endswith(
        "allowed: approximate-prefix"
    )
    (typo,) = problems_of(two_models(routing="precise"))
    assert "routing" in typo and "approximate-prefix" in typo


def test_the_predictor_images_are_unpinned_in_the_pinned_chart():
    values = yaml.safe_load(
        reference_file("charts/llm-d-router-v0.10.0/config/charts/routerlib/values.yaml").read_text()
    )
    predictor = values["latencyPredictor"]
    assert predictor["trainingServer"]["image"]["tag"] == "latest"
    assert predictor["predictionServers"]["image"]["tag"] == "latest"
    assert values["tokenizer"]["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "llm-d-hf-token"
