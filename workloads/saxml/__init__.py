"""`saxml`: Saxml multi-host serving: an admin server, model servers on a JobSet (host network), an HTTP server."""

from stacks.serving.workload_type import WorkloadType, resolver
from workloads.saxml.checks import check
from workloads.saxml.commands import NO_SMOKE_PROBE, smoke_probe
from workloads.saxml.component import Saxml
from workloads.saxml.config import SaxmlWorkload
from workloads.saxml.plan import TPU_IMAGES

TYPE = WorkloadType(
    config=SaxmlWorkload,
    resolve=resolver(check),
    component=Saxml,
    smoke_probe=smoke_probe,
    no_smoke_probe=NO_SMOKE_PROBE,
    legacy_component="tpu-serving:workloads:Saxml",
    addon="jobset",
    exclusive_pool=True,
    tpu_images=TPU_IMAGES,
    checks_generation=True,
)
