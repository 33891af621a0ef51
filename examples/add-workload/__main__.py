"""Add one workload to the cluster of an existing tpu-serving platform stack (docs/package.md).

pulumi config set add-workload:platformStack <org>/tpu-serving/dev
pulumi config set add-workload:platformStackFile ../../Pulumi.dev.yaml
pulumi config set --path 'add-workload:workload.name' chat2   # ...one tpu-serving:workloads entry
pulumi up
"""

from pathlib import Path

import pulumi
import yaml

import tpu_serving

config = pulumi.Config("add-workload")
ref = pulumi.StackReference(config.require("platformStack"))
platform_file = Path(config.require("platformStackFile"))
platform_config = (yaml.safe_load(platform_file.read_text()) or {}).get("config") or {}
added = tpu_serving.add_workload(
    config.require_object("workload"),
    platform=tpu_serving.PlatformOutputs.of(ref),
    platform_config=platform_config,
    platform_stack=config.require("platformStack").rsplit("/", 1)[-1],
)
pulumi.export("namespace", added.workload.namespace)
pulumi.export("service", added.workload.service_name)
pulumi.export("commands", added.workload.commands)
pulumi.export("tpuServingVersion", tpu_serving.__version__)
