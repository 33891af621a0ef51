"""The package's example program (examples/add-workload/) from the built wheel against a platform stack on its local
cluster, by the real Pulumi engine: the platform's local stack up (from this checkout, as `make local-up`), then the
example copied into a project folder of its own and run by the clean virtualenv `make package-env` installed the
built wheel into (e2e/package_program.py, `python -I`: tpu_serving can only come from that wheel), on the same
backend, reading the platform's outputs through a StackReference, up; its namespace and workload checked in the
cluster; then destroyed.

    python -m e2e.package_run examples/<name>/Pulumi.<stack>.yaml [<venv>/bin/python]
        exit 0, or 1 with every problem ("PROBLEM: ..."); the Python defaults to make package-env's
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from e2e import cluster as c
from tooling.harness.offline import ROOT
from tooling.local import local_stack
from tooling.review.render import stack_name
from tpu_serving.version import VERSION

EXAMPLE = ROOT / "examples" / "add-workload"
DRIVER = Path(__file__).resolve().parent / "package_program.py"
# make package-env's virtualenv (Makefile PACKAGE_ENV)
PACKAGE_ENV = os.environ.get("PACKAGE_ENV", "build/package-env")
UP_TIMEOUT = float(os.environ.get("E2E_PACKAGE_TIMEOUT", "1200"))
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


def run_program(python: Path, command: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """e2e/package_program.py under the clean virtualenv's Python (isolated): its RESULT, or the output as an error."""
    spec_file = Path(spec["program"]).parent / "spec.json"
    spec_file.write_text(json.dumps(spec))
    code, out = c.run_process([str(python), "-I", str(DRIVER), command, str(spec_file)], timeout)
    print(out[-12000:])
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if code != 0 or not lines:
        return {"error": f"{python} {DRIVER.name} {command} exited {code}: {out[-3000:]}"}
    return dict(json.loads(lines[-1].removeprefix("RESULT ")))


def installed_problems(result: dict[str, Any], python: Path) -> list[str]:
    """The program ran on the installed wheel: tpu_serving from the virtualenv's site-packages, at the release."""
    where = Path(result.get("tpu_serving") or "")
    out = []
    if "site-packages" not in where.parts or not where.is_relative_to(python.parent.parent):
        out.append(f"tpu_serving was imported from {where}, not the wheel installed in {python.parent.parent}")
    if result.get("version") != VERSION:
        out.append(f"the installed tpu_serving is {result.get('version')}, not the release {VERSION}")
    return out


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve()
    python = Path(argv[1]).absolute() if len(argv) > 1 else ROOT / PACKAGE_ENV / "bin" / "python"
    if not python.exists():
        print(f"PROBLEM: {python} does not exist: run `make package-env` (the built wheel in a clean virtualenv)")
        return 1
    stack = stack_name(path)
    local_stack.enter_cluster_network(stack)
    local = local_stack.prepare(stack, source=path)
    # a fresh cluster each run: no state of an earlier one (the platform's and this program's share the backend)
    shutil.rmtree(local.state, ignore_errors=True)
    local_stack.run(local, "up", on_output=lambda line: None)
    workload = added_workload(path)
    # the example copied out of the checkout: a user's project folder, with nothing of this repository beside it
    project = local.folder / "add-workload"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("venv", "__pycache__"))
    settings = {k: v for k, v in workload.items() if k not in ("type", "name", "pool", "namespace")}
    config = {
        "add-workload:platformStack": f"organization/tpu-serving/{stack}",
        "add-workload:platformStackFile": str(local.config_file),
        **{f"add-workload:{k}": workload[k] for k in ("type", "name", "pool", "namespace")},
        "add-workload:settings": json.dumps(settings),
    }
    spec = {
        "program": str(project / "__main__.py"),
        "stack": stack,
        "pulumi_home": str(local.root / "pulumi-home"),
        "pulumi_root": local_stack.pulumi_root(),
        "env": local_stack.pulumi_env(local),
        "config": config,
    }
    problems = []
    result = run_program(python, "up", spec, UP_TIMEOUT)
    problems += installed_problems(result, python)
    if "error" in result:
        problems.append(f"add-workload up failed: {result['error']}")
    else:
        print("add-workload outputs:", result.get("outputs"))
        kube = local_stack.Kube(local.kubeconfig)
        namespace = c.get_or_none(kube, f"/api/v1/namespaces/{NAMESPACE}")
        if namespace is None:
            problems.append(f"namespace {NAMESPACE} was not created in the platform's cluster")
        elif namespace["metadata"]["labels"].get("pod-security.kubernetes.io/enforce") is None:
            problems.append(f"namespace {NAMESPACE} has no Pod Security label")
        if not kube.items(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"):
            problems.append(f"no Deployment of {workload['name']} in {NAMESPACE}")
        if (result.get("outputs") or {}).get("tpuServingVersion") != VERSION:
            problems.append(f"the program's tpuServingVersion output is not {VERSION}: {result.get('outputs')}")
    destroyed = run_program(python, "destroy", spec, UP_TIMEOUT)
    if "error" in destroyed:
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
                f"add-workload destroy failed: {destroyed['error'][-1500:]}; namespace {NAMESPACE}: "
                f"{json.dumps(conditions)}"
            )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
