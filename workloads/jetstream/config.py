"""The `jetstream` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: jetstream`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.model.config_model import (
    PORT_MAX,
    REPLICAS_MAX,
    CamelModel,
    JetStreamAutoscalingConfig,
    ServiceConfig,
    WorkloadConfig,
)


class JetStreamImages(CamelModel):
    server: str | None = Field(None, description="JetStream MaxText engine image; default: the matrix's.")
    http: str | None = Field(None, description="JetStream HTTP server image; default: the matrix's.")


class JetStreamWorkload(WorkloadConfig):
    """Single-host JetStream (MaxText engine + HTTP server) on a single-host TPU pool, optionally autoscaled by an HPA."""

    type: Literal["jetstream"]
    model: str = Field(description="Model preset of the reference's arguments: gemma-7b, llama2-7b or llama2-13b.")
    checkpoint: str = Field(
        description="gs:// path of the converted (unscanned) MaxText checkpoint (load_parameters_path)."
    )
    maxtext: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="MaxText argument overrides, replaced in place (load_parameters_path, prometheus_port and "
        "jax_cache_dir are derived).",
    )
    replicas: int = Field(1, ge=1, le=REPLICAS_MAX, description="Replicas when autoscaling is off.")
    autoscaling: JetStreamAutoscalingConfig | None = Field(None, description="An HPA on JetStream/TPU metrics.")
    prometheus_port: int = Field(
        9100,
        ge=1,
        le=PORT_MAX,
        description="The engine's Prometheus metrics port (prometheus_port), scraped by a PodMonitoring.",
    )
    images: JetStreamImages = Field(
        default_factory=JetStreamImages,
        description="{server, http}: overrides of the pinned images (stacks/facts/versions.py).",
    )
    service: ServiceConfig = Field(default_factory=ServiceConfig)
    grant_checkpoint_read: bool = Field(
        True, description="Grant objectViewer on the checkpoint's bucket when it is not the stack bucket."
    )
