"""vLLM on TPU (the pinned `vllm/vllm-tpu` image): validation and manifests.

A single-host pool runs a Deployment, one pod per node taking all its chips (the GKE `serve-vllm-tpu` tutorial).
A multi-host pool runs a LeaderWorkerSet, one group per slice: the leader starts the Ray head and the
OpenAI-compatible server, the workers join Ray at `LWS_LEADER_ADDRESS`, and a failed pod recreates the whole group
(the LeaderWorkerSet vLLM/TPU example). Everything about the slice (tensor-parallel size, node selectors,
`google.com/tpu`, group size) comes from the pool and the catalog; the image's facts from its record in `versions.IMAGE_RECORDS`.

Weights: a Hugging Face id downloads through the hub (with the stack's `hfToken` secret when set) into the stack
bucket through GCS FUSE, as the tutorial does, so replicas and restarts share the download; a gs:// path streams
with Run:ai's model streamer as the workload's own identity, which may read that prefix only. The XLA compilation
cache (`VLLM_XLA_CACHE_PATH`) lives beside the downloads, so a second start skips compilation.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stacks import catalog, metrics, metrics_adapters, naming, network_policy, scan_exceptions
from stacks.bucket_access import OBJECT_USER, OBJECT_VIEWER, Grant, gcs_location
from stacks.gateway import GatewayBackend
from stacks.pod_security import ContainerSecurity, secure_pod
from stacks.pool_plan import PoolPlan
from stacks.problems import Problem
from stacks.versions import IMAGES, Serves, image_gaps, image_record
from stacks.workload_plan import (
    INTERNAL_LB_ANNOTATION,
    LWS_API,
    LWS_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    WorkloadPlan,
    autoscaler_manifest,
    check_autoscaling,
    tpu_resources,
)
from stacks.workload_type import WorkloadContext
from workloads.vllm.config import VllmWorkload

HTTP_PORT = 8000  # vLLM's default --port, the tutorial's
HEALTH_PATH = "/health"  # vllm 0.27.0 vllm/entrypoints/serve/instrumentator/health.py
METRICS_PATH = "/metrics"  # vllm 0.27.0 vllm/entrypoints/serve/instrumentator/metrics.py
API_PATHS = ("/v1/completions", "/v1/chat/completions")  # the outputs' curl commands
CONTAINER = "vllm-tpu"
DEFAULT_IMAGE = "vllmTpu"  # the version-matrix image `image` defaults to (stacks/versions.py IMAGES)
TPU_IMAGES = (DEFAULT_IMAGE,)  # the type serves the generations its default image serves
DATA_DIR = "/data"  # the GCS FUSE mount (the tutorial's path)
XLA_CACHE_DIR = f"{DATA_DIR}/xla-cache"
DOWNLOAD_DIR = f"{DATA_DIR}/hf"
HF_TOKEN_KEY = "hf_token"  # key in the workload's token Secret
# vllm 0.27.0 examples/ray_serving/multi-node-serving.sh, at this path in the image (tpu-inference@v0.27.0
# docker/Dockerfile: WORKDIR /workspace/vllm; git clone vLLM .)
RAY_SCRIPT = "/workspace/vllm/examples/ray_serving/multi-node-serving.sh"
RAY_PORT = 6379
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
# The tutorial's GCS FUSE options: parallel downloads into a file cache, so large safetensors load fast.
GCSFUSE_OPTIONS = (
    "implicit-dirs",
    "file-cache:enable-parallel-downloads:true",
    "file-cache:parallel-downloads-per-file:100",
    "file-cache:max-parallel-downloads:-1",
    "file-cache:download-chunk-size-mb:10",
    "file-cache:max-size-mb:-1",
)
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
    "download-dir": "set `xlaCache: false` to download into the container instead of the bucket",
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
    """The model's size: `paramsBillion`, else the NNB in its name (Llama-3.1-70B -> 70)."""
    if workload.params_billion:
        return workload.params_billion
    found = SIZE_RE.findall(workload.model.rsplit("/", 1)[-1])
    return float(found[-1]) if found else None


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
    def chips_at_peak(self) -> int:
        """A replica takes one node's TPU request (single-host pool) or one whole slice (multi-host pool)."""
        auto = self.workload.autoscaling
        replicas = auto.max_replicas if auto is not None else self.workload.replicas
        return replicas * (self.shape.chips if self.multi_host else self.shape.tpu_request)

    @property
    def autoscaled(self) -> bool:
        return self.workload.autoscaling is not None and not self.paused

    @property
    def image(self) -> str:
        return self.workload.image or IMAGES[DEFAULT_IMAGE]

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [leader_worker_set(self) if self.multi_host else deployment(self)]

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
    def uses_token(self) -> bool:
        return self.hf_token and not is_gcs(self.workload.model)

    @property
    def token_secret_name(self) -> str:
        return f"{self.name}-hf-token"

    @property
    def data_prefix(self) -> str:
        """The stack bucket prefix the workload keeps its downloads and XLA cache under (and may write)."""
        return f"vllm/{self.name}/"

    def read_paths(self) -> list[tuple[str, str]]:
        return [("model", self.workload.model)] if is_gcs(self.workload.model) else []

    def grants(self) -> list[Grant]:
        """Read-write on the workload's own prefix of the stack bucket (downloads, XLA cache); read-only on the
        gs:// weights' prefix. Nothing else."""
        grants = [Grant("data", self.bucket, OBJECT_USER, self.data_prefix)] if self.workload.xla_cache else []
        if is_gcs(self.workload.model):
            bucket, prefix = gcs_location(self.workload.model)
            grants.append(Grant("weights", bucket, OBJECT_VIEWER, prefix))
        return grants

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
        derived.append(("model", w.model))
        if is_gcs(w.model):
            # vllm 0.27.0 docs/models/extensions/runai_model_streamer.md: `vllm serve gs://... --load-format
            # runai_streamer`; tpu-inference@v0.27.0 requirements.txt ships runai-model-streamer[s3,gcs].
            derived.append(("load-format", "runai_streamer"))
        elif w.xla_cache:
            derived.append(("download-dir", DOWNLOAD_DIR))
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
    _check_model(path, workload.model, ctx.hf_token, problems, warnings)
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


def _check_model(path: str, model: str, hf_token: bool, problems: list[Problem], warnings: list) -> None:
    """A gs:// folder of weights, or a Hugging Face id (warned about without a token: gated models need one)."""
    if is_gcs(model):
        if not GS_PATH_RE.fullmatch(model):
            problems.append(
                Problem(
                    f"{path}.model",
                    f"{model!r} is not a gs:// path of a folder of weights, e.g. gs://my-bucket/llama-70b",
                )
            )
    elif not HF_ID_RE.fullmatch(model):
        problems.append(
            Problem(
                f"{path}.model",
                f"{model!r} is neither a Hugging Face model id (org/name, e.g. meta-llama/Llama-3.1-70B) nor a "
                "gs:// path of weights",
            )
        )
    elif not hf_token:
        warnings.append(
            f"{path}.model: {model!r} downloads from Hugging Face without a token; a gated model (e.g. "
            "meta-llama/*) needs one: pulumi config set --secret tpu-serving:hfToken <token>"
        )


def _check_image_and_args(path: str, workload: VllmWorkload, problems: list[Problem]) -> None:
    """An image a kubelet can pull; `args` are `vllm serve` flag names and none the stack derives."""
    if workload.image is not None:
        why = naming.image_reference_problem(workload.image)
        if why:
            problems.append(Problem(f"{path}.image", why))
    for key in workload.args:
        why = RESERVED_ARGS.get(normalize_flag(key))
        if why:
            problems.append(Problem(f"{path}.args.{key}", f"derived by the stack: {why}"))
        elif not FLAG_NAME_RE.fullmatch(key):
            problems.append(Problem(f"{path}.args.{key}", "is not a `vllm serve` flag name (e.g. max-num-seqs)"))


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
    env: list[dict[str, Any]] = []
    if plan.uses_token:
        # huggingface_hub reads HF_TOKEN (the LWS and tpu-inference examples' name)
        env.append(
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": plan.token_secret_name, "key": HF_TOKEN_KEY}}}
        )
    if plan.workload.xla_cache:
        env.append({"name": "VLLM_XLA_CACHE_PATH", "value": XLA_CACHE_DIR})
    if plan.multi_host:
        # tpu-inference@v0.27.0 tpu_inference/envs.py: TPU_MULTIHOST_BACKEND in {"", "ray"}; its multi-host GKE
        # example (examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml) sets it on leader and workers.
        env.append({"name": "TPU_MULTIHOST_BACKEND", "value": "ray"})
    return env


def _volumes(plan: VllmPlan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pod volumes, container mounts): shared memory, and the bucket prefix through GCS FUSE."""
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    mounts: list[dict[str, Any]] = []
    if plan.workload.xla_cache:
        options = ",".join((*GCSFUSE_OPTIONS, f"only-dir={plan.data_prefix.rstrip('/')}"))
        volumes += [
            # the GCS FUSE sidecar's file cache in memory (the tutorial's gke-gcsfuse-cache volume)
            {"name": "gke-gcsfuse-cache", "emptyDir": {"medium": "Memory"}},
            {
                "name": "gcs-fuse-csi-ephemeral",
                "csi": {
                    "driver": "gcsfuse.csi.storage.gke.io",
                    "volumeAttributes": {"bucketName": plan.bucket, "mountOptions": options},
                },
            },
        ]
        mounts.append({"name": "gcs-fuse-csi-ephemeral", "mountPath": DATA_DIR})
    mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    return volumes, mounts


GCSFUSE_ANNOTATIONS = {
    "gke-gcsfuse/volumes": "true",
    "gke-gcsfuse/cpu-limit": "0",
    "gke-gcsfuse/memory-limit": "0",
    "gke-gcsfuse/ephemeral-storage-limit": "0",
}
# The image runs as root (tpu-inference@v0.27.0 docker/Dockerfile has no USER) and writes under /root/.cache
# (Hugging Face, JAX) and its working tree, so it keeps its own user and a writable root filesystem; everything
# else is restricted (stacks.pod_security). GKE >= 1.28 gives TPU devices to unprivileged containers.
VLLM_CONTAINER = ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    why="vllm/vllm-tpu runs as root and writes under /root/.cache (tpu-inference@v0.27.0 docker/Dockerfile: no USER)",
)


def _pod_spec(plan: VllmPlan, container: dict[str, Any]) -> dict[str, Any]:
    volumes, mounts = _volumes(plan)
    container = {
        **container,
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": tpu_resources(plan.shape),
        "volumeMounts": mounts,
    }
    spec = {
        "serviceAccountName": plan.service_account,
        **plan.tpu_placement(),
        "containers": [container],
        "volumes": volumes,
    }
    return secure_pod(spec, VLLM_CONTAINER)


def _pod_metadata(plan: VllmPlan, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    merged = {**(GCSFUSE_ANNOTATIONS if plan.workload.xla_cache else {}), **(annotations or {})}
    if merged:
        meta["annotations"] = merged
    return meta


def _server_container(plan: VllmPlan, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "ports": [{"containerPort": HTTP_PORT, "name": "http"}],
        "env": _env(plan),
        # A cold start downloads the weights and compiles for the slice: the startup probe allows an hour (70B
        # from the hub on a fresh cache), then liveness takes over. /health answers 200 once the engine runs
        # (vllm 0.27.0 vllm/entrypoints/serve/instrumentator/health.py).
        "startupProbe": _probe(HEALTH_PATH, periodSeconds=10, failureThreshold=360),
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
        "template": {"metadata": _pod_metadata(plan, plan.labels), "spec": _pod_spec(plan, container)},
    }
    if not plan.autoscaled:
        spec = {"replicas": 0 if plan.paused else plan.workload.replicas, **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.tpu_metadata(plan.name, plan.labels, scan_exceptions.skip_annotations(SKIPS)),
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
    leader_labels = {**plan.labels, "role": "leader"}
    worker_labels = {**plan.labels, "role": "worker"}
    spec: dict[str, Any] = {
        "leaderWorkerTemplate": {
            "size": plan.shape.hosts,
            "restartPolicy": "RecreateGroupOnPodRestart",
            "leaderTemplate": {"metadata": _pod_metadata(plan, leader_labels), "spec": _pod_spec(plan, leader)},
            "workerTemplate": {
                "metadata": _pod_metadata(plan, worker_labels, scan_exceptions.skip_annotations(WORKER_SKIPS)),
                "spec": _pod_spec(plan, worker),
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
