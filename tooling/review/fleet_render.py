"""Offline runs of a fleet stack (tpu-serving:fleet; docs/fleet.md): its StackReferences answered with the RECORDED
outputs of the regional stacks it names, and its review summary.

    .venv/bin/python -m tooling.review.fleet_render examples/fleet   # re-record outputs/<stack>.json from the folder's regional stacks

A recording is what the regional stack's program exports after a first `up` under the mocks (the keys the fleet
reads); tests/test_fleet.py checks the recorded files match the regional stack files beside them.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks.facts.versions import DEFAULT_KUBERNETES_MINOR
from stacks.fleets import fleet
from tooling.harness.offline import RECORDED_OUTPUTS, Recording, load_stack_file, run_stack_file

FLEET_KEY = "tpu-serving:fleet"
RECORDED = (fleet.OUTPUT, "kubeconfig", "clusterName", "clusterLocation")
OUTPUTS = RECORDED_OUTPUTS


def is_fleet(config: dict[str, Any]) -> bool:
    """A stack file's config is a fleet stack's."""
    return FLEET_KEY in config


def stack_key(reference: str) -> str:
    """The recording of `<organization>/<project>/<stack>` is outputs/<stack>.json."""
    return reference.rsplit("/", 1)[-1]


def record(stack_file: Path) -> dict[str, Any]:
    """What the fleet reads of one regional stack, as its program exports it after a first `up`."""
    outputs = run_stack_file(stack_file, preview=False).outputs
    return {key: outputs[key] for key in RECORDED if key in outputs}


def regional_files(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.glob("Pulumi.*.yaml")) if not is_fleet(load_stack_file(p))]


def write_recordings(folder: Path) -> list[Path]:
    written = []
    for path in regional_files(folder):
        out = folder / OUTPUTS / f"{path.name.removeprefix('Pulumi.').removesuffix('.yaml')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(record(path), indent=2, sort_keys=True) + "\n")
        written.append(out)
    return written


@dataclass(frozen=True)
class FleetStack:
    """What the render needs of a fleet stack in place of a regional StackConfig."""

    stack: str
    config: dict[str, Any]
    environment: str = "fleet"
    kubernetes_minor: str = DEFAULT_KUBERNETES_MINOR


def summary(stack: FleetStack, recording: Recording) -> str:
    """The fleet's review page: the regional stacks it reads, the pools it routes to and where, every resource."""
    from tooling.review.summary import graph_section, stack_outputs

    routing = recording.outputs.get("fleet") or {}
    lines = [
        f"# Fleet stack `{stack.stack}`",
        "",
        f"> {fleet.PREVIEW}. The fleet reads its regional stacks through StackReferences; offline, their recorded "
        "outputs (outputs/<stack>.json).",
        "",
        f"- Gateway `{routing.get('namespace')}/{routing.get('gateway')}` ({routing.get('gatewayClassName')}) in the "
        f"config cluster of `{routing.get('configCluster')}`; home region `{routing.get('homeRegion')}`, spill-over "
        f"above {routing.get('spilloverKvCacheUtilizationPercent')}% KV-cache utilisation",
        "",
        "## Routes: which regional pools the Gateway sends to",
        "",
        "| pool | model | region | stack | cluster | preference | capacity % |",
        "|---|---|---|---|---|---|---|",
    ]
    for pool, route in sorted((routing.get("routes") or {}).items()):
        for region, where in route["regions"].items():
            lines.append(
                f"| `{pool}` | `{route['model']}` | {region} | `{where['stack']}` | `{where['cluster']}` | "
                f"{where['preference']} | {where['capacityPercent']} |"
            )
    lines += ["", "## Graph", "", *graph_section(recording), "", "## Stack outputs", "", "```json"]
    lines += [stack_outputs(recording), "```", "", "## Resources", ""]
    lines += [f"- `{r.type}` {r.name}" for r in sorted(recording.resources, key=lambda r: (r.type, r.name))]
    if recording.warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in sorted(set(recording.warnings)))]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding a fleet's stack files")
    for folder in parser.parse_args(argv).folders:
        for out in write_recordings(folder):
            print(f"recorded {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
