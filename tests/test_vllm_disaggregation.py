"""Prefill/decode disaggregation of a vLLM workload on TPU (issue 38 #4, first bullet): two server sets, the TPU KV
connector's flags, the routing sidecar in front of the decode servers, the picker's P/D profiles, and its refusals.

Sources:
- vllm-project/tpu-inference@v0.27.0 (../shared/reference/tpu-inference, from .buildkite/kubernetes/manifests/v7x/
  at b8692ff0): single_prefill.yaml / single_decode.yaml --kv-transfer-config {"kv_connector": "TPUConnector",
  "kv_connector_module_path": "tpu_inference.distributed.tpu_connector", "kv_role": kv_producer / kv_consumer};
  tpu_inference/distributed/tpu_connector.py (a producer never pulls: get_num_new_matched_tokens returns 0 when
  is_producer; vLLM's is_kv_producer is kv_producer or kv_both); tpu_inference/distributed/utils.py
  (TPU_KV_TRANSFER_PORT 9100, TPU_SIDE_CHANNEL_PORT 9600, VLLM_HOST_IP); support_matrices/release/{v6e,v7x}/vllm/
  feature_support_matrix.csv "DCN-based P/D disaggregation" Passing. Release covered: these are v0.27.0 sources; the
  pinned engine is tpu-inference 0.32.0 (PyPI wheel), whose tpu_connector.py (is_producer: no pull), distributed/
  utils.py (9100, 9600, VLLM_HOST_IP) say the same; the 0.32.0 wheel ships no support matrices.
- llm-d/llm-d-router@v0.10.0: docs/disaggregation.md (P/D configuration: prefill/decode profiles,
  disagg-profile-handler, prefix-based-pd-decider nonCachedTokens/promptTokens); pkg/epp/framework/plugins/
  scheduling/filter/bylabel/roles.go (llm-d.ai/role, prefill-filter, decode-filter); pkg/sidecar/proxy/options.go
  (defaultPort 8000, defaultVLLMPort 8200, --kv-connector nixlv2); .github/workflows/ci-release.yaml (the sidecar
  image ghcr.io/llm-d/llm-d-router-disagg-sidecar:<tag>).
- llm-d/llm-d guides/pd-disaggregation/README.tpu.md and modelserver/tpu/v6/vllm (v6e 2x4 and v7x, TPUConnector,
  routing sidecar --kv-connector=nixlv2 --secure-serving=false); llm-d/llm-d#2533 (TPUConnectorHMA on vllm-tpu
  0.27.0-0.29.0: stacks/facts/releases.py).
"""

from __future__ import annotations

import copy
import json
import shlex
from typing import Any

import pytest
import yaml

from stacks.facts.versions import IMAGES, LLM_D_ROUTER
from stacks.serving import gateway
from tests.conftest import reference_file, session_run
from tests.test_body_routing import two_models
from tests.test_gateway import parse_config
from tests.test_transitions import example
from tests.test_vllm_lora import problems_of, qwen
from tooling.harness.offline import load_stack_file
from tooling.review import model_routing, transition
from tooling.review.render import stack_name
from workloads.vllm import flags
from workloads.vllm.config import KV_CONNECTORS
from workloads.vllm.manifests import routing_sidecar
from workloads.vllm.plan import KV_ROLES, ROLE_LABEL

PD = {"prefill": {"replicas": 2}, "decode": {"replicas": 1}}


def pd_config(pd: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """One vLLM workload (qwen) on a single-host v6e 2x4 pool of up to 3 nodes, disaggregated."""
    cfg = two_models(disaggregation=copy.deepcopy(pd or PD), **extra)
    cfg["tpu-serving:workloads"] = cfg["tpu-serving:workloads"][:1]
    cfg["tpu-serving:tpuPools"][0]["autoscaling"] = {"minNodes": 0, "maxNodes": 3}
    return cfg


def _servers(plan) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in plan.pod_manifests() if m["kind"] == "Deployment"}


def _container(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in manifest["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def _kv_config(container: dict[str, Any]) -> dict[str, Any]:
    (arg,) = [a for a in container["args"] if a.startswith("--kv-transfer-config=")]
    value = arg.split("=", 1)[1]
    assert flags.arg_problem("kv-transfer-config", value) is None  # a flag of the pinned `vllm serve`, taking JSON
    return json.loads(value)


def _upstream_kv_config(name: str) -> dict[str, Any]:
    """The --kv-transfer-config of tpu-inference's own GKE manifest (a `vllm serve ...` shell line)."""
    text = reference_file(f"tpu-inference/buildkite/kubernetes/manifests/v7x/{name}").read_text()
    deployment = next(d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment")
    line = deployment["spec"]["template"]["spec"]["containers"][0]["args"][0]
    words = shlex.split(line)
    return json.loads(words[words.index("--kv-transfer-config") + 1])


def test_the_kv_transfer_config_is_tpu_inferences_own_for_each_role():
    plan = qwen(parse_config(pd_config()))
    servers = _servers(plan)
    assert set(servers) == {"qwen-decode", "qwen-prefill"}
    ours = {
        "prefill": _kv_config(_container(servers["qwen-prefill"], "vllm-tpu")),
        "decode": _kv_config(_container(servers["qwen-decode"], "vllm-tpu")),
    }
    upstream = {
        "prefill": _upstream_kv_config("single_prefill.yaml"),
        "decode": _upstream_kv_config("single_decode.yaml"),
    }
    assert ours == upstream
    assert {r: c["kv_role"] for r, c in ours.items()} == KV_ROLES == {"prefill": "kv_producer", "decode": "kv_consumer"}
    assert KV_CONNECTORS["TPUConnector"] == upstream["prefill"]["kv_connector_module_path"]


def test_two_deployments_disjoint_selectors_decode_behind_the_routing_sidecar():
    plan = qwen(parse_config(pd_config()))
    prefill, decode = _servers(plan)["qwen-prefill"], _servers(plan)["qwen-decode"]
    assert prefill["spec"]["replicas"] == 2 and decode["spec"]["replicas"] == 1
    sel = {r: d["spec"]["selector"]["matchLabels"] for r, d in (("prefill", prefill), ("decode", decode))}
    assert sel == {"prefill": {"app": "qwen", ROLE_LABEL: "prefill"}, "decode": {"app": "qwen", ROLE_LABEL: "decode"}}
    for role, d in (("prefill", prefill), ("decode", decode)):
        labels = d["spec"]["template"]["metadata"]["labels"]
        # the pool, PodMonitoring and network policies select both roles; the router's filters tell them apart
        assert plan.serving_selector.items() <= labels.items() and labels[ROLE_LABEL] == role
        server = _container(d, "vllm-tpu")
        assert {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in server["env"]
        assert {p["containerPort"] for p in server["ports"]} >= {9100, 9600}
    # the decode server listens where the sidecar forwards (options.go defaultVLLMPort), probed there
    server = _container(decode, "vllm-tpu")
    assert "--port=8200" in server["args"] and server["startupProbe"]["httpGet"]["port"] == 8200
    sidecar = _container(decode, "routing-proxy")
    assert sidecar["image"] == IMAGES["llmDDisaggSidecar"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0"
    assert IMAGES["llmDDisaggSidecar"].endswith(f":{LLM_D_ROUTER.version}")  # released with the picker it serves
    assert sidecar["args"] == [
        "--port=8000",
        "--model-server-port=8200",
        "--kv-connector=nixlv2",
        "--secure-proxy=false",
    ]
    assert sidecar["ports"] == [{"containerPort": 8000, "name": "http"}]
    assert sidecar["securityContext"]["runAsNonRoot"] is True
    assert all(c["name"] != "routing-proxy" for c in prefill["spec"]["template"]["spec"]["containers"])
    assert "--port=8000" in _container(prefill, "vllm-tpu")["args"]
    # the Service reaches the decode servers (through their sidecar) only
    assert plan.service_selector == {**plan.serving_selector, ROLE_LABEL: "decode"}


def test_the_picker_splits_prefill_from_decode_with_the_routers_pd_plugins():
    plan = qwen(parse_config(pd_config(pd={**PD, "nonCachedTokens": 64, "promptTokens": 256})))
    backend = plan.gateway_backend()
    assert backend.disaggregation == (64, 256)
    values = gateway.router_values(backend, {"tpu-serving/role": "system"})
    config = json.loads(values["router"]["epp"]["pluginsCustomConfig"][gateway.EPP_CONFIG_FILE])
    types = {p["type"]: p for p in config["plugins"]}
    assert set(gateway.PD_PLUGINS) <= set(types)
    assert types["prefix-based-pd-decider"]["parameters"] == {"nonCachedTokens": 64, "promptTokens": 256}
    assert types["disagg-profile-handler"]["parameters"] == {
        "profiles": {"prefill": "prefill", "decode": "decode"},
        "deciders": {"prefill": "prefix-based-pd-decider"},
    }
    profiles = {p["name"]: [r["pluginRef"] for r in p["plugins"]] for p in config["schedulingProfiles"]}
    assert profiles["prefill"][:2] == ["prefill-filter", "max-score-picker"]
    assert profiles["decode"][:2] == ["decode-filter", "max-score-picker"]
    assert set(profiles) == {"prefill", "decode"}
    # every profile's references are plugins the config defines
    assert {r for refs in profiles.values() for r in refs} <= set(types)
    # a workload without disaggregation keeps the single default profile
    plain = json.loads(gateway.epp_config())
    assert [p["name"] for p in plain["schedulingProfiles"]] == ["default"]


def test_the_review_shows_the_request_path_and_flags_a_pool_that_cannot_split():
    plan = qwen(parse_config(pd_config()))
    objects = plan.pod_manifests()
    for m in objects:
        m["metadata"].setdefault("namespace", plan.namespace)
    release = {"name": "qwen", "namespace": plan.namespace, "values": gateway.router_values(plan.gateway_backend(), {})}
    (path,) = model_routing.pd_paths(objects, [release])
    assert path.handler and path.sidecars and model_routing.pd_problems([path]) == []
    assert path.prefill == ("`qwen-prefill` (2 replicas, kv_producer)",)
    assert path.decode == ("`qwen-decode` (1 replicas, kv_consumer)",)
    (line,) = [x for x in model_routing.pd_lines([path]) if x.startswith("- ")]
    assert line.index("decode server `qwen-decode`") < line.index("prefill server `qwen-prefill`") < line.index(":9100")
    # the prefill servers gone: the picker would send prefills nowhere
    alone = [m for m in objects if m["metadata"]["name"] != "qwen-prefill"]
    (found,) = model_routing.pd_problems(model_routing.pd_paths(alone, [release]))
    assert "no prefill server" in found


# The routing sidecar's flags and KV protocols at the pinned router, extracted from
# llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/options.go (the `// Flags` const block; supportedKVConnectorNamesStr
# from pkg/sidecar/constants/constants.go). vllm-port is there as the deprecated alias of model-server-port.
SIDECAR_FLAGS = frozenset(
    {
        "port",  # defaultPort "8000"
        "model-server-port",  # defaultVLLMPort "8200"
        "vllm-port",
        "data-parallel-size",
        "kv-connector",  # default nixlv2
        "ec-connector",
        "mooncake-bootstrap-port",
        "p2p-connector-port",
        "enable-p2p-pull",
        "enable-ssrf-protection",
        "enable-prefiller-sampling",
        "enable-tls",
        "tls-insecure-skip-verify",
        "secure-proxy",  # default true
        "cert-path",
        "inference-pool",
        "pool-group",
        "max-idle-conns-per-host",
        "prefill-max-retries",
        "prefill-retry-backoff",
        "decode-chunk-size",
        "configuration",
        "configuration-file",
        "tracing",
        "metrics-port",
    }
)
SIDECAR_KV_CONNECTORS = ("nixlv2", "shared-storage", "sglang", "mooncake", "offloading")


def test_every_sidecar_flag_is_one_the_pinned_sidecar_parses():
    for arg in routing_sidecar(qwen(parse_config(pd_config())))["args"]:
        name, _, value = arg.removeprefix("--").partition("=")
        assert name in SIDECAR_FLAGS and name != "vllm-port", (
            f"{arg}: not a flag of the v0.10.0 sidecar (or deprecated)"
        )
        if name == "kv-connector":
            assert value in SIDECAR_KV_CONNECTORS
    assert "secure-serving" not in SIDECAR_FLAGS  # llm-d's nightly guide flag: unknown to the pinned sidecar


def _problems(cfg: dict[str, Any]) -> str:
    return "\n".join(problems_of(cfg))


def test_bad_combinations_are_refused_naming_key_value_and_what_is_allowed():
    found = _problems(pd_config(replicas=2, autoscaling=None))
    assert "workloads[0].replicas: not with disaggregation: give disaggregation.prefill/decode.replicas" in found
    cfg = pd_config(args={"kv_transfer_config": "{}"})
    assert "workloads[0].args.kv_transfer_config: derived by the stack with `disaggregation` set" in _problems(cfg)
    cfg = pd_config(gateway=False)
    assert "workloads[0].disaggregation: the gateway's endpoint picker chooses" in _problems(cfg)
    typo = _problems(pd_config(pd={**PD, "connector": "NixlConnector"}))
    assert "disaggregation.connector" in typo and "TPUConnector" in typo and "TPUConnectorHMA" in typo
    # more servers than the pool has nodes
    big = _problems(pd_config(pd={"prefill": {"replicas": 3}, "decode": {"replicas": 1}}))
    assert "workloads[0].disaggregation: 4 replicas x 8 chips" in big and "holds at most 24 chips" in big


def test_generations_off_the_support_matrix_and_multi_host_pools_are_refused():
    cfg = pd_config()
    cfg["tpu-serving:tpuPools"][0].update({"tpu": "v5e", "topology": "2x4", "zone": "us-west4-a"})
    cfg["gcp:region"] = "us-west4"
    found = _problems(cfg)
    assert "workloads[0].disaggregation: prefill/decode disaggregation is not supported on v5e" in found
    assert "allowed: a pool of tpu7x, v6e" in found
    cfg = pd_config()
    cfg["tpu-serving:tpuPools"][0].update({"topology": "4x4", "machineType": "ct6e-standard-4t", "slices": 2})
    del cfg["tpu-serving:tpuPools"][0]["autoscaling"]
    cfg["tpu-serving:addons"] = {"lws": {"enabled": True}}
    assert "workloads[0].pool: prefill/decode disaggregation runs each role as single-host" in _problems(cfg)


@pytest.mark.parametrize(("version", "refused"), [("v0.28.0", True), ("v0.30.0", False)])
def test_the_hma_connector_is_refused_on_the_releases_it_breaks_on(version, refused):
    cfg = pd_config(pd={**PD, "connector": "TPUConnectorHMA"}, image=f"docker.io/vllm/vllm-tpu:{version}")
    if not refused:
        assert qwen(parse_config(cfg)).workload.disaggregation.connector == "TPUConnectorHMA"
        return
    (found,) = [p for p in problems_of(cfg) if "pd-disaggregation-hma" in p]
    assert found.startswith("tpu-serving:workloads[0].disaggregation.connector: pd-disaggregation-hma")
    assert f"vllm-tpu:{version}" in found and "llm-d/llm-d/pull/2533" in found
    assert "0.30.0, 0.31.0, 0.32.0" in found  # the releases it is not known to break on


def test_turning_disaggregation_on_and_off_is_a_clean_up_both_ways():
    """The roles' Deployments are new objects (qwen-prefill, qwen-decode) created beside the workload's own, which is
    deleted last: no Deployment changes its selector in place, which the provider would do by replacing it under the
    same name (pulumi/pulumi-kubernetes provider/pkg/provider forceNew: apps/v1 Deployment `.spec.selector`,
    tooling/review/transition.py FORCE_NEW) and the API server refuse while the old one exists."""
    on = pd_config()
    off = copy.deepcopy(on)
    del off["tpu-serving:workloads"][0]["disaggregation"]
    old, new = session_run(off), session_run(on)
    # besides the pool's capacity during the up (next test), nothing collides or is replaced
    for a, b in ((old, new), (new, old)):
        assert [p for p in transition.problems(a, b) if not p.startswith("capacity:")] == []
    assert transition.FORCE_NEW["kubernetes:apps/v1:Deployment"] == ("spec.selector",)


@pytest.mark.parametrize("direction", ["on", "off"])
def test_turning_disaggregation_on_or_off_on_the_example_needs_room_for_both_server_sets(direction):
    """examples/vllm-disaggregated: pool maxNodes 2, one ct6e-standard-8t node (8 chips) per server. Off->on creates
    qwen-prefill and qwen-decode (8 chips each) while the old Deployment qwen (8 chips) runs until it is deleted at
    the end of the up (pulumi/pulumi pkg/resource/deploy: deletes of resources no longer in the program run last);
    on->off creates qwen beside the two roles. Either way 3 nodes at once on a pool of at most 2: the new pods stay
    Pending until the up's timeouts. The transition check refuses it naming the safe procedure; with maxNodes 3 for
    the change it is clean."""
    path = example("vllm-disaggregated")
    on = load_stack_file(path)
    off = copy.deepcopy(on)
    del off["tpu-serving:workloads"][0]["disaggregation"]
    before, after = (off, on) if direction == "on" else (on, off)
    name = stack_name(path)
    (found,) = transition.problems(session_run(before, stack=name), session_run(after, stack=name))
    assert found.startswith("capacity: pool v6e-2x4: during the up its old and new servers run at once")
    assert "= 24 chips (3 nodes of 8), more than its at most 2 nodes hold (16 chips)" in found
    assert "raise the pool's autoscaling.maxNodes to 3" in found and "two ups" in found
    for cfg in (before, after):
        cfg["tpu-serving:tpuPools"][0]["autoscaling"]["maxNodes"] = 3
    assert list(transition.problems(session_run(before, stack=name), session_run(after, stack=name))) == []


# vllm-project/tpu-inference@v0.27.0:support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv: one row per
# feature ("LoRA_Torch", "DCN-based P/D disaggregation", "Speculative Decoding: Eagle3"), none for two together.
LORA = {"name": "qwen-sql", "source": "gs://adapters-bucket/qwen/sql/", "maxRank": 16}
EAGLE = {"method": "eagle3", "numTokens": 3, "draftModel": "some-org/eagle3-qwen3-8b@abc123"}
NGRAM = {"method": "ngram", "numTokens": 4, "promptLookupMax": 4}


@pytest.mark.parametrize(
    ("cfg", "key", "other"),
    [
        (lambda: pd_config(loras=[LORA]), "loras", "disaggregation"),
        (lambda: pd_config(speculative=NGRAM), "speculative", "disaggregation"),
        (lambda: pd_config(speculative=EAGLE), "speculative", "disaggregation"),
        (lambda: two_models(loras=[LORA], speculative=EAGLE), "speculative", "loras"),
    ],
    ids=["pd+loras", "pd+ngram", "pd+eagle3", "loras+eagle3"],
)
def test_combinations_the_support_matrices_do_not_cover_are_refused(cfg, key, other):
    (found,) = [p for p in problems_of(cfg()) if "none together" in p]
    assert found.startswith(f"tpu-serving:workloads[0].{key}: not with tpu-serving:workloads[0].{other}")
    assert "support_matrices/release/{v6e,v7x}/vllm/feature_support_matrix.csv" in found
    assert f"allowed: {other} or {key}, not both" in found


def test_loras_with_ngram_speculation_is_allowed():
    plan = qwen(parse_config(two_models(loras=[LORA], speculative=NGRAM)))
    assert plan.workload.loras and plan.workload.speculative.method == "ngram"
