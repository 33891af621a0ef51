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
# Changes of one kind tried in turn until the program accepts one (a rejected config shows nothing, and costs only its
# parse); a kind UNEXERCISED says no example takes is tried on TRIES (`pytest -m slow` tries them all).
TRIES = 3


def _run(config: dict[str, Any], stack: str) -> Recording | None:
    try:
        return session_run(config, stack=stack)
    except pulumi.RunError:
        return None


def _check(change: transition_matrix.Change) -> bool:
    """Asserts the change's verdicts both ways; False when the program rejects the changed config (a config error
    naming the key, tests/test_config_errors.py: nothing to transition)."""
    before, after = change.before or examples()[change.example], change.config
    old, new = _run(before, change.example), _run(after, change.example)
    assert old is not None, f"{change.example} runs"
    if new is None:
        return False
    documented = transition_matrix.effect(change.kind)
    for direction, (a, b), wanted in (("up", (old, new), documented.forth), ("undo", (new, old), documented.back)):
        found = list(transition.problems(a, b))
        got = transition_matrix.verdict(found)
        assert transition_matrix.accepted(wanted, got), (
            f"{change.kind} on {change.example}, {direction}: {got}, documented {wanted}:\n" + "\n".join(found)
        )
        others = transition_matrix.unexpected(documented, found)
        assert not others, (
            f"{change.kind} on {change.example}, {direction}: problems its row ({wanted}) does not name:\n"
            + "\n".join(others)
        )
    return True


@pytest.mark.parametrize(
    "kind",
    # a kind valid only with a companion change (transition_matrix.COMPANIONS) runs under `pytest -m slow`: the
    # default suite keeps its time (two more runs per kind)
    [pytest.param(k, marks=pytest.mark.slow) if transition_matrix.needs_companion(k) else k for k in KINDS],
)
def test_every_kind_of_change_has_its_documented_verdict(kind):
    """Each kind runs on an example (with its companion, transition_matrix.COMPANIONS), or the matrix says why no
    example can take it (UNEXERCISED)."""
    unexercised = transition_matrix.UNEXERCISED
    for change in KINDS[kind][:TRIES] if kind in unexercised else KINDS[kind]:
        if _check(change):
            assert kind not in unexercised, f"{kind} runs on {change.example}: drop it from UNEXERCISED"
            return
    tried = ", ".join(c.example for c in (KINDS[kind][:TRIES] if kind in unexercised else KINDS[kind]))
    assert kind in unexercised, (
        f"the program rejects {kind} on {tried}: give it a companion (COMPANIONS) or say in UNEXERCISED why none can"
    )
    pytest.skip(f"{kind}: {unexercised[kind]}")


def test_every_unexercised_kind_is_a_kind():
    assert set(transition_matrix.UNEXERCISED) <= set(KINDS)
    assert transition_matrix.NOT_EXERCISED <= set(transition_matrix.UNEXERCISED)


def test_a_change_the_program_accepts_elsewhere_is_not_shown_rejected():
    """A pool move no example can make (no second pool of the right shape) is accepted on a stack that has one: the
    table says `not exercised` with the expected effect, never `rejected`."""
    table = transition_matrix.table(sorted(transition_matrix.NOT_EXERCISED))
    for kind in transition_matrix.NOT_EXERCISED:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{kind}`"))
        assert "| not exercised | not exercised |" in row and "rejected" not in row, row


@pytest.mark.slow
@pytest.mark.parametrize("change", all_changes(), ids=[f"{c.example}:{c.kind}" for c in all_changes()])
def test_every_example_for_every_kind_of_change(change):
    if not _check(change):
        pytest.skip("the program rejects it")
    assert change.kind not in transition_matrix.UNEXERCISED, f"{change.kind} runs on {change.example}"


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


@pytest.mark.parametrize("documented", transition_matrix.VERDICTS)
def test_a_refused_row_fails_when_it_runs_clean_and_a_clean_one_when_refused(documented):
    """A row documented refused that the runs find clean fails the matrix, and so does a clean row found refused:
    only a documented replacement or dip may run better on an example."""
    assert transition_matrix.accepted(documented, documented)
    assert transition_matrix.accepted(documented, "refused") is (documented == "refused")
    assert transition_matrix.accepted("refused", documented) is (documented == "refused")
    assert transition_matrix.accepted(documented, "clean") is (documented in ("clean", "replaces", "degrades"))


def test_a_template_change_on_one_replica_without_a_spare_host_degrades():
    """multi-model-endpoint's vLLM workloads run one replica each. Moved to the other pool, they share it with no
    spare host: maxSurge 0, maxUnavailable 1 (stacks/serving/workload_plan.py rolling_update), so the rollout stops
    the only pod first, a cold-start gap the checker reports (`gap`) and the clean row names (DEFAULT.expects).
    maxModelLen changed on its own pool keeps a spare host (maxSurge 1, maxUnavailable 0): no gap."""
    for kind, gap in (
        ("workloads[vllm].pool moved to another pool", True),
        ("workloads[vllm].maxModelLen changed", False),
    ):
        change = next(c for c in all_changes() if c.kind == kind and c.example == "multi-model-endpoint")
        old, new = _run(examples()[change.example], change.example), _run(change.config, change.example)
        assert old is not None and new is not None
        found = list(transition.problems(old, new))
        assert any(p.startswith("gap: ") for p in found) is gap, (kind, found)
        assert transition_matrix.verdict(found) == ("degrades" if gap else "clean")
        assert not transition_matrix.unexpected(transition_matrix.effect(kind), found)
