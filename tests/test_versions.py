"""requirements.txt and the version matrix agree: one version of each package, pinned exactly."""

from stacks.versions import PYTHON_PACKAGES
from tooling.offline import ROOT


def test_requirements_match_version_matrix():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"requirements.txt: {line!r} is not pinned with =="
            pins[name] = version
    assert pins == PYTHON_PACKAGES
