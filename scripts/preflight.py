"""Before `pulumi up`: will the stack get its TPU capacity and everything else it needs? (tooling/operations/preflight.py)

    make preflight STACK=dev
    python scripts/preflight.py dev

Per pool at its baseline and peak: TPU quota in the region and the named reservation's free hosts or chips; the
release channel's versions against every minimum the stack needs; the APIs the stack's resources need enabled; the
deployer's roles for them (tooling/oracles/gcp_requirements.py); every principal outside the project the stack grants a
role, against the organization's domain restricted sharing. A fleet stack (tpu-serving:fleet) gets the last three:
its regional stacks' outputs are read with `pulumi stack output` (an example's from its recorded outputs/). One row
per check, PASS, WARN or FAIL, with the command or link that fixes it. Needs gcloud, logged in.
Exit status: 0 no FAIL, 1 a FAIL, 2 the stack config does not validate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pulumi  # noqa: E402

from stacks.fleets import fleet  # noqa: E402
from stacks.problems import ConfigError  # noqa: E402
from tooling.harness.offline import load_stack_file, parse_stack_file, recorded_outputs, run_program, run_stack_file  # noqa: E402
from tooling.operations import preflight  # noqa: E402
from tooling.review.fleet_render import is_fleet, stack_key  # noqa: E402

Outputs = Callable[[str], dict[str, Any]]
"""A stack reference (<organization>/<project>/<stack>) -> its outputs, as `pulumi stack output --json` prints them."""


def gcloud(args: list[str]) -> Any:
    """The one way preflight calls gcloud: JSON out, GcloudError on a non-zero exit."""
    result = subprocess.run(["gcloud", *args, "--format=json"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise preflight.GcloudError(result.stderr.strip() or f"exit status {result.returncode}")
    return json.loads(result.stdout or "null")


def stack_argument(argv: list[str] | None, doc: str | None) -> Path:
    """The stack file the command line names: a stack name (Pulumi.<stack>.yaml here) or a stack file's path."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name (Pulumi.<stack>.yaml) or a stack file")
    stack = parser.parse_args(argv).stack
    return Path(stack) if stack.endswith((".yaml", ".yml")) else ROOT / f"Pulumi.{stack}.yaml"


def pulumi_outputs(stack: str) -> dict[str, Any]:
    """A stack's outputs from its backend (the fleet's `up` reads the same through StackReference)."""
    result = subprocess.run(
        ["pulumi", "stack", "output", "--json", "--stack", stack], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise preflight.GcloudError(result.stderr.strip() or f"pulumi stack output: exit status {result.returncode}")
    return dict(json.loads(result.stdout or "{}"))


def fleet_main(path: Path, run: preflight.Runner, outputs_of: Outputs) -> int:
    """A fleet stack: its project's APIs, roles and domain restricted sharing, from what it registers."""
    config = load_stack_file(path)
    project = str(config.get("gcp:project") or "")
    regions = (config.get(fleet.PATH) or {}).get("regions") or []
    try:
        outputs = recorded_outputs(path) or {stack_key(r["stack"]): outputs_of(r["stack"]) for r in regions}
        registered = run_program(config, stack=path.stem.removeprefix("Pulumi."), stack_outputs=outputs).resources
    except (preflight.GcloudError, ConfigError, pulumi.RunError) as err:
        print(err, file=sys.stderr)
        return 2
    rows = preflight.project_rows(project, run, [(r.type, r.inputs) for r in registered])
    return report(f"preflight of fleet stack {path.stem.removeprefix('Pulumi.')} (project {project}):", rows)


def report(header: str, rows: list[preflight.Row]) -> int:
    print(header)
    print("\n".join(preflight.table(rows)))
    counts = {s: sum(r.status == s for r in rows) for s in (preflight.PASS, preflight.WARN, preflight.FAIL)}
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    return 1 if preflight.worst(rows) == preflight.FAIL else 0


def main(argv: list[str] | None = None, run: preflight.Runner = gcloud, outputs_of: Outputs = pulumi_outputs) -> int:
    path = stack_argument(argv, __doc__)
    if is_fleet(load_stack_file(path)):
        return fleet_main(path, run, outputs_of)
    try:
        cfg = parse_stack_file(path)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    registered = run_stack_file(path).resources  # under mocks: the types the stack registers name its APIs and roles
    rows = preflight.preflight(cfg, run, [(r.type, r.inputs) for r in registered])
    return report(f"preflight of stack {cfg.stack} (project {cfg.gcp_project}, region {cfg.region}):", rows)


if __name__ == "__main__":
    sys.exit(main())
