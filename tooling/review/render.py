"""Offline render: what a stack would create, without credentials, cloud or Pulumi CLI, as files to diff.

    python -m tooling.review.render dev                      # Pulumi.dev.yaml -> build/dev/
    python -m tooling.review.render examples/<name>/Pulumi.<name>.yaml
    python -m tooling.review.render examples/<name>          # every stack file in a folder
    python -m tooling.review.render --check dev              # also validate every Kubernetes object; non-zero on violations
    python -m tooling.review.render --golden                 # refresh tests/golden/<example>/ for every example
    python -m tooling.review.render --compare old/ dev       # also name every change that would recreate a resource
    python -m tooling.review.render --strict prod            # exit 1 on any warning (CI, for staging and prod stacks)
    python -m tooling.review.render --strict-for staging,prod Pulumi.*.yaml   # strict only for stacks of those environments

Runs the real program under Pulumi mocks in first-preview mode (values the cloud computes print as
"(known after apply)") and writes build/<stack>/:
  k8s/<namespace>/<Kind>-<name>.yaml   every Kubernetes object as the provider sends it (cluster-scoped: _cluster/),
                                       plus an `options:` block: parent, provider, dependsOn, replaceOnChanges,
                                       customTimeouts, aliases (a name or parent it had), ...;
                                       Helm releases and upstream manifests (the PathwaysJob controller) as
                                       HelmRelease-/ConfigFile- entries: chart or manifest URL, pinned version
  gcp/<module.Type>-<name>.yaml        every Google Cloud resource: inputs and resource options
  graph.mmd                            the graph (Mermaid), one node per component: small enough for GitHub
  graph-full.mmd                       every resource, components as subgraphs (tooling/review/graph.py)
  summary.md                           stack outputs, IAM grants, images, network exposure, protection, the graph,
                                       resources by type, TPU pools, workloads, estimated cost, warnings
Output is sorted and stable, so `git diff` of two renders is a review. Secrets print as "[secret]".
Every warning the program logs (what `pulumi preview` would print) is printed at the end of the run, per stack,
after its notes on the cost estimate (e.g. US prices used for another region), which never fail --strict; an
advisory the stack file acknowledges (acknowledgeAdvisories: a reviewed decision) warns but does not fail --strict either.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from stacks.config import ConfigError, StackConfig
from stacks.reports import cost
from stacks.serving import version_guard
from tooling.harness.k8s_objects import OPTIONS, is_object, plain
from tooling.harness.offline import ROOT, Recording, Registration, load_stack_file, parse_stack_file, run_stack_file
from tooling.oracles.crds import crd_source
from tooling.oracles.schemas import validate_objects
from tooling.review import model_routing
from tooling.review import summary as summary_module
from tooling.review.fleet_render import FleetStack, is_fleet
from tooling.review.fleet_render import summary as fleet_summary
from tooling.review.graph import component_graph, full_graph, short_type
from tooling.review.recreate import (
    NotARender,
    Resources,
    compute_class_changes,
    protected_needs,
    read_render,
    recreations,
)
from tooling.review.summary import summary

BUILD = ROOT / "build"
GOLDEN = ROOT / "tests" / "golden"
CLUSTER_SCOPED = "_cluster"


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=True, default_flow_style=False, width=120, allow_unicode=True)


def _names(recording: Recording) -> dict[str, str]:
    """URN -> "<type> <name>", to print dependencies and parents readably."""
    return {r.urn: f"{r.type} {r.name}" for r in recording.resources}


def _options(reg: Registration, names: dict[str, str], *, provider: bool = False) -> dict[str, Any]:
    """The resource options, dependencies and parent by "<type> <name>"; with provider, the explicit provider too."""
    given = reg.provider.rsplit("::", 1)[0] if provider and reg.provider else ""
    options: dict[str, Any] = {
        "parent": names.get(reg.parent, reg.parent or None),
        "provider": names.get(given, given or None),
        "dependsOn": sorted(names.get(d, d) for d in set(reg.dependencies)),
        "protect": reg.protect,
        "retainOnDelete": reg.retain_on_delete,
        "deletedWith": names.get(reg.deleted_with, reg.deleted_with or None),
        "deleteBeforeReplace": reg.delete_before_replace,
        "ignoreChanges": sorted(reg.ignore_changes),
        "replaceOnChanges": sorted(reg.replace_on_changes),
        "customTimeouts": dict(sorted(reg.custom_timeouts.items())) or None,
        "aliases": [
            {k: names.get(v, v) if k == "parentUrn" else v for k, v in sorted(a.items())}
            for a in reg.aliases
            if "type" not in a
        ],
    }
    return {k: v for k, v in options.items() if v not in (None, [], False)}


def kubernetes_files(recording: Recording) -> dict[str, str]:
    """Each object (or Helm release, upstream manifest) as the provider is sent it, with an `options:` block beside
    its fields (tooling/harness/k8s_objects.py OPTIONS): parent, provider, dependsOn, deleteBeforeReplace, replaceOnChanges,
    ... (which cluster it goes to, and what a change replaces, are reviewed like the inputs)."""
    names = _names(recording)
    files = {}
    for reg in recording.resources:
        # resources of the Kubernetes provider, and its multi-language components (a ConfigFile applies an
        # upstream manifest; its objects are the provider's to read, so the render shows what it is given)
        if not reg.type.startswith("kubernetes:") or not (reg.custom or reg.remote):
            continue
        inputs = plain(reg.inputs, mask_secrets=True)
        if is_object(reg):
            inputs.pop("__fieldManager", None)
            meta = inputs.get("metadata", {})
            path = f"k8s/{meta.get('namespace') or CLUSTER_SCOPED}/{inputs['kind']}-{meta['name']}.yaml"
        elif reg.type.startswith("kubernetes:helm.sh/"):
            path = f"k8s/{inputs.get('namespace') or CLUSTER_SCOPED}/HelmRelease-{inputs.get('name', reg.name)}.yaml"
        else:
            path = f"k8s/{CLUSTER_SCOPED}/{reg.type.rsplit(':', 1)[-1]}-{reg.name}.yaml"
        if path in files:
            raise ValueError(f"two Kubernetes objects render to {path}")
        if OPTIONS in inputs:
            raise ValueError(f"{path}: a field named {OPTIONS!r} collides with the rendered options block")
        files[path] = dump({**inputs, OPTIONS: _options(reg, names, provider=True)})
    return files


def gcp_files(recording: Recording) -> dict[str, str]:
    names = _names(recording)
    files = {}
    for reg in recording.resources:
        if not reg.type.startswith("gcp:"):
            continue
        body = {
            "type": reg.type,
            "name": reg.name,
            "inputs": plain(reg.inputs, mask_secrets=True),
            "options": _options(reg, names),
        }
        files[f"gcp/{short_type(reg.type)}-{reg.name}.yaml"] = dump(body)
    return files


def render_files(cfg: StackConfig, recording: Recording) -> dict[str, str]:
    files = {**kubernetes_files(recording), **gcp_files(recording)}
    files["graph.mmd"] = component_graph(recording)
    files["graph-full.mmd"] = full_graph(recording)
    files["summary.md"] = summary(cfg, recording)
    return files


def write(files: dict[str, str], out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def stack_files(arg: str) -> list[Path]:
    """A stack name (Pulumi.<name>.yaml here), a stack file, or a folder of stack files (e.g. examples/<name>)."""
    path = Path(arg)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return [path.resolve()]
    if path.is_dir():
        found = sorted(path.resolve().glob("Pulumi.*.yaml"))
        if found:
            return found
        raise SystemExit(f"no Pulumi.<stack>.yaml in the folder {arg}")
    candidate = ROOT / f"Pulumi.{arg}.yaml"
    if candidate.exists():
        return [candidate]
    raise SystemExit(
        f"no stack config for {arg!r}: expected {candidate.name}, a stack YAML file or a folder holding one"
    )


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def earlier_render(compare: Path, name: str) -> Path:
    """`DIR/<stack>/` when DIR holds renders of several stacks, else DIR itself."""
    return compare / name if (compare / name).is_dir() else compare


def example_files() -> list[Path]:
    return sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))


def stack_of(path: Path) -> StackConfig | FleetStack:
    """What the render knows of a stack file: a regional stack's validated config, or a fleet stack (docs/fleet.md),
    whose StackReferences read the recorded regional outputs beside it."""
    config = load_stack_file(path)
    return FleetStack(stack_name(path), config) if is_fleet(config) else parse_stack_file(path)


def files_of(stack: StackConfig | FleetStack, recording: Recording) -> dict[str, str]:
    if isinstance(stack, StackConfig):
        return render_files(stack, recording)
    files = {**kubernetes_files(recording), **gcp_files(recording), "summary.md": fleet_summary(stack, recording)}
    return {**files, "graph.mmd": component_graph(recording), "graph-full.mmd": full_graph(recording)}


def render_stack(path: Path) -> tuple[StackConfig | FleetStack, Recording, dict[str, str]]:
    cfg = stack_of(path)
    recording = run_stack_file(path, preview=True, stack=stack_name(path))
    return cfg, recording, files_of(cfg, recording)


def check(cfg: StackConfig | FleetStack, recording: Recording) -> list[str]:
    """Lines describing violations (empty when valid); prints what could not be checked."""
    from tooling.harness.k8s_objects import kubernetes_objects
    from tooling.oracles import api_rules

    objects = kubernetes_objects(recording)
    report = validate_objects(objects, cfg.kubernetes_minor)
    # what the API servers enforce beyond the schemas: names, labels, ports, int32, images; and Google Cloud's rules
    report.errors += api_rules.kubernetes_errors(objects) + api_rules.gcp_errors(recording)
    # every model and adapter name behind the gateway reaches exactly one pool (tooling/review/model_routing.py)
    if isinstance(cfg, StackConfig):
        report.errors += model_routing.problems(summary_module.model_routes(recording))
        report.errors += model_routing.pd_problems(summary_module.pd_paths(recording))
        report.errors += model_routing.lora_problems(
            summary_module.model_routes(recording), summary_module.pool_scorers(recording)
        )
    directory, source = crd_source()
    if directory is None:
        print(f"  note: custom resources NOT checked: {source}")
    else:
        print(f"  {source}")
    for line in report.unchecked:
        print(f"  not checked: {line}")
    for reg in recording.resources:
        if reg.remote and reg.type.startswith("kubernetes:yaml/"):
            url = plain(reg.inputs).get("file") or plain(reg.inputs).get("files")
            print(
                f"  not checked: {reg.type.rsplit(':', 1)[-1]} {reg.name}: the upstream manifest {url} (pinned in stacks/facts/versions.py)"
            )
    print(f"  {report.checked} objects validated at Kubernetes {cfg.kubernetes_minor}, {len(report.errors)} violations")
    return report.errors


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "stacks", nargs="*", help="stack names (Pulumi.<stack>.yaml), stack files or folders of them; default: dev"
    )
    parser.add_argument("--out", type=Path, default=BUILD, help="output root (default: build/)")
    parser.add_argument("--check", action="store_true", help="validate every Kubernetes object; exit 1 on violations")
    parser.add_argument("--golden", action="store_true", help="render every example into tests/golden/")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a stack has any warning")
    parser.add_argument(
        "--strict-for",
        metavar="ENVS",
        type=lambda text: {e.strip() for e in text.split(",") if e.strip()},
        default=set(),
        help="comma-separated environments (e.g. staging,prod): exit 1 when a stack of one of them has a warning",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        metavar="DIR",
        help="an earlier render (DIR/<stack>/ or DIR itself): name every difference that recreates a resource",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = argument_parser().parse_args(argv)

    if args.golden:
        paths, out_root = example_files(), GOLDEN
    else:
        paths, out_root = [p for s in (args.stacks or ["dev"]) for p in stack_files(s)], args.out
    failed = False
    warned: dict[str, tuple[list[str], bool]] = {}
    notes: dict[str, list[str]] = {}
    for path in paths:
        name = stack_name(path)
        earlier: Resources | None = None
        if args.compare:
            # Read the earlier render before writing this one: they may be the same directory (`make render`,
            # edit, `--compare build dev`), and a render compared with itself shows no change.
            try:
                earlier = read_render(earlier_render(args.compare, name))
            except NotARender as err:
                print(
                    f"{name}: error: --compare {args.compare}: no earlier render of {name!r} to compare with "
                    f"(expected {args.compare / name}/gcp/ or {args.compare}/gcp/): {err}",
                    file=sys.stderr,
                )
                failed = True
                continue
        try:
            cfg, recording, files = render_stack(path)
        except (ConfigError, Exception) as err:  # a config error: print it as `pulumi up` would
            print(f"{name}: error: {err}", file=sys.stderr)
            failed = True
            continue
        write(files, out_root / name)
        print(
            f"{name}: {len(recording.resources)} resources -> {(out_root / name).relative_to(ROOT) if (out_root / name).is_relative_to(ROOT) else out_root / name}"
        )
        if earlier is not None:
            later = read_render(out_root / name)
            lines = recreations(earlier, later)
            print(f"  {len(lines)} change(s) that recreate resources against {args.compare}")
            for line in lines:
                print(f"  recreates: {line}")
            for line in protected_needs(earlier, later, lines, name):
                print(f"  protected: {line}")
            for line in compute_class_changes(earlier, later):
                print(f"  compute class: {line}")
        if args.check:
            errors = check(cfg, recording)
            for line in errors:
                print(f"  violation: {line}", file=sys.stderr)
            failed = failed or bool(errors)
        warned[name] = (sorted(set(recording.warnings)), args.strict or cfg.environment in args.strict_for)
        notes[name] = cost.estimate(cfg).notes if isinstance(cfg, StackConfig) else []
    return 1 if report_warnings(warned, notes) or failed else 0


def report_warnings(warned: dict[str, tuple[list[str], bool]], notes: dict[str, list[str]] | None = None) -> bool:
    """Print every stack's notes about its cost estimate (never failing) and its warnings, last, where they are
    seen; True when a strict stack has a warning."""
    failed = False
    for name, (warnings, strict) in warned.items():
        for note in (notes or {}).get(name, []):
            print(f"{name}: note: cost estimate: {note}")
        if not warnings:
            print(f"{name}: no warnings")
            continue
        print(f"{name}: {len(warnings)} warning(s):")
        for line in warnings:
            print(f"  warning: {line}")
        blocking = [line for line in warnings if not version_guard.is_acknowledged(line)]
        if strict and not blocking:
            print(f"{name}: --strict: only acknowledged advisories (acknowledgeAdvisories, a reviewed decision) warn")
        elif strict:
            print(f"{name}: error: --strict: a warning fails the render of this stack; resolve it", file=sys.stderr)
            failed = True
    return failed


if __name__ == "__main__":
    sys.exit(main())
