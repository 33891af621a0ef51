"""requirements.txt and requirements-scan.txt are the one place that pins Python packages: each exactly, once;
and the version matrix's image pins."""

from importlib import metadata

import pytest

from stacks import naming
from stacks.facts import versions
from stacks.facts.versions import PULUMI_CLI
from tooling.harness.program import ROOT
from tooling.harness.requirements import LoosePin, pins


@pytest.mark.parametrize("file", ["requirements.txt", "requirements-scan.txt"])
def test_every_package_is_pinned_exactly_once(file):
    assert pins(ROOT / file)


def test_the_environment_is_the_pinned_one():
    installed = {name: metadata.version(name) for name in pins()}
    assert installed == pins(), "run `make venv` (or pip install -r requirements.txt)"


def test_the_pulumi_cli_is_the_sdks_release():
    """The workflows' Pulumi CLI (stacks/facts/versions.py) and the SDK come out of one pulumi/pulumi release."""
    assert PULUMI_CLI == pins()["pulumi"]


def test_a_loose_or_repeated_pin_is_refused(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# comment\nPyYAML==6.0.3  # why\ntypes_PyYAML==1\n")
    assert pins(requirements) == {"pyyaml": "6.0.3", "types-pyyaml": "1"}
    for text in ("pulumi>=3\n", "pulumi\n", "a==1\nA==2\n", "a.b==1\na_b==2\n"):
        requirements.write_text(text)
        with pytest.raises(LoosePin):
            pins(requirements)


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
