"""Fuzz the stack config: mutate every shipped stack file and classify what the program does with each mutant.

    python -m tooling.scans.fuzz --cases 3000 --seed 11 [--render all|N] [--show unclear,crash,invalid]

Every outcome must be one of:
- `rejected`: `pulumi.RunError` listing problems, each naming the key path, the bad value and what is allowed;
- `valid`: a stack whose Kubernetes objects validate (schemas and API rules) and whose Google Cloud names and
  values are within the APIs' rules (tooling/oracles/api_rules.py).
Anything else is a finding: `crash` (any other exception), `hang` (over the time limit), `unclear` (a RunError a
user cannot act on: pydantic internals, union-branch paths, no key path, the value not shown), `invalid`
(accepted, but what it renders an API would refuse), `disagrees` (the program and its own JSON Schema,
schema/stack-config.schema.json, judge the mutant differently: the program accepts what the schema refuses, or the
program refuses a value's type, form or range, or an unknown key, which the schema accepts).

The schema is held to the config as the Pulumi CLI hands it to the program: every value of a stack's config reaches
the program as a string, an object or list as its JSON text (pulumi==3.272.0 sdk/python/lib/pulumi/runtime/config.py
get_config returns the string), so a top-level string holding JSON text (`tpu-serving:cluster: "{}"`,
`tpu-serving:paused: "true"`, which `pulumi config set tpu-serving:paused true` writes) is to the program the value
it spells; the schema's patterns are read as JSON Schema reads them (ECMA-262: `$` is the end of the text).

The mutants come from every stack file found at run time (Pulumi.*.yaml at the root and examples/*/Pulumi.*.yaml),
so a new example is fuzzed too. Mutations: wrong types, empty, huge, negative and int32-overflowing numbers,
unicode and control characters, trailing newlines, names at and past their length limits, unknown and missing
keys, odd YAML scalars, duplicated list entries, and names that collide with what the stack derives.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooling.harness.offline import ROOT, is_secure, load_stack_file, parse_any_config, program_value
from tooling.review.fleet_render import is_fleet

OUTCOMES = ("rejected", "valid", "crash", "hang", "unclear", "invalid", "disagrees")
FINDINGS = ("crash", "hang", "unclear", "invalid", "disagrees")
TIME_LIMIT_SECONDS = 20  # validation of one config
RENDER_TIME_LIMIT_SECONDS = 120  # a full offline run (the first one of a workload type imports its modules)
NOT_RENDERED = "accepted (not rendered)"
RENDERED = "rendered: "

BAD_SCALARS: list[Any] = [
    None,
    "",
    " ",
    0,
    -1,
    1.5,
    2**31,
    2**63,
    10**30,
    1e308,
    True,
    False,
    "yes",
    "~",
    "null",
    "0x10",
    "1e3",
    "é✓名",
    "a\nb",
    "tab\t",
    "\x00",
    "UPPER",
    "-lead",
    "trail-",
    "1abc",
    "a" * 300,
    "has space",
    "dots.in.name",
    "under_score",
    "kube-system",
    "system",
    [],
    {},
    [1, "x"],
    {"unexpected": 1},
]
# Names that what the stack derives can collide with, and lengths at and past the limits.
NAME_VALUES = ["system", "mh", "mh-s1", "sax", "sax-http", "a" * 36, "a" * 40, "a" * 41, "a" * 63, "a" * 64, "p-s0"]


def stack_files() -> list[Path]:
    """Every shipped stack file: environment stacks at the root and every example, found now."""
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into `node`; an encrypted value (`{secure: <ciphertext>}`) is one leaf: its ciphertext is opaque
    (the Pulumi CLI would only fail to decrypt a mutated one), but it can be replaced or deleted whole."""
    yield prefix
    if is_secure(node):
        return
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*prefix, i))


def _get(node: Any, path: tuple) -> Any:
    for part in path:
        node = node[part]
    return node


def _set(root: Any, path: tuple, value: Any) -> None:
    _get(root, path[:-1])[path[-1]] = value


def _mutated_value(rng: random.Random, old: Any) -> Any:
    roll = rng.random()
    if isinstance(old, bool) or roll < 0.35:
        return copy.deepcopy(rng.choice(BAD_SCALARS))
    if isinstance(old, int | float):
        return rng.choice([0, -old - 1, old * 1000 + 1, 2**31, 2**31 - 1, 10**18, old + 1, -(2**31) - 1, 1e300])
    if isinstance(old, str):
        return rng.choice(
            [
                old + "\n",
                " " + old,
                old.upper(),
                old * 8,
                old + "-" + "x" * rng.randint(1, 60),
                old + "é",
                old[:1],
                old + "$",
                rng.choice(NAME_VALUES),
            ]
        )
    if isinstance(old, list):
        return old + [copy.deepcopy(old[-1])] if old else [copy.deepcopy(rng.choice(BAD_SCALARS))]
    return copy.deepcopy(rng.choice(BAD_SCALARS))


def mutate(rng: random.Random, config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One to three mutations of `config`; returns the mutant and what was done (for reports)."""
    config = copy.deepcopy(config)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = [p for p in _paths(config) if p]
        path = rng.choice(paths)
        parent = _get(config, path[:-1])
        roll = rng.random()
        if roll < 0.08 and isinstance(parent, dict):
            del parent[path[-1]]
            done.append(f"delete {path}")
        elif roll < 0.14 and isinstance(_get(config, path), dict):
            key = rng.choice(["unknownKey", "Name", "nmae", "extra"])
            _get(config, path)[key] = rng.choice(["x", 1, True])
            done.append(f"add {path + (key,)}")
        elif roll < 0.22 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
            done.append(f"duplicate {path}")
        elif roll < 0.30 and isinstance(_get(config, path), dict):
            # give every name-like field below one of the values the stack derives or limits
            target = _get(config, path)
            key = rng.choice([k for k in ("name", "namespace", "pool") if k in target] or ["name"])
            target[key] = rng.choice(NAME_VALUES)
            done.append(f"set {path + (key,)} = {target[key]!r}")
        else:
            value = _mutated_value(rng, _get(config, path))
            _set(config, path, value)
            done.append(f"set {path} = {value!r:.60}")
    return config, done


# ---- classification ----------------------------------------------------------------------------------------

INTERNALS = (
    "Input should be",
    "instance of",
    "[type=",
    "pydantic",
    "errors.pydantic.dev",
    "function-after",
    "tagged-union",
    "Traceback",
    "object has no attribute",
)
BRANCH_SEGMENT = re.compile(r"\.(str|int|float|bool|list|dict|json-or-python|lax-or-strict|function-[a-z]+)(\.|\[|:|$)")
PROBLEM_LINE = re.compile(r"^  - ((?:gcp|tpu-serving):[A-Za-z0-9_.\[\]-]+): (.+)$")


def unclear_reason(message: str) -> str | None:
    """Why a config error would not help its reader, or None when every line names a key path and says why."""
    lines = message.splitlines()
    if not lines or not lines[0].startswith("invalid stack configuration"):
        return "not the stack's config error"
    problems = lines[1:]
    if not problems:
        return "no problem listed"
    for line in problems:
        match = PROBLEM_LINE.match(line)
        if not match:
            return f"a line without a key path: {line[:120]!r}"
        path, text = match.groups()
        if any(marker in text for marker in INTERNALS):
            return f"pydantic internals: {line[:160]!r}"
        if BRANCH_SEGMENT.search(path):
            return f"a union-branch path: {path}"
        if len(text) > 600:
            return f"a message of {len(text)} characters"
    return None


@dataclass
class Result:
    outcome: str
    source: str
    mutations: list[str]
    detail: str = ""


@dataclass
class Summary:
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    rendered: int = 0

    def counts(self) -> Counter[str]:
        return Counter(r.outcome for r in self.results)

    def findings(self) -> list[Result]:
        return [r for r in self.results if r.outcome in FINDINGS]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout()


def parse(config: dict[str, Any], stack: str):
    """What the program does with a stack's config before registering anything, without the Pulumi runtime: a
    regional stack's StackConfig, a fleet stack's FleetConfig, or ConfigError (tooling/harness/offline.py parse_any_config)."""
    return parse_any_config(config, stack)


def _ecma_pattern(validator, pattern, instance, schema):  # noqa: ARG001 - jsonschema's keyword signature
    """JSON Schema's `pattern` as ECMA-262 reads it (JSON Schema 2020-12 Validation 6.3.3), where `$` is the end of
    the text; Python's `re` lets `$` match before a final newline, which the program's pattern check (Rust's regex)
    does not."""
    import jsonschema

    if isinstance(instance, str) and not re.search(re.sub(r"(?<!\\)\$", r"\\Z", pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


_VALIDATOR: Any = None


def schema_errors(config: dict[str, Any]) -> list[str]:
    """What schema/stack-config.schema.json says of a stack's config as the program receives it: every value that
    is or holds an encrypted one stays as written, every other top-level string holding JSON text is its value."""
    global _VALIDATOR
    if _VALIDATOR is None:
        import jsonschema

        from tooling.generate.json_schema import SCHEMA_PATH

        base = jsonschema.Draft202012Validator
        kind = jsonschema.validators.extend(base, {"pattern": _ecma_pattern})
        _VALIDATOR = kind(json.loads(SCHEMA_PATH.read_text()))
    received = {
        key: program_value(value) if isinstance(value, str) and key.startswith("tpu-serving:") else value
        for key, value in config.items()
    }
    return [
        f"{'.'.join(map(str, e.absolute_path))}: {e.message}"[:300]
        for e in _VALIDATOR.iter_errors({"config": received})
    ]


def disagreement(config: dict[str, Any], problems: list[Any] | None) -> str | None:
    """Why the program and its JSON Schema disagree on `config` (`problems`: the program's, None when it accepted
    the config), or None."""
    refused = schema_errors(config)
    if problems is None and refused:
        return "the program accepts what its JSON Schema refuses:\n" + "\n".join(refused[:5])
    shape = [str(p) for p in problems or [] if getattr(p, "shape", False)]
    if shape and not refused:
        return "the program refuses a value's type, form or range that its JSON Schema accepts:\n" + "\n".join(shape)
    return None


def render_errors(config: dict[str, Any], stack: str, kubernetes_minor: str) -> list[str]:
    """Run the program offline (first preview) and list what the APIs would refuse in what it registers."""
    from tooling.harness.k8s_objects import kubernetes_objects
    from tooling.harness.offline import run_program
    from tooling.oracles import api_rules
    from tooling.oracles.schemas import validate_objects

    recording = run_program(config, stack=stack, preview=True)
    objects = kubernetes_objects(recording)
    errors = validate_objects(objects, kubernetes_minor).errors
    errors += api_rules.kubernetes_errors(objects) + api_rules.gcp_errors(recording)
    errors += [f"duplicate URN {u}" for u in recording.duplicate_urns]
    return errors


def classify(config: dict[str, Any], stack: str, *, render: bool) -> tuple[str, str]:
    """(outcome, detail) of one config."""
    import pulumi

    from stacks.config import ConfigError

    old = signal.signal(signal.SIGALRM, _alarm)
    outer, _ = signal.getitimer(signal.ITIMER_REAL)  # e.g. pytest-timeout's alarm: keep it running
    limit = min(TIME_LIMIT_SECONDS, outer) if outer else TIME_LIMIT_SECONDS
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        try:
            cfg = parse(config, stack)
        except ConfigError as err:
            why = unclear_reason(str(err))
            disagrees = disagreement(config, err.problems)
            if why:
                return "unclear", f"{why}\n{err}"
            return ("disagrees", f"{disagrees}\n{err}") if disagrees else ("rejected", str(err))
        disagrees = disagreement(config, None)
        if disagrees:
            return "disagrees", disagrees
        if not render or is_fleet(config):  # a fleet's rules read its regional stacks: tests/test_fleet.py
            return "valid", NOT_RENDERED
        signal.setitimer(
            signal.ITIMER_REAL, min(RENDER_TIME_LIMIT_SECONDS, outer) if outer else RENDER_TIME_LIMIT_SECONDS
        )
        try:
            errors = render_errors(config, stack, cfg.kubernetes_minor)
        except pulumi.RunError as err:
            why = unclear_reason(str(err))
            return ("unclear", f"{RENDERED}{why}\n{err}") if why else ("rejected", f"{RENDERED}{err}")
        if errors:
            return "invalid", RENDERED + "\n".join(errors[:20])
        return "valid", RENDERED
    except _Timeout:
        return (
            "hang",
            f"over the time limit ({TIME_LIMIT_SECONDS} s to validate, {RENDER_TIME_LIMIT_SECONDS} s to render)",
        )
    except Exception as err:  # noqa: BLE001 - every other exception is the finding
        return "crash", f"{type(err).__name__}: {err}"[:2000]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


def run(cases: int, seed: int, *, render: int | None = None, files: list[Path] | None = None) -> Summary:
    """`cases` mutants spread over every stack file; the first `render` accepted ones (None: all) are rendered."""
    rng = random.Random(seed)
    sources = [(p, load_stack_file(p)) for p in (files or stack_files())]
    summary = Summary()
    if render != 0:
        # import the program's modules once, outside the per-case time limit (an import cut short by the limit
        # would leave a half-initialised module behind for every later case)
        render_errors(sources[0][1], "warmup", "1.32")
    start = time.monotonic()
    for i in range(cases):
        path, base = sources[i % len(sources)]
        config, done = mutate(rng, base)
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        do_render = render is None or summary.rendered < render
        outcome, detail = classify(config, stack, render=do_render)
        summary.rendered += detail.startswith(RENDERED)
        source = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        summary.results.append(Result(outcome, str(source), done, detail))
    summary.seconds = time.monotonic() - start
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--render", default="all", help="render the first N accepted mutants, or all")
    parser.add_argument("--show", default="crash,hang,unclear,invalid", help="outcomes to print in full")
    args = parser.parse_args(argv)
    summary = run(args.cases, args.seed, render=None if args.render == "all" else int(args.render))
    shown = set(args.show.split(","))
    for r in summary.results:
        if r.outcome in shown:
            print(f"--- {r.outcome} {r.source} {r.mutations}\n{r.detail}\n")
    counts = summary.counts()
    print(
        f"{len(summary.results)} cases in {summary.seconds:.1f} s ({summary.rendered} rendered): "
        + ", ".join(f"{k} {counts.get(k, 0)}" for k in OUTCOMES)
    )
    return 1 if summary.findings() else 0


if __name__ == "__main__":
    sys.exit(main())
