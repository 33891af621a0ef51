"""The `saxml` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: saxml`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.model.config_model import REPLICAS_MAX, CamelModel, WorkloadConfig


class SaxHttpConfig(CamelModel):
    """The Saxml HTTP server: its replicas and who may reach it."""

    replicas: int = Field(1, ge=1, le=REPLICAS_MAX, description="HTTP server replicas.")
    exposure: Literal["cluster", "internal", "external"] = Field(
        "cluster",
        description="cluster (default: Saxml's /publish API has no authentication): ClusterIP; internal: internal "
        "passthrough load balancer (optionally limited to sourceRanges); external: public, needs sourceRanges "
        "(0.0.0.0/0 only in dev).",
    )
    source_ranges: list[str] = Field(
        default_factory=list, description="CIDRs allowed to reach the internal or external load balancer."
    )


class SaxModelConfig(CamelModel):
    model: str = Field(
        description="Model name in the cell (lm175b) or its full name (/sax/<cell>/lm175b), named as Sax names "
        "models (a lowercase letter, then lowercase letters, digits, - or _); each model once per cell."
    )
    model_path: str = Field(
        description="Saxml model class (Python identifiers joined by dots), e.g. "
        "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test."
    )
    checkpoint: str = Field("None", description="Checkpoint path, or None for the test models' random weights.")
    replicas: int = Field(
        1, ge=1, le=REPLICAS_MAX, description="Model server replicas serving it (at most the pool's slices)."
    )
    params_billion: float | None = Field(
        None, gt=0, le=1_000_000, description="Model size for the HBM check; default: from modelPath."
    )


class SaxImages(CamelModel):
    admin: str | None = Field(None, description="Sax admin server image; default: the matrix's.")
    model: str | None = Field(None, description="Sax model server image; default: the matrix's.")
    http: str | None = Field(None, description="Sax HTTP server image; default: the matrix's.")


class SaxmlWorkload(WorkloadConfig):
    """Saxml multi-host serving: admin server, one model server per slice (JobSet), HTTP server. `pool` must be
    multi-host: its slices are the model servers."""

    type: Literal["saxml"]
    cell: str | None = Field(None, description="Sax cell, /sax/<name>; default /sax/<workload name>.")
    images: SaxImages = Field(
        default_factory=SaxImages,
        description="{admin, model, http}: overrides of the pinned images (stacks/facts/versions.py).",
    )
    http: SaxHttpConfig = Field(default_factory=SaxHttpConfig)
    models: list[SaxModelConfig] | None = Field(
        None, description="Models to publish; when set, the stack owns the cell's model list (others are unpublished)."
    )
    max_restarts: int = Field(
        4,
        ge=0,
        le=REPLICAS_MAX,
        description="JobSet failurePolicy.maxRestarts: restarts after a model server fails, over the JobSet's life "
        "(it never resets). A disruption (eviction, preemption, node drain or host maintenance) restarts the model "
        "servers without counting.",
    )
