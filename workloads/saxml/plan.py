"""Saxml multi-host serving: its plan, the values every other module of the type reads (ports, images, the cell
and its prefixes in the stack bucket, each server's grants, the models to publish).

A Sax cell is an admin server and model servers that find each other through `SAX_ROOT` in the stack bucket
(the admin server writes its address there; no Service is needed for it). Each model server is one multi-host
slice, run as one replicated Job of a JobSet: replicas = the pool's slices, parallelism = completions = hosts per
slice. An HTTP server fronts the cell. Safer than the tutorial: bucket-scoped IAM instead of project-wide
storage.admin, no public endpoint unless asked for with source ranges, and privileged + hostNetwork only on the
model servers, whose TPU runtime needs them. The type's rules are in checks.py, its Kubernetes objects in
manifests.py, the publication Job's program and name in publication.py, the commands it prints in commands.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from stacks.facts import catalog
from stacks.facts.versions import IMAGES
from stacks.naming import stack_service_account
from stacks.security import network_policy
from stacks.security.bucket_access import OBJECT_USER, OBJECT_VIEWER, Grant, gcs_location, read_grant
from stacks.serving.startup import StartupPath
from stacks.serving.workload_plan import WorkloadPlan
from workloads.saxml.config import SaxmlWorkload

ADMIN_PORT = 10000
MODEL_PORT = 10001
# TPU runtime port between the hosts of a slice (the tutorial's model-server second port)
TPU_RUNTIME_PORT = 8471
HTTP_PORT = 8888
SAX_ROOT_PREFIX = "sax-root/"
# the admin image's entrypoint: admin_config --fs_root=gs://${GSBUCKET}/sax-fs-root
# (google/saxml@v1.1.0:saxml/tools/docker/Dockerfile.admin)
SAX_FS_ROOT_PREFIX = "sax-fs-root/"
# Saxml's model server --platform_chip per catalog generation: its chip map knows tpuv2/v3/v4/v4i/v5e only, and any
# other value raises "chip type unknown" at start (google/saxml@v1.1.0:saxml/server/proto_util.py to_chip_type,
# server/model_service_base.py; the same at v1.2.0; the Saxml tutorial: v5e 4x8 -> --platform_chip=tpuv5e). None, or
# a generation not here: Saxml has no build for it, and a pool of it is refused (checks.py).
PLATFORM_CHIPS: dict[str, str | None] = {
    "v4": "tpuv4",
    "v5e": "tpuv5e",
    "v5p": None,  # no tpuv5p in the chip map
    "v6e": None,  # no tpuv6e in the chip map
    "tpu7x": None,  # no TPU7x platform (gke-tpu-facts.md S6: TPU7x runs JAX only)
}


def platform_chip(generation: str) -> str | None:
    """Its --platform_chip on `generation`; None: Saxml has none."""
    return PLATFORM_CHIPS.get(generation)


CELL_PREFIX = "/sax/"  # Sax names a cell /sax/<cell> and its models /sax/<cell>/<model>
# images.<key> -> the version-matrix image it defaults to (stacks/facts/versions.py IMAGES)
DEFAULT_IMAGES = {"admin": "saxAdminServer", "model": "saxModelServer", "http": "saxHttp"}
# The default images that run on the TPUs: the type serves the generations they all serve.
TPU_IMAGES = (DEFAULT_IMAGES["model"],)
SAX_WEIGHT_BITS = 16

MODEL_SERVER_ROLE = "model-server"
MODEL_SERVER_JOB = "sax-model-server"


def cell_of(workload: SaxmlWorkload) -> str:
    """The workload's Sax cell: its `cell`, by default one of its own named after it."""
    return workload.cell or f"{CELL_PREFIX}{workload.name}"


@dataclass(frozen=True)
class SaxmlPlan(WorkloadPlan):
    workload: SaxmlWorkload

    @property
    def cell(self) -> str:
        return cell_of(self.workload)

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (HTTP_PORT,)

    @property
    def sax_root(self) -> str:
        return f"gs://{self.bucket}/{SAX_ROOT_PREFIX.rstrip('/')}"

    @property
    def cell_prefix(self) -> str:
        """The cell's directory under SAX_ROOT: `<sax-root>/sax/<cell>/` (google/saxml@v1.1.0:saxml/common/cell.go
        Path = RootDir joined with the cell name); location.proto, config.proto and METADATA live there."""
        return f"{SAX_ROOT_PREFIX}{self.cell.strip('/')}/"

    @property
    def state_prefix(self) -> str:
        """The admin server's state directory: `<fs_root>/sax/<cell>/` (saxml/admin/admin.go Start: FsRootDir joined
        with the cell; state.proto), fs_root being gs://$GSBUCKET/sax-fs-root in the admin image's entrypoint."""
        return f"{SAX_FS_ROOT_PREFIX}{self.cell.strip('/')}/"

    @property
    def http_service_account(self) -> str:
        """The HTTP server's own Kubernetes ServiceAccount: it only reads the cell (the admin server writes)."""
        return stack_service_account(self.component("http"), self.identity_suffix)

    def read_paths(self) -> list[tuple[str, str]]:
        return [
            (f"models[{i}].checkpoint", m.checkpoint)
            for i, m in enumerate(self.workload.models or [])
            if m.checkpoint.startswith("gs://")
        ]

    def admin_grants(self) -> list[Grant]:
        """The admin server writes the cell's directory (admin_config, addr.SetAddr) and its state."""
        return [
            Grant("cell", self.bucket, OBJECT_USER, self.cell_prefix),
            Grant("state", self.bucket, OBJECT_USER, self.state_prefix),
        ]

    def http_grants(self) -> list[Grant]:
        """The HTTP server (the Python Sax client) only finds the admin server: it reads the cell's directory."""
        return [Grant("cell", self.bucket, OBJECT_VIEWER, self.cell_prefix)]

    def node_grants(self) -> list[Grant]:
        """The model servers' node identity: they read the cell's directory (location.Join: cell.Exists, Watch of
        location.proto; they start no admin server, --admin_port unset) and each model's gs:// checkpoint."""
        grants = [Grant("cell", self.bucket, OBJECT_VIEWER, self.cell_prefix)]
        for i, (_, url) in enumerate(self.read_paths()):
            other = f"{gcs_location(url)[0]}-objectviewer"
            grant = read_grant(f"checkpoint{i}", url, self.bucket, other_buckets=True, other_key=other)
            if grant is not None and (grant.bucket, grant.prefix) not in {(g.bucket, g.prefix) for g in grants}:
                grants.append(grant)
        return grants

    @property
    def hosts_needed(self) -> int:
        """One model server per slice of the pool (the JobSet's replicas)."""
        return self.pool.slices * self.shape.hosts

    @property
    def weights_bytes(self) -> int | None:
        """Every published model a model server loads, at SAX_WEIGHT_BITS, as the HBM check counts them; None when a
        model's size is unknown."""
        sizes = [m.params_billion or params_billion(m.model_path) for m in self.workload.models or []]
        if not sizes or not all(sizes):
            return None
        return sum(catalog.weight_bytes(s, SAX_WEIGHT_BITS) for s in sizes if s)

    @property
    def chips_at_peak(self) -> int:
        """The model servers hold every slice of the pool."""
        return self.pool.total_chips

    def component(self, role: str) -> str:
        return f"{self.name}-{role}"

    def labels(self, role: str) -> dict[str, str]:
        return {"app": self.component(role)}

    @property
    def http_service(self) -> str:
        return self.component("http")

    @property
    def http_url(self) -> str:
        return f"http://{self.http_service}.{self.namespace}.svc:{HTTP_PORT}"

    @property
    def startup(self) -> StartupPath:
        """A model server loads each published model's checkpoint from gs:// itself (the publication Job waits for
        it), with no startup probe of its own; the stack sets no compile cache (whether the Saxml model server honours
        JAX_COMPILATION_CACHE_DIR is not checked)."""
        return StartupPath(images=(self.image("model"),), weights="checkpoint-gcs", compile_cache="none")

    def image(self, key: str) -> str:
        return getattr(self.workload.images, key) or self.served(IMAGES[DEFAULT_IMAGES[key]])

    def model_name(self, model: str) -> str:
        return model if model.startswith(CELL_PREFIX) else f"{self.cell}/{model}"

    def desired_models(self) -> list[dict[str, Any]]:
        return [
            {
                "model": self.model_name(m.model),
                "model_path": m.model_path,
                "checkpoint": m.checkpoint,
                "replicas": m.replicas,
            }
            for m in self.workload.models or []
        ]

    def ingress_allows(self) -> list[dict[str, Any]]:
        """The HTTP server to its clients; the admin server to the model servers, which run on the host network
        (their traffic comes from node addresses, which only a rule without `from` admits)."""
        return [
            network_policy.allow_clients(self.component("http"), self.namespace, self.labels("http"), [HTTP_PORT]),
            network_policy.allow_clients(self.component("admin"), self.namespace, self.labels("admin"), [ADMIN_PORT]),
        ]


def params_billion(model_path: str) -> float | None:
    """Model size from the Saxml class name (LmCloudSpmd175B32Test -> 175), when it says."""
    match = re.search(r"(\d+(?:\.\d+)?)B", model_path.rsplit(".", 1)[-1])
    return float(match.group(1)) if match else None
