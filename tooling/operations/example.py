"""Start a stack from an example: `make example EXAMPLE=<example> STACK=<new stack> [ENVIRONMENT=...] [PROJECT=...]`.

    python -m tooling.operations.example vllm-single-host prod                  # Pulumi.prod.yaml, environment prod
    python -m tooling.operations.example vllm-single-host llama --environment staging --project acme-ml

Copies examples/*/Pulumi.<example>.yaml to Pulumi.<stack>.yaml, keeping its comments, and sets:
- tpu-serving:environment: the one asked for; else the stack's name when it is dev, staging or prod (or is named
  like one, e.g. prod-eu); else the example's, and it says so. An example is a dev stack: made into a prod stack
  unchanged it would have no deletion protection and a bucket destroyed with its data.
- gcp:project: the one asked for; else the example's placeholder (stacks/pieces/environment.py PLACEHOLDER_PROJECT) stays, which
  the render flags and a real `pulumi preview`/`up` refuses.
Then it validates the new stack as `pulumi up` would and prints every problem and warning.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from stacks.config import NS
from stacks.model.profiles import PROFILES
from stacks.pieces.environment import named_environment
from stacks.problems import ConfigError
from tooling.harness.offline import FLEET_KEY, ROOT, StackFileError, load_stack_file, parse_any_config, read_stack_yaml


def example_file(example: str) -> Path:
    found = sorted((ROOT / "examples").glob(f"*/Pulumi.{example}.yaml"))
    if not found:
        names = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in example_names())
        print(f"no example {example!r}; examples: {' '.join(names)}")
        raise SystemExit(1)
    return found[0]


def example_names() -> list[Path]:
    return sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))


def environment_for(stack: str, asked: str | None, example_environment: str) -> tuple[str, str]:
    """(environment, why) for the new stack."""
    if asked:
        if asked not in PROFILES:
            raise SystemExit(f"ENVIRONMENT={asked!r} is not an environment; allowed: {', '.join(PROFILES)}")
        return asked, "as asked"
    if stack in PROFILES:
        return stack, "from the stack's name"
    named = named_environment(stack)
    if named:
        return named, f"the stack's name says {named}"
    return example_environment, "the example's (set ENVIRONMENT=staging or prod for another)"


def _set_value(text: str, key: str, value: str) -> str:
    """`key: value` on its line under `config:`, keeping the line's indentation and trailing comment."""
    pattern = re.compile(rf"^(\s+{re.escape(key)}:[ \t]*)([^#\n]*?)([ \t]*(#.*)?)$", re.M)
    if not pattern.search(text):
        return text.replace("config:\n", f"config:\n  {key}: {value}\n", 1)
    return pattern.sub(lambda m: f"{m.group(1)}{value}{m.group(3)}", text, count=1)


def new_stack_text(source: Path, stack: str, environment: str | None, project: str | None) -> tuple[str, list[str]]:
    """The new stack file's text and the lines that say what it is."""
    config = (read_stack_yaml(source) or {}).get("config") or {}
    if FLEET_KEY in config:
        return _fleet_stack_text(source, environment, project)
    was = str(config.get(f"{NS}:environment", "dev"))
    env, why = environment_for(stack, environment, was)
    text = source.read_text().replace("$schema=../../schema/", "$schema=./schema/")
    text = _set_value(text, f"{NS}:environment", env)
    notes = [f"environment: {env} ({why})" + (f"; the example's is {was}" if env != was else "")]
    if env != was:
        profile = PROFILES[env]
        notes.append(
            f"  the {env} profile: deletion protection {'on' if profile.protect else 'off'}, bucket "
            f"{'kept' if profile.retain_bucket else 'deleted'} on destroy"
        )
    if project:
        text = _set_value(text, "gcp:project", project)
        notes.append(f"gcp:project: {project}")
    return text, notes


def _fleet_stack_text(source: Path, environment: str | None, project: str | None) -> tuple[str, list[str]]:
    """A fleet stack (docs/fleet.md) has no environment: it reads its regional stacks, which `up` first."""
    if environment:
        raise SystemExit(f"{source.name} is a fleet stack (docs/fleet.md): it has no environment; drop ENVIRONMENT")
    text = source.read_text().replace("$schema=../../schema/", "$schema=./schema/")
    notes = [
        "a fleet stack (docs/fleet.md): no environment of its own; it serves the regional stacks named in "
        f"{FLEET_KEY}.regions, which must exist and be `up` first (make example EXAMPLE=fleet-us-east5 ...)"
    ]
    if project:
        text = _set_value(text, "gcp:project", project)
        notes.append(f"gcp:project: {project}")
    return text, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("example", help="an example's name (examples/*/Pulumi.<example>.yaml)")
    parser.add_argument("stack", help="the new stack's name: writes Pulumi.<stack>.yaml")
    parser.add_argument("--environment", help=f"one of {', '.join(PROFILES)} (default: from the stack's name)")
    parser.add_argument("--project", help="the Google Cloud project id (default: the example's placeholder)")
    args = parser.parse_args(argv)

    source = example_file(args.example)
    target = ROOT / f"Pulumi.{args.stack}.yaml"
    if target.exists():
        print(f"{target.name} exists; choose another STACK")
        return 1
    text, notes = new_stack_text(source, args.stack, args.environment, args.project)
    target.write_text(text)
    print(f"{target.name} created from {source.relative_to(ROOT)}:")
    for line in notes:
        print(f"  {line}")
    try:
        cfg = parse_any_config(load_stack_file(target), args.stack)
    except (ConfigError, StackFileError) as err:
        print(f"{target.name} needs changes before it can be rendered or deployed:\n{err}", file=sys.stderr)
        return 1
    for warning in getattr(cfg, "warnings", ()):
        print(f"  warning: {warning}")
    if FLEET_KEY in load_stack_file(target):
        print(
            f"next: edit {target.name} (regions[].stack, proxy subnets), `make up` each regional stack, then "
            f"'make preview STACK={args.stack}'"
        )
        return 0
    print(f"next: edit {target.name}, then 'make render STACK={args.stack}' and 'make preview STACK={args.stack}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
