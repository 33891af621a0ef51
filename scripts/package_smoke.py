"""Smoke test of the release artifacts in a clean virtualenv (`make package-smoke`, .ci/run): run by that virtualenv's
Python, with nothing of the checkout importable (`python -I`), after
`pip install dist/tpu_serving-<version>-py3-none-any.whl -r <pack>/requirements.txt` installed the tpu-serving wheel (by
path: it is on no public index) and the pack's SDK.

    python -I scripts/package_smoke.py <version> <unpacked policy pack> <platform stack file> <add-workload program>

Checks: the installed package is the release; a user's own `stacks` package beside it is refused at import, naming
it (tpu_serving/_namespace.py); the add-workload example program, run under Pulumi's mocks against the
platform stack file, registers the workload's namespace and component from the installed package; the unpacked
policy pack loads its policies from the installed package (not the checkout) and they pass what the example
registered; a broken resource fails them.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await


class Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.registered: list[tuple[str, str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.registered.append((args.typ, args.name, dict(args.inputs)))
        if args.typ == "pulumi:pulumi:StackReference":
            outputs = {
                "kubeconfig": "apiVersion: v1\nkind: Config\n",
                # the bucket the platform stack file (Pulumi.dev.yaml) names: its default name
                "bucketName": "my-tpu-project-tpu-serving-dev",
                "clusterName": "c",
            }
            return f"{args.name}-id", {"name": args.inputs.get("name"), "outputs": outputs}
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return ({"number": "123456789012", "projectId": "my-tpu-project"}, None)


def shadowed_user_program() -> list[str]:
    """A user's program folder beside the installed wheel: with a `stacks` package of its own, `import tpu_serving`
    fails naming it (tpu_serving/_namespace.py); without one, it imports the wheel's."""
    import subprocess
    import tempfile

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        user = Path(tmp)
        (user / "main.py").write_text("import tpu_serving, stacks\nprint('ours', stacks.__file__)\n")
        done = subprocess.run([sys.executable, str(user / "main.py")], capture_output=True, text=True, timeout=120)
        if done.returncode != 0 or "site-packages" not in done.stdout:
            out.append(f"the wheel's tpu_serving did not import in a user's folder: {done.stderr[-2000:]}")
        (user / "stacks").mkdir()
        (user / "stacks" / "__init__.py").write_text("MINE = True\n")
        done = subprocess.run([sys.executable, str(user / "main.py")], capture_output=True, text=True, timeout=120)
        want = f"the module 'stacks' is {(user / 'stacks' / '__init__.py').resolve()}, not tpu-serving's own"
        if done.returncode == 0 or want not in done.stderr:
            out.append(f"a user's stacks package beside the wheel was not refused naming it: {done.stderr[-2000:]}")
    return out


def main(version: str, pack: Path, platform_file: Path, program: Path) -> int:
    import tpu_serving

    where = Path(tpu_serving.__file__).resolve()
    assert "site-packages" in where.parts, f"tpu_serving imported from {where}, not the installed wheel"
    assert tpu_serving.__version__ == version, (tpu_serving.__version__, version)

    # PEP 561: the package carries its types, so mypy checks a user's program against the installed wheel
    assert (where.parent / "py.typed").is_file(), "tpu_serving has no py.typed"
    settings = {"model": "Qwen/Qwen3-8B", "gated": False, "maxModelLen": 4096}
    config = {
        "gcp:project": "my-tpu-project",
        "add-workload:platformStack": "organization/tpu-serving/dev",
        "add-workload:platformStackFile": str(platform_file),
        "add-workload:type": "vllm",
        "add-workload:name": "smoke",
        "add-workload:namespace": "smoke",
        "add-workload:pool": "v5e-2x4",
        "add-workload:settings": json.dumps(settings),
    }
    mocks = Mocks()
    pulumi.runtime.set_all_config(config)
    pulumi.runtime.set_mocks(mocks, project="add-workload", stack="smoke", preview=False)
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(program), run_name="__main__")))
    types = {t for t, _, _ in mocks.registered}
    assert "kubernetes:core/v1:Namespace" in types and "kubernetes:apps/v1:Deployment" in types, sorted(types)

    module = runpy.run_path(str(pack / "__main__.py"), run_name="tpu_serving_policy_pack")
    guardrails = module["guardrails"]
    assert Path(guardrails.__file__).resolve().parent.parent == where.parent.parent, guardrails.__file__
    names = sorted(p.name for p in module["policies"]("prod"))
    resources = [guardrails.Resource(t, n, props) for t, n, props in mocks.registered]
    found = guardrails.violations(resources, "dev")
    assert not found, [v.message for v in found]
    broken = guardrails.Resource("kubernetes:core/v1:Service", "web", {"spec": {"type": "LoadBalancer"}})
    assert guardrails.violations([broken], "prod"), "a public Service passed"
    shadowing_problems = shadowed_user_program()
    assert not shadowing_problems, shadowing_problems
    print(f"tpu-serving {version}: package and policy pack ({len(names)} policies: {', '.join(names)}) OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])))
