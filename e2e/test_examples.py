"""`make e2e`: every example with a Kubernetes layer, applied by the real Pulumi engine (the toolchain's CLI and
Kubernetes provider, a local file backend, passphrase secrets) to its own local cluster (a loopback control plane,
kwok nodes mirroring the stack's pools, the controllers the stack installs at their pinned tags), checked the way a
cluster operator would look at it (e2e/run_example.py, docs/local.md). One test per example; each problem names its
step.

Not covered: the fleet stack (tpu-serving:fleet builds a GKE fleet and its multi-cluster Gateway, no Kubernetes layer
of its own; its regional stacks, fleet-us-east5 and fleet-europe-west4, are covered).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from e2e import cluster as c
from e2e.run_example import STACK_FILES
from tooling.review.render import stack_name

ONLY = [s for s in (os.environ.get("E2E_STACKS") or "").split(",") if s]
EXAMPLE_TIMEOUT = float(os.environ.get("E2E_EXAMPLE_TIMEOUT", "2400"))


@pytest.mark.parametrize("path", [p for p in STACK_FILES if not ONLY or stack_name(p) in ONLY], ids=stack_name)
def test_example_on_a_local_cluster(path: Path):
    stack = stack_name(path)
    with c.local_cluster(stack, path):
        try:
            code, out = c.run_process([sys.executable, "-m", "e2e.run_example", str(path)], EXAMPLE_TIMEOUT)
        except TimeoutError as err:
            pytest.fail(f"{stack}: {err}")
    print(out[-20000:])
    problems = [line.removeprefix("PROBLEM: ") for line in out.splitlines() if line.startswith("PROBLEM: ")]
    assert code == 0 and not problems, "\n".join(problems) or out[-6000:]
