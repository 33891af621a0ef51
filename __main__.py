"""tpu-serving: an LLM-serving platform on Cloud TPUs in GKE, as one Pulumi stack per environment."""

from components.platform import build_stack
from stacks.pulumi_config import load_stack_config
from workloads.registry import WORKLOAD_TYPES

build_stack(load_stack_config(WORKLOAD_TYPES))
