"""The `pathways-job` workload's config schema: what a user writes under `tpu-serving:workloads[i]` with `type: pathways-job`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from stacks.model.config_model import CamelModel, WorkloadConfig


class PathwaysJobImages(CamelModel):
    """Overrides of the Pathways component images (the PathwaysJob's `customComponents`); unset: the images of
    `pathwaysVersion`."""

    server: str | None = Field(None, description="Pathways resource manager (pathways_server) image.")
    proxy: str | None = Field(None, description="Pathways proxy (proxy_server) image.")
    worker: str | None = Field(None, description="Pathways worker image.")


class PathwaysJobContainer(CamelModel):
    """The user's JAX program: the `main` container of the PathwaysJob head pod (batch mode; controller.template,
    requesting 500m CPU and 1Gi); the job completes when it exits."""

    image: str = Field(description="Container image of the JAX program.")
    command: list[str] | None = Field(None, description="Entrypoint; default: the image's.")
    args: list[str] | None = Field(None, description="Arguments; default: the image's.")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Environment variables (the controller adds JAX_PLATFORMS and the proxy address).",
    )


class PathwaysJobWorkload(WorkloadConfig):
    """A PathwaysJob (google/pathways-job): Pathways resource manager and proxy in a head pod, one Pathways worker
    per TPU host of every slice of a multi-host pool. With `job` it runs that program to completion (batch);
    without it, it is interactive: connect a JAX client to the proxy."""

    type: Literal["pathways-job"]
    max_restarts: int = Field(
        0, ge=0, le=2**31 - 1, description="Restarts of the whole job (JobSet failurePolicy.maxRestarts)."
    )
    deployment_mode: Literal["default", "colocate_head_with_workers"] = Field(
        "default",
        description="default: the head on a dedicated CPU node the stack provisions; colocate_head_with_workers: "
        "the head beside a worker on a TPU host.",
    )
    job: PathwaysJobContainer | None = Field(None, description="The program to run (batch); unset: interactive.")
    images: PathwaysJobImages = Field(default_factory=PathwaysJobImages)
    pathways_version: str | None = Field(
        None,
        description="Tag of the Pathways server and proxy images; default: the version matrix's (the controller's "
        "own default, latest, would float).",
    )
