"""Which fields of each custom resource the API server refuses to change, derived from upstream and written to
stacks/facts/immutable_fields.py, which the program reads to give every custom resource it registers a `replaceOnChanges`
(components/manifests.py): Pulumi then replaces the object (deleting it first, as its name is fixed:
pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff deleteBeforeReplace) instead of an update the API
server answers with an error.

    python -m tooling.oracles.immutable_fields            # write stacks/facts/immutable_fields.py
    python -m tooling.oracles.immutable_fields --check    # exit 1 when it differs from a fresh derivation

Two sources, never a hand-written list:
- the CRDs of the version matrix (stacks/facts/versions.py CRDS, every version; read where validation reads them,
  tooling/oracles/crds.py crd_source, or tooling/data/crd_schemas.json for the recorded projects): every
  `x-kubernetes-validations` rule `self == oldSelf` makes its field immutable, and a rule comparing
  `self.<f> == oldSelf.<f>` makes `<f>` immutable (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/
  custom-resource-definitions/#transition-rules);
- the validating webhooks' ValidateUpdate, which no schema shows: tooling/data/webhook_immutable_fields.json, read
  from each project's source at its supported tags (origins recorded there).

A field inside a list item is recorded by the list (`spec.replicatedJobs[*].dependsOn` -> `spec.replicatedJobs`):
replacing on any change of the list is the safe side of what the rule refuses.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from stacks.facts.versions import CRDS, crd_cache_path
from tooling.harness.offline import ROOT
from tooling.oracles import crd_schemas
from tooling.oracles.crds import crd_source

OUT = ROOT / "stacks" / "facts" / "immutable_fields.py"
WEBHOOKS = ROOT / "tooling" / "data" / "webhook_immutable_fields.json"
_FIELD_RULE = re.compile(r"self\.(\w+)\s*==\s*oldSelf\.\1\b")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def rule_fields(rule: str) -> list[str]:
    """The fields (relative to the rule's node; "" for the node itself) a transition rule keeps unchanged."""
    if rule.strip() == "self == oldSelf":
        return [""]
    return sorted(set(_FIELD_RULE.findall(rule)))


def schema_paths(schema: dict[str, Any]) -> set[str]:
    """Every dotted path an immutability rule of `schema` (an openAPIV3Schema) names, cut at the first list."""
    out: set[str] = set()

    def walk(node: Any, path: list[str], in_list: bool) -> None:
        if not isinstance(node, dict):
            return
        for validation in node.get("x-kubernetes-validations") or []:
            for name in rule_fields(str(validation.get("rule", ""))):
                if in_list:
                    out.add(".".join(path))
                elif path or name:
                    out.add(".".join([*path, name] if name else path))
        for key, child in (node.get("properties") or {}).items():
            walk(child, path if in_list else [*path, key], in_list)
        if isinstance(node.get("items"), dict):
            walk(node["items"], path, True)

    walk(schema, [], False)
    return out


def _crd_documents(directory: Path | None) -> list[dict[str, Any]]:
    """Every CRD document of the matrix's files (every version of every project) found in `directory`, or, for the
    projects tooling/oracles/crd_schemas.py records, in that record."""
    docs: list[dict[str, Any]] = []
    for project, versions in CRDS.items():
        for version, files in versions.items():
            for crd in files:
                path = directory / f"{crd_cache_path(project, version)}{crd.file_name}" if directory else None
                if path is not None and path.is_file():
                    docs.extend(d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if d)
    return docs


def _recorded() -> dict[str, set[str]]:
    """From tooling/data/crd_schemas.json (projects in no reference copy): group/Kind -> paths."""
    out: dict[str, set[str]] = {}
    for entry in crd_schemas.load().values():
        for schema in (entry.get("versions") or {}).values():
            out.setdefault(f"{entry['group']}/{entry['kind']}", set()).update(schema_paths(schema))
    return out


def derive(directory: Path | None) -> dict[str, list[str]]:
    """group/Kind -> its immutable paths (sorted, none under another), from the CRDs and the webhooks' record."""
    found: dict[str, set[str]] = {}
    for doc in _crd_documents(directory):
        key = f"{doc['spec']['group']}/{doc['spec']['names']['kind']}"
        for version in doc["spec"].get("versions") or []:
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            found.setdefault(key, set()).update(schema_paths(schema))
    for key, paths in _recorded().items():
        found.setdefault(key, set()).update(paths)
    for hook in json.loads(WEBHOOKS.read_text())["webhooks"]:
        found.setdefault(f"{hook['group']}/{hook['kind']}", set()).update(hook["fields"])
    return {key: _outermost(paths) for key, paths in sorted(found.items()) if paths}


def _outermost(paths: set[str]) -> list[str]:
    return sorted(p for p in paths if not any(p.startswith(q + ".") for q in paths))


def _entry(key: str, paths: list[str]) -> str:
    """One entry as `ruff format` leaves it: a one-path tuple on its line, several one per line."""
    if len(paths) == 1:
        return f"    {json.dumps(key)}: ({json.dumps(paths[0])},),\n"
    return f"    {json.dumps(key)}: (\n" + "".join(f"        {json.dumps(p)},\n" for p in paths) + "    ),\n"


def module_text(fields: dict[str, list[str]]) -> str:
    body = "".join(_entry(key, paths) for key, paths in fields.items())
    return (
        '"""GENERATED by `python -m tooling.oracles.immutable_fields` from the upstream CRDs\' `self == oldSelf` rules and the\n'
        "webhooks' immutable fields (tooling/data/webhook_immutable_fields.json): do not edit.\n\n"
        "<group>/<Kind> -> the fields the API server refuses to change on update (a field in a list item: its list).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        f"IMMUTABLE: dict[str, tuple[str, ...]] = {{\n{body}}}\n\n\n"
        "def replace_on_changes(api_version: str, kind: str) -> list[str]:\n"
        '    """The `replaceOnChanges` of a custom resource of `api_version` (<group>/<version>) and `kind`."""\n'
        '    group = api_version.rsplit("/", 1)[0]\n'
        '    return list(IMMUTABLE.get(f"{group}/{kind}", ()))\n'
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    directory, where = crd_source()
    if directory is None:
        print(f"immutable_fields: {where}", file=sys.stderr)
        return 1
    text = module_text(derive(directory))
    if args.check:
        if OUT.read_text() != text:
            print(
                f"{OUT.relative_to(ROOT)} is out of date: run `python -m tooling.oracles.immutable_fields`",
                file=sys.stderr,
            )
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
