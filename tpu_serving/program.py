"""The whole program as one call: a stack per environment from `tpu-serving:*` config, or a fleet stack
(`tpu-serving:fleet`, docs/fleet.md). This repository's __main__.py is `tpu_serving.program.run()`; another Pulumi
project with the package installed and the same config runs the same platform."""

from __future__ import annotations

from components.fleet import build_fleet_stack, fleet_config_text
from components.platform import build_stack
from stacks.pulumi_config import load_stack_config
from workloads import registry


def run() -> None:
    if fleet_config_text() is not None:
        build_fleet_stack(registry.WORKLOAD_TYPES.gateway_types)
    else:
        # the registry read when the program runs (a type a test or a user registers there is served)
        build_stack(load_stack_config(registry.WORKLOAD_TYPES))
