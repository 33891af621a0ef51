"""`jetstream`: single-host JetStream (MaxText) on a Deployment, autoscaled by an HPA on JetStream/TPU metrics."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.jetstream.checks import check
from workloads.jetstream.commands import smoke_probe
from workloads.jetstream.component import JetStream
from workloads.jetstream.config import JetStreamWorkload
from workloads.jetstream.plan import TPU_IMAGES

TYPE = WorkloadType(
    config=JetStreamWorkload,
    resolve=resolver(check),
    component=JetStream,
    smoke_probe=smoke_probe,
    legacy_component="tpu-serving:workloads:JetStream",
    tpu_images=TPU_IMAGES,
    checks_generation=True,
)
