"""`jetstream-pathways`: JetStream + MaxText + Pathways on a LeaderWorkerSet (interleaved or disaggregated)."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.jetstream_pathways.checks import check
from workloads.jetstream_pathways.commands import smoke_probe
from workloads.jetstream_pathways.component import JetStreamPathways
from workloads.jetstream_pathways.config import JetStreamPathwaysWorkload
from workloads.jetstream_pathways.plan import TPU_IMAGES

TYPE = WorkloadType(
    config=JetStreamPathwaysWorkload,
    resolve=resolver(check),
    component=JetStreamPathways,
    smoke_probe=smoke_probe,
    legacy_component="tpu-serving:workloads:JetStreamPathways",
    addon="lws",
    tpu_images=TPU_IMAGES,
)
