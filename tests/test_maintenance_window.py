"""GKE refuses a maintenance window that leaves too little time, or a recurrence it cannot read; the stack refuses
them first, in its words (stacks/facts/maintenance.py, stacks/pieces/cluster.py `_check_maintenance`).

Sources: GKE "Configure maintenance windows and exclusions"
(https://cloud.google.com/kubernetes-engine/docs/how-to/maintenance-window): "at least 48 hours of maintenance
availability in a 32-day rolling window. Only contiguous availability windows of at least four hours are
considered."; the container API's RecurringTimeWindow.recurrence (an RFC 5545 RRULE; examples FREQ=DAILY,
FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR, FREQ=MONTHLY;BYSETPOS=1;BYDAY=SA,SU; HOURLY, MINUTELY and SECONDLY unsupported).
"""

from __future__ import annotations

import copy
import datetime

import pytest

from stacks.config import ConfigError
from stacks.facts import maintenance
from stacks.model.config_model import DEFAULT_MAINTENANCE_WINDOW
from tests.conftest import ROOT
from tooling.harness.offline import load_stack_file
from tooling.scans.fuzz import parse

ALL_IN_ONE = load_stack_file(ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml")
KEY = "tpu-serving:cluster"
PATH = "tpu-serving:cluster.maintenance.window"


def with_window(start: str, end: str, recurrence: str) -> dict:
    config = copy.deepcopy(ALL_IN_ONE)
    cluster = dict(config.get(KEY) or {})
    cluster["maintenance"] = {"window": {"start": start, "end": end, "recurrence": recurrence}}
    config[KEY] = cluster
    return config


def problems(start: str, end: str, recurrence: str) -> str:
    try:
        parse(with_window(start, end, recurrence), "all-in-one")
    except ConfigError as err:
        return str(err)
    return ""


def hours(start: str, end: str, recurrence: str) -> float:
    at = datetime.datetime.fromisoformat
    rule = maintenance.parse(recurrence)
    return maintenance.least_availability(rule, at(start), at(end)).total_seconds() / 3600


def test_the_default_window_passes():
    w = DEFAULT_MAINTENANCE_WINDOW
    assert hours(w.start, w.end, w.recurrence) >= 48
    assert problems(w.start, w.end, w.recurrence) == ""


@pytest.mark.parametrize(
    ("start", "end", "recurrence", "least"),
    [
        # a weekly weekend of 6 h: any 32 days hold at least 4 whole weekends, 8 x 6 h; one minute less fails
        ("2025-01-04T03:00:00+00:00", "2025-01-04T09:00:00+00:00", "FREQ=WEEKLY;BYDAY=SA,SU", 48),
        ("2025-01-04T03:00:00+00:00", "2025-01-04T08:59:00+00:00", "FREQ=WEEKLY;BYDAY=SA,SU", 47.87),
        # daily 2 h: never a block of 4 h, so nothing counts
        ("2025-01-04T03:00:00+00:00", "2025-01-04T05:00:00+00:00", "FREQ=DAILY", 0),
        # daily 4 h across midnight: every block counts, 32 of them
        ("2025-01-04T22:00:00+00:00", "2025-01-05T02:00:00+00:00", "FREQ=DAILY", 128),
        # windows longer than their period merge into one block: always available
        ("2025-01-04T00:00:00+00:00", "2025-01-06T00:00:00+00:00", "FREQ=DAILY", 32 * 24),
        # the first weekend of each month: some 32 days hold none (first Saturdays can be 35 days apart)
        ("2025-01-04T00:00:00+00:00", "2025-01-06T00:00:00+00:00", "FREQ=MONTHLY;BYSETPOS=1;BYDAY=SA,SU", 0),
        # every other week, weekdays 4 h: some 32 days hold only 2 such weeks of 5 x 4 h
        ("2025-01-06T03:00:00+00:00", "2025-01-06T07:00:00+00:00", "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TU,WE,TH,FR", 40),
    ],
)
def test_least_availability_in_any_32_days(start, end, recurrence, least):
    assert hours(start, end, recurrence) == pytest.approx(least, abs=0.01)


def test_a_window_with_too_little_time_is_refused():
    text = problems("2025-01-04T03:00:00Z", "2025-01-04T04:00:00Z", "FREQ=WEEKLY;BYDAY=SA")
    assert f"{PATH}: 2025-01-04T03:00:00Z to 2025-01-04T04:00:00Z, FREQ=WEEKLY;BYDAY=SA leaves 0.0 h" in text
    assert "at least 48 h in any 32 days, counting only contiguous blocks of 4 h or more" in text
    # 8 h a week in one block: 32 days hold 4 or 5 of them, 32-40 h
    assert "leaves 32.0 h" in problems("2025-01-04T03:00:00Z", "2025-01-04T11:00:00Z", "FREQ=WEEKLY;BYDAY=SA")


@pytest.mark.parametrize(
    ("recurrence", "why"),
    [
        ("FREQ=WEEKLY;BYDAY=XX;FOO=1", "FOO is not a rule part this stack accepts"),
        ("FREQ=WEEKLY;BYDAY=XX", "'XX' is not a day code (MO, TU, WE, TH, FR, SA, SU)"),
        ("FREQ=HOURLY", "FREQ=HOURLY is not one of DAILY, WEEKLY, MONTHLY"),
        ("BYDAY=SA", "FREQ=None is not one of"),
        ("FREQ=WEEKLY;FREQ=DAILY", "FREQ is given twice"),
        ("FREQ=WEEKLY;INTERVAL=0", "INTERVAL=0 is not"),
        ("FREQ=WEEKLY;BYSETPOS=1", "BYSETPOS needs FREQ=MONTHLY"),
        ("FREQ=WEEKLY;BYDAY=1SA", "an ordinal day (1SA) needs FREQ=MONTHLY"),
        ("FREQ=MONTHLY;BYMONTHDAY=32", "BYMONTHDAY=32 is not a list of integers from 1 to 31"),
        ("weekly", "'weekly' is not KEY=VALUE"),
    ],
)
def test_a_recurrence_gke_cannot_read_is_refused(recurrence, why):
    text = problems("2025-01-04T03:00:00Z", "2025-01-04T11:00:00Z", recurrence)
    assert f"{PATH}.recurrence: {recurrence!r} is not an RFC 5545 RRULE GKE takes: " in text
    assert why in text


@pytest.mark.parametrize(
    "value", ["2025-01-04T03:00Z", "2025-01-04 03:00:00Z", "2025-01-04T03:00:00", "2025-02-30T03:00:00Z"]
)
def test_a_time_the_provider_cannot_parse_is_refused(value):
    """google-beta verify.ValidateRFC3339Date (time.Parse(time.RFC3339, v)) on recurring_window.start_time/end_time
    and maintenance_exclusion.start_time: seconds and a zone are required (Python alone accepts 03:00Z)."""
    text = problems(value, "2025-01-04T11:00:00Z", "FREQ=WEEKLY;BYDAY=SA,SU")
    assert f"{PATH}.start: {value!r} is not an RFC 3339 time with seconds and a zone" in text
    assert maintenance.parse_time("2025-01-04T03:00:00.5+02:00") is not None
