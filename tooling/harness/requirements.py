"""The Python package pins, read from requirements.txt (or requirements-scan.txt), the one place that pins them.

Pure: reads the file, imports nothing it reads. Every line, comments aside, is `name==version`, each package once.
"""

from __future__ import annotations

import re
from pathlib import Path

from tooling.harness.program import ROOT

PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)")


class LoosePin(ValueError):
    """A requirements line that is not `name==version`, or a package pinned twice."""


def normalized(name: str) -> str:
    """PEP 503: `PyYAML` -> `pyyaml`, `types_PyYAML` -> `types-pyyaml`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path = ROOT / "requirements.txt") -> dict[str, str]:
    """{normalized package name: version} of a requirements file."""
    found: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = PIN.fullmatch(line)
        if not match:
            raise LoosePin(f"{path.name}:{number}: {line!r} is not pinned as name==version")
        name = normalized(match["name"])
        if name in found:
            raise LoosePin(f"{path.name}:{number}: {match['name']} pinned twice")
        found[name] = match["version"]
    return found
