"""What the review says a config change does to the stack's Kubernetes objects (tooling/review/transition.py: the URNs it
replaces and the ones it updates), from two offline runs of the program in local mode. Run in its own process (the
offline runs install Pulumi's mocks, which the e2e's real runs must not share):

    python -m e2e.review OLD.json NEW.json STACK  ->  {"replaced": [urn...], "updated": [urn...], "capacity": [line...]}

`capacity`: the review's capacity problems (tooling/review/transition.py: old and new TPU servers more than their pool
holds during the `up`, whose new pods would stay Pending until its timeouts).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tooling.harness.k8s_objects import plain
from tooling.harness.offline import run_program
from tooling.review import transition


def gke(config: dict) -> dict:
    """The stack's config as a GKE stack (without its local target)."""
    return {k: v for k, v in config.items() if k != "tpu-serving:local"}


def review(old_config: dict, new_config: dict, stack: str) -> dict[str, list[str]]:
    old, new = run_program(old_config, stack=stack), run_program(new_config, stack=stack)
    before = {r.urn: r for r in old.resources if r.custom}
    replaced, updated = [], []
    for reg in new.resources:
        was = before.get(reg.urn)
        if was is None or not reg.type.startswith("kubernetes:"):
            continue
        if transition._replaced(was, reg):
            replaced.append(reg.urn)
        elif plain(was.inputs, mask_secrets=True) != plain(reg.inputs, mask_secrets=True):
            updated.append(reg.urn)
    # the capacity rule reads the node pools, which a local run does not register: the same change reviewed as a
    # GKE stack (the config without tpu-serving:local), as `make review` shows it in a pull request
    gke_old, gke_new = (run_program(gke(c), stack=stack) for c in (old_config, new_config))
    capacity = [line for line in transition.problems(gke_old, gke_new) if line.startswith("capacity:")]
    return {"replaced": sorted(replaced), "updated": sorted(updated), "capacity": capacity}


if __name__ == "__main__":
    old_path, new_path, stack = sys.argv[1:4]
    print(json.dumps(review(json.loads(Path(old_path).read_text()), json.loads(Path(new_path).read_text()), stack)))
