"""The transition matrix (tooling/generate/transition_matrix.py): every kind of change the config model allows, generated on
the examples, run in both directions, has the verdict docs/operations.md gives it (clean, replaces, degrades,
refused with its procedure), and the table there is the one the matrix generates.

Speed: one change per kind (spread over the examples) and one offline run per distinct config for the session
(tests/conftest.py session_run, shared by the xdist workers); `pytest -m slow` runs every example for every kind.
The fleet example is left out: its stack reads recorded outputs of other stacks (tooling/review/fleet_render.py), and its
regional stacks are the examples that are in.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pulumi
import pytest

from tests.conftest import EXAMPLES, session_run
from tooling.generate import transition_matrix
from tooling.harness.offline import Recording
from tooling.review import transition
from tooling.review.render import stack_name


def examples() -> dict[str, dict[str, Any]]:
    out = transition_matrix.examples()
    assert set(out) == {stack_name(p) for p in EXAMPLES}, "the matrix runs on every regional example"
    return out


@cache
def all_changes() -> list[transition_matrix.Change]:
    return transition_matrix.changes(examples())


KINDS = transition_matrix.per_kind(all_changes())
TRIES = 3  # changes of one kind tried in turn until the program accepts one (a rejected config shows nothing)


def _run(config: dict[str, Any], stack: str) -> Recording | None:
    try:
        return session_run(config, stack=stack)
    except pulumi.RunError:
        return None


def _check(change: transition_matrix.Change) -> bool:
    """Asserts the change's verdicts both ways; False when the program rejects the changed config (a config error
    naming the key, tests/test_config_errors.py: nothing to transition)."""
    before, after = examples()[change.example], change.config
    old, new = _run(before, change.example), _run(after, change.example)
    assert old is not None, f"{change.example} runs"
    if new is None:
        return False
    documented = transition_matrix.effect(change.kind)
    for direction, (a, b), wanted in (("up", (old, new), documented.forth), ("undo", (new, old), documented.back)):
        found = list(transition.problems(a, b))
        got = transition_matrix.verdict(found)
        assert got == wanted or got in transition_matrix.ALSO_ACCEPTED.get(wanted, ()), (
            f"{change.kind} on {change.example}, {direction}: {got}, documented {wanted}:\n" + "\n".join(found)
        )
    return True


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_change_has_its_documented_verdict(kind):
    for change in KINDS[kind][:TRIES]:
        if _check(change):
            return
    pytest.skip(f"the program rejects {kind} on {', '.join(c.example for c in KINDS[kind][:TRIES])}")


@pytest.mark.slow
@pytest.mark.parametrize("change", all_changes(), ids=[f"{c.example}:{c.kind}" for c in all_changes()])
def test_every_example_for_every_kind_of_change(change):
    if not _check(change):
        pytest.skip("the program rejects it")


def test_the_kinds_cover_each_kind_of_field_and_the_workload_types():
    """The generator yields each kind of change (a new field of the model gets its changes without a listing), and a
    type swap between every two workload types."""
    kinds = {c.kind for c in all_changes()}
    for suffix in ("toggled", "changed", "item removed", "unset", " -> "):
        assert any(suffix in k for k in kinds), suffix
    from tooling.generate import json_schema

    types = list(json_schema.WORKLOAD_TYPES)
    swaps = {k for k in kinds if k.startswith("workloads[].type ")}
    assert swaps == {f"workloads[].type {a} -> {b}" for a in types for b in types if a != b}


def test_the_operations_page_has_the_generated_table():
    from tooling.generate import docs

    assert "transition-matrix" in docs.BLOCKS
    text = (docs.DOCS / "operations.md").read_text()
    assert "<!-- generated:transition-matrix -->" in text
    assert docs.fill(text) == text, "docs/operations.md is stale: run `make docs`"
