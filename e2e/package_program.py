"""The example program (examples/add-workload/) run from the clean virtualenv the built wheel is installed in
(`make package-env`), not from this checkout: e2e/package_run.py starts this file with that virtualenv's Python in
isolated mode (`python -I`: no script folder, no PYTHONPATH, no user site on sys.path), so `import tpu_serving` can
only find the installed wheel. Nothing of the checkout is imported here (the standard library and the installed
`pulumi` only).

The program is served as an inline program through the Automation API to the real Pulumi CLI, as
tooling/local/local_stack.py serves the platform's: the Python language host that `pulumi up` in the project folder
would start cannot be built here (stacks/facts/versions.py TOOLCHAIN_UNBUILDABLE).

    <venv>/bin/python -I e2e/package_program.py up|destroy <spec.json>     prints one line `RESULT <json>`
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any


def stack(spec: dict[str, Any]) -> Any:
    from pulumi import automation as auto

    program = Path(spec["program"])
    options = auto.LocalWorkspaceOptions(
        work_dir=str(program.parent),
        pulumi_home=spec["pulumi_home"],
        env_vars=spec["env"],
        secrets_provider="passphrase",
        pulumi_command=auto.PulumiCommand(root=spec["pulumi_root"], skip_version_check=True),
        project_settings=auto.ProjectSettings(name="add-workload", runtime="python"),
    )

    def run() -> None:
        runpy.run_path(str(program), run_name="__main__")

    return auto.create_or_select_stack(spec["stack"], project_name="add-workload", program=run, opts=options)


def main(command: str, spec_file: str) -> int:
    import os

    from pulumi import automation as auto

    import tpu_serving

    spec = json.loads(Path(spec_file).read_text())
    os.environ.update(spec["env"])  # the inline program's process reads the backend and PATH too
    where = str(Path(tpu_serving.__file__).resolve())
    result: dict[str, Any] = {"tpu_serving": where, "version": tpu_serving.__version__, "python": sys.executable}
    program = stack(spec)
    try:
        if command == "up":
            for key, value in spec["config"].items():
                program.set_config(key, auto.ConfigValue(value))
            up = program.up(on_output=print, color="never")
            result["outputs"] = {k: v.value for k, v in up.outputs.items()}
        else:
            program.destroy(on_output=print, color="never")
    except auto.errors.CommandError as err:
        result["error"] = str(err)[-3000:]
    print("RESULT " + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
