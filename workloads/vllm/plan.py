"""vLLM on TPU (the pinned `vllm/vllm-tpu` image): the plan's values (its rules are in checks.py, its objects in manifests.py).

A single-host pool runs a Deployment, one pod per node taking all its chips (the GKE `serve-vllm-tpu` tutorial).
A multi-host pool runs a LeaderWorkerSet, one group per slice: the leader starts the Ray head and the
OpenAI-compatible server, the workers join Ray at `LWS_LEADER_ADDRESS`, and a failed pod recreates the whole group
(the LeaderWorkerSet vLLM/TPU example). Everything about the slice (tensor-parallel size, node selectors,
`google.com/tpu`, group size) comes from the pool and the catalog; the image's facts from its record in `versions.IMAGE_RECORDS`.

Weights: a Hugging Face id is staged once into the stack bucket, under models/<id>/<revision>/, by a Job on the
system pool (with the stack's `hfToken` secret when set; it skips when the prefix's completion marker exists), and
`pulumi up` registers the server after that Job completes. Every replica then streams the weights from gs:// with
Run:ai's model streamer, as the workload's own identity (read-only on that prefix), with the tokenizer and config
from the same copy and `HF_HUB_OFFLINE=1`: no replica calls the Hub. A gs:// path streams the same way.

Compilation: the persistent XLA cache (`VLLM_XLA_CACHE_PATH`) is a local emptyDir, filled before the server starts
from the stack bucket's compile-cache/<workload>/<image tag>/<slice>/ and written back from the serving pod (the
leader of a multi-host group) only, so no two hosts write one prefix.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.facts.versions import IMAGES, Serves
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring.metrics import HpaMetric
from stacks.security import network_policy
from stacks.security.bucket_access import OBJECT_USER, Grant, gcs_location, read_grant
from stacks.serving import benchmark
from stacks.serving.gateway import GatewayBackend
from stacks.serving.startup import StartupPath, compile_cache_grant_prefix, startup_probe
from stacks.serving.workload_plan import (
    TPU_HOST_SHARE,
    ServingSignals,
    WorkloadPlan,
)
from workloads.vllm import lora as lora_rules
from workloads.vllm import optimisations
from workloads.vllm.compile_cache import CACHE_PULL_WORKERS
from workloads.vllm.config import KV_CONNECTORS, VllmWorkload
from workloads.vllm.metrics import KV_CACHE_METRIC, VLLM_METRICS, VLLM_SIGNALS, vllm_panels

HTTP_PORT = 8000  # vLLM's default --port, the tutorial's
HEALTH_PATH = "/health"  # vllm 0.32.0 vllm/entrypoints/serve/instrumentator/health.py
METRICS_PATH = "/metrics"  # vllm 0.32.0 vllm/entrypoints/serve/instrumentator/metrics.py
API_PATHS = ("/v1/completions", "/v1/chat/completions")  # the outputs' curl commands
# The Inference Gateway router's name for vLLM servers (`router.modelServers.type`, llm-d/llm-d-router@v0.10.0:
# config/charts/README.md; routerlib templates/_config.yaml reads vLLM's metrics for it).
ROUTER_TYPE = "vllm"
# inference-perf's name for a vLLM server (kubernetes-sigs/inference-perf v0.7.0
# inference_perf/config/client/modelserver/config.py ModelServerType.VLLM), the gate's benchmark config
BENCHMARK_SERVER_TYPE = "vllm"
CONTAINER = "vllm-tpu"
DEFAULT_IMAGE = "vllmTpu"  # the version-matrix image `image` defaults to (stacks/facts/versions.py IMAGES)
TPU_IMAGES = (DEFAULT_IMAGE,)  # the type serves the generations its default image serves
HF_TOKEN_KEY = "hf_token"  # key in the workload's token Secret
# vllm 0.32.0 examples/ray_serving/multi-node-serving.sh, at this path in the image (tpu-inference@v0.27.0
# docker/Dockerfile: WORKDIR /workspace/vllm; git clone vLLM .; no later Dockerfile is public: a deploy confirms it)
RAY_SCRIPT = "/workspace/vllm/examples/ray_serving/multi-node-serving.sh"
RAY_PORT = 6379
MODELS_PREFIX = "models/"  # the stack bucket's prefix of staged Hugging Face models: models/<id>/<revision>/
# Run:ai streamer concurrency (OS threads reading tensors, and object-store clients, per host: vllm 0.32.0
# docs/models/extensions/runai_model_streamer.md, its tunable parameters) is one per vCPU the server requests, at
# least the 16 of that page's example (an assumption: reads are network-bound and each thread holds one request in
# flight; a real deploy calibrates it).
STREAM_CONCURRENCY_MIN = 16
# The cold case the startup probe allows before it restarts the server: the hour the earlier probe allowed
# (failureThreshold 360 x periodSeconds 10), which covered a hub download and a full compile; weights are now staged
# before the server starts, so it is compile from scratch with margin (stacks/serving/startup.py startup_probe).
COLD_START_S = 3600
# ---- prefill/decode disaggregation (`disaggregation`, workloads/vllm/config.py) --------------------------------------
# The pod label the router's prefill-filter and decode-filter select by, and its values
# (llm-d/llm-d-router@v0.10.0:pkg/epp/framework/plugins/scheduling/filter/bylabel/roles.go RoleLabel, RolePrefill,
# RoleDecode).
ROLE_LABEL = "llm-d.ai/role"
PD_ROLES = ("prefill", "decode")
# Each role's kv_role in --kv-transfer-config. vLLM's KVTransferConfig.is_kv_producer is kv_producer or kv_both, and
# tpu-inference's TPUConnector pulls a prefill's KV cache only on a server that is not a producer
# (vllm-project/tpu-inference@v0.27.0:tpu_inference/distributed/tpu_connector.py get_num_new_matched_tokens:
# `if self.is_producer ...: return 0, False`; the same in the pinned engine's 0.32.0 wheel), so the decode servers are kv_consumer, as tpu-inference's own GKE
# manifests set them (.buildkite/kubernetes/manifests/v7x/single_decode.yaml); llm-d's TPU guide's kv_both decode
# would never pull.
KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
# The decode pod's routing sidecar listens on vLLM's usual port (the Service's and InferencePool's target) and
# forwards to the decode server on its default model-server port (llm-d/llm-d-router@v0.10.0:
# pkg/sidecar/proxy/options.go defaultPort "8000", defaultVLLMPort "8200"; llm-d/llm-d guides/pd-disaggregation
# modelserver/tpu/v6/vllm/patch-decode.yaml --port=8200); every other path (/health, /metrics, /v1/models) is
# proxied to it unchanged (pkg/sidecar/proxy/proxy.go: mux.Handle("/", s.decoderProxy)).
DECODE_SERVER_PORT = 8200
SIDECAR_CONTAINER = "routing-proxy"
# The TPU connector's ports on every server of both roles: the KV transfer server and the ZMQ side channel
# (vllm-project/tpu-inference@v0.27.0:tpu_inference/distributed/utils.py get_kv_transfer_port TPU_KV_TRANSFER_PORT
# default 9100, get_side_channel_port TPU_SIDE_CHANNEL_PORT default 9600), on the address VLLM_HOST_IP gives
# (utils.py get_host_ip: "Use `VLLM_HOST_IP` if set"): the pod's IP.
KV_TRANSFER_PORT = 9100
KV_SIDE_CHANNEL_PORT = 9600
SIZE_RE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)[bB](?![a-zA-Z0-9])")


def normalize_flag(name: str) -> str:
    """`--max_num_seqs` and `max-num-seqs` name the same flag (vLLM's argument parser accepts both spellings)."""
    return name.lstrip("-").replace("_", "-")


def is_gcs(model: str) -> bool:
    return model.startswith("gs://")


def params_billion(workload: VllmWorkload) -> float | None:
    """The model's size: `paramsBillion`, else the largest NNB in its name (Llama-3.1-70B -> 70). A mixture of
    experts names its total and then its active parameters (Qwen3-30B-A3B, Qwen3-235B-A22B): every expert sits in
    HBM and is read at start, so the total, the largest figure, is the size the HBM check and the weights count."""
    if workload.params_billion:
        return workload.params_billion
    found = SIZE_RE.findall(workload.model.rsplit("/", 1)[-1])
    return max(map(float, found)) if found else None


@dataclass(frozen=True)
class VllmPlan(WorkloadPlan):
    workload: VllmWorkload
    adapter: str = metrics_adapters.DEFAULT
    hf_token: bool = False  # the stack has a secret tpu-serving:hfToken
    cluster: str = ""  # the GKE cluster's name (the stackdriver adapter's TPU selector)

    @property
    def multi_host(self) -> bool:
        return self.shape.multi_host

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    @property
    def leader_labels(self) -> dict[str, str]:
        """The labels of the pods that serve HTTP: a LeaderWorkerSet's leader pod template, and a single-host
        Deployment's pod template too (its one pod is its replica's leader); simple keys, as a custom-metric selector
        takes them. A LeaderWorkerSet's workers carry `role: worker` instead."""
        return {**self.labels, "role": "leader"}

    @property
    def serving_selector(self) -> dict[str, str]:
        """Labels of the pods that serve HTTP, for the Service, PodMonitoring, NetworkPolicies and InferencePool:
        the same on a single-host pool (the Deployment's pods) and a multi-host one (the LeaderWorkerSet's leaders,
        never its Ray workers), so a workload moved between the two keeps every selector, and the old server's pods,
        which carry it too, serve until `pulumi up` deletes that server, last (docs/workloads/vllm.md)."""
        return dict(self.leader_labels)

    @property
    def service_name(self) -> str:
        """The workload's Service: the workload's name on every pool, so a move between a single-host and a
        multi-host pool keeps it (and every client's URL). Its LeaderWorkerSet asks for one headless Service per
        group (LWS_SUBDOMAIN_POLICY, manifests.leader_worker_set), so LWS makes none named after the
        LeaderWorkerSet, which this Service would meet (tests/test_lws_headless_service.py)."""
        return self.name

    def ingress_allows(self) -> list[dict[str, Any]]:
        """The Service's clients to the OpenAI-compatible port, and Managed Prometheus to `/metrics`, which vLLM
        serves on that same port (HTTP_PORT, METRICS_PATH above): serving pods only (the leaders on a multi-host
        pool); multi-host workers reach their leader through the namespace's own allow-same-namespace rule."""
        return [
            network_policy.allow_clients(self.name, self.namespace, self.serving_selector, [HTTP_PORT]),
            network_policy.allow_metrics(self.name, self.namespace, self.serving_selector, HTTP_PORT),
        ]

    def gateway_backend(self) -> GatewayBackend | None:
        """What the Inference Gateway routes to: the serving pods (leaders only on a multi-host pool, where the
        Ray head runs the server) on vLLM's port, under the model name clients send; None when opted out."""
        if not self.workload.gateway:
            return None
        pod, container = serving_container(self)
        pd = self.workload.disaggregation
        return GatewayBackend(
            self.name,
            self.namespace,
            self.serving_selector,
            HTTP_PORT,
            served_model_name(self),
            exec_in=f"kubectl -n {self.namespace} exec {pod} -c {container}",
            model_server_type=ROUTER_TYPE,
            kv_cache_metric=KV_CACHE_METRIC,
            adapters=tuple(lora.name for lora in self.workload.loras),
            objectives=tuple((o.name, o.priority) for o in self.workload.objectives),
            disaggregation=(pd.non_cached_tokens, pd.prompt_tokens) if pd is not None else None,
        )

    @property
    def release_label(self) -> str:
        """Its image's tag before the config's hash: `v0.32.0-1a2b3c4d` (the image's digest, if pinned by one, is
        left out: the hash tells releases of one tag apart)."""
        tag = self.image.split("@")[0].rsplit("/", 1)[-1].partition(":")[2] or "latest"
        return f"{tag}-{super().release_label}"

    def benchmark_target(self) -> benchmark.Target:
        """The gate benchmarks this set's own Service (not the route, whose weights split between the sets), with
        the tokenizer of the model it serves and, for a gated model, the stack's token."""
        return benchmark.Target(
            base_url=f"http://{self.service_name}.{self.namespace}.svc:{self.workload.service.port}",
            health_path=HEALTH_PATH,
            server_type=BENCHMARK_SERVER_TYPE,
            model=served_model_name(self),
            tokenizer=self.workload.model if self.staged else None,
            token_secret=(self.token_secret_name, HF_TOKEN_KEY) if self.uses_token else None,
        )

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (self.workload.service.port,)

    @property
    def disaggregated(self) -> bool:
        return self.workload.disaggregation is not None

    @property
    def roles(self) -> tuple[str | None, ...]:
        """The server sets it runs: prefill and decode when disaggregated, else one (None)."""
        return PD_ROLES if self.disaggregated else (None,)

    def role_replicas(self, role: str | None) -> int:
        pd = self.workload.disaggregation
        if pd is not None and role in PD_ROLES:
            return int(getattr(pd, role).replicas)
        return self.workload.replicas

    def role_labels(self, role: str | None) -> dict[str, str]:
        """The pod labels of a role's servers: the serving labels (so the InferencePool, PodMonitoring and network
        policies cover both roles) and the router's role label."""
        return {**self.leader_labels, ROLE_LABEL: role} if role else self.leader_labels

    def role_selector(self, role: str | None) -> dict[str, str]:
        """A role's Deployment selector: disjoint between the two roles' Deployments."""
        return {**self.labels, ROLE_LABEL: role} if role else self.labels

    def role_name(self, role: str | None) -> str:
        """A role's Deployment: <name>-prefill, <name>-decode (the Service keeps the workload's name). Not the
        workload's own Deployment: its selector would change, and the provider replaces a Deployment whose selector
        changes (tooling/review/transition.py FORCE_NEW) under the same name, which the API server refuses while the
        old one exists; under new names the two roles start beside the old servers, which `pulumi up` deletes last."""
        return f"{self.name}-{role}" if role else self.name

    def server_port(self, role: str | None) -> int:
        """The port vLLM listens on: behind the routing sidecar on a decode server, else HTTP_PORT."""
        return DECODE_SERVER_PORT if role == "decode" else HTTP_PORT

    @property
    def sidecar_image(self) -> str:
        """The decode servers' routing sidecar (workloads/vllm/manifests.py routing_sidecar), as its pods pull it."""
        return self.served(IMAGES["llmDDisaggSidecar"])

    @property
    def service_selector(self) -> dict[str, str]:
        """The Service's pods: the decode servers when disaggregated (a request there without a prefill choice is
        served whole by the decode server, through its sidecar), else the serving pods."""
        return self.role_labels("decode") if self.disaggregated else self.serving_selector

    @property
    def most_replicas(self) -> int:
        auto = self.workload.autoscaling
        if self.disaggregated:
            return sum(self.role_replicas(r) for r in PD_ROLES)
        return auto.max_replicas if auto is not None else self.workload.replicas

    @property
    def hosts_needed(self) -> int:
        """One replica is one node (single-host pool) or one whole slice (multi-host pool)."""
        return self.most_replicas * self.shape.hosts

    @property
    def rollout_hosts(self) -> int:
        """A surge replica: one more node, or one more whole slice."""
        return self.shape.hosts

    @property
    def hpa_metrics(self) -> dict[str, HpaMetric]:
        return VLLM_METRICS

    def dashboard_panels(self, cluster: str) -> list[tuple[str, str, str]]:
        return vllm_panels(cluster)

    @property
    def weights_bytes(self) -> int | None:
        """The model's size (params_billion) at 16 bits, as the HBM check counts it."""
        size = params_billion(self.workload)
        return catalog.weight_bytes(size, 16) if size else None

    @property
    def signals(self) -> ServingSignals:
        return VLLM_SIGNALS

    @property
    def chips_per_replica(self) -> int:
        """A replica takes one node's TPU request (single-host pool) or one whole slice (multi-host pool)."""
        return self.shape.chips if self.multi_host else self.shape.tpu_request

    @property
    def chips_at_peak(self) -> int:
        return self.most_replicas * self.chips_per_replica

    @property
    def autoscaled(self) -> bool:
        return self.workload.autoscaling is not None and not self.paused

    @property
    def image(self) -> str:
        return self.workload.image or self.served(IMAGES[DEFAULT_IMAGE])

    def needs(self) -> Serves:
        """What the stack asks of the image: its probes, scrape and API paths, the HPA's server series, the
        pool's TPU generation."""
        auto = self.workload.autoscaling
        series = {
            VLLM_METRICS[m.name].series
            for m in (auto.metrics if auto is not None else [])
            if m.name in VLLM_METRICS and VLLM_METRICS[m.name].origin == "server"
        }
        return Serves(
            endpoints=frozenset({HEALTH_PATH, METRICS_PATH, *API_PATHS}),
            metrics=frozenset(series),
            tpus=frozenset({self.shape.generation.name}),
        )

    @property
    def staged(self) -> bool:
        """The model is a Hugging Face id, staged into the stack bucket by a Job before any replica starts."""
        return not is_gcs(self.workload.model)

    @property
    def uses_token(self) -> bool:
        """The staging Job reads the Hub with the stack's token (the server never calls the Hub)."""
        return self.hf_token and bool(self.stage_items)

    @property
    def token_secret_name(self) -> str:
        return f"{self.name}-hf-token"

    @property
    def staged_prefix(self) -> str:
        """The stack bucket prefix of the staged copy: keyed by model and revision, shared by every workload and
        stack run that serves the same ones."""
        return f"{MODELS_PREFIX}{self.workload.model}/{self.workload.revision}/"

    @property
    def weights_url(self) -> str:
        """The gs:// directory every replica streams its weights, config and tokenizer from."""
        return f"gs://{self.bucket}/{self.staged_prefix}" if self.staged else self.workload.model

    @property
    def stage_items(self) -> list[tuple[str, str, str]]:
        """What the staging Job copies from the Hub into the stack bucket: (repo, revision, prefix) of the model
        (a Hugging Face id) and of each Hugging Face adapter, each under models/<id>/<revision>/."""
        items = [(self.workload.model, self.workload.revision, self.staged_prefix)] if self.staged else []
        for source in self._extra_sources():
            src = lora_rules.parse_source(source)
            if src is not None and src.repo and src.revision:
                item = (src.repo, src.revision, f"{MODELS_PREFIX}{src.repo}/{src.revision}/")
                items += [item] if item not in items else []
        return items

    def _extra_sources(self) -> list[str]:
        """The sources of the adapters and the speculative draft model, in that order."""
        spec = self.workload.speculative
        draft = [spec.draft_model] if spec is not None and spec.draft_model else []
        return [lora.source for lora in self.workload.loras] + draft

    def _url(self, source: str) -> str | None:
        src = lora_rules.parse_source(source)
        if src is None:
            return None
        return src.url or f"gs://{self.bucket}/{MODELS_PREFIX}{src.repo}/{src.revision}/"

    @property
    def draft_dir(self) -> str | None:
        """Where the server reads the speculative draft model from (a local copy), if it has one."""
        spec = self.workload.speculative
        return lora_rules.DRAFT_DIR if spec is not None and spec.draft_model else None

    @property
    def local_copies(self) -> list[dict[str, str]]:
        """What the pull init container copies from gs:// to the local disk before the server starts: each LoRA
        adapter, then the draft model; with the file that must be there (workloads/vllm/lora.py PULL_SCRIPT)."""
        out = [
            {"name": f"adapter {name}", "url": url, "dir": local, "require": "adapter_config.json"}
            for name, url, local in self.adapters
        ]
        spec = self.workload.speculative
        url = self._url(spec.draft_model) if spec is not None and spec.draft_model else None
        if url and self.draft_dir:
            out.append({"name": "draft model", "url": url, "dir": self.draft_dir, "require": "config.json"})
        return out

    @property
    def adapters(self) -> list[tuple[str, str, str]]:
        """(name, gs:// url, local directory) of each LoRA adapter, in `loras` order."""
        out = []
        for i, lora in enumerate(self.workload.loras):
            url = self._url(lora.source)
            if url is not None:
                out.append((lora.name, url, f"{lora_rules.LORA_DIR}/{i}"))
        return out

    @property
    def stage_job_name(self) -> str:
        """The staging Job's name: a new model, revision or staged adapter runs a new Job; an unchanged one runs
        nothing (a workload without Hugging Face adapters keeps the name it had before adapters existed)."""
        key = f"{self.workload.model}@{self.workload.revision}"
        extra = [
            f"{repo}@{rev}"
            for repo, rev, _ in self.stage_items
            if (repo, rev) != (self.workload.model, self.workload.revision)
        ]
        if extra or not self.staged:
            key = "|".join(f"{repo}@{rev}" for repo, rev, _ in self.stage_items)
        digest = naming.short_hash(key, 8)
        return f"{naming.fit(self.name, naming.LABEL_MAX - 15)}-weights-{digest}"

    @property
    def stage_service_account(self) -> str:
        """The staging Job's own Kubernetes ServiceAccount: the only identity that may write the staged prefix."""
        return naming.fit(f"{self.service_account}-stage", naming.LABEL_MAX)

    @property
    def compile_cache_prefix(self) -> str:
        """The stack bucket prefix of this workload's compile cache for its image and slice shape."""
        return gcs_location(self.compile_cache_url(self.image))[1] or ""

    @property
    def stream_concurrency(self) -> int | None:
        """The Run:ai streamer concurrency the server runs with (its `--model-loader-extra-config`), if any."""
        args = self.serve_args()
        value = next((a.split("=", 1)[1] for a in args if a.startswith("--model-loader-extra-config=")), None)
        try:
            found = json.loads(value).get("concurrency") if value else None
        except (ValueError, AttributeError):
            return None
        return found if isinstance(found, int) and not isinstance(found, bool) else None

    def _default_concurrency(self) -> int:
        """One streamer thread per vCPU the server requests (TPU_HOST_SHARE of its host), at least the default."""
        host = self.shape.host_resources
        return max(STREAM_CONCURRENCY_MIN, math.floor(TPU_HOST_SHARE * host[0]) if host else 0)

    def read_paths(self) -> list[tuple[str, str]]:
        paths = [("model", self.workload.model)] if is_gcs(self.workload.model) else []
        paths += [
            (f"loras[{i}].source", lora.source) for i, lora in enumerate(self.workload.loras) if is_gcs(lora.source)
        ]
        spec = self.workload.speculative
        if spec is not None and spec.draft_model and is_gcs(spec.draft_model):
            paths.append(("speculative.draftModel", spec.draft_model))
        return paths

    def grants(self) -> list[Grant]:
        """Read-only on the weights: the staged prefix, or a gs:// model's prefix in the stack bucket, or (with
        grantModelRead, as JetStream's grantCheckpointRead) the whole of another bucket, which may lack the uniform
        bucket-level access IAM conditions need (stacks.security.bucket_access.read_grant); read-write on the workload's
        own compile caches. Nothing else."""
        weights = read_grant("weights", self.weights_url, self.bucket, self.workload.grant_model_read)
        grants = [weights] if weights else []
        reads = [(f"lora-{i}", url) for i, (_, url, _) in enumerate(self.adapters)]
        reads += [("draft", c["url"]) for c in self.local_copies if c["name"] == "draft model"]
        for key, url in reads:
            adapter = read_grant(key, url, self.bucket, self.workload.grant_model_read)
            # one grant per role and scope: adapters in one other bucket share its bucket-wide grant
            if adapter and all(
                (g.bucket, g.role, g.prefix) != (adapter.bucket, adapter.role, adapter.prefix) for g in grants
            ):
                grants.append(adapter)
        if self.workload.xla_cache:
            grants.append(Grant("compile-cache", self.bucket, OBJECT_USER, compile_cache_grant_prefix(self.name)))
        return grants

    def stage_grants(self) -> list[Grant]:
        """The staging Job writes the staged prefixes (the model's, each Hugging Face adapter's) and nothing else."""
        return [
            Grant("staged" if i == 0 else f"staged-{i}", self.bucket, OBJECT_USER, prefix)
            for i, (_, _, prefix) in enumerate(self.stage_items)
        ]

    @property
    def startup(self) -> StartupPath:
        """Images, weights and compile cache as the manifests below set them (the same plan values)."""
        probe = startup_probe({}, COLD_START_S)
        return StartupPath(
            images=(self.image, *([self.sidecar_image] if self.disaggregated else [])),
            weights="gcs-stream",
            hub_offline=True,
            stream_concurrency=self.stream_concurrency,
            # vllm 0.32.0 docs/models/extensions/runai_model_streamer.md: distributed streaming "is currently only
            # possible on CUDA and ROCM devices": every TPU host streams the whole checkpoint.
            distributed_load=False,
            compile_cache="local-copy" if self.workload.xla_cache else "none",
            startup_initial_delay_s=probe["initialDelaySeconds"],
            startup_period_s=probe["periodSeconds"],
            staged_weights=self.weights_url if self.staged else None,
            compile_cache_url=self.compile_cache_url(self.image) if self.workload.xla_cache else None,
            compile_cache_pull_streams=CACHE_PULL_WORKERS,
            cold_start_s=COLD_START_S,
        )

    @property
    def tensor_parallel_size(self) -> int:
        return self.shape.devices

    def kv_transfer_config(self, role: str) -> str:
        """--kv-transfer-config of a disaggregated role's servers (tpu-inference@v0.27.0
        examples/disagg/run_disagg_single_host.sh: kv_connector, kv_connector_module_path, kv_role)."""
        pd = self.workload.disaggregation
        assert pd is not None
        config = {
            "kv_connector": pd.connector,
            "kv_connector_module_path": KV_CONNECTORS[pd.connector],
            "kv_role": KV_ROLES[role],
        }
        return json.dumps(config, separators=(",", ":"))

    def serve_args(self, role: str | None = None) -> list[str]:
        """`vllm serve` flags: derived ones first, user `args` replacing them in place or appended; a
        disaggregated role's servers add their KV connector."""
        w = self.workload
        derived: list[tuple[str, Any]] = [
            ("host", "0.0.0.0"),
            ("port", self.server_port(role)),
            ("tensor-parallel-size", self.tensor_parallel_size),
        ]
        if w.max_model_len:
            derived.append(("max-model-len", w.max_model_len))
        derived.append(("model", self.weights_url))
        if self.staged:
            # clients keep naming the model by its Hugging Face id
            derived.append(("served-model-name", w.model))
        # vllm 0.32.0 docs/models/extensions/runai_model_streamer.md: `vllm serve gs://... --load-format
        # runai_streamer`, tuned with --model-loader-extra-config '{"concurrency": N}'; tpu-inference 0.32.0
        # (PyPI) requires runai-model-streamer[gcs,s3]==0.15.9.
        derived.append(("load-format", "runai_streamer"))
        derived.append(("model-loader-extra-config", json.dumps({"concurrency": self._default_concurrency()})))
        if self.multi_host:
            # vllm 0.32.0 examples/ray_serving/multi-node-serving.sh: the server runs on the Ray cluster
            derived.append(("distributed-executor-backend", "ray"))
        if w.loras:
            # vllm 0.27.0 (workloads/vllm/lora.py): one batch holds every adapter; the largest rank bounds them all
            derived.append(("enable-lora", True))
            derived.append(("max-loras", len(w.loras)))
            derived.append(("max-lora-rank", max(lora.max_rank for lora in w.loras)))
        if w.speculative is not None:
            derived.append(("speculative-config", optimisations.speculative_config(w.speculative, self.draft_dir)))
        if role in PD_ROLES:
            derived.append(("kv-transfer-config", self.kv_transfer_config(role)))
        extra = {normalize_flag(k): v for k, v in w.args.items()}
        out: list[str] = []
        for key, value in derived:
            value = extra.pop(key, value)
            out += _flag(key, value)
        for key, value in extra.items():
            out += _flag(key, value)
        if self.adapters and "lora-modules" not in extra:
            # a list flag (nargs "+"): one `name=path` argument per adapter after a single --lora-modules
            out += ["--lora-modules", *(f"{name}={local}" for name, _, local in self.adapters)]
        return out


def _flag(key: str, value: Any) -> list[str]:
    if value is None:
        return []
    if value is True:
        return [f"--{key}"]
    if value is False:
        return [f"--no-{key}"]  # vLLM's boolean flags are argparse.BooleanOptionalAction
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return [f"--{key}={value}"]


def served_model_name(plan: VllmPlan) -> str:
    """The name clients put in `model`: vLLM serves the model under its --model value unless
    --served-model-name says otherwise."""
    named = {normalize_flag(k): v for k, v in plan.workload.args.items()}.get("served-model-name")
    return str(named) if named else plan.workload.model


def serving_container(plan: VllmPlan) -> tuple[str, str]:
    """What `kubectl exec` names to run something in a serving container: the leader of group 0 (the
    LeaderWorkerSet's pod <name>-0) on a multi-host pool, else a pod of the Deployment."""
    if plan.multi_host:
        return (f"pod/{plan.name}-0", "vllm-leader")
    return (f"deploy/{plan.role_name('decode' if plan.disaggregated else None)}", CONTAINER)


# tpu-inference's MODEL_IMPL_TYPE for its vLLM (torch) model path (0.32.0 tpu_inference/envs.py choices auto, vllm,
# flax_nnx, jetpack): the one LoRA runs on (manifests.py _env).
MODEL_IMPL_TORCH = "vllm"
