"""vLLM on TPU (the pinned `vllm/vllm-tpu` image): validation and manifests.

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
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stacks import catalog, disruption, metrics, metrics_adapters, naming, network_policy, scan_exceptions
from stacks.bucket_access import OBJECT_USER, Grant, gcs_location, read_grant
from stacks.gateway import GatewayBackend
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.pod_security import ContainerSecurity, container_security_context, secure_pod
from stacks.pool_plan import PoolPlan
from stacks.problems import Problem
from stacks.startup import (
    StartupPath,
    compile_cache_grant_prefix,
    startup_probe,
)
from stacks.versions import IMAGES, Serves, image_gaps, image_record
from stacks.workload_plan import (
    INTERNAL_LB_ANNOTATION,
    LWS_API,
    LWS_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    TPU_HOST_SHARE,
    ServingSignals,
    WorkloadPlan,
    autoscaler_manifest,
    check_autoscaling,
    tpu_resources,
)
from stacks.workload_type import WorkloadContext
from workloads.vllm import flags as serve_flags
from workloads.vllm.config import VllmWorkload

HTTP_PORT = 8000  # vLLM's default --port, the tutorial's
HEALTH_PATH = "/health"  # vllm 0.27.0 vllm/entrypoints/serve/instrumentator/health.py
METRICS_PATH = "/metrics"  # vllm 0.27.0 vllm/entrypoints/serve/instrumentator/metrics.py
API_PATHS = ("/v1/completions", "/v1/chat/completions")  # the outputs' curl commands
# What the alerts and SLOs read (vllm 0.27.0 vllm/v1/metrics/loggers.py): the scheduler's waiting gauge, the TTFT and
# TPOT histograms, vllm:request_success (a counter per finished_reason: stop, length, abort, error; FinishReason in
# vllm/v1/engine/__init__.py) and vllm:generation_tokens (generated tokens). Counters are exported with _total.
VLLM_SIGNALS = ServingSignals(
    queue="vllm:num_requests_waiting",
    time_to_first_token="vllm:time_to_first_token_seconds",
    time_per_output_token="vllm:request_time_per_output_token_seconds",
    requests="vllm:request_success",
    finish_label="finished_reason",
    good_finishes=("stop", "length"),
    bad_finishes=("error",),  # not "abort": the client cancelled the request
    output_tokens="vllm:generation_tokens",
)
CONTAINER = "vllm-tpu"
DEFAULT_IMAGE = "vllmTpu"  # the version-matrix image `image` defaults to (stacks/versions.py IMAGES)
TPU_IMAGES = (DEFAULT_IMAGE,)  # the type serves the generations its default image serves
XLA_CACHE_DIR = "/xla-cache"  # a local emptyDir (node disk): the compile cache the server reads and writes
HF_TOKEN_KEY = "hf_token"  # key in the workload's token Secret
# vllm 0.27.0 examples/ray_serving/multi-node-serving.sh, at this path in the image (tpu-inference@v0.27.0
# docker/Dockerfile: WORKDIR /workspace/vllm; git clone vLLM .)
RAY_SCRIPT = "/workspace/vllm/examples/ray_serving/multi-node-serving.sh"
RAY_PORT = 6379
LWS_NAME_LABEL = disruption.LWS_NAME_LABEL
MODELS_PREFIX = "models/"  # the stack bucket's prefix of staged Hugging Face models: models/<id>/<revision>/
STAGED_MARKER = "_STAGED"  # written last by the staging Job: its presence means the copy is complete
# Run:ai streamer concurrency (OS threads reading tensors, and object-store clients, per host: vllm 0.27.0
# docs/models/extensions/runai_model_streamer.md, its tunable parameters) is one per vCPU the server requests, at
# least the 16 of that page's example (an assumption: reads are network-bound and each thread holds one request in
# flight; a real deploy calibrates it).
STREAM_CONCURRENCY_MIN = 16
# The staging Job copies one model once; the largest the stack serves (405B, ~800 GB in bf16) takes hours over a
# NAT'd link: `pulumi up` waits that long for it (pulumi-kubernetes awaits a Job until Complete).
STAGE_TIMEOUT_MINUTES = 360
# The cold case the startup probe allows before it restarts the server: the hour the earlier probe allowed
# (failureThreshold 360 x periodSeconds 10), which covered a hub download and a full compile; weights are now staged
# before the server starts, so it is compile from scratch with margin (stacks/startup.py startup_probe).
COLD_START_S = 3600
CACHE_PUSH_INTERVAL_S = 60  # how often the serving pod copies new compile-cache entries back to the bucket
HF_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
GS_PATH_RE = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]/[^\s]+")
FLAG_NAME_RE = re.compile(r"-{0,2}[a-z0-9][a-z0-9_-]*")  # a `vllm serve` flag, with or without dashes
SIZE_RE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)[bB](?![a-zA-Z0-9])")
# Flags the stack owns: (why, where to set it instead)
RESERVED_ARGS = {
    "model": "set `model`",
    "max-model-len": "set `maxModelLen`",
    "host": "the server listens on all addresses of its pod",
    "port": f"the container listens on {HTTP_PORT}; set `service.port` for the Service",
    "download-dir": "weights stream from gs:// (a Hugging Face id is staged into the stack bucket first)",
}
# Attention heads of well-known models (their config.json num_attention_heads): vLLM needs them divisible by the
# tensor-parallel size.
KNOWN_HEADS = {
    "meta-llama/Llama-3.1-8B": 32,
    "meta-llama/Llama-3.1-8B-Instruct": 32,
    "meta-llama/Llama-3.1-70B": 64,
    "meta-llama/Llama-3.1-70B-Instruct": 64,
    "meta-llama/Llama-3.3-70B-Instruct": 64,
    "meta-llama/Llama-3.1-405B": 128,
    "meta-llama/Llama-3.1-405B-Instruct": 128,
}


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
        """The labels of a LeaderWorkerSet's leader pod template (simple keys: a custom-metric selector takes them)."""
        return {**self.labels, "role": "leader"}

    @property
    def serving_selector(self) -> dict[str, str]:
        """Labels of the pods that serve HTTP (the leaders of a LeaderWorkerSet): for Services, PodMonitoring and
        an InferencePool."""
        if self.multi_host:
            return {LWS_NAME_LABEL: self.name, "role": "leader"}
        return dict(self.labels)

    @property
    def service_name(self) -> str:
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
        return GatewayBackend(
            self.name,
            self.namespace,
            self.serving_selector,
            HTTP_PORT,
            served_model_name(self),
            exec_in=f"kubectl -n {self.namespace} exec {pod} -c {container}",
            metric_selector=self.leader_labels if self.multi_host else None,
        )

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (self.workload.service.port,)

    @property
    def hosts_needed(self) -> int:
        """One replica is one node (single-host pool) or one whole slice (multi-host pool)."""
        auto = self.workload.autoscaling
        return (auto.max_replicas if auto is not None else self.workload.replicas) * self.shape.hosts

    @property
    def hpa_metrics(self) -> dict[str, metrics.HpaMetric]:
        return metrics.VLLM_METRICS

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
        auto = self.workload.autoscaling
        replicas = auto.max_replicas if auto is not None else self.workload.replicas
        return replicas * self.chips_per_replica

    @property
    def autoscaled(self) -> bool:
        return self.workload.autoscaling is not None and not self.paused

    @property
    def image(self) -> str:
        return self.workload.image or self.served(IMAGES[DEFAULT_IMAGE])

    def pod_manifests(self) -> list[dict[str, Any]]:
        server = leader_worker_set(self) if self.multi_host else deployment(self)
        return [server, stage_job(self)] if self.staged else [server]

    def needs(self) -> Serves:
        """What the stack asks of the image: its probes, scrape and API paths, the HPA's server series, the
        pool's TPU generation."""
        auto = self.workload.autoscaling
        series = {
            metrics.VLLM_METRICS[m.name].series
            for m in (auto.metrics if auto is not None else [])
            if m.name in metrics.VLLM_METRICS and metrics.VLLM_METRICS[m.name].origin == "server"
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
        return self.hf_token and self.staged

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
    def stage_job_name(self) -> str:
        """The staging Job's name: a new model or revision runs a new Job; an unchanged one runs nothing."""
        digest = naming.short_hash(f"{self.workload.model}@{self.workload.revision}", 8)
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
        return [("model", self.workload.model)] if is_gcs(self.workload.model) else []

    def grants(self) -> list[Grant]:
        """Read-only on the weights: the staged prefix, or a gs:// model's prefix in the stack bucket, or (with
        grantModelRead, as JetStream's grantCheckpointRead) the whole of another bucket, which may lack the uniform
        bucket-level access IAM conditions need (stacks.bucket_access.read_grant); read-write on the workload's
        own compile caches. Nothing else."""
        weights = read_grant("weights", self.weights_url, self.bucket, self.workload.grant_model_read)
        grants = [weights] if weights else []
        if self.workload.xla_cache:
            grants.append(Grant("compile-cache", self.bucket, OBJECT_USER, compile_cache_grant_prefix(self.name)))
        return grants

    def stage_grants(self) -> list[Grant]:
        """The staging Job writes the staged prefix and nothing else."""
        return [Grant("staged", self.bucket, OBJECT_USER, self.staged_prefix)]

    @property
    def startup(self) -> StartupPath:
        """Images, weights and compile cache as the manifests below set them (the same plan values)."""
        probe = startup_probe({}, COLD_START_S)
        return StartupPath(
            images=(self.image,),
            weights="gcs-stream",
            hub_offline=True,
            stream_concurrency=self.stream_concurrency,
            # vllm 0.27.0 docs/models/extensions/runai_model_streamer.md: distributed streaming "is currently only
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

    def serve_args(self) -> list[str]:
        """`vllm serve` flags: derived ones first, user `args` replacing them in place or appended."""
        w = self.workload
        derived: list[tuple[str, Any]] = [
            ("host", "0.0.0.0"),
            ("port", HTTP_PORT),
            ("tensor-parallel-size", self.tensor_parallel_size),
        ]
        if w.max_model_len:
            derived.append(("max-model-len", w.max_model_len))
        derived.append(("model", self.weights_url))
        if self.staged:
            # clients keep naming the model by its Hugging Face id
            derived.append(("served-model-name", w.model))
        # vllm 0.27.0 docs/models/extensions/runai_model_streamer.md: `vllm serve gs://... --load-format
        # runai_streamer`, tuned with --model-loader-extra-config '{"concurrency": N}'; tpu-inference@v0.27.0
        # requirements.txt ships runai-model-streamer[s3,gcs].
        derived.append(("load-format", "runai_streamer"))
        derived.append(("model-loader-extra-config", json.dumps({"concurrency": self._default_concurrency()})))
        if self.multi_host:
            # vllm 0.27.0 examples/ray_serving/multi-node-serving.sh: the server runs on the Ray cluster
            derived.append(("distributed-executor-backend", "ray"))
        extra = {normalize_flag(k): v for k, v in w.args.items()}
        out: list[str] = []
        for key, value in derived:
            value = extra.pop(key, value)
            out += _flag(key, value)
        for key, value in extra.items():
            out += _flag(key, value)
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


# ---- validation ---------------------------------------------------------------------------------------


def check(
    path: str,
    workload: VllmWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> VllmPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    _check_model(path, workload, ctx.hf_token, problems, warnings)
    _check_image_and_args(path, workload, problems)
    auto = workload.autoscaling
    if auto is not None:
        check_autoscaling(
            path,
            auto,
            ctx.adapter,
            metrics.VLLM_METRICS,
            problems,
            environment=ctx.environment,
            gateway=ctx.gateway_enabled and workload.gateway,
        )
    if pool is not None:
        _check_tensor_parallel(path, workload, pool.name, pool.shape, problems)
    if pool is None or problems:
        return None

    plan = VllmPlan.on(
        workload, pool, namespace, ctx, adapter=ctx.adapter, hf_token=ctx.hf_token, cluster=ctx.cluster_name
    )
    needs = plan.needs()
    # The pinned image's TPU generations are every type's check (stacks/workload_checks.py); an override's, its own.
    tpus = Serves(tpus=needs.tpus if workload.overrides_images() else None)
    problems.extend(Problem(f"{path}.image", gap) for gap in image_gaps(plan.image, replace(needs, tpus=None)))
    problems.extend(Problem(f"{path}.pool", gap) for gap in image_gaps(plan.image, tpus))
    if image_record(plan.image) is None:
        warnings.append(
            f"{path}.image: {plan.image} is not in the version matrix; the stack cannot check that it serves vLLM's "
            "API, metrics and this TPU generation"
        )
    if problems:
        return None
    gen = pool.shape.generation
    if gen.vllm_support != "recommended":
        warnings.append(f"{path}.pool: vLLM's TPU backend calls {gen.name} {gen.vllm_support}")
    _check_replicas_fit(path, workload, pool, ctx.lws_enabled, problems)
    if auto is not None:
        _check_hbm_metrics(path, auto, pool.shape, problems)
    _serving_warnings(path, plan, warnings)
    return plan


def _check_model(path: str, workload: VllmWorkload, hf_token: bool, problems: list[Problem], warnings: list) -> None:
    """A gs:// folder of weights, or a Hugging Face id: a gated one (`gated: true`) needs the token; without one, a
    model not said to be public (`gated: false`) is warned about (the stack cannot tell whether it is gated)."""
    model, gated = workload.model, workload.gated
    if is_gcs(model):
        if not GS_PATH_RE.fullmatch(model):
            problems.append(
                Problem(
                    f"{path}.model",
                    f"{model!r} is not a gs:// path of a folder of weights, e.g. gs://my-bucket/llama-70b",
                )
            )
        if gated is not None:
            problems.append(Problem(f"{path}.gated", "only for a model named by its Hugging Face id, not a gs:// path"))
    elif not HF_ID_RE.fullmatch(model):
        problems.append(
            Problem(
                f"{path}.model",
                f"{model!r} is neither a Hugging Face model id (org/name, e.g. meta-llama/Llama-3.1-70B) nor a "
                "gs:// path of weights",
            )
        )
    elif gated and not hf_token:
        problems.append(
            Problem(
                f"{path}.gated",
                f"{model!r} is gated: set the token first, pulumi config set --secret tpu-serving:hfToken <token>",
            )
        )
    elif gated is None and not hf_token:
        warnings.append(
            f"{path}.model: {model!r} is staged from Hugging Face without a token; a gated model (e.g. "
            "meta-llama/*) needs one: pulumi config set --secret tpu-serving:hfToken <token>; for a public one set "
            "`gated: false` on this workload"
        )


def _check_image_and_args(path: str, workload: VllmWorkload, problems: list[Problem]) -> None:
    """An image a kubelet can pull; `args` are `vllm serve` flags of the pinned vLLM (workloads/vllm/flags.py), each
    with a value it takes, and none the stack derives."""
    if workload.image is not None:
        why = naming.image_reference_problem(workload.image)
        if why:
            problems.append(Problem(f"{path}.image", why))
    checked: dict[str, Any] = {}
    for key, value in workload.args.items():
        why = RESERVED_ARGS.get(normalize_flag(key))
        if why:
            problems.append(Problem(f"{path}.args.{key}", f"derived by the stack: {why}"))
        elif not FLAG_NAME_RE.fullmatch(key):
            problems.append(Problem(f"{path}.args.{key}", "is not a `vllm serve` flag name (e.g. max-num-seqs)"))
        else:
            checked[key] = value
    if workload.image is None:  # the pinned image's flags; an image of another version has its own
        problems.extend(serve_flags.problems(path, checked, normalize_flag))


def _tensor_parallel_value(value: Any) -> int | None:
    """A `tensor-parallel-size` argument as a whole number, or None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _check_tensor_parallel(
    path: str, workload: VllmWorkload, pool: str, shape: catalog.SliceShape, problems: list[Problem]
) -> None:
    """A `tensor-parallel-size` in `args` shards the model over that many JAX devices of one replica (one slice):
    a whole number from 1 to the slice's devices (tpu_inference/worker/tpu_worker.py takes
    jax.devices()[:total_devices]; more than there are leaves the mesh short). null removes the flag (vLLM's
    default, 1)."""
    for key, value in workload.args.items():
        if normalize_flag(key) != "tensor-parallel-size" or value is None:
            continue
        size = _tensor_parallel_value(value)
        if size is None or not 1 <= size <= shape.devices:
            gen = shape.generation
            problems.append(
                Problem(
                    f"{path}.args.{key}",
                    f"{value!r} is not a tensor-parallel size pool {pool!r} can have; allowed: a whole number from 1 "
                    f"to {shape.devices} (the JAX devices of one {gen.name} {shape.topology} slice: {shape.chips} "
                    f"chips x {gen.devices_per_chip} per chip)",
                )
            )


def _check_replicas_fit(
    path: str, workload: VllmWorkload, pool: PoolPlan, lws_enabled: bool, problems: list[Problem]
) -> None:
    """The most replicas fit the pool: a whole slice each (multi-host, on a LeaderWorkerSet) or their chips."""
    shape, gen = pool.shape, pool.shape.generation
    auto = workload.autoscaling
    most = auto.max_replicas if auto is not None else workload.replicas
    key = f"{path}.autoscaling.maxReplicas" if auto is not None else f"{path}.replicas"
    if shape.multi_host:
        if not lws_enabled:
            problems.append(
                Problem(
                    f"{path}.pool",
                    f"pool {pool.name!r} is multi-host: vLLM runs as a LeaderWorkerSet, so enable "
                    "tpu-serving:addons.lws",
                )
            )
        if most > pool.slices:
            problems.append(
                Problem(
                    key,
                    f"{most} replicas need {most} slices of {gen.name} {shape.topology} (one per replica), but pool "
                    f"{pool.name!r} has {pool.slices}; raise the pool's slices or lower the replicas",
                )
            )
        return
    capacity = pool.max_nodes_per_node_pool * shape.chips_per_host
    if most * shape.tpu_request > capacity:
        problems.append(
            Problem(
                key,
                f"{most} replicas x {shape.tpu_request} chips = {most * shape.tpu_request} chips, but pool "
                f"{pool.name!r} holds at most {capacity} chips ({pool.max_nodes_per_node_pool} nodes x "
                f"{shape.chips_per_host}); raise the pool's autoscaling.maxNodes or lower the replicas",
            )
        )


def _check_hbm_metrics(path: str, auto: Any, shape: catalog.SliceShape, problems: list[Problem]) -> None:
    """HBM metrics an HPA can act on for one replica of this slice shape."""
    gen = shape.generation
    for i, metric in enumerate(auto.metrics):
        if metric.name == "tpu_memory_used_percentage" and shape.multi_host:
            problems.append(
                Problem(
                    f"{path}.autoscaling.metrics[{i}].name",
                    f"tpu_memory_used_percentage adds up used/total per node, and one replica here spans "
                    f"{shape.hosts} nodes: it would count each replica {shape.hosts} times; use tpu_memory_used "
                    "(bytes per replica) or a vLLM metric",
                )
            )
        if metric.name == "tpu_memory_used" and metric.target > shape.hbm_bytes:
            problems.append(
                Problem(
                    f"{path}.autoscaling.metrics[{i}].target",
                    f"{metric.target:g} bytes is more HBM than one replica has ({shape.hbm_bytes} bytes on "
                    f"{gen.name} {shape.topology}); the HPA would never scale up",
                )
            )


def _serving_warnings(path: str, plan: VllmPlan, warnings: list) -> None:
    """What vLLM would refuse or fail at start: a tensor-parallel size that does not divide the model's attention
    heads, weights larger than one replica's HBM."""
    model = plan.workload.model
    tp = plan.serve_args()
    tp_value = next((a.split("=", 1)[1] for a in tp if a.startswith("--tensor-parallel-size=")), None)
    heads = KNOWN_HEADS.get(model)
    if heads and tp_value and tp_value.isdigit() and heads % int(tp_value):
        warnings.append(
            f"{path}: tensor-parallel size {tp_value} does not divide {model}'s {heads} attention heads; vLLM will "
            "refuse to start"
        )
    size = params_billion(plan.workload)
    if size:
        warning = catalog.sizing_warning(size, 16, plan.shape, path)
        if warning:
            warnings.append(warning)


def vllm_panels(cluster: str) -> list[tuple[str, str, str]]:
    """vLLM server tiles (series of the pinned image, stacks.versions IMAGE_RECORDS["vllmTpu"]), by namespace and
    pod; latencies as the 90th percentile over 5 minutes; the KV-cache fraction drawn as a percentage."""
    c = f'cluster="{cluster}"'

    def p90(histogram: str) -> str:
        return f"histogram_quantile(0.9, sum by (namespace, le) (rate({histogram}_bucket{{{c}}}[5m])))"

    return [
        ("vLLM running requests", f"sum by (namespace, pod) (vllm:num_requests_running{{{c}}})", "requests"),
        ("vLLM waiting requests", f"sum by (namespace, pod) (vllm:num_requests_waiting{{{c}}})", "requests"),
        ("vLLM KV-cache usage", f"avg by (namespace, pod) (vllm:kv_cache_usage_perc{{{c}}}) * 100", "% of KV cache"),
        ("vLLM time to first token (p90)", p90("vllm:time_to_first_token_seconds"), "seconds"),
        ("vLLM time per output token (p90)", p90("vllm:request_time_per_output_token_seconds"), "seconds"),
    ]


# ---- manifests ----------------------------------------------------------------------------------------


def _probe(path: str, **timing: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": HTTP_PORT, "scheme": "HTTP"}, **timing}


def _env(plan: VllmPlan) -> list[dict[str, Any]]:
    # huggingface_hub reads HF_HUB_OFFLINE: no request to the Hub (weights, config and tokenizer come from gs://)
    env: list[dict[str, Any]] = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    if plan.workload.xla_cache:
        env.append({"name": "VLLM_XLA_CACHE_PATH", "value": XLA_CACHE_DIR})
    if plan.multi_host:
        # tpu-inference@v0.27.0 tpu_inference/envs.py: TPU_MULTIHOST_BACKEND in {"", "ray"}; its multi-host GKE
        # example (examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml) sets it on leader and workers.
        env.append({"name": "TPU_MULTIHOST_BACKEND", "value": "ray"})
    return env


# The compile cache's two halves, with the image's own Python and google-cloud-storage (tpu-inference@v0.27.0
# requirements.txt), as the workload's identity. The pull runs before the server and never fails the pod (no cache
# is a cold start); the push copies entries the bucket lacks (JAX names each entry by its key, so an existing name
# is the same entry). tpu-inference@v0.27.0 .buildkite/xla_autotune/README.md "JAX compile cache": its CI pulls the
# GCS cache to local disk before the server starts and pushes it back after.
CACHE_PULL_SCRIPT = """
import os, sys
from concurrent.futures import ThreadPoolExecutor
from google.cloud import storage
bucket, prefix, local = os.environ["CACHE_BUCKET"], os.environ["CACHE_PREFIX"], os.environ["CACHE_DIR"]


def fetch(blob):
    path = os.path.join(local, blob.name[len(prefix):])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    blob.download_to_filename(path)


try:
    blobs = [b for b in storage.Client().list_blobs(bucket, prefix=prefix) if not b.name.endswith("/")]
    with ThreadPoolExecutor(int(os.environ["CACHE_PULL_WORKERS"])) as pool:
        list(pool.map(fetch, blobs))
    print(f"compile cache: {len(blobs)} entries from gs://{bucket}/{prefix}")
except Exception as e:  # a cold start, not a failed pod
    print(f"compile cache not read ({e}); compiling from scratch", file=sys.stderr)
"""
# Downloads the pull keeps in flight (threads, each one blob at a time: a cache is many small entries, so one stream
# would take the whole cache at one request's rate). The image's google-cloud-storage is unpinned (tpu-inference@v0.27.0
# requirements.txt), so the pull uses only the standard library's threads and Blob.download_to_filename.
CACHE_PULL_WORKERS = 16
# JAX writes a cache entry in place (jax-ml/jax@1e79d0a jax/_src/lru_cache.py LRUCache.put: `file.write_bytes(val)`,
# no temporary file and rename), so a scan can find an entry half written. The push uploads a file only once its size
# is the same at two scans one interval apart, and again whenever the bucket's copy differs in size (one uploaded
# half-written by an earlier version, or cut short).
CACHE_PUSH_SCRIPT = """
import os, sys, time


def push(bucket, prefix, local, previous):
    \"\"\"One scan: upload every file whose size is unchanged since `previous` (path -> size at the last scan) and
    differs from its blob's; return this scan's sizes.\"\"\"
    remote = {blob.name[len(prefix):]: blob.size for blob in bucket.list_blobs(prefix=prefix)}
    sizes = {}
    for root, _, files in os.walk(local):
        for f in files:
            if f.startswith("."):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, local)
            sizes[rel] = os.path.getsize(path)
            if previous.get(rel) == sizes[rel] and remote.get(rel) != sizes[rel]:
                bucket.blob(prefix + rel).upload_from_filename(path)
    return sizes


if __name__ == "__main__":
    from google.cloud import storage

    name, prefix, local = os.environ["CACHE_BUCKET"], os.environ["CACHE_PREFIX"], os.environ["CACHE_DIR"]
    interval = int(os.environ["CACHE_PUSH_INTERVAL"])
    sizes = {}
    while True:
        time.sleep(interval)
        try:
            sizes = push(storage.Client().bucket(name), prefix, local, sizes)
        except Exception as e:
            print(f"compile cache push: {e}", file=sys.stderr)
"""


def _cache_env(plan: VllmPlan) -> list[dict[str, str]]:
    return [
        {"name": "CACHE_BUCKET", "value": plan.bucket},
        {"name": "CACHE_PREFIX", "value": plan.compile_cache_prefix},
        {"name": "CACHE_DIR", "value": XLA_CACHE_DIR},
    ]


CACHE_MOUNT = {"name": "xla-cache", "mountPath": XLA_CACHE_DIR}
CACHE_HELPER_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}


def cache_pull_container(plan: VllmPlan) -> dict[str, Any]:
    """The init container that copies the compile cache from the bucket to local disk before the server starts."""
    return {
        "name": "compile-cache-pull",
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", CACHE_PULL_SCRIPT],
        "env": [*_cache_env(plan), {"name": "CACHE_PULL_WORKERS", "value": str(CACHE_PULL_WORKERS)}],
        "resources": CACHE_HELPER_RESOURCES,
        "volumeMounts": [CACHE_MOUNT],
        "securityContext": container_security_context(VLLM_CONTAINER),
    }


def cache_push_container(plan: VllmPlan) -> dict[str, Any]:
    """The serving pod's container that copies new compile-cache entries back to the bucket: one writer per
    replica (the leader of a multi-host group), so no two hosts write one prefix."""
    return {
        "name": "compile-cache-push",
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", CACHE_PUSH_SCRIPT],
        "env": [*_cache_env(plan), {"name": "CACHE_PUSH_INTERVAL", "value": str(CACHE_PUSH_INTERVAL_S)}],
        "resources": CACHE_HELPER_RESOURCES,
        "volumeMounts": [CACHE_MOUNT],
    }


def _volumes(plan: VllmPlan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, server mounts): shared memory, and the local compile cache."""
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    if plan.workload.xla_cache:
        volumes.append({"name": "xla-cache", "emptyDir": {}})
        mounts.append(CACHE_MOUNT)
    return volumes, mounts


# The image runs as root (tpu-inference@v0.27.0 docker/Dockerfile has no USER) and writes under /root/.cache
# (Hugging Face, JAX) and its working tree, so it keeps its own user and a writable root filesystem; everything
# else is restricted (stacks.pod_security). GKE >= 1.28 gives TPU devices to unprivileged containers.
VLLM_CONTAINER = ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    why="vllm/vllm-tpu runs as root and writes under /root/.cache (tpu-inference@v0.27.0 docker/Dockerfile: no USER)",
)


def _pod_spec(plan: VllmPlan, container: dict[str, Any], *, serving: bool) -> dict[str, Any]:
    """A TPU pod of the workload: `container` with every chip of its host; with the compile cache, its pull before
    the server and, on the serving pod only, its push."""
    volumes, mounts = _volumes(plan)
    container = {
        **container,
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": tpu_resources(plan.shape),
        "volumeMounts": mounts,
    }
    spec: dict[str, Any] = {
        "serviceAccountName": plan.service_account,
        **plan.tpu_placement(),
        "containers": [container],
        "volumes": volumes,
    }
    if plan.workload.xla_cache:
        spec["initContainers"] = [cache_pull_container(plan)]
        if serving:
            spec["containers"].append(cache_push_container(plan))
    return disruption.drained(secure_pod(spec, VLLM_CONTAINER))


def _pod_metadata(plan: VllmPlan, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _server_container(plan: VllmPlan, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "ports": [{"containerPort": HTTP_PORT, "name": "http"}],
        "env": _env(plan),
        # No fixed delay: probed from the start every few seconds, for as long as a cold start takes (COLD_START_S),
        # then liveness takes over. /health answers 200 once the engine runs
        # (vllm 0.27.0 vllm/entrypoints/serve/instrumentator/health.py).
        "startupProbe": startup_probe(_probe(HEALTH_PATH), COLD_START_S),
        "livenessProbe": _probe(HEALTH_PATH, periodSeconds=30, failureThreshold=5),
        "readinessProbe": _probe(HEALTH_PATH, periodSeconds=10, failureThreshold=3),
    }


def deployment(plan: VllmPlan) -> dict[str, Any]:
    container = {
        **_server_container(plan, CONTAINER),
        "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        "args": plan.serve_args(),
    }
    spec: dict[str, Any] = {
        "selector": {"matchLabels": plan.labels},
        "template": {"metadata": _pod_metadata(plan, plan.labels), "spec": _pod_spec(plan, container, serving=True)},
    }
    if not plan.autoscaled:
        spec = {"replicas": 0 if plan.paused else plan.workload.replicas, **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.tpu_metadata(
            plan.name, plan.labels, scan_exceptions.skip_annotations([*SKIPS, *_push_skips(plan)])
        ),
        "spec": spec,
    }


# The checkov findings a vLLM Deployment or LeaderWorkerSet accepts, with their reasons (stacks/scan_exceptions.py).
SKIPS: tuple[scan_exceptions.Skip, ...] = (
    *scan_exceptions.TAG_PINNED,
    scan_exceptions.CPU_LIMIT,
    scan_exceptions.HOST_MEMORY_LIMIT,
    *scan_exceptions.security(VLLM_CONTAINER),
)
# A multi-host group's Ray workers (multi-node-serving.sh worker) serve no HTTP; the group restarts as one
# (RecreateGroupOnPodRestart) and its leader's /health probes cover it. On the worker template only: the leader is
# probed, and a skip there would hide a lost probe.
WORKER_SKIPS = scan_exceptions.probes(
    "the Ray workers serve no HTTP endpoint; the group restarts as one and the leader's /health probes cover it"
)


def _push_skips(plan: VllmPlan) -> tuple[scan_exceptions.Skip, ...]:
    """The serving pod's compile-cache push container serves nothing to probe; the server's probes cover the pod."""
    if not plan.workload.xla_cache:
        return ()
    return scan_exceptions.probes("the compile-cache push container serves nothing; the server's probes cover the pod")


def leader_command(plan: VllmPlan) -> str:
    server = shlex.join(["python3", "-m", "vllm.entrypoints.openai.api_server", *plan.serve_args()])
    return f"bash {RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE) && exec {server}"


def worker_command() -> str:
    return f"bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"


def leader_worker_set(plan: VllmPlan) -> dict[str, Any]:
    leader = {
        **_server_container(plan, "vllm-leader"),
        "command": ["sh", "-c", leader_command(plan)],
    }
    leader["ports"] = [*leader["ports"], {"containerPort": RAY_PORT, "name": "ray-gcs"}]
    worker = {"name": "vllm-worker", "command": ["sh", "-c", worker_command()], "env": _env(plan)}
    leader_labels = plan.leader_labels
    worker_labels = {**plan.labels, "role": "worker"}
    spec: dict[str, Any] = {
        "leaderWorkerTemplate": {
            "size": plan.shape.hosts,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": {
                "metadata": _pod_metadata(plan, leader_labels, scan_exceptions.skip_annotations(_push_skips(plan))),
                "spec": _pod_spec(plan, leader, serving=True),
            },
            "workerTemplate": {
                "metadata": _pod_metadata(plan, worker_labels, scan_exceptions.skip_annotations(WORKER_SKIPS)),
                "spec": _pod_spec(plan, worker, serving=False),
            },
        },
    }
    if not plan.autoscaled:
        spec = {"replicas": 0 if plan.paused else plan.workload.replicas, **spec}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        # one group per slice: a group's pods share a node pool, and no two groups share one
        "metadata": plan.metadata(
            plan.name,
            plan.labels,
            annotations={LWS_EXCLUSIVE: SLICE_TOPOLOGY_KEY, **scan_exceptions.skip_annotations(SKIPS)},
        ),
        "spec": spec,
    }


def service(plan: VllmPlan) -> dict[str, Any]:
    """The OpenAI-compatible API, on the serving pods only (leaders of a LeaderWorkerSet)."""
    svc = plan.workload.service
    metadata = plan.metadata(plan.service_name, plan.labels)
    if svc.type == "LoadBalancer":
        metadata["annotations"] = dict(INTERNAL_LB_ANNOTATION)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": svc.type,
            "selector": plan.serving_selector,
            "ports": [{"name": "http", "protocol": "TCP", "port": svc.port, "targetPort": HTTP_PORT}],
        },
    }


def token_secret(plan: VllmPlan, token: Any) -> dict[str, Any]:
    """The Hugging Face token as a Secret; `token` is the Pulumi secret Output (never plain text)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": plan.metadata(plan.token_secret_name, plan.labels),
        "type": "Opaque",
        "stringData": {HF_TOKEN_KEY: token},
    }


def pod_monitoring(plan: VllmPlan) -> dict[str, Any]:
    """Scrapes /metrics of the serving pods; the `app` pod label names the workload on every series, which the
    prometheus-adapter rules select by."""
    manifest = metrics.pod_monitoring(
        f"{plan.name}-vllm",
        plan.namespace,
        plan.serving_selector,
        "http",
        interval=plan.scrape_interval,
        path=METRICS_PATH,
        target_labels=["pod", "container", "node"],
    )
    manifest["spec"]["targetLabels"]["fromPod"] = [{"from": "app", "to": "app"}]
    return manifest


def hpa(plan: VllmPlan) -> dict[str, Any] | None:
    """What scales the workload (stacks.workload_plan.autoscaler_manifest): its HPA, or its KEDA ScaledObject,
    which is kept, paused at 0 replicas, while the stack is paused; None when nothing scales it."""
    auto = plan.workload.autoscaling
    if auto is None or not (plan.autoscaled or (plan.paused and plan.keda)):
        return None
    target = (
        {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": plan.name}
        if plan.multi_host
        else {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name}
    )
    return autoscaler_manifest(plan, plan.labels, target, metrics.VLLM_METRICS, selector=plan.labels)


def served_model_name(plan: VllmPlan) -> str:
    """The name clients put in `model`: vLLM serves the model under its --model value unless
    --served-model-name says otherwise."""
    named = {normalize_flag(k): v for k, v in plan.workload.args.items()}.get("served-model-name")
    return str(named) if named else plan.workload.model


def serving_container(plan: VllmPlan) -> tuple[str, str]:
    """What `kubectl exec` names to run something in a serving container: the leader of group 0 (the
    LeaderWorkerSet's pod <name>-0) on a multi-host pool, else a pod of the Deployment."""
    return (f"pod/{plan.name}-0", "vllm-leader") if plan.multi_host else (f"deploy/{plan.name}", CONTAINER)


def commands(plan: VllmPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    ns, svc, port = plan.namespace, plan.service_name, plan.workload.service.port
    local = local_ports.get(port, port)
    model = served_model_name(plan)
    completion = shlex.quote(f'{{"model": "{model}", "prompt": "San Francisco is a", "max_tokens": 64}}')
    chat = shlex.quote(
        f'{{"model": "{model}", "messages": [{{"role": "user", "content": "What is a TPU?"}}], "max_tokens": 128}}'
    )
    header = "-H 'Content-Type: application/json'"
    pod, container = serving_container(plan)
    out = {
        "portForward": f"kubectl -n {ns} port-forward svc/{svc} {local}:{port}",
        "curl": f"curl -s localhost:{local}/v1/completions {header} -d {completion}",
        "curlChat": f"curl -s localhost:{local}/v1/chat/completions {header} -d {chat}",
        # vLLM's own benchmark client (vllm 0.27.0 `vllm bench serve`), inside the serving pod so nothing is
        # installed locally: random prompts at 10 requests/s.
        "loadTest": (
            f"kubectl -n {ns} exec {pod} -c {container} -- vllm bench serve --backend vllm "
            f"--base-url http://localhost:{HTTP_PORT} --model {shlex.quote(model)} --dataset-name random "
            "--random-input-len 512 --random-output-len 128 --num-prompts 1000 --request-rate 10"
        ),
    }
    if plan.autoscaled:
        out["watchHpa"] = f"kubectl -n {ns} get hpa {plan.hpa_name} --watch"
    return out


# The staging Job: the image's huggingface_hub (a vLLM dependency) and google-cloud-storage (tpu-inference@v0.27.0
# requirements.txt), as its own identity (objectUser on the staged prefix only). It copies what vLLM reads (the
# safetensors, config and tokenizer files; not the `original/` checkpoint some repositories add), one file at a
# time through local scratch, skips files already in the bucket (a retry resumes), and writes the marker last.
STAGE_SCRIPT = """
import os, sys, fnmatch
from huggingface_hub import HfApi, hf_hub_download
from google.cloud import storage
repo, rev = os.environ["MODEL"], os.environ["REVISION"]
bucket = storage.Client().bucket(os.environ["BUCKET"])
prefix, marker = os.environ["PREFIX"], os.environ["MARKER"]
if bucket.blob(prefix + marker).exists():
    print(f"gs://{bucket.name}/{prefix} is staged already"); sys.exit(0)
info = HfApi().model_info(repo, revision=rev)
wanted = os.environ["PATTERNS"].split()
names = [s.rfilename for s in info.siblings if "/" not in s.rfilename and any(fnmatch.fnmatch(s.rfilename, p) for p in wanted)]
if not any(n.endswith(".safetensors") for n in names):
    sys.exit(f"{repo}@{rev} has no safetensors weights at its top level: the Run:ai streamer reads safetensors only")
for name in names:
    blob = bucket.blob(prefix + name)
    if blob.exists():
        continue
    path = hf_hub_download(repo, name, revision=rev, local_dir="/scratch")
    blob.upload_from_filename(path)
    os.remove(path)
    print(f"staged {name}", flush=True)
bucket.blob(prefix + marker).upload_from_string(info.sha or rev)
print(f"staged {repo}@{rev} ({info.sha}) into gs://{bucket.name}/{prefix}")
"""
# What vLLM reads from a model directory: weights, config and tokenizer files (vllm 0.27.0
# docs/models/extensions/runai_model_streamer.md serves `vllm serve gs://<bucket>/<model>` with no other source of
# config or tokenizer: they come from the same directory).
STAGE_PATTERNS = ("*.safetensors", "*.json", "*.model", "*.tiktoken", "*.txt", "*.jinja", "*.py")
STAGE_RESOURCES = {
    "requests": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "40Gi"},
    "limits": {"memory": "8Gi", "ephemeral-storage": "60Gi"},
}


def stage_job(plan: VllmPlan) -> dict[str, Any]:
    """The Job that copies a Hugging Face model into the stack bucket once (per model and revision), on the
    system pool; the server is registered after it completes."""
    env: list[dict[str, Any]] = [
        {"name": "MODEL", "value": plan.workload.model},
        {"name": "REVISION", "value": plan.workload.revision},
        {"name": "BUCKET", "value": plan.bucket},
        {"name": "PREFIX", "value": plan.staged_prefix},
        {"name": "MARKER", "value": STAGED_MARKER},
        {"name": "PATTERNS", "value": " ".join(STAGE_PATTERNS)},
    ]
    if plan.uses_token:
        env.append(
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": plan.token_secret_name, "key": HF_TOKEN_KEY}}}
        )
    # not the workload's `app` label: its Service, PodMonitoring and InferencePool select that
    labels = {"app": f"{plan.name}-weights", "role": "stage-weights"}
    container = {
        "name": "stage",
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", STAGE_SCRIPT],
        "env": env,
        "resources": STAGE_RESOURCES,
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
    }
    pod = {
        "restartPolicy": "Never",
        "serviceAccountName": plan.stage_service_account,
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "containers": [container],
        "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "60Gi"}}],
    }
    skips = [*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT, *scan_exceptions.security(VLLM_CONTAINER)]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": plan.metadata(plan.stage_job_name, labels, annotations=scan_exceptions.skip_annotations(skips)),
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": STAGE_TIMEOUT_MINUTES * 60,
            "template": {"metadata": {"labels": labels}, "spec": secure_pod(pod, VLLM_CONTAINER)},
        },
    }
