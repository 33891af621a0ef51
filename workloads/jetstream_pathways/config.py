"""The `jetstream-pathways` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: jetstream-pathways`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.model.config_model import PORT_MAX, REPLICAS_MAX, CamelModel, ServiceConfig, WorkloadConfig


class PathwaysImages(CamelModel):
    """Overrides of the pinned images (stacks/facts/versions.py); leave unset to use the matrix."""

    proxy: str | None = Field(None, description="Pathways proxy image.")
    server: str | None = Field(None, description="Pathways resource manager and worker image.")
    jetstream: str | None = Field(None, description="JetStream MaxText engine image.")
    http: str | None = Field(None, description="JetStream HTTP server image.")


class JetStreamPathwaysWorkload(WorkloadConfig):
    """JetStream + MaxText on Pathways, one LeaderWorkerSet group per replica, each on its own slice(s)."""

    type: Literal["jetstream-pathways"]
    mode: Literal["interleaved", "disaggregated"] = Field(
        "interleaved",
        description="Prefill and decode together (interleaved: the LeaderWorkerSet's exclusive-topology annotation) "
        "or apart (disaggregated: subgroup-exclusive-topology, subGroupSize = hosts per slice; needs a pool with "
        "slices: 2).",
    )
    replicas: int = Field(
        1, ge=1, le=REPLICAS_MAX, description="LeaderWorkerSet replicas (each takes the pool's slices)."
    )
    model: str = Field(
        description="Model preset of MaxText arguments from the references (workloads/jetstream_pathways/presets.py), "
        "e.g. llama3.1-405b or llama2-70b."
    )
    checkpoint: str = Field(description="gs:// path of the converted MaxText checkpoint (load_parameters_path).")
    maxtext: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="MaxText argument overrides, replaced in place (load_parameters_path and prometheus_port are "
        "derived; jax_cache_dir is refused: JAX's compile cache is off under Pathways; with pathwaysPersistence, "
        "checkpoint_storage_use_ocdbt and checkpoint_storage_use_zarr3 are derived).",
    )
    images: PathwaysImages = Field(
        default_factory=PathwaysImages,
        description="{proxy, server, jetstream, http}: overrides of the pinned images (stacks/facts/versions.py).",
    )
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    metrics_port: int = Field(
        9100, ge=1, le=PORT_MAX, description="JetStream Prometheus metrics port (prometheus_port)."
    )
    grant_checkpoint_read: bool = Field(
        True, description="Grant the workload objectViewer on the checkpoint's bucket when it is not the stack bucket."
    )
    pathways_persistence: bool = Field(
        False,
        description="Restore the checkpoint with Pathways persistence (ENABLE_PATHWAYS_PERSISTENCE=1 on the JAX "
        "client): each Pathways worker reads its own shards from gs:// instead of the JAX client reading them all. "
        "Its handler refuses OCDBT checkpoints, so it needs checkpointWithoutOcdbt: true, and MaxText then restores "
        "with checkpoint_storage_use_ocdbt=false and checkpoint_storage_use_zarr3=false.",
    )
    checkpoint_without_ocdbt: bool = Field(
        False,
        description="You state that `checkpoint` was written without OCDBT (and without zarr3), e.g. converted with "
        "checkpoint_storage_use_ocdbt=false checkpoint_storage_use_zarr3=false; required by pathwaysPersistence.",
    )


# type -> model; later workload types register here.
