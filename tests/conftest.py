"""Shared fixtures: stack configs as plain dicts and the offline runner."""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.offline import ROOT, Recording, load_stack_file, run_program

EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/Pulumi.*.yaml"))
STACK_FILES = [ROOT / "Pulumi.dev.yaml", *EXAMPLES]


def load_large_yaml(path: Path) -> Any:
    """An upstream CRD file (hundreds of kB): libyaml's loader where present, the pure-Python one takes seconds."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def reference_dir() -> Path:
    """`../shared/reference`, or the directory named by TPU_SERVING_REFERENCE."""
    return Path(os.environ.get("TPU_SERVING_REFERENCE", ROOT.parent / "shared" / "reference"))


BASE: dict[str, Any] = {
    "gcp:project": "tpu-test-project",
    "gcp:region": "us-east5",
    "tpu-serving:environment": "dev",
    "tpu-serving:cluster": {},
    "tpu-serving:bucket": {},
    "tpu-serving:tpuPools": [
        {"name": "v6e-4x4", "tpu": "v6e", "topology": "4x4", "zone": "us-east5-b"},
        {
            "name": "v5e-2x4",
            "tpu": "v5e",
            "topology": "2x4",
            "zone": "us-east5-a",
            "autoscaling": {"minNodes": 0, "maxNodes": 3},
        },
    ],
}


def stack_ksa(name: str, stack: str = "dev") -> str:
    """The name a Kubernetes ServiceAccount with Google access gets in `stack` (unique per stack)."""
    from stacks import naming

    return naming.stack_service_account(name, naming.stack_identity_suffix("tpu-serving", stack))


def make_config(**changes: Any) -> dict[str, Any]:
    """BASE with keys replaced; a key given as None is removed. Keys use '__' for ':' (tpu_serving__cluster)."""
    config = copy.deepcopy(BASE)
    for key, value in changes.items():
        real = key.replace("tpu_serving__", "tpu-serving:").replace("gcp__", "gcp:")
        if value is None:
            config.pop(real, None)
        else:
            config[real] = value
    return config


def pool(**fields: Any) -> dict[str, Any]:
    base = {"name": "p", "tpu": "v6e", "topology": "4x4", "zone": "us-east5-b"}
    base.update(fields)
    return base


@pytest.fixture
def run():
    """run(config, preview=False, stack='dev') -> Recording."""

    def _run(config: dict[str, Any], *, preview: bool = False, stack: str = "dev", **kw) -> Recording:
        return run_program(config, preview=preview, stack=stack, **kw)

    return _run


@functools.cache
def recorded(path: Path, preview: bool) -> Recording:
    """One run per stack file and mode for the whole session (tests only read recordings)."""
    return run_program(
        load_stack_file(path), stack=path.name.removeprefix("Pulumi.").removesuffix(".yaml"), preview=preview
    )
