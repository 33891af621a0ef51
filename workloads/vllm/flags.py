"""The flags `vllm serve` accepts at the pinned vLLM (serve_flags.json beside this file, extracted from vLLM's own
argument parser at the pinned tag by tooling/oracles/vllm_flags.py, which records its origin), and the check of a workload's
`args` against them: a misspelt flag would make vLLM exit at start ("unrecognized arguments") while `pulumi up`
reports success."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from stacks.problems import Problem, close_matches, fmt

DATA = Path(__file__).with_name("serve_flags.json")


@functools.cache
def serve_flags() -> dict[str, Any]:
    """The data file: `version`, `source`, and `flags` (name without dashes -> boolean, switch, optional or value)."""
    return json.loads(DATA.read_text())


def arg_problem(name: str, value: Any) -> str | None:
    """Why `--<name>` with `value` (as a workload's `args` render it: true `--x`, false `--no-x`, null nothing, else
    `--x=<value>`) is not something the pinned `vllm serve` accepts, or None. `name` is normalized (dashes)."""
    data = serve_flags()
    flags, where = data["flags"], f"vLLM {data['version']} ({data['source']}, the pinned image)"
    base, _, key = name.partition(".")  # --json-arg.key value (vllm/utils/argparse_utils.py FlexibleArgumentParser)
    kind = flags.get(base)
    if kind is None:
        return f"--{base} is not a `vllm serve` flag of {where}; {close_matches(base, flags, '--')}"
    if value is None:
        return None
    if key and kind != "value":
        return f"--{base} takes no keys (`{name}`): only a flag that takes JSON does"
    if value is False and kind != "boolean":
        return f"false renders --no-{base}, which {where} does not have: leave the flag out"
    if value is True and kind == "value":
        return f"true renders a bare --{base}, which takes a value in {where}"
    if not isinstance(value, bool) and kind in ("boolean", "switch"):
        allowed = "true or false" if kind == "boolean" else "true"
        return f"{fmt(value)} is not allowed: --{base} takes no value in {where}; allowed: {allowed}"
    return None


def problems(path: str, args: dict[str, Any], normalize: Any) -> list[Problem]:
    """Each of `args` (by the key the user wrote) that the pinned `vllm serve` would refuse, at its key path."""
    found = []
    for key, value in args.items():
        why = arg_problem(normalize(key), value)
        if why:
            found.append(Problem(f"{path}.args.{key}", why))
    return found
