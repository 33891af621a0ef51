"""Single-host JetStream (MaxText engine + HTTP server) with an optional HPA: validation and manifests.

One replica is one pod on one single-host TPU node and takes all of its chips. With `autoscaling`, an
autoscaling/v2 HPA scales the Deployment on JetStream server metrics and TPU HBM through the cluster's metrics
adapter, and the Deployment leaves `spec.replicas` to it (no server-side-apply conflict on every `pulumi up`);
the pool's cluster autoscaler adds the nodes.

The engine container is not privileged (the reference's is): GKE 1.28 and later give TPU devices to
unprivileged containers that request `google.com/tpu`, and the stack's TPU generations need newer versions
than that. A cluster pinned below 1.28 gets `privileged: true`, as those versions require.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.facts import catalog
from stacks.facts.versions import IMAGES, Serves, image_doubts, image_gaps, image_record
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics
from stacks.problems import Problem, close_matches
from stacks.security import network_policy, scan_exceptions
from stacks.security.bucket_access import OBJECT_USER, Grant, read_grant
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption, maxtext
from stacks.serving.maxtext import CACHE_ARG, CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.startup import StartupPath, compile_cache_grant_prefix, startup_probe
from stacks.serving.workload_plan import (
    JETSTREAM_GRPC_PORT,
    JETSTREAM_HEALTH_PATH,
    JETSTREAM_HTTP_PORT,
    JETSTREAM_HTTP_SERVES,
    ServingSignals,
    WorkloadPlan,
    autoscaler_manifest,
    check_autoscaling,
    check_model_inputs,
    check_ports,
    generate_curl,
    generate_load,
    jetstream_http_probes,
    jetstream_pod_monitoring,
    jetstream_service,
    tpu_resources,
)
from stacks.serving.workload_type import WorkloadContext
from workloads.jetstream.config import JetStreamWorkload
from workloads.jetstream.presets import PRESETS, JetStreamPreset

HTTP_PORT = JETSTREAM_HTTP_PORT
GRPC_PORT = JETSTREAM_GRPC_PORT
ENGINE_CONTAINER = "maxengine-server"
PRIVILEGED_BELOW = (1, 28)
HEALTH_PATH = JETSTREAM_HEALTH_PATH
# images.<key> -> the version-matrix image it defaults to (stacks/facts/versions.py IMAGES)
DEFAULT_IMAGES = {"server": "maxengineServer", "http": "jetstreamHttp"}
# The default images that run on the TPUs: the type serves the generations they all serve.
TPU_IMAGES = (DEFAULT_IMAGES["server"],)
POD_PORTS = {GRPC_PORT: "engine's gRPC", HTTP_PORT: "jetstream-http"}
RESERVED_MAXTEXT = {
    CHECKPOINT_ARG: "set `checkpoint` instead",
    METRICS_ARG: "set `prometheusPort` instead",
    CACHE_ARG: "the stack keeps the compile cache under compile-cache/<workload>/ in its bucket",
}
# The cold case the engine's startup probe allows: the half hour the earlier probe allowed (failureThreshold 180 x
# periodSeconds 10) for loading the checkpoint and compiling, now probed from the start (stacks/serving/startup.py).
COLD_START_S = 1800


@dataclass(frozen=True)
class JetStreamPlan(WorkloadPlan):
    workload: JetStreamWorkload
    adapter: str = metrics_adapters.DEFAULT
    min_master_version: str | None = None
    cluster: str = ""

    @property
    def preset(self) -> JetStreamPreset:
        return PRESETS[self.workload.model]

    def read_paths(self) -> list[tuple[str, str]]:
        return [("checkpoint", self.workload.checkpoint)]

    def grants(self) -> list[Grant]:
        """The engine reads the checkpoint (MaxText load_parameters_path): objectViewer on it; and reads and writes
        its own compile caches: objectUser on compile-cache/<workload>/."""
        read = self.workload.grant_checkpoint_read
        grant = read_grant("checkpoint", self.workload.checkpoint, self.bucket, read, other_key="objectviewer")
        cache = Grant("compile-cache", self.bucket, OBJECT_USER, compile_cache_grant_prefix(self.name))
        return [*([grant] if grant else []), cache]

    @property
    def engine_cache_url(self) -> str:
        """gs:// directory of the engine's compile cache, keyed by its image and slice shape."""
        return self.compile_cache_url(self.image("server"))

    @property
    def startup(self) -> StartupPath:
        probe = startup_probe({}, COLD_START_S)
        return StartupPath(
            images=(self.image("server"), self.image("http")),
            weights="checkpoint-gcs",
            compile_cache="gcs",
            startup_initial_delay_s=probe["initialDelaySeconds"],
            startup_period_s=probe["periodSeconds"],
            compile_cache_url=self.engine_cache_url,
            cold_start_s=COLD_START_S,
        )

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (self.workload.service.port, GRPC_PORT)

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    @property
    def service_name(self) -> str:
        return f"{self.name}-svc"

    @property
    def autoscaled(self) -> bool:
        """An HPA scales the Deployment (never while the stack is paused)."""
        return self.workload.autoscaling is not None and not self.paused

    @property
    def hosts_needed(self) -> int:
        """One replica is one pod on one single-host node."""
        auto = self.workload.autoscaling
        return auto.max_replicas if auto is not None else self.workload.replicas

    @property
    def rollout_hosts(self) -> int:
        """A surge replica of its Deployment is one more single-host node."""
        return 1

    @property
    def hpa_metrics(self) -> dict[str, metrics.HpaMetric]:
        return metrics.HPA_METRICS

    @property
    def signals(self) -> ServingSignals:
        """The orchestrator's prefill queue (AI-Hypercomputer/JetStream@v0.3:jetstream/core/metrics/prometheus.py)."""
        return ServingSignals(queue=metrics.HPA_METRICS["jetstream_prefill_backlog_size"].series)

    @property
    def chips_at_peak(self) -> int:
        """Each replica requests the chips of one node."""
        return self.hosts_needed * self.shape.tpu_request

    @property
    def privileged(self) -> bool:
        if not self.min_master_version:
            return False
        return catalog.version_tuple(self.min_master_version)[:2] < PRIVILEGED_BELOW

    @property
    def weights_bytes(self) -> int:
        """The preset's parameters at the served weight width (MaxText `quantization`), as the HBM check counts them."""
        return catalog.weight_bytes(self.preset.params_billion, maxtext.weight_bits(self.maxtext_pairs()))

    def maxtext_pairs(self) -> list[tuple[str, str]]:
        derived: dict[str, maxtext.Scalar] = {
            CHECKPOINT_ARG: self.workload.checkpoint,
            METRICS_ARG: self.workload.prometheus_port,
            CACHE_ARG: self.engine_cache_url,
        }
        return maxtext.merge(maxtext.merge(self.preset.args(), derived), self.workload.maxtext)

    def image(self, key: str) -> str:
        return getattr(self.workload.images, key) or self.served(IMAGES[DEFAULT_IMAGES[key]])

    def needs(self) -> dict[str, Serves]:
        """What the stack asks of each image: the engine exports the HPA's server series and runs on the pool's
        TPUs; the HTTP server answers the probes and /generate."""
        auto = self.workload.autoscaling
        series = {
            metrics.HPA_METRICS[m.name].series
            for m in (auto.metrics if auto is not None else [])
            if m.name in metrics.HPA_METRICS and metrics.HPA_METRICS[m.name].origin == "server"
        }
        return {
            "server": Serves(metrics=frozenset(series), tpus=frozenset({self.shape.generation.name})),
            "http": JETSTREAM_HTTP_SERVES,
        }

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [deployment(self)]

    def ingress_allows(self) -> list[dict[str, Any]]:
        return [
            network_policy.allow_clients(self.name, self.namespace, self.labels, [HTTP_PORT, GRPC_PORT]),
            network_policy.allow_metrics(self.name, self.namespace, self.labels, self.workload.prometheus_port),
        ]


# ---- validation ---------------------------------------------------------------------------------------


@functools.cache
def maxtext_keys() -> dict[str, Any]:
    """maxtext_keys.json beside this file: the MaxText config keys of the pinned server image, extracted from MaxText's
    base config at the tag the image is built from (tooling/oracles/maxtext_keys.py records the origin)."""
    return json.loads((Path(__file__).with_name("maxtext_keys.json")).read_text())


def maxtext_key_problems(path: str, overrides: Mapping[str, Any]) -> list[Problem]:
    """Each `maxtext` key MaxText's base config does not have: MaxText refuses it at start (its pyconfig: "Key ... was
    passed at the command line but isn't in config")."""
    data = maxtext_keys()
    keys = set(data["keys"])
    return [
        Problem(
            f"{path}.maxtext.{key}",
            f"{key} is not a MaxText config key of the pinned server ({data['source']}), which refuses it at start; "
            f"{close_matches(key, keys)}",
        )
        for key in overrides
        if key not in keys
    ]


def check(
    path: str,
    workload: JetStreamWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> JetStreamPlan | None:
    adapter = ctx.adapter
    check_model_inputs(path, workload, PRESETS, RESERVED_MAXTEXT, "gs://my-bucket/gemma-7b/items", problems)
    if workload.images.server is None:  # the pinned server's MaxText; another image has its own keys
        problems.extend(maxtext_key_problems(path, workload.maxtext))
    check_ports(f"{path}.prometheusPort", workload.prometheus_port, POD_PORTS, problems)
    check_ports(f"{path}.service.port", workload.service.port, {GRPC_PORT: "Service's jetstream-grpc"}, problems)
    auto = workload.autoscaling
    if auto is not None:
        check_autoscaling(path, auto, adapter, metrics.HPA_METRICS, problems, environment=ctx.environment)
    if pool is None or problems:
        return None
    shape = pool.shape
    if shape.multi_host:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is multi-host ({shape.generation.name} {shape.topology}, {shape.hosts} hosts); "
                "single-host JetStream needs a single-host pool (e.g. v5e 2x4 on ct5lp-hightpu-8t)",
            )
        )
        return None
    capacity = pool.max_nodes_per_node_pool * shape.chips_per_host
    most = auto.max_replicas if auto is not None else workload.replicas
    key = "autoscaling.maxReplicas" if auto is not None else "replicas"
    if most * shape.tpu_request > capacity:
        problems.append(
            Problem(
                f"{path}.{key}",
                f"{most} replicas x {shape.tpu_request} chips = {most * shape.tpu_request} chips, but pool {pool.name!r} "
                f"holds at most {capacity} chips ({pool.max_nodes_per_node_pool} nodes x {shape.chips_per_host}); "
                "raise the pool's autoscaling.maxNodes or lower the replicas",
            )
        )
    plan = JetStreamPlan.on(
        workload,
        pool,
        namespace,
        ctx,
        adapter=adapter,
        min_master_version=ctx.min_master_version,
        cluster=ctx.cluster_name,
    )
    for key, needs in plan.needs().items():
        ref = plan.image(key)
        for gap in image_gaps(ref, needs):
            problems.append(Problem(f"{path}.images.{key}", f"{gap}: pin an image that does, or do not ask for it"))
        for series, doubt in image_doubts(ref, needs).items():
            warnings.append(f"{path}.images.{key}: {doubt}; {_reading(adapter, series)}")
        if image_record(ref) is None:
            warnings.append(
                f"{path}.images.{key}: {ref} is not in the version matrix; the stack cannot check that it serves "
                f"{_describe(needs)}"
            )
    mesh_problem = maxtext.parallelism_problem(plan.maxtext_pairs(), shape.chips)
    if mesh_problem:
        problems.append(Problem(f"{path}.maxtext", f"{mesh_problem} ({shape.generation.name} {shape.topology})"))
    warning = catalog.sizing_warning(plan.preset.params_billion, maxtext.weight_bits(plan.maxtext_pairs()), shape, path)
    if warning:
        warnings.append(warning)
    return plan


def _reading(adapter: str, series: str) -> str:
    """How the configured adapter and the dashboard read a metric whose series the image's sources dispute."""
    metric = next(m for m in metrics.HPA_METRICS.values() if m.series == series)
    entry = metrics_adapters.get(adapter)
    if metric.fallback is None:
        return "only a deploy can tell"
    either = f"{metric.series} or else {metric.fallback.expression.format(metric.fallback.series)}"
    if entry is not None and entry.fallbacks:
        return f"{adapter} and the dashboard read {either}, so the HPA works either way"
    return (
        f"the dashboard reads {either}, but {adapter} reads {metric.series} only: if the image exports "
        f"{metric.fallback.series}, this HPA metric has no value (prometheus-adapter reads either)"
    )


def _describe(needs: Serves) -> str:
    parts = [
        f"{what} {', '.join(sorted(have))}"
        for what, have in (("endpoints", needs.endpoints), ("metrics", needs.metrics), ("TPU", needs.tpus))
        if have
    ]
    return "; ".join(parts)


# ---- manifests ----------------------------------------------------------------------------------------


def _http_probe(**timing: int) -> dict[str, Any]:
    return {"httpGet": {"path": HEALTH_PATH, "port": HTTP_PORT, "scheme": "HTTP"}, **timing}


# The maxengine-server and jetstream-http images' users and writable paths are not published (their Dockerfiles
# are not in the tutorials' sources): they keep the image's user and a writable root filesystem; everything
# else is restricted. The engine is privileged only below GKE 1.28 (see the module docstring).
ENGINE_SECURITY = IMAGE_DEFAULTS
HTTP_SECURITY = IMAGE_DEFAULTS
PRIVILEGED_ENGINE_SECURITY = ContainerSecurity(
    non_root=False, read_only_root=False, writable=(), privileged=True, why="TPU device access on GKE < 1.28"
)


def deployment(plan: JetStreamPlan) -> dict[str, Any]:
    engine_security = PRIVILEGED_ENGINE_SECURITY if plan.privileged else ENGINE_SECURITY
    engine: dict[str, Any] = {
        "name": ENGINE_CONTAINER,
        "image": plan.image("server"),
        "imagePullPolicy": "IfNotPresent",
        "args": maxtext.render(None, plan.maxtext_pairs()),
        "ports": [{"containerPort": GRPC_PORT}, {"containerPort": plan.workload.prometheus_port, "name": "metrics"}],
        "resources": tpu_resources(plan.shape),
        # Probed from the start for as long as a cold start takes (COLD_START_S), then liveness takes over.
        "startupProbe": startup_probe(_http_probe(), COLD_START_S),
        "livenessProbe": _http_probe(periodSeconds=60, failureThreshold=10),
        "readinessProbe": _http_probe(periodSeconds=10, failureThreshold=3),
    }
    http = {
        "name": "jetstream-http",
        "image": plan.image("http"),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": HTTP_PORT}],
        "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
        **jetstream_http_probes(),
    }
    spec: dict[str, Any] = {
        "selector": {"matchLabels": plan.labels},
        "strategy": plan.deployment_strategy(),
        "template": {
            "metadata": {"labels": plan.labels},
            "spec": disruption.drained(
                secure_pod(
                    {
                        "serviceAccountName": plan.service_account,
                        **plan.tpu_placement(),
                        "containers": [engine, http],
                    },
                    {
                        ENGINE_CONTAINER: engine_security,
                        "jetstream-http": HTTP_SECURITY,
                    },
                )
            ),
        },
    }
    if not plan.autoscaled:
        spec = {"replicas": 0 if plan.paused else plan.workload.replicas, **spec}
    skips = [
        *scan_exceptions.TAG_PINNED,
        scan_exceptions.CPU_LIMIT,
        scan_exceptions.HOST_MEMORY_LIMIT,
        *scan_exceptions.security(engine_security),
        *scan_exceptions.security(HTTP_SECURITY),
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.tpu_metadata(plan.name, plan.labels, scan_exceptions.skip_annotations(skips)),
        "spec": spec,
    }


def service(plan: JetStreamPlan) -> dict[str, Any]:
    grpc = {"protocol": "TCP", "name": "jetstream-grpc", "port": GRPC_PORT, "targetPort": GRPC_PORT}
    return jetstream_service(plan, plan.service_name, plan.labels, [grpc])


def hpa(plan: JetStreamPlan) -> dict[str, Any] | None:
    """What scales the Deployment (stacks.serving.workload_plan.autoscaler_manifest): its HPA, or its KEDA ScaledObject,
    kept paused at 0 replicas while the stack is paused; None when nothing scales it."""
    auto = plan.workload.autoscaling
    if auto is None or not (plan.autoscaled or (plan.paused and plan.keda)):
        return None
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": plan.name}
    return autoscaler_manifest(plan, plan.labels, target, metrics.HPA_METRICS)


def pod_monitoring(plan: JetStreamPlan) -> dict[str, Any]:
    return jetstream_pod_monitoring(plan, plan.labels)


def commands(plan: JetStreamPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    ns, svc, port = plan.namespace, plan.service_name, plan.workload.service.port
    http, grpc = local_ports.get(port, port), local_ports.get(GRPC_PORT, GRPC_PORT)
    out = {
        "portForward": f"kubectl -n {ns} port-forward svc/{svc} {http}:{port} {grpc}:{GRPC_PORT}",
        "curl": generate_curl(http),
        # concurrent /generate requests through the port-forward: enough to move the HPA, runs as given
        "loadTest": generate_load(http),
    }
    if plan.autoscaled:
        out["watchHpa"] = f"kubectl -n {ns} get hpa {plan.hpa_name} --watch"
    return out
