"""Which files are the program `pulumi up` runs (for the checks that read its source: function length, typing views)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# bottom to top: pure config and plans, Pulumi components (and the composition), workload types, the package's API
# (tpu_serving/: what __main__.py and another program call, docs/package.md)
PROGRAM_PACKAGES = ("stacks", "components", "workloads", "tpu_serving")


def program_files() -> list[Path]:
    """`__main__.py` and every module of the program's packages."""
    return [ROOT / "__main__.py", *(p for pkg in PROGRAM_PACKAGES for p in sorted((ROOT / pkg).rglob("*.py")))]
