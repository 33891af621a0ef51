"""The package's example program (examples/add-workload/) against a platform stack on its local cluster, by the real
Pulumi engine: the platform's local stack up, then the example as a project of its own on the same backend, reading the
platform's outputs through a StackReference, up; its namespace and workload checked in the cluster; then destroyed.

    python -m e2e.package_run examples/<name>/Pulumi.<stack>.yaml     exit 0, or 1 with every problem ("PROBLEM: ...")
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from e2e import cluster as c
from tooling.harness.offline import ROOT
from tooling.local import local_stack
from tooling.review.render import stack_name

PROGRAM = ROOT / "examples" / "add-workload" / "__main__.py"
NAMESPACE = "team-added"


def added_workload(platform_file: Path) -> dict[str, Any]:
    """The platform's first workload, renamed into a namespace of its own."""
    first = yaml.safe_load(platform_file.read_text())["config"]["tpu-serving:workloads"][0]
    return {**first, "name": f"{first['name']}-added", "namespace": NAMESPACE}


def metrics_discovery_only(failing: list[dict[str, Any]]) -> bool:
    """The one failing deletion condition is discovery of the metrics APIs (custom/external.metrics.k8s.io) only."""
    if [x.get("type") for x in failing] != ["NamespaceDeletionDiscoveryFailure"]:
        return False
    groups = re.findall(r"stale GroupVersion discovery: ([^,\s]+)", failing[0].get("message", ""))
    return bool(groups) and all(g.split("/")[0].endswith("metrics.k8s.io") for g in groups)


def main(argv: list[str]) -> int:
    from pulumi import automation as auto

    path = Path(argv[0]).resolve()
    stack = stack_name(path)
    local_stack.enter_cluster_network(stack)
    local = local_stack.prepare(stack, source=path)
    # a fresh cluster each run: no state of an earlier one (the platform's and this program's share the backend)
    shutil.rmtree(local.state, ignore_errors=True)
    local_stack.run(local, "up", on_output=lambda line: None)
    workload = added_workload(path)
    env = local_stack.pulumi_env(local)
    project = local.folder / "add-workload"
    project.mkdir(parents=True, exist_ok=True)
    options = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        pulumi_home=str(local.root / "pulumi-home"),
        env_vars=env,
        secrets_provider="passphrase",
        pulumi_command=auto.PulumiCommand(root=local_stack.pulumi_root(), skip_version_check=True),
        project_settings=auto.ProjectSettings(name="add-workload", runtime="python"),
    )
    program = auto.create_or_select_stack(
        stack,
        project_name="add-workload",
        program=lambda: runpy.run_path(str(PROGRAM), run_name="__main__"),
        opts=options,
    )
    program.set_config("add-workload:platformStack", auto.ConfigValue(f"organization/tpu-serving/{stack}"))
    program.set_config("add-workload:platformStackFile", auto.ConfigValue(str(local.config_file)))
    program.set_config("add-workload:workload", auto.ConfigValue(json.dumps(workload)))
    problems = []
    try:
        result = program.up(on_output=print, color="never")
        print("add-workload outputs:", {k: v.value for k, v in result.outputs.items()})
        kube = local_stack.Kube(local.kubeconfig)
        namespace = c.get_or_none(kube, f"/api/v1/namespaces/{NAMESPACE}")
        if namespace is None:
            problems.append(f"namespace {NAMESPACE} was not created in the platform's cluster")
        elif namespace["metadata"]["labels"].get("pod-security.kubernetes.io/enforce") is None:
            problems.append(f"namespace {NAMESPACE} has no Pod Security label")
        if not kube.items(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"):
            problems.append(f"no Deployment of {workload['name']} in {NAMESPACE}")
    except auto.errors.CommandError as err:
        problems.append(f"add-workload up failed: {str(err)[-3000:]}")
    try:
        program.destroy(on_output=lambda line: None, color="never")
    except auto.errors.CommandError as err:
        # what holds the namespace (its status conditions name the content or finalizers left)
        left = c.get_or_none(local_stack.Kube(local.kubeconfig), f"/api/v1/namespaces/{NAMESPACE}")
        conditions = (left or {}).get("status", {}).get("conditions", [])
        failing = [x for x in conditions if x.get("status") == "True"]
        if metrics_discovery_only(failing):
            # the namespace controller finishes a deletion only once every API group is discoverable
            # (kubernetes pkg/controller/namespace/deletion: NamespaceDeletionDiscoveryFailure); the platform's metrics
            # adapter APIServices are registered but served by nothing on a local cluster (Google Cloud stood in)
            print(f"LIMITATION: namespace {NAMESPACE} stays Terminating: {failing[0]['message']}")
        else:
            problems.append(
                f"add-workload destroy failed: {str(err)[-1500:]}; namespace {NAMESPACE}: {json.dumps(conditions)}"
            )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
