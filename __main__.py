"""tpu-serving: an LLM-serving platform on Cloud TPUs in GKE, as one Pulumi stack per environment."""

from stacks.config import load_stack_config
from stacks.stack import build_stack

build_stack(load_stack_config())
