"""The narrowed type-checking view of the provider SDKs (typings/, issue 14 item 7) lists exactly the submodules
the program uses, so mypy checks every *Args call against the real, pinned SDK without reading all of it."""

import re

import pytest

from tooling.harness.offline import ROOT
from tooling.harness.program import program_files

PROGRAM = program_files()
ALIASES = {"pulumi_gcp": "gcp", "pulumi_kubernetes": "k8s"}


@pytest.mark.parametrize("package", sorted(ALIASES))
def test_typing_view_lists_exactly_the_used_submodules(package):
    alias = ALIASES[package]
    used = {m for path in PROGRAM for m in re.findall(rf"(?<![\w.\-/]){alias}\.([a-z_0-9]+)\.", path.read_text())}
    stub = (ROOT / "typings" / package / "__init__.pyi").read_text()
    listed = set(re.findall(rf"^from {package} import (\w+) as \1$", stub, re.M))
    assert used and listed == used, (
        f"typings/{package}/__init__.pyi: add {sorted(used - listed)}, drop {sorted(listed - used)}"
    )
    assert f"import {package} as {alias}" in "".join(p.read_text() for p in PROGRAM)


def test_mypy_reads_the_typing_view():
    assert 'mypy_path = "typings"' in (ROOT / "pyproject.toml").read_text()
