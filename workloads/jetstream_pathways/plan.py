"""JetStream + MaxText + Pathways on a LeaderWorkerSet: its plan, the values every other module of the type reads
(ports, images, the MaxText arguments, the group's size, the scratch prefix and grants).

One LWS group per replica: a leader pod (Pathways proxy and resource manager, the JetStream server `jax-tpu`,
and `jetstream-http`) plus one Pathways worker per TPU host of every slice of the pool. Every value the
reference tutorial substitutes by hand comes from the pool: node selectors, `google.com/tpu` per worker,
`size`, `--instance_count`, `--instance_type`, the sub-group size, and the scratch path on the stack bucket.
The type's rules are in checks.py, its Kubernetes objects in manifests.py, the commands it prints in commands.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.facts.versions import IMAGES
from stacks.security import network_policy
from stacks.security.bucket_access import OBJECT_USER, Grant, read_grant
from stacks.serving import maxtext
from stacks.serving.maxtext import CHECKPOINT_ARG, METRICS_ARG
from stacks.serving.startup import StartupPath, startup_probe
from stacks.serving.workload_plan import WorkloadPlan
from workloads.jetstream import server
from workloads.jetstream.server import JETSTREAM_GRPC_PORT, JETSTREAM_HTTP_PORT
from workloads.jetstream_pathways.config import JetStreamPathwaysWorkload
from workloads.jetstream_pathways.presets import PRESETS, ModeSpec, PathwaysPreset, mode_spec

# The TPU part of Pathways' --instance_type (tpuv6e in tpuv6e:4x4), per catalog generation, as xpk names them
# (AI-Hypercomputer/xpk src/xpk/core/system_characteristics.py pathways_tpu_version; ../shared/reference/
# gke-tpu-facts.md R1): v5p is "tpuv5". A generation not here is refused (checks.py).
INSTANCE_TYPES: dict[str, str] = {
    "v4": "tpuv4",
    "v5e": "tpuv5e",
    "v5p": "tpuv5",
    "v6e": "tpuv6e",
    "tpu7x": "tpu7x",
}


def instance_type(shape: catalog.SliceShape) -> str:
    """Pathways' --instance_type of one slice: <its generation's TPU type>:<topology>."""
    return f"{INSTANCE_TYPES[shape.generation.name]}:{shape.topology}"


RM_PORT = 38677  # Pathways resource manager
WORKER_PORT = 38679
PROXY_PORT = 38681
HTTP_PORT = JETSTREAM_HTTP_PORT
# images.<key> of the JetStream server (jax-tpu)
ENGINE_IMAGE = "jetstream"
# images.<key> -> the version-matrix image it defaults to (stacks/facts/versions.py IMAGES)
DEFAULT_IMAGES = {
    "proxy": "pathwaysProxy",
    "server": "pathwaysServer",
    ENGINE_IMAGE: "jetstreamPathways",
    "http": "jetstreamHttpPathways",
}
# The default images that run on the TPUs: the type serves the generations they all serve.
TPU_IMAGES = tuple(DEFAULT_IMAGES[k] for k in ("server", "proxy", ENGINE_IMAGE))
# pathwaysutils sets jax_enable_compilation_cache False on the Pathways backend "because Pathways handles its own
# compilation cache" (AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py initialize; from v0.0.8 in
# pathwaysutils/__init__.py); JetStream's engine imports it (AI-Hypercomputer/JetStream@v0.3
# jetstream/engine/__init__.py). So the stack sets no jax_cache_dir and grants no compile-cache prefix here: a cache
# JAX never reads would only cost a grant. No source documents a Pathways compile cache that outlives a replica.
PATHWAYS_CACHE_OFF = (
    "pathwaysutils turns JAX's persistent compile cache off under Pathways (AI-Hypercomputer/pathways-utils "
    "_initialize.py), so the stack sets none; no source documents a Pathways compile cache that survives a new replica"
)
# Pathways persistence: with ENABLE_PATHWAYS_PERSISTENCE=1 on the JAX client, pathwaysutils registers its Orbax
# handlers (`_is_persistence_enabled`, `orbax_handler.register_pathways_handlers`), with which the Pathways workers
# read and write the arrays' shards themselves; the handler raises "OCDBT not supported for Pathways." for an OCDBT
# checkpoint and writes use_ocdbt=False, use_zarr3=False (AI-Hypercomputer/pathways-utils@v0.1.9
# pathwaysutils/_initialize.py, pathwaysutils/persistence/orbax_handler.py). MaxText restores load_parameters_path
# with checkpoint_storage_use_ocdbt / checkpoint_storage_use_zarr3 (both True in its configs/base.yml; passed to
# checkpointing.load_params_from_path by maxtext_utils.setup_decode_state, AI-Hypercomputer/maxtext).
PERSISTENCE_ENV = "ENABLE_PATHWAYS_PERSISTENCE"
PERSISTENCE_ARGS = {"checkpoint_storage_use_ocdbt": False, "checkpoint_storage_use_zarr3": False}
# Ports of the leader pod's containers (proxy, resource manager, JetStream, HTTP): the metrics port is not one.
LEADER_PORTS = {
    PROXY_PORT: "Pathways proxy",
    RM_PORT: "Pathways resource manager",
    JETSTREAM_GRPC_PORT: "JetStream gRPC",
    HTTP_PORT: "jetstream-http",
}
# The cold case jax-tpu's startup probe allows: what the reference's probe allowed, its mode's initial delay
# (presets.Probes.startup_initial_delay) plus failureThreshold 10000 x periodSeconds 1
# (kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml), now probed from the start.
REFERENCE_STARTUP_WINDOW_S = 10000


@dataclass(frozen=True)
class PathwaysPlan(WorkloadPlan):
    workload: JetStreamPathwaysWorkload

    @property
    def preset(self) -> PathwaysPreset:
        return PRESETS[self.workload.model]

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (self.workload.service.port,)

    @property
    def mode(self) -> ModeSpec:
        return mode_spec(self.preset, self.workload.mode)

    @property
    def size(self) -> int:
        """Pods per LWS group: one Pathways worker per host of every slice, plus the leader."""
        return self.pool.slices * self.shape.hosts + 1

    @property
    def hosts_needed(self) -> int:
        """Each replica (LeaderWorkerSet group) takes every slice of the pool."""
        return self.workload.replicas * self.pool.slices * self.shape.hosts

    @property
    def rollout_hosts(self) -> int:
        """A surge group takes as many slices as any group."""
        return self.pool.slices * self.shape.hosts

    @property
    def prefix(self) -> str:
        """The workload's prefix of the stack bucket, holding its Pathways scratch (expired by the bucket)."""
        return f"{naming.PATHWAYS_SCRATCH_PREFIX}{self.name}/"

    @property
    def chips_at_peak(self) -> int:
        return self.workload.replicas * self.pool.total_chips

    @property
    def scratch(self) -> str:
        return f"gs://{self.bucket}/{self.prefix}tmp"

    def read_paths(self) -> list[tuple[str, str]]:
        return [("checkpoint", self.workload.checkpoint)]

    def grants(self) -> list[Grant]:
        """The Pathways server and proxy write their scratch (--gcs_scratch_location, under `prefix`); the engine
        reads the checkpoint (MaxText load_parameters_path). No compile-cache prefix (PATHWAYS_CACHE_OFF)."""
        read = self.workload.grant_checkpoint_read
        checkpoint = read_grant(
            "checkpoint", self.workload.checkpoint, self.bucket, read, other_key="checkpoint-reader"
        )
        if checkpoint is not None and checkpoint.prefix is None:
            checkpoint = replace(checkpoint, legacy_outside=True)
        return [Grant("scratch", self.bucket, OBJECT_USER, self.prefix), *([checkpoint] if checkpoint else [])]

    @property
    def service_name(self) -> str:
        return f"{self.name}-svc"

    @property
    def labels(self) -> dict[str, str]:
        return {"app": self.name}

    @property
    def persistence(self) -> bool:
        """Pathways persistence restores the checkpoint (each worker its own shards)."""
        return self.workload.pathways_persistence

    @property
    def cold_start_s(self) -> int:
        return self.mode.probes.startup_initial_delay + REFERENCE_STARTUP_WINDOW_S

    @property
    def startup(self) -> StartupPath:
        """No compile cache (PATHWAYS_CACHE_OFF: compilation counted cold). The checkpoint is restored by the JAX
        client, or with pathwaysPersistence by the Pathways workers, each reading its own shards (distributed)."""
        return StartupPath(
            images=tuple(dict.fromkeys(self.image(k) for k in ("server", "proxy", ENGINE_IMAGE, "http"))),
            weights="checkpoint-gcs",
            distributed_load=self.persistence,
            compile_cache="none",
            compile_cache_doubt=PATHWAYS_CACHE_OFF,
            startup_initial_delay_s=0,
            startup_period_s=startup_probe({}, self.cold_start_s)["periodSeconds"],
            cold_start_s=self.cold_start_s,
        )

    @property
    def weights_bytes(self) -> int:
        """The preset's parameters at the served weight width (MaxText `quantization`), as the HBM check counts them."""
        return catalog.weight_bytes(self.preset.params_billion, maxtext.weight_bits(self.maxtext_pairs()))

    def maxtext_pairs(self) -> list[tuple[str, str]]:
        preset_pairs = maxtext.merge(self.preset.args, {CHECKPOINT_ARG: self.workload.checkpoint})
        with_mode = maxtext.merge(preset_pairs, dict(self.mode.extra_args))
        derived: dict[str, maxtext.Scalar] = {METRICS_ARG: self.workload.metrics_port}
        if self.persistence:
            derived.update(PERSISTENCE_ARGS)
        return maxtext.merge(maxtext.merge(with_mode, derived), self.workload.maxtext)

    def image(self, key: str) -> str:
        return getattr(self.workload.images, key) or self.served(IMAGES[DEFAULT_IMAGES[key]])

    def dashboard_panels(self, cluster: str) -> list[tuple[str, str, str]]:
        """The JetStream tiles (workloads/jetstream/server.py), as single-host JetStream's."""
        return server.panels(self, cluster)

    def ingress_allows(self) -> list[dict[str, Any]]:
        """The leader's HTTP server to clients, its JetStream metrics to Managed Prometheus."""
        return [
            network_policy.allow_clients(self.name, self.namespace, self.labels, [HTTP_PORT]),
            network_policy.allow_metrics(self.name, self.namespace, self.labels, self.workload.metrics_port),
        ]
