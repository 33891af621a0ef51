"""Single-host JetStream (MaxText engine + HTTP server) with an optional HPA: its plan, the values every other module
of the type reads (ports, images, the MaxText arguments, grants, what the stack asks of each image).

One replica is one pod on one single-host TPU node and takes all of its chips. With `autoscaling`, an
autoscaling/v2 HPA scales the Deployment on JetStream server metrics and TPU HBM through the cluster's metrics
adapter, and the Deployment leaves `spec.replicas` to it (no server-side-apply conflict on every `pulumi up`);
the pool's cluster autoscaler adds the nodes. The type's rules are in checks.py, its Kubernetes objects in
manifests.py, the commands it prints in commands.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.facts import catalog
from stacks.facts.versions import IMAGES, Serves
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics
from stacks.security import network_policy
from stacks.security.bucket_access import OBJECT_USER, Grant, read_grant
from stacks.serving import maxtext
from stacks.serving.maxtext import CACHE_ARG, CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.startup import StartupPath, compile_cache_grant_prefix, startup_probe
from stacks.serving.workload_plan import ServingSignals, WorkloadPlan
from workloads.jetstream import server
from workloads.jetstream.config import JetStreamWorkload
from workloads.jetstream.presets import PRESETS, JetStreamPreset
from workloads.jetstream.server import (
    JETSTREAM_GRPC_PORT,
    JETSTREAM_HEALTH_PATH,
    JETSTREAM_HTTP_PORT,
    JETSTREAM_HTTP_SERVES,
    JETSTREAM_METRICS,
    JETSTREAM_SIGNALS,
)

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
        return JETSTREAM_METRICS

    @property
    def signals(self) -> ServingSignals:
        """The orchestrator's prefill queue (workloads/jetstream/server.py JETSTREAM_SIGNALS)."""
        return JETSTREAM_SIGNALS

    def dashboard_panels(self, cluster: str) -> list[tuple[str, str, str]]:
        return server.panels(self, cluster)

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
            JETSTREAM_METRICS[m.name].series
            for m in (auto.metrics if auto is not None else [])
            if m.name in JETSTREAM_METRICS and JETSTREAM_METRICS[m.name].origin == "server"
        }
        return {
            "server": Serves(metrics=frozenset(series), tpus=frozenset({self.shape.generation.name})),
            "http": JETSTREAM_HTTP_SERVES,
        }

    def ingress_allows(self) -> list[dict[str, Any]]:
        return [
            network_policy.allow_clients(self.name, self.namespace, self.labels, [HTTP_PORT, GRPC_PORT]),
            network_policy.allow_metrics(self.name, self.namespace, self.labels, self.workload.prometheus_port),
        ]
