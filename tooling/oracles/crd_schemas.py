"""The schemas of the upstream CRDs that no reference copy holds, recorded so that validation has an oracle
everywhere (CI reaches package registries, never GitHub).

    python -m tooling.oracles.crd_schemas              # read the CRD files, write tooling/data/crd_schemas.json
    python -m tooling.oracles.crd_schemas --check      # compare the record with the CRD files (exit 1 on a difference)
    python -m tooling.oracles.crd_schemas --crds DIR   # read the files from DIR (default: where validation reads CRDs)

For each CRD file of RECORDED's projects at the version the objects are validated against (stacks/facts/versions.py
CRDS, first version), the record keeps the file's origin (`owner/repo@tag:path`) and sha256 (the pin: a file whose
bytes do not match it is refused), its group and kind, and the `openAPIV3Schema` of every served version, without
its prose (`description`). tooling/oracles/schemas.py validates against the CRD files when they are at hand (`make crds`,
../shared/reference/crds) and against this record otherwise; tests/test_crd_schemas.py compares the two where the
files are at hand.

Why a record and not a package: `cloudcoil-models-keda` (PyPI, 2.20.2.1) ships pydantic models generated from the
CRDs, not their schemas, and `@kubernetes-models/keda` (npm, 2.0.0) is versioned on its own, with no KEDA tag to pin
it to. The CRD files at the pinned tag, whose sha256 `make crds` checks, are the source; this is their extract.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from stacks.facts.versions import CRDS, CrdFile
from tooling.harness.offline import ROOT
from tooling.oracles.crds import crd_source

DATA = ROOT / "tooling" / "data" / "crd_schemas.json"
# the projects whose CRDs are in no reference copy (../shared/reference/SOURCES.md lists none of KEDA's)
RECORDED = ("keda",)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def recorded_files() -> list[CrdFile]:
    """The CRD files recorded: each RECORDED project's files at its first (validated) version."""
    return [crd for project in RECORDED for crd in next(iter(CRDS[project].values()))]


def origin(crd: CrdFile) -> str:
    return f"{crd.repo}@{crd.tag}:{crd.path}"


def without_prose(node: Any, field_names: bool = False) -> Any:
    """The schema without `description` (a `properties` map's keys are field names, kept whatever they are)."""
    if isinstance(node, dict):
        return {
            k: without_prose(v, k == "properties" and not field_names)
            for k, v in node.items()
            if field_names or not (k == "description" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [without_prose(v) for v in node]
    return node


def extract(crd: CrdFile, data: bytes) -> dict[str, Any]:
    """One file's record entry; refuses bytes that are not the pinned file."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != crd.sha256:
        raise ValueError(f"{crd.file_name}: sha256 {digest} is not the pinned {crd.sha256} ({origin(crd)})")
    (doc,) = [d for d in yaml.load_all(data.decode(), Loader=_LOADER) if d and d.get("kind")]
    spec = doc["spec"]
    return {
        "source": origin(crd),
        "sha256": crd.sha256,
        "group": spec["group"],
        "kind": spec["names"]["kind"],
        "versions": {
            v["name"]: without_prose(v["schema"]["openAPIV3Schema"])
            for v in spec["versions"]
            if v.get("served", True) and "schema" in v
        },
    }


def read(directory: Path) -> tuple[dict[str, Any], list[str]]:
    """(the record's `crds` from the files in `directory`, the files absent there)."""
    entries, absent = {}, []
    for crd in recorded_files():
        path = directory / crd.file_name
        if path.is_file():
            entries[crd.file_name] = extract(crd, path.read_bytes())
        else:
            absent.append(crd.file_name)
    return entries, absent


def document(entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "origin": "the openAPIV3Schema of each served version of the upstream CRD files below (source, sha256: "
        "stacks/facts/versions.py CRDS), descriptions left out",
        "generatedBy": "python -m tooling.oracles.crd_schemas",
        "crds": entries,
    }


@cache
def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())["crds"] if path.is_file() else {}


def schemas(group: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the recorded openAPIV3Schema, for one API group."""
    return {
        (f"{group}/{version}", entry["kind"]): schema
        for entry in load().values()
        if entry["group"] == group
        for version, schema in entry["versions"].items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare the record with the CRD files; exit 1 if not")
    parser.add_argument("--crds", type=Path, default=None, help="the CRD folder (default: where validation reads)")
    args = parser.parse_args(argv)
    directory, why = (args.crds, f"CRDs from {args.crds}") if args.crds else crd_source()
    entries, absent = read(directory) if directory else ({}, [c.file_name for c in recorded_files()])
    if absent:
        print(f"{', '.join(absent)}: not in the CRD folder ({why}): run `make crds` or pass --crds", file=sys.stderr)
        return 2
    if args.check:
        if load() != entries:
            print(
                f"{DATA.relative_to(ROOT)} does not match the CRDs ({why}): run `python -m tooling.oracles.crd_schemas`"
            )
            return 1
        print(f"{DATA.relative_to(ROOT)} matches {len(entries)} CRD files ({why})")
        return 0
    DATA.write_text(json.dumps(document(entries), indent=1, sort_keys=True) + "\n")
    print(f"{DATA.relative_to(ROOT)}: {sorted(entries)} ({why})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
