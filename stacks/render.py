"""Offline render: what a stack would create, without credentials, cloud or Pulumi CLI.

    python -m stacks.render dev                    # Pulumi.dev.yaml
    python -m stacks.render examples/<name>/Pulumi.<name>.yaml

Runs the real program under mocks in first-preview mode (values the cloud computes print as
"(known after apply)") and prints the resources, the TPU pools and the stack outputs (secrets masked).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from stacks.offline import ROOT, Recording, run_stack_file


def stack_file(arg: str) -> Path:
    path = Path(arg)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidate = ROOT / f"Pulumi.{arg}.yaml"
    if candidate.exists():
        return candidate
    raise SystemExit(f"no stack config for {arg!r}: expected {candidate.name} or a path to a stack YAML file")


def format_recording(rec: Recording) -> str:
    lines = [f"{len(rec.resources)} resources"]
    width = max((len(r.type) for r in rec.resources), default=0)
    for r in sorted(rec.resources, key=lambda r: r.urn):
        flags = [f for f, on in (("protect", r.protect), ("retain", r.retain_on_delete)) if on]
        lines.append(f"  {r.type:<{width}}  {r.name}{'  [' + ', '.join(flags) + ']' if flags else ''}")
    lines.append("outputs:")
    for key in sorted(rec.outputs):
        value = "[secret]" if key in rec.secret_outputs else rec.outputs[key]
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        lines.append(f"  {key}: {text}")
    if rec.warnings:
        lines.append("warnings:")
        lines.extend(f"  - {w}" for w in rec.warnings)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", nargs="?", default="dev", help="stack name (Pulumi.<stack>.yaml) or a stack file")
    args = parser.parse_args(argv)
    path = stack_file(args.stack)
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        rec = run_stack_file(path, preview=True, stack=stack)
    except Exception as err:  # a RunError from validation: print it as the CLI would
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"stack {stack} ({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path})")
    print(format_recording(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
