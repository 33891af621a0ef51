"""requirements.txt and the version matrix agree: one version of each package, pinned exactly."""

import pytest

from stacks import naming, versions
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


# ---- image digests (issue 25) ------------------------------------------------------------------------------------


def test_every_pinned_image_has_a_digest_or_says_why_not():
    for key, image in versions.IMAGE_RECORDS.items():
        assert image.digest_source, key
        if image.digest is None:
            assert image.digest_source == versions.NO_PUBLISHED_DIGEST, key
        assert versions.IMAGES[key] == image.pinned, key


def test_a_digest_is_rendered_as_tag_at_digest_and_still_found_by_its_record():
    digest = "sha256:" + "ab" * 32
    image = versions.Image("registry.example/x/server:v1", versions.Serves(), "src", digest, "release notes v1")
    assert image.pinned == f"registry.example/x/server:v1@{digest}"
    assert naming.image_reference_problem(image.pinned) is None
    with pytest.raises(ValueError, match="not a sha256 digest"):
        versions.Image("registry.example/x/server:v1", versions.Serves(), "src", "sha256:short")
