"""The version guard: what the engine release a workload runs is known for (stacks/facts/releases.py), held against
the environment and the features the workload turns on.

- prod refuses an engine release with an open advisory at GUARD_SEVERITY or above, unless the workload acknowledges
  it with a reason (`acknowledgeAdvisories: [{id, reason}]`); an acknowledged one stays a warning;
- any other environment warns of each such advisory;
- prod refuses an engine image whose release the table cannot judge (a tag that is no version, or a version it does
  not list), unless acknowledged as `unknown-release` with a reason; an advisory is judged from its recorded
  affected range at any parseable version (stacks/facts/releases.py), Docker Hub's aliases are one registry;
- every environment refuses a feature on a release it is known to break on.

Pure functions: the shared workload checks (stacks/workload_checks.py) call `check_advisories` for every workload,
a type's own checks call `check_features` with the features its config turns on (workloads/vllm/checks.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from stacks.facts import releases
from stacks.facts.releases import Advisory, EngineRelease
from stacks.model.config_model import AdvisoryAck
from stacks.problems import Problem

GUARD_SEVERITY: releases.Severity = "high"
ACK_KEY = "acknowledgeAdvisories"
# The id an acknowledgement gives to run an engine image whose release the table cannot judge (a tag that is no
# release version, e.g. `nightly`, or a release the table does not list): prod refuses it otherwise.
UNKNOWN_RELEASE = "unknown-release"
# The word of the warning an acknowledged advisory leaves: printed where the user looks (preview and render) but not
# failing `render --strict`, which would otherwise refuse the reviewed decision the acknowledgement records.
ACKNOWLEDGED = "acknowledged"
_ACKNOWLEDGED_WARNING = re.compile(rf"\.{ACK_KEY}: runs with \S+, {ACKNOWLEDGED} \(")


def is_acknowledged(warning: str) -> bool:
    """Whether a warning is an acknowledged advisory's (a reviewed decision in the stack file, never failing
    `render --strict`)."""
    return _ACKNOWLEDGED_WARNING.search(warning) is not None


PROD = "prod"


def _advisory_text(ref: str, entry: EngineRelease, advisory: Advisory) -> str:
    return (
        f"{ref} is {entry.engine} {entry.version}, which has open {advisory.severity} advisory {advisory.id} "
        f"(fixed in {entry.engine} {advisory.fixed_in}; {advisory.source}): {advisory.summary}"
    )


def check_advisories(
    path: str,
    images: Iterable[tuple[str, str]],
    acknowledged: Iterable[AdvisoryAck],
    environment: str,
    problems: list[Problem],
    warnings: list[str],
) -> None:
    """Hold every engine image a workload runs ((key under `path`, image reference)) to its release's open
    advisories: a problem in prod unless acknowledged, a warning otherwise. An acknowledgement no image needs, or one
    named twice, is reported too."""
    acks = list(acknowledged)
    by_id: dict[str, AdvisoryAck] = {}
    for i, given in enumerate(acks):
        if given.id in by_id:
            problems.append(Problem(f"{path}.{ACK_KEY}[{i}].id", f"{given.id!r} is acknowledged twice; keep one entry"))
        by_id.setdefault(given.id, given)
    used: set[str] = set()
    for key, ref in images:
        found = releases.engine_image(ref)
        if found is None:
            continue
        engine, tag, entry = found
        if entry is None or not releases.is_listed(entry):
            listed = ", ".join(r.version for r in releases.ENGINE_RELEASES if r.engine == engine)
            what = (
                f"{ref} is {engine} at tag {tag!r}, "
                + ("which is not a release version" if entry is None else "a release the table does not list")
                + f" (stacks/facts/releases.py lists {listed})"
            )
            ack = by_id.get(UNKNOWN_RELEASE)
            if ack is not None:
                used.add(UNKNOWN_RELEASE)
                warnings.append(f"{path}.{ACK_KEY}: runs with {UNKNOWN_RELEASE}, {ACKNOWLEDGED} ({ack.reason}): {what}")
            elif environment == PROD:
                problems.append(
                    Problem(
                        f"{path}.{key}",
                        f"{what}: its advisories cannot be known. prod refuses it: run a listed release, or "
                        f"acknowledge it with a reason: {ACK_KEY}: [{{id: {UNKNOWN_RELEASE}, reason: <why>}}]",
                    )
                )
            else:
                warnings.append(
                    f"{path}.{key}: {what}; its advisories cannot be known (prod refuses it unless "
                    f"acknowledged in {ACK_KEY} as {UNKNOWN_RELEASE})"
                )
        if entry is None:
            continue
        for advisory in releases.open_advisories(entry.engine, entry.version, GUARD_SEVERITY):
            text = _advisory_text(ref, entry, advisory)
            ack = by_id.get(advisory.id)
            if ack is not None:
                used.add(advisory.id)
                warnings.append(f"{path}.{ACK_KEY}: runs with {advisory.id}, {ACKNOWLEDGED} ({ack.reason}): {text}")
            elif environment == PROD:
                problems.append(
                    Problem(
                        f"{path}.{key}",
                        f"{text}. prod refuses an engine with an open {GUARD_SEVERITY} or critical advisory: run a "
                        f"release that fixes it ({entry.engine} {advisory.fixed_in} or later), or acknowledge it "
                        f"with a reason: {ACK_KEY}: [{{id: {advisory.id}, reason: <why>}}]",
                    )
                )
            else:
                warnings.append(f"{path}.{key}: {text} (prod refuses it unless acknowledged in {ACK_KEY})")
    for i, given in enumerate(acks):
        if given.id not in used and by_id.get(given.id) is given:
            warnings.append(
                f"{path}.{ACK_KEY}[{i}]: {given.id} is not an open advisory of the engine release this workload runs "
                "(stacks/facts/releases.py); remove the acknowledgement"
            )


def check_features(
    path: str, key: str, ref: str, features: Mapping[str, str], problems: list[Problem]
) -> EngineRelease | None:
    """Refuse each feature (feature key -> the key path under `path` that turns it on) the engine release of `ref`
    (at `path.key`) is known to break on, naming the releases of the table it works on. Returns the release (None:
    the table does not know it, nothing is checked)."""
    entry = releases.release_of_image(ref)
    if entry is None:
        return None
    broken = releases.broken_features(entry.engine, entry.version)
    for feature, where in features.items():
        breakage = broken.get(feature)
        if breakage is None:
            continue
        fine = [
            r.version
            for r in releases.ENGINE_RELEASES
            if r.engine == entry.engine and feature not in releases.broken_features(r.engine, r.version)
        ]
        problems.append(
            Problem(
                f"{path}.{where}",
                f"{feature} ({releases.FEATURES[feature]}) is known to break on {entry.engine} {entry.version} "
                f"({ref} at {path}.{key}): {breakage.summary} ({breakage.source}); releases it is not known to break "
                f"on: {', '.join(fine) or 'none recorded'}",
            )
        )
    return entry


def workload_images(workload: Any, pinned: Mapping[str, str], type_images: Iterable[str]) -> list[tuple[str, str]]:
    """The images a workload runs, as (key under its path, reference): its overrides (`image`, or each key of its
    `images`) where it has them, else its type's pinned TPU images (`pinned`: versions.IMAGES), at `type`."""
    found: list[tuple[str, str]] = []
    image = getattr(workload, "image", None)
    if isinstance(image, str):
        found.append(("image", image))
    images = getattr(workload, "images", None)
    if images is not None:
        for name, field in type(images).model_fields.items():
            value = getattr(images, name)
            if isinstance(value, str):
                found.append((f"images.{field.alias or name}", value))
    if not workload.overrides_images():
        found.extend(("type", pinned[key]) for key in type_images)
    return found
