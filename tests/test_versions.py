"""requirements.txt and requirements-scan.txt are the one place that pins Python packages: each exactly, once."""

import re
from importlib import metadata

import pytest

from stacks.versions import PULUMI_CLI
from tooling.program import ROOT

PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)")


def pins(file: str) -> dict[str, str]:
    """{package: version} of a requirements file; every line, comments aside, `name==version`."""
    found: dict[str, str] = {}
    for number, line in enumerate((ROOT / file).read_text().splitlines(), 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        match = PIN.fullmatch(line)
        assert match, f"{file}:{number}: {line!r} is not pinned as name==version"
        name = re.sub(r"[-_.]+", "-", match["name"]).lower()  # PEP 503 normalized
        assert name not in found, f"{file}:{number}: {match['name']} pinned twice"
        found[name] = match["version"]
    return found


@pytest.mark.parametrize("file", ["requirements.txt", "requirements-scan.txt"])
def test_every_package_is_pinned_exactly_once(file):
    assert pins(file)


def test_the_environment_is_the_pinned_one():
    installed = {name: metadata.version(name) for name in pins("requirements.txt")}
    assert installed == pins("requirements.txt"), "run `make venv` (or pip install -r requirements.txt)"


def test_the_pulumi_cli_is_the_sdks_release():
    """The workflows' Pulumi CLI (stacks/versions.py) and the SDK come out of one pulumi/pulumi release."""
    assert PULUMI_CLI == pins("requirements.txt")["pulumi"]


def test_a_loose_or_repeated_pin_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tests.test_versions.ROOT", tmp_path)
    (tmp_path / "r.txt").write_text("# comment\nPyYAML==6.0.3  # why\n")
    assert pins("r.txt") == {"pyyaml": "6.0.3"}
    for text in ("pulumi>=3\n", "pulumi\n", "a==1\nA==2\n"):
        (tmp_path / "r.txt").write_text(text)
        with pytest.raises(AssertionError):
            pins("r.txt")
