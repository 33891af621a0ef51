"""Issue 36's transitions that a local cluster can show (items 1, 3 and 7), each on its own local cluster, applied by
the real Pulumi engine and Kubernetes provider (e2e/transitions.py, docs/local.md). `make e2e` runs them after the
examples (with `E2E_STACKS`, those on the stacks it names); alone: `E2E_TRANSITIONS=fixed-replicas .venv/bin/python -m pytest -c e2e/pytest.ini e2e/test_transitions.py`
(under `flock /work/brief/s3/cluster.lock` on a shared machine).

The stack file a transition starts from is the example's, with what the transition needs that the cluster must
mirror from the start (a second pool's kwok nodes), written beside the local state.
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import pytest
import yaml

from e2e import cluster as c
from tooling.harness.offline import ROOT, read_stack_yaml
from tooling.local import local_stack

ONLY = [s for s in (os.environ.get("E2E_TRANSITIONS") or "").split(",") if s]
# `E2E_STACKS` (a subset of the examples, e2e/test_examples.py) keeps the transitions on those stacks only
STACKS = [s for s in (os.environ.get("E2E_STACKS") or "").split(",") if s]
TIMEOUT = float(os.environ.get("E2E_EXAMPLE_TIMEOUT", "2400"))
NS = "tpu-serving"


def _single_host_pool(config: dict) -> None:
    """vllm-hosts: a single-host v6e pool beside the multi-host one, in the same zone; and no Inference Gateway,
    whose body-based router chart (gateway-api-inference-extension v1.5.0 config/charts/body-based-routing) is not in
    ../shared/reference, the only chart source a local run reads (docs/local.md): the move's Services and servers are
    what this transition shows, the InferencePool keeps the same selector either way."""
    config[f"{NS}:gateway"] = {"enabled": False}
    pools = config[f"{NS}:tpuPools"]
    zone = pools[0]["zone"]
    pools.append(
        {
            "name": "v6e-single",
            "tpu": "v6e",
            "topology": "2x4",
            "zone": zone,
            "capacity": "on-demand",
            "autoscaling": {"minNodes": 1, "maxNodes": 2},
        }
    )


# transition -> (example stack file, what the stack file needs beside the example's)
CASES = {
    "fixed-replicas": ("examples/gemma-hpa/Pulumi.gemma-hpa.yaml", None),
    "vllm-hosts": ("examples/vllm-multi-host/Pulumi.vllm-multi-host.yaml", _single_host_pool),
    "lws-subgroup": ("examples/llama2-70b-disaggregated/Pulumi.llama2-70b-disaggregated.yaml", None),
}


def stack_file(transition: str) -> Path:
    example, extend = CASES[transition]
    source = ROOT / example
    if extend is None:
        return source
    data = copy.deepcopy(read_stack_yaml(source))
    extend(data["config"])
    out = local_stack.LOCAL / "transitions" / transition / source.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def _stack(transition: str) -> str:
    return Path(CASES[transition][0]).name.removeprefix("Pulumi.").removesuffix(".yaml")


@pytest.mark.parametrize(
    "transition", [t for t in CASES if (not ONLY or t in ONLY) and (ONLY or not STACKS or _stack(t) in STACKS)]
)
def test_transition_on_a_local_cluster(transition: str):
    path = stack_file(transition)
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    with c.local_cluster(stack, path):
        try:
            code, out = c.run_process([sys.executable, "-m", "e2e.transitions", transition, str(path)], TIMEOUT)
        except TimeoutError as err:
            pytest.fail(f"{transition}: {err}")
    print(out[-20000:])
    problems = [line.removeprefix("PROBLEM: ") for line in out.splitlines() if line.startswith("PROBLEM: ")]
    assert code == 0 and not problems, "\n".join(problems) or out[-6000:]
