"""What validation reports: a problem names the key path, the bad value and what is allowed; a ConfigError
carries every problem of a stack at once (raised before any resource is registered)."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def fmt(value: Any) -> str:
    """A bad value as the user wrote it, for a problem's message: strings quoted, everything else as JSON."""
    return json.dumps(value) if not isinstance(value, str) else repr(value)


def close_matches(name: str, allowed: Any, prefix: str = "") -> str:
    """`close matches: <a>, <b>` among `allowed` for a misspelt `name` (difflib's ratio at least 0.6), or `no close
    match`; each shown with `prefix` (e.g. `--` for a flag)."""
    found = difflib.get_close_matches(name, list(allowed), n=3, cutoff=0.6)
    return f"close matches: {', '.join(prefix + m for m in found)}" if found else "no close match"


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    shape: bool = field(default=False, compare=False)
    """A value of the wrong type, form or range, or an unknown or missing key: what the JSON Schema generated from the
    config models says too (tooling/generate/json_schema.py), unlike a rule between values (tooling/scans/fuzz.py checks both
    agree)."""

    def __str__(self) -> str:
        # one line per problem: control characters a bad value carries are shown escaped, never raw
        return f"{self.path}: {_CONTROL.sub(lambda m: repr(m.group())[1:-1], self.message)}"


class ConfigError(Exception):
    """Every problem found in a stack config."""

    def __init__(self, stack: str, problems: list[Problem]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"invalid stack configuration for stack '{stack}' ({len(problems)} {noun}):\n{lines}")
