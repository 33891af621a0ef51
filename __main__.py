"""tpu-serving: an LLM-serving platform on Cloud TPUs in GKE, as one Pulumi stack per environment; a stack whose
config has `tpu-serving:fleet` is a fleet stack instead (docs/fleet.md): one model served from several regional
stacks through GKE's multi-cluster Inference Gateway (Preview)."""

from components.fleet import build_fleet_stack, fleet_config_text
from components.platform import build_stack
from stacks.pulumi_config import load_stack_config
from workloads.registry import WORKLOAD_TYPES

if fleet_config_text() is not None:
    build_fleet_stack()
else:
    build_stack(load_stack_config(WORKLOAD_TYPES))
