"""Add one workload to the cluster of an existing tpu-serving platform stack (docs/package.md).

pulumi config set add-workload:platformStack <org>/tpu-serving/dev
pulumi config set add-workload:platformStackFile ../../Pulumi.dev.yaml
pulumi config set add-workload:type vllm
pulumi config set add-workload:name chat2
pulumi config set add-workload:pool v5e-2x4
pulumi config set add-workload:namespace team-chat        # optional: default the name
pulumi config set --path 'add-workload:settings.model' Qwen/Qwen3-8B   # the type's own keys (docs/configuration.md)
pulumi up
"""

from pathlib import Path

import pulumi
import yaml

import tpu_serving

config = pulumi.Config("add-workload")
platform_file = Path(config.require("platformStackFile"))
platform = tpu_serving.PlatformArgs(
    stack=config.require("platformStack"),
    config=(yaml.safe_load(platform_file.read_text()) or {}).get("config") or {},
)
workload = tpu_serving.WorkloadArgs(
    type=config.require("type"),
    name=config.require("name"),
    pool=config.require("pool"),
    namespace=config.get("namespace"),
    settings=config.get_object("settings") or {},
)
added = tpu_serving.add_workload(workload, platform=platform)
pulumi.export("namespace", added.workload.namespace)
pulumi.export("service", added.workload.service_name)
pulumi.export("commands", added.workload.commands)
pulumi.export("tpuServingVersion", tpu_serving.__version__)
