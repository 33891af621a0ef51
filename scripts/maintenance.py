"""Upcoming host maintenance on each TPU slice of a stack (tooling/operations/host_maintenance.py).

    make maintenance STACK=dev
    python scripts/maintenance.py dev

One line per node pool of every TPU pool: its hosts and the earliest maintenance window of any of them (a host event
stops a multi-host slice whole), flagged WITHIN A DAY when it starts in the next 24 hours. Needs gcloud, logged in.
Exit status: 0 listed, 2 gcloud failed or the stack config does not validate.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

from preflight import gcloud, stack_argument  # noqa: E402  the one gcloud runner

from stacks.problems import ConfigError  # noqa: E402
from tooling.harness.offline import parse_stack_file  # noqa: E402
from tooling.operations import host_maintenance  # noqa: E402
from tooling.operations.preflight import GcloudError  # noqa: E402


def main(
    argv: list[str] | None = None,
    run: host_maintenance.Runner = gcloud,
    now: datetime.datetime | None = None,
) -> int:
    path = stack_argument(argv, __doc__)
    try:
        cfg = parse_stack_file(path)
        instances = run(host_maintenance.instances_command(cfg))
    except (ConfigError, GcloudError) as err:
        print(err, file=sys.stderr)
        return 2
    print(f"upcoming maintenance of stack {cfg.stack} (cluster {cfg.cluster_name}):")
    found = host_maintenance.slices(cfg, instances or [])
    for line in host_maintenance.lines(found, now or datetime.datetime.now(datetime.UTC)):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
