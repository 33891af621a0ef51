"""The Kubernetes objects of a vLLM workload, from its plan: the Deployment or LeaderWorkerSet (with the compile
cache's containers), its Service, token Secret, PodMonitoring, autoscaler and weights-staging Job."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any

from stacks.monitoring import metrics as stack_metrics
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.security import scan_exceptions
from stacks.security.pod_security import ContainerSecurity, container_security_context, secure_pod
from stacks.serving import disruption
from stacks.serving.startup import startup_probe
from stacks.serving.workload_plan import (
    INTERNAL_LB_ANNOTATION,
    LWS_API,
    LWS_AVAILABLE,
    LWS_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    autoscaler_manifest,
    tpu_resources,
)
from workloads.vllm.compile_cache import (
    CACHE_HELPER_RESOURCES,
    CACHE_MOUNT,
    CACHE_PULL_SCRIPT,
    CACHE_PULL_WORKERS,
    CACHE_PUSH_INTERVAL_S,
    CACHE_PUSH_SCRIPT,
    XLA_CACHE_DIR,
)
from workloads.vllm.lora import LOCAL_FILES_DIR, PULL_SCRIPT
from workloads.vllm.metrics import VLLM_METRICS
from workloads.vllm.plan import (
    COLD_START_S,
    CONTAINER,
    DECODE_SERVER_PORT,
    HEALTH_PATH,
    HF_TOKEN_KEY,
    HTTP_PORT,
    KV_SIDE_CHANNEL_PORT,
    KV_TRANSFER_PORT,
    METRICS_PATH,
    MODEL_IMPL_TORCH,
    RAY_PORT,
    RAY_SCRIPT,
    SIDECAR_CONTAINER,
    VllmPlan,
)
from workloads.vllm.staging import STAGE_PATTERNS, STAGE_RESOURCES, STAGE_SCRIPT, STAGE_TIMEOUT_MINUTES, STAGED_MARKER


def _probe(path: str, port: int = HTTP_PORT, **timing: int) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": port, "scheme": "HTTP"}, **timing}


MODEL_IMPL_ENV = "MODEL_IMPL_TYPE"  # its torch value: plan.MODEL_IMPL_TORCH


def _env(plan: VllmPlan) -> list[dict[str, Any]]:
    # huggingface_hub reads HF_HUB_OFFLINE: no request to the Hub (weights, config and tokenizer come from gs://)
    env: list[dict[str, Any]] = [{"name": "HF_HUB_OFFLINE", "value": "1"}]
    if plan.disaggregated:
        # the address the TPU connector serves KV on and tells the other role (plan.py KV_TRANSFER_PORT)
        env.append({"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if plan.workload.xla_cache:
        env.append({"name": "VLLM_XLA_CACHE_PATH", "value": XLA_CACHE_DIR})
    if plan.workload.loras:
        # LoRA needs tpu-inference's vLLM (torch) model path: in the pinned 0.32.0 wheel the JAX (flax_nnx) loader
        # sets lora_manager None (tpu_inference/models/common/model_loader.py:541) and LoRA walks torch modules
        # (tpu_inference/runner/lora_utils.py), while MODEL_IMPL_TYPE "auto" resolves Llama and Qwen2 to flax_nnx
        # (model_loader.py, _VLLM_PREFERRED_ARCHITECTURES; envs.py choices auto, vllm, flax_nnx, jetpack). Upstream's
        # LoRA tests run with MODEL_IMPL_TYPE=vllm (vllm-project/tpu-inference@v0.27.0:.buildkite/features/
        # LoRA_Torch.yml:24, .buildkite/pipeline_jax.yml:202,211,295; v0.27.0 sources, the pinned engine is 0.32.0).
        env.append({"name": MODEL_IMPL_ENV, "value": MODEL_IMPL_TORCH})
    if plan.multi_host:
        # tpu-inference 0.32.0 tpu_inference/envs.py: TPU_MULTIHOST_BACKEND in {"", "ray"}; its multi-host GKE
        # example (examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml) sets it on leader and workers.
        env.append({"name": "TPU_MULTIHOST_BACKEND", "value": "ray"})
    return env


def _cache_env(plan: VllmPlan) -> list[dict[str, str]]:
    return [
        {"name": "CACHE_BUCKET", "value": plan.bucket},
        {"name": "CACHE_PREFIX", "value": plan.compile_cache_prefix},
        {"name": "CACHE_DIR", "value": XLA_CACHE_DIR},
    ]


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
    if plan.local_copies:
        volumes.append({"name": "model-files", "emptyDir": {}})
        mounts.append(LOCAL_FILES_MOUNT)
    return volumes, mounts


LOCAL_FILES_MOUNT = {"name": "model-files", "mountPath": LOCAL_FILES_DIR}


def local_copies_container(plan: VllmPlan) -> dict[str, Any]:
    """The init container that copies the LoRA adapters and the draft model from gs:// to the local directories
    the server's flags name (--lora-modules, --speculative-config)."""
    return {
        "name": "model-files-pull",
        "image": plan.image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", PULL_SCRIPT],
        "env": [{"name": "ITEMS", "value": json.dumps(plan.local_copies)}],
        "resources": CACHE_HELPER_RESOURCES,
        "volumeMounts": [LOCAL_FILES_MOUNT],
        "securityContext": container_security_context(VLLM_CONTAINER),
    }


# The image runs as root (tpu-inference@v0.27.0 docker/Dockerfile has no USER) and writes under /root/.cache
# (Hugging Face, JAX) and its working tree, so it keeps its own user and a writable root filesystem; everything
# else is restricted (stacks.security.pod_security). GKE >= 1.28 gives TPU devices to unprivileged containers.
VLLM_CONTAINER = ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    why="vllm/vllm-tpu runs as root and writes under /root/.cache (tpu-inference@v0.27.0 docker/Dockerfile: no USER)",
)


def _pod_spec(plan: VllmPlan, container: dict[str, Any], *, serving: bool, role: str | None = None) -> dict[str, Any]:
    """A TPU pod of the workload: `container` with every chip of its host; with the compile cache, its pull before
    the server and, on the serving pod only, its push; a decode server's routing sidecar."""
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
    if plan.local_copies:
        # every host: on a multi-host slice each Ray worker's model runner loads adapters and draft from the same path
        spec.setdefault("initContainers", []).append(local_copies_container(plan))
    if role == "decode":
        spec["containers"].insert(1, routing_sidecar(plan))
        names = [c["name"] for c in (*spec.get("initContainers", []), *spec["containers"])]
        security = {n: SIDECAR_SECURITY if n == SIDECAR_CONTAINER else VLLM_CONTAINER for n in names}
        return disruption.drained(secure_pod(spec, security))
    return disruption.drained(secure_pod(spec, VLLM_CONTAINER))


# The router's routing sidecar (llm-d/llm-d-router@v0.10.0 cmd/pd-sidecar; image
# ghcr.io/llm-d/llm-d-router-disagg-sidecar, versions.IMAGES llmDDisaggSidecar), with the flags of that release
# (pkg/sidecar/proxy/options.go): --port (default 8000), --model-server-port (--vllm-port is its deprecated alias),
# --kv-connector nixlv2 (its default, the protocol llm-d's TPU guide runs TPUConnector with: the prefill request with
# max_tokens 1, its response's kv_transfer_params copied into the decode request, as tpu-inference@v0.27.0
# examples/disagg/toy_proxy_server.py does), and --secure-proxy=false (default true: a self-signed TLS listener; the
# gateway and the picker reach the pods over plain HTTP). llm-d's guide (guides/recipes/modelserver/base/single-host/
# pd/vllm/patch-sidecar.yaml) writes --secure-serving=false, a flag of its nightly sidecar that v0.10.0's does not
# have (there it is the picker's flag, pkg/epp/server/options.go): an unknown flag stops the sidecar at start.
SIDECAR_ARGS = (
    f"--port={HTTP_PORT}",
    f"--model-server-port={DECODE_SERVER_PORT}",
    "--kv-connector=nixlv2",
    "--secure-proxy=false",
)
SIDECAR_RESOURCES = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
SIDECAR_SECURITY = ContainerSecurity()  # restricted: non-root, read-only root, no capabilities


def routing_sidecar(plan: VllmPlan) -> dict[str, Any]:
    """The decode pod's routing sidecar on HTTP_PORT: sends the prefill to the server the picker chose
    (x-prefiller-host-port), then the request to the decode server on DECODE_SERVER_PORT; every other path passes
    through to it (so /health and /metrics on HTTP_PORT are the decode server's)."""
    return {
        "name": SIDECAR_CONTAINER,
        "image": plan.sidecar_image,
        "imagePullPolicy": "IfNotPresent",
        "args": list(SIDECAR_ARGS),
        "ports": [{"containerPort": HTTP_PORT, "name": "http"}],
        "resources": SIDECAR_RESOURCES,
        "readinessProbe": _probe(HEALTH_PATH, periodSeconds=10, failureThreshold=3),
        "livenessProbe": _probe(HEALTH_PATH, periodSeconds=30, failureThreshold=5),
    }


def _pod_metadata(plan: VllmPlan, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"labels": labels}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _server_container(plan: VllmPlan, name: str, role: str | None = None) -> dict[str, Any]:
    port = plan.server_port(role)
    # behind a decode server's sidecar, the sidecar's port is `http` (the one PodMonitoring scrapes, proxied here)
    ports = [{"containerPort": port, "name": "server" if role == "decode" else "http"}]
    if role is not None:
        ports += [
            {"containerPort": KV_TRANSFER_PORT, "name": "kv-transfer"},
            {"containerPort": KV_SIDE_CHANNEL_PORT, "name": "kv-side-channel"},
        ]
    return {
        "name": name,
        "ports": ports,
        "env": _env(plan),
        # No fixed delay: probed from the start every few seconds, for as long as a cold start takes (COLD_START_S),
        # then liveness takes over. /health answers 200 once the engine runs
        # (vllm 0.32.0 vllm/entrypoints/serve/instrumentator/health.py).
        "startupProbe": startup_probe(_probe(HEALTH_PATH, port), COLD_START_S),
        "livenessProbe": _probe(HEALTH_PATH, port, periodSeconds=30, failureThreshold=5),
        "readinessProbe": _probe(HEALTH_PATH, port, periodSeconds=10, failureThreshold=3),
    }


def deployment(plan: VllmPlan, role: str | None = None) -> dict[str, Any]:
    """The servers on a single-host pool: all of them, or one role's of a disaggregated workload (`role`)."""
    container = {
        **_server_container(plan, CONTAINER, role),
        "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        "args": plan.serve_args(role),
    }
    # The selector stays `app` (a Deployment's selector is immutable); the pods carry the serving labels, which a
    # LeaderWorkerSet's leaders carry too (VllmPlan.serving_selector). A disaggregated role's selector adds its role
    # label, so the two roles' Deployments select disjoint pods.
    spec: dict[str, Any] = {
        "selector": {"matchLabels": plan.role_selector(role)},
        "strategy": plan.deployment_strategy(),
        "template": {
            "metadata": _pod_metadata(plan, plan.role_labels(role)),
            "spec": _pod_spec(plan, container, serving=True, role=role),
        },
    }
    spec = {**plan.replicas(plan.role_replicas(role)), **spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.tpu_metadata(
            plan.role_name(role),
            plan.role_selector(role),
            {**scan_exceptions.skip_annotations([*SKIPS, *_push_skips(plan)]), **plan.replicas_annotations()},
        ),
        "spec": spec,
    }


# The checkov findings a vLLM Deployment or LeaderWorkerSet accepts, with their reasons (stacks/security/scan_exceptions.py).
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


LWS_READY = LWS_AVAILABLE  # (stacks/serving/workload_plan.py)


def worker_command() -> str:
    return f"bash {RAY_SCRIPT} worker --ray_address=$(LWS_LEADER_ADDRESS)"


# One headless Service per group, named after its leader pod `<lws>-<group>`, instead of one named after the
# LeaderWorkerSet, which the workload's own Service takes (VllmPlan.service_name). sigs.k8s.io/lws@v0.7.0:
# pkg/controllers/leaderworkerset_controller.go reconcileHeadlessServices creates `lws.Name` only when the policy is
# Shared; pkg/controllers/pod_controller.go creates one named pod.Name per leader pod and gives the workers'
# StatefulSet serviceName leaderPod.Name; pkg/webhooks/pod_webhook.go sets the leader's subdomain to its own name;
# pkg/utils/pod/pod_utils.go AddLWSVariables: LWS_LEADER_ADDRESS = <lws>-<group>.<subdomain>.<namespace>, the
# leader's DNS name either way. Mutable (pkg/webhooks/leaderworkerset_webhook.go ValidateUpdate refuses only null).
LWS_SUBDOMAIN_POLICY = "UniquePerReplica"


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
        "rolloutStrategy": plan.lws_rollout_strategy(),
        "networkConfig": {"subdomainPolicy": LWS_SUBDOMAIN_POLICY},
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
    spec = {**plan.replicas(plan.workload.replicas), **spec}
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        # one group per slice: a group's pods share a node pool, and no two groups share one; awaited until every
        # group is ready (LWS_READY)
        "metadata": plan.tpu_metadata(
            plan.name,
            plan.labels,
            annotations={
                LWS_EXCLUSIVE: SLICE_TOPOLOGY_KEY,
                **scan_exceptions.skip_annotations(SKIPS),
                **plan.replicas_annotations(),
            },
            wait_for=LWS_READY,
        ),
        "spec": spec,
    }


def service(plan: VllmPlan) -> dict[str, Any]:
    """The OpenAI-compatible API, on the serving pods only (leaders of a LeaderWorkerSet)."""
    svc = plan.workload.service
    annotations = dict(INTERNAL_LB_ANNOTATION) if svc.type == "LoadBalancer" else {}
    metadata = plan.metadata(plan.service_name, plan.labels, **({"annotations": annotations} if annotations else {}))
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "type": svc.type,
            "selector": plan.service_selector,
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
    manifest = stack_metrics.pod_monitoring(
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
    """What scales the workload (stacks.serving.workload_plan.autoscaler_manifest): its HPA, or its KEDA ScaledObject,
    which is kept, paused at 0 replicas, while the stack is paused; None when nothing scales it."""
    auto = plan.workload.autoscaling
    if auto is None or not (plan.autoscaled or (plan.paused and plan.keda)):
        return None
    target = (
        {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": plan.name}
        if plan.multi_host
        else {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name}
    )
    return autoscaler_manifest(plan, plan.labels, target, VLLM_METRICS, selector=plan.labels)


def stage_job(plan: VllmPlan) -> dict[str, Any]:
    """The Job that copies a Hugging Face model into the stack bucket once (per model and revision), on the
    system pool; the server is registered after it completes."""
    items = [{"repo": repo, "revision": rev, "prefix": prefix} for repo, rev, prefix in plan.stage_items]
    env: list[dict[str, Any]] = [
        {"name": "ITEMS", "value": json.dumps(items)},
        {"name": "BUCKET", "value": plan.bucket},
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


@dataclass(frozen=True)
class ServedVllmPlan(VllmPlan):
    """The plan `check` returns: VllmPlan's values with the pod manifests this module makes of them (the plan's
    values sit below the manifests, so the objects built from them are added here, one layer up)."""

    def pod_manifests(self) -> list[dict[str, Any]]:
        servers = [leader_worker_set(self)] if self.multi_host else [deployment(self, role) for role in self.roles]
        gate = [m for m in self.gate_manifests() if m["kind"] == "Job"]
        return [*servers, *([stage_job(self)] if self.stage_items else []), *gate]
