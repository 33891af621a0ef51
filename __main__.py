"""tpu-serving: an LLM-serving platform on Cloud TPUs in GKE, as one Pulumi stack per environment; a stack whose
config has `tpu-serving:fleet` is a fleet stack instead (docs/fleet.md): one model served from several regional
stacks through GKE's multi-cluster Inference Gateway (Preview)."""

import pulumi

from components.fleet import build_fleet, load_fleet_config, raw_fleet_config
from components.platform import build_stack
from stacks.pulumi_config import load_stack_config
from workloads.registry import WORKLOAD_TYPES

fleet_config = pulumi.Config("tpu-serving").get("fleet")
if fleet_config is not None:
    build_fleet(load_fleet_config(raw_fleet_config(fleet_config)), pulumi.Config("gcp").get("project"))
else:
    build_stack(load_stack_config(WORKLOAD_TYPES))
