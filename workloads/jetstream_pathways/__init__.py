"""`jetstream-pathways`: JetStream + MaxText + Pathways on a LeaderWorkerSet (interleaved or disaggregated)."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.jetstream_pathways.component import JetStreamPathways
from workloads.jetstream_pathways.config import JetStreamPathwaysWorkload
from workloads.jetstream_pathways.plan import TPU_IMAGES, check

TYPE = WorkloadType(
    config=JetStreamPathwaysWorkload,
    resolve=resolver(check),
    component=JetStreamPathways,
    addon="lws",
    tpu_images=TPU_IMAGES,
)
