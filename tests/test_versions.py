"""requirements.txt and the version matrix agree: one version of each package, pinned exactly."""

from stacks.versions import PYTHON_PACKAGES, SCAN_PACKAGES
from tooling.offline import ROOT


def _pins(file: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / file).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"{file}: {line!r} is not pinned with =="
            pins[name] = version
    return pins


def test_requirements_match_version_matrix():
    assert _pins("requirements.txt") == PYTHON_PACKAGES


def test_scan_requirements_match_version_matrix():
    assert _pins("requirements-scan.txt") == SCAN_PACKAGES
