"""The `jetstream` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: jetstream`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from stacks.model.config_model import (
    PORT_MAX,
    REPLICAS_MAX,
    CamelModel,
    HpaAutoscalingConfig,
    HpaTargetConfig,
    ServiceConfig,
    WorkloadConfig,
)
from workloads.jetstream.server import JETSTREAM_METRICS

# The metric names a JetStream HPA may use: the keys of its metric registry (workloads/jetstream/server.py), written
# there once.
if TYPE_CHECKING:
    HpaMetricName = str
else:
    HpaMetricName = Literal[tuple(JETSTREAM_METRICS)]


class HpaMetricConfig(HpaTargetConfig):
    name: HpaMetricName = Field(description="JetStream server metric or TPU HBM metric.")
    target: float = Field(
        gt=0,
        le=1e15,
        allow_inf_nan=False,
        description="Value one replica should carry, in the metric's unit: *_percentage metrics are 0-1 fractions "
        "(0.5 = half), tpu_memory_used is bytes, jetstream_prefill_backlog_size is queued requests.",
    )


class JetStreamAutoscalingConfig(HpaAutoscalingConfig):
    metrics: list[HpaMetricConfig] = Field(  # type: ignore[assignment]
        min_length=1, description="Combined in one HPA: the largest proposal wins."
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
