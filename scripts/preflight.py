"""Before `pulumi up`: will the stack get its TPU capacity and everything else it needs? (tooling/preflight.py)

    make preflight STACK=dev
    python scripts/preflight.py dev

Per pool at its baseline and peak: TPU quota in the region and the named reservation's free hosts; the release
channel's versions against every minimum the stack needs; the APIs the stack's resources need enabled; the deployer's roles for them
(tooling/gcp_requirements.py). One row per check,
PASS, WARN or FAIL, with the command or link that fixes it. Needs gcloud, logged in.
Exit status: 0 no FAIL, 1 a FAIL, 2 the stack config does not validate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stacks.problems import ConfigError  # noqa: E402
from tooling import preflight  # noqa: E402
from tooling.offline import parse_stack_file, run_stack_file  # noqa: E402


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


def main(argv: list[str] | None = None, run: preflight.Runner = gcloud) -> int:
    path = stack_argument(argv, __doc__)
    try:
        cfg = parse_stack_file(path)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 2
    registered = run_stack_file(path).resources  # under mocks: the types the stack registers name its APIs and roles
    rows = preflight.preflight(cfg, run, [(r.type, r.inputs) for r in registered])
    print(f"preflight of stack {cfg.stack} (project {cfg.gcp_project}, region {cfg.region}):")
    print("\n".join(preflight.table(rows)))
    status = preflight.worst(rows)
    counts = {s: sum(r.status == s for r in rows) for s in (preflight.PASS, preflight.WARN, preflight.FAIL)}
    print(", ".join(f"{n} {s}" for s, n in counts.items()))
    return 1 if status == preflight.FAIL else 0


if __name__ == "__main__":
    sys.exit(main())
