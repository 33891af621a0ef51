"""The engine release table (stacks/facts/releases.py): every entry well formed, every pinned engine image has one,
and the helpers answer from it."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from stacks.facts import releases, versions
from stacks.facts.releases import ENGINE_RELEASES, FEATURES, SEVERITIES, Advisory, Breakage, EngineRelease

# The image records of serving engines (not the metrics adapters, a GKE frontend or the Pathways binaries, which serve
# no model API): each has an entry in the table.
ENGINE_IMAGE_KEYS = (
    "vllmTpu",
    "maxengineServer",
    "jetstreamPathways",
    "jetstreamHttp",
    "saxModelServer",
    "saxAdminServer",
    "saxHttp",
)
URL_RE = re.compile(r"https://\S+")


@pytest.mark.parametrize("entry", ENGINE_RELEASES, ids=lambda r: f"{r.engine}-{r.version}")
def test_every_entry_is_well_formed(entry: EngineRelease) -> None:
    assert entry.source, "every release names its source (or the sources searched for one)"
    assert releases.version_key(entry.version), entry.version
    for advisory in entry.advisories:
        assert advisory.severity in SEVERITIES
        assert URL_RE.match(advisory.source), f"{advisory.id}: its source is a URL"
        # recorded against a release it affects: fixed only in a later one
        assert releases.version_key(entry.version) < releases.version_key(advisory.fixed_in), advisory.id
    for breakage in entry.breaks:
        assert breakage.feature in FEATURES, breakage.feature
        assert URL_RE.search(breakage.source), f"{breakage.feature}: its source is a URL"


def test_entries_are_unique() -> None:
    keys = [(r.engine, r.version) for r in ENGINE_RELEASES]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("key", ENGINE_IMAGE_KEYS)
def test_every_pinned_engine_image_has_an_entry(key: str) -> None:
    entry = releases.release_of_image(versions.IMAGES[key])
    assert entry is not None, f"{key}: {versions.IMAGES[key]} has no entry in stacks/facts/releases.py"
    assert releases.release(entry.engine, entry.version) is entry


def test_helpers_read_the_entry_at_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """open_advisories keeps what the release does not fix at or above the floor; broken_features keys by feature."""
    high = Advisory("GHSA-test-high", "high", "9.1.0", "x", "https://example.invalid/high")
    low = Advisory("GHSA-test-low", "low", "9.1.0", "x", "https://example.invalid/low")
    crash = Breakage("lora", "x", "https://example.invalid/lora")
    entry = EngineRelease("test-engine", "9.0.0", None, "unknown", "test", (high, low), (crash,))
    fixed = replace(entry, version="9.1.0", advisories=(high,), breaks=())
    monkeypatch.setattr(releases, "ENGINE_RELEASES", (*ENGINE_RELEASES, entry, fixed))
    assert releases.open_advisories("test-engine", "v9.0.0") == (high,)
    assert releases.open_advisories("test-engine", "9.0.0", min_severity="low") == (high, low)
    assert releases.open_advisories("test-engine", "9.0.0", min_severity="critical") == ()
    assert releases.broken_features("test-engine", "9.0.0") == {"lora": crash}
    assert releases.open_advisories("test-engine", "9.1.0") == ()  # fixed there
    assert releases.broken_features("test-engine", "9.1.0") == {}
    assert releases.open_advisories("test-engine", "8.0.0") == ()  # unknown release: nothing known
    assert releases.broken_features("nope", "1") == {}


def test_required_feature_keys() -> None:
    assert {
        "pd-disaggregation",
        "speculative-decoding",
        "lora",
        "lora-runtime-loading",
        "multi-host",
        "prefix-caching",
    } <= set(FEATURES)
