"""`pathways-job`: batch and interactive Pathways jobs, run by the PathwaysJob controller."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.pathways_job.checks import check
from workloads.pathways_job.commands import NO_SMOKE_PROBE
from workloads.pathways_job.component import PathwaysJob
from workloads.pathways_job.config import PathwaysJobWorkload
from workloads.pathways_job.plan import TPU_IMAGES, head_pool_name

TYPE = WorkloadType(
    config=PathwaysJobWorkload,
    resolve=resolver(check),
    component=PathwaysJob,
    no_smoke_probe=NO_SMOKE_PROBE,
    legacy_component="tpu-serving:workloads:PathwaysJob",
    addon="pathwaysJob",
    exclusive_pool=True,
    tpu_images=TPU_IMAGES,
    no_compute_class="the PathwaysJob controller writes the TPU pods' node selectors itself",
    added_node_pools=lambda w: (head_pool_name(w.name),) if w.deployment_mode == "default" else (),
)
