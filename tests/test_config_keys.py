"""Every config key the program accepts is in the JSON Schema and the configuration reference (issue 34 item 12:
`tpu-serving:alerts` was read by the program and missing from both, while the freshness checks passed, because they
compare the generated files with a hand-written list of keys).

The keys are taken from where the program reads them, not from a list: the program runs offline (a regional stack
and a fleet stack) with `pulumi.Config` recording every key the program's own modules ask for, and the parser's
key table (stacks/config.py KNOWN_KEYS, what `raw_config` reads) is covered too."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pulumi
import pytest

from stacks import pulumi_config
from stacks.config import KNOWN_KEYS, NS
from tests.conftest import FLEET_FILES
from tooling.generate import docs, json_schema
from tooling.harness.offline import ROOT, load_stack_file, recorded_outputs, run_program

PROGRAM_DIRS = tuple(str(ROOT / d) for d in ("stacks", "components", "workloads")) + (str(ROOT / "__main__.py"),)


def keys_the_program_reads(path: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """`<namespace>:<key>` of every config key the program's own modules read (not the providers') in an offline
    run of a stack file."""
    read: set[str] = set()
    full_key = pulumi.Config.full_key

    def recording(self: pulumi.Config, key: str) -> str:
        caller = sys._getframe(1)
        while caller is not None and caller.f_code.co_filename.endswith("pulumi/config.py"):
            caller = caller.f_back
        if caller is not None and caller.f_code.co_filename.startswith(PROGRAM_DIRS):
            read.add(full_key(self, key))
        return full_key(self, key)

    monkeypatch.setattr(pulumi.Config, "full_key", recording)
    name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    run_program(load_stack_file(path), stack=name, preview=True, stack_outputs=recorded_outputs(path))
    return read


def schema_keys() -> set[str]:
    """Every config key the schema describes, in any branch (regional stack or fleet stack)."""
    config = json.loads(json_schema.SCHEMA_PATH.read_text())["properties"]["config"]
    found = set(config.get("properties", {}))
    for branch in ("then", "else"):
        found |= set(config.get(branch, {}).get("properties", {}))
    return found


def documented(key: str) -> bool:
    return f"`{key}`" in docs.REFERENCE.read_text() or f"`{key}[]`" in docs.REFERENCE.read_text()


@pytest.mark.parametrize("stack_file", [ROOT / "Pulumi.dev.yaml", *FLEET_FILES], ids=lambda p: p.name)
def test_every_key_the_program_reads_is_in_the_schema_and_the_reference(stack_file, monkeypatch):
    read = keys_the_program_reads(stack_file, monkeypatch)
    assert f"{NS}:environment" in read or f"{NS}:fleet" in read, read  # the recorder saw the program's reads
    missing_schema = sorted(k for k in read if k not in schema_keys())
    missing_docs = sorted(k for k in read if not documented(k))
    assert missing_schema == [] and missing_docs == [], (missing_schema, missing_docs)


def test_every_key_the_parser_accepts_is_in_the_schema_and_the_reference():
    asked: list[str] = []
    pulumi_config.raw_config(lambda key: asked.append(key))  # what load_stack_config reads, key by key
    accepted = {f"{NS}:{k}" for k in (*asked, *KNOWN_KEYS)}
    assert {f"{NS}:alerts", f"{NS}:workloads"} <= accepted
    assert sorted(k for k in accepted if k not in schema_keys()) == []
    assert sorted(k for k in accepted if not documented(k)) == []


def test_the_schema_refuses_what_the_parser_does_not_accept():
    """The other way round: a `tpu-serving:` key the schema allows is one the parser reads (else the schema would
    let an editor accept a key `pulumi up` refuses as unknown)."""
    accepted = {f"{NS}:{k}" for k in KNOWN_KEYS} | {f"{NS}:fleet"}
    assert sorted(k for k in schema_keys() if k.startswith(f"{NS}:") and k not in accepted) == []
