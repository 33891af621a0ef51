"""tpu-serving as a Python package another Pulumi program installs (`pip install tpu_serving-<version>-py3-none-any.whl`,
docs/package.md): the platform (`build_stack`), one workload added to an existing platform stack's cluster
(`add_workload`), the whole program (`run`: what this repository's __main__.py runs), the workload types (`WORKLOAD_TYPES`) and the guardrails the policy pack runs (`guardrails`).

The program in this repository (__main__.py) is the first user of the same packages (stacks, components, workloads)."""

# ruff: noqa: E402 (the namespace check runs before the program's packages are imported)
from __future__ import annotations

from pathlib import Path as _Path

from tpu_serving import _namespace

# before anything imports stacks, components or workloads: they must be the ones installed beside tpu_serving
_namespace.check(_Path(__file__).resolve().parent.parent)

from components.platform import Platform, build_stack
from stacks import guardrails
from stacks.config import parse_stack_config
from tpu_serving.program import run
from tpu_serving.version import VERSION
from tpu_serving.workload import AddedWorkload, PlatformArgs, PlatformOutputs, WorkloadArgs, add_workload
from workloads.registry import WORKLOAD_TYPES

__version__ = VERSION

__all__ = [
    "WORKLOAD_TYPES",
    "AddedWorkload",
    "Platform",
    "PlatformArgs",
    "PlatformOutputs",
    "WorkloadArgs",
    "__version__",
    "add_workload",
    "build_stack",
    "guardrails",
    "parse_stack_config",
    "run",
]
