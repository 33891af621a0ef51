"""The workload types this program serves: the one list config parsing, the composition, the cost estimate and the
JSON Schema loop over. Adding a type is its package under workloads/ and its line here."""

from stacks.serving.workload_type import WorkloadRegistry
from workloads import jetstream, jetstream_pathways, pathways_job, saxml, vllm

WORKLOAD_TYPES = WorkloadRegistry(
    jetstream_pathways.TYPE,
    saxml.TYPE,
    jetstream.TYPE,
    pathways_job.TYPE,
    vllm.TYPE,
)
