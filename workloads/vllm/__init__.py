"""`vllm`: vLLM on TPU, a Deployment (single-host pool) or a LeaderWorkerSet + Ray (multi-host pool)."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.vllm.checks import check
from workloads.vllm.commands import smoke_probe
from workloads.vllm.component import Vllm
from workloads.vllm.config import VllmWorkload
from workloads.vllm.plan import TPU_IMAGES

TYPE = WorkloadType(
    config=VllmWorkload,
    resolve=resolver(check),
    component=Vllm,
    smoke_probe=smoke_probe,
    gateway_served=True,
    slo_series=True,
    legacy_component="tpu-serving:workloads:Vllm",
    tpu_images=TPU_IMAGES,
)
