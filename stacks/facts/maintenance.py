"""GKE's recurring maintenance window: the RRULE subset it takes, the window's occurrences, and the availability
GKE demands of it. Pure functions, read by stacks/pieces/cluster.py `_check_maintenance`.

Sources:
- The API's RecurringTimeWindow.recurrence (container v1/v1beta1, e.g.
  https://cloud.google.com/java/docs/reference/google-cloud-container/latest/com.google.container.v1.RecurringTimeWindowOrBuilder):
  an RFC 5545 RRULE, examples `FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR`, `FREQ=DAILY`, `FREQ=MONTHLY;BYSETPOS=1;BYDAY=SA,SU`;
  the window "of the first recurrence" is the start/end pair, which gives each occurrence's length; "The FREQ values
  of HOURLY, MINUTELY, and SECONDLY are not supported."
- GKE, "Configure maintenance windows and exclusions"
  (https://cloud.google.com/kubernetes-engine/docs/how-to/maintenance-window): a window must allow at least 48 hours
  of maintenance availability in a 32-day rolling window, and only contiguous availability windows of at least four
  hours are considered.
- RFC 5545 section 3.3.10 (https://www.rfc-editor.org/rfc/rfc5545#section-3.3.10): FREQ, INTERVAL, BYDAY (with an
  ordinal under MONTHLY), BYMONTHDAY, BYSETPOS; the week starts on Monday (WKST default).

Only the window is checked: whether GKE subtracts exclusions from the 48 hours, and for which scopes, no source we
could read says (the stack's own hold, NO_MINOR_OR_NODE_UPGRADES until end of support, still lets control plane
patches in through the window).
"""

from __future__ import annotations

import calendar
import datetime
import re
from dataclasses import dataclass

FREQS = ("DAILY", "WEEKLY", "MONTHLY")  # GKE: HOURLY, MINUTELY and SECONDLY are not supported; YEARLY not checked
KEYS = ("FREQ", "INTERVAL", "BYDAY", "BYMONTHDAY", "BYSETPOS")
DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")  # datetime.weekday() order
MIN_AVAILABLE = datetime.timedelta(hours=48)
ROLLING = datetime.timedelta(days=32)
MIN_BLOCK = datetime.timedelta(hours=4)
RULE_TEXT = "at least 48 h in any 32 days, counting only contiguous blocks of 4 h or more"
# Availability is checked for every 32-day span starting in the window's first year: long enough for every period a
# rule of this subset has (at most INTERVAL months, refused above 12).
HORIZON = datetime.timedelta(days=366)

_BYDAY = re.compile(r"([+-]?\d{1,2})?([A-Z]{2})")
# Go's time.RFC3339 layout, which the provider parses window and exclusion times with (google-beta
# verify.ValidateRFC3339Date: time.Parse(time.RFC3339, v)): seconds and a zone required, fractions allowed
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def parse_time(value: str) -> datetime.datetime | None:
    """An RFC 3339 time as the provider reads it, or None."""
    if not _RFC3339.fullmatch(value):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Rule:
    freq: str
    interval: int = 1
    byday: tuple[tuple[int | None, int], ...] = ()  # (ordinal or None, weekday 0=MO)
    bymonthday: tuple[int, ...] = ()
    bysetpos: tuple[int, ...] = ()


def _ints(key: str, text: str, low: int, high: int) -> tuple[int, ...]:
    out = []
    for part in text.split(","):
        if not re.fullmatch(r"[+-]?\d+", part) or not (low <= abs(int(part)) <= high):
            raise ValueError(f"{key}={text} is not a list of integers from {low} to {high} (or -{high} to -{low})")
        out.append(int(part))
    return tuple(out)


def parse(recurrence: str) -> Rule:
    """The rule of a recurrence, or ValueError naming what is wrong and what is allowed."""
    parts: dict[str, str] = {}
    for item in recurrence.split(";"):
        key, eq, value = item.partition("=")
        if not eq or not value:
            raise ValueError(f"{item!r} is not KEY=VALUE")
        if key not in KEYS:
            raise ValueError(f"{key} is not a rule part this stack accepts ({', '.join(KEYS)})")
        if key in parts:
            raise ValueError(f"{key} is given twice")
        parts[key] = value
    freq = parts.get("FREQ")
    if freq not in FREQS:
        raise ValueError(f"FREQ={freq} is not one of {', '.join(FREQS)} (FREQ is required)")
    interval = _ints("INTERVAL", parts.get("INTERVAL", "1"), 1, 12 if freq == "MONTHLY" else 52)
    if len(interval) != 1 or interval[0] < 1:
        raise ValueError(f"INTERVAL={parts['INTERVAL']} is not one positive integer")
    byday = []
    for part in parts["BYDAY"].split(",") if "BYDAY" in parts else []:
        m = _BYDAY.fullmatch(part)
        if not m or m.group(2) not in DAYS:
            raise ValueError(f"BYDAY={parts['BYDAY']}: {part!r} is not a day code ({', '.join(DAYS)})")
        if m.group(1) is not None and (freq != "MONTHLY" or not 1 <= abs(int(m.group(1))) <= 5):
            raise ValueError(f"BYDAY={parts['BYDAY']}: an ordinal day ({part}) needs FREQ=MONTHLY and 1..5 or -5..-1")
        byday.append((int(m.group(1)) if m.group(1) else None, DAYS.index(m.group(2))))
    if "BYMONTHDAY" in parts and freq == "WEEKLY":
        raise ValueError("BYMONTHDAY is not allowed with FREQ=WEEKLY (RFC 5545)")
    if "BYSETPOS" in parts and freq != "MONTHLY":
        raise ValueError("BYSETPOS needs FREQ=MONTHLY here")
    return Rule(
        freq,
        interval[0],
        tuple(byday),
        _ints("BYMONTHDAY", parts["BYMONTHDAY"], 1, 31) if "BYMONTHDAY" in parts else (),
        _ints("BYSETPOS", parts["BYSETPOS"], 1, 31) if "BYSETPOS" in parts else (),
    )


def _month_days(rule: Rule, year: int, month: int, first: datetime.date) -> list[datetime.date]:
    last = calendar.monthrange(year, month)[1]
    days = [datetime.date(year, month, d) for d in range(1, last + 1)]
    if rule.bymonthday:
        wanted = {d if d > 0 else last + 1 + d for d in rule.bymonthday}
        days = [d for d in days if d.day in wanted]
    if rule.byday:
        keep = []
        for d in days:
            same = [x for x in days if x.weekday() == d.weekday()]
            for ordinal, weekday in rule.byday:
                if weekday == d.weekday() and (ordinal is None or same[ordinal - 1 if ordinal > 0 else ordinal] == d):
                    keep.append(d)
                    break
        days = keep
    if not rule.bymonthday and not rule.byday:
        days = [d for d in days if d.day == first.day]
    if rule.bysetpos:
        days = sorted({days[p - 1 if p > 0 else p] for p in rule.bysetpos if -len(days) <= p - (p > 0) < len(days)})
    return days


def occurrence_days(rule: Rule, first: datetime.date, until: datetime.date) -> list[datetime.date]:
    """The dates an occurrence starts on, from `first` (the window's start date) to `until`."""
    out: list[datetime.date] = []
    if rule.freq == "MONTHLY":
        year, month = first.year, first.month
        while datetime.date(year, month, 1) <= until:
            out.extend(_month_days(rule, year, month, first))
            month += rule.interval
            year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    else:
        weekdays = {w for _, w in rule.byday} or ({first.weekday()} if rule.freq == "WEEKLY" else set(range(7)))
        week0 = first - datetime.timedelta(days=first.weekday())
        day = first
        while day <= until:
            if rule.freq == "DAILY":
                period = (day - first).days % rule.interval == 0
            else:
                period = ((day - week0).days // 7) % rule.interval == 0
            if period and day.weekday() in weekdays and (not rule.bymonthday or day.day in rule.bymonthday):
                out.append(day)
            day += datetime.timedelta(days=1)
    return [d for d in out if first <= d <= until]


Interval = tuple[datetime.datetime, datetime.datetime]


def blocks(rule: Rule, start: datetime.datetime, end: datetime.datetime) -> list[Interval]:
    """The window's occurrences over the checked horizon, touching or overlapping ones merged."""
    length = end - start
    until = (start + HORIZON + ROLLING).date()
    merged: list[list[datetime.datetime]] = []
    for day in occurrence_days(rule, start.date(), until):
        s = datetime.datetime.combine(day, start.timetz())
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], s + length)
        else:
            merged.append([s, s + length])
    return [(s, e) for s, e in merged]


def least_availability(rule: Rule, start: datetime.datetime, end: datetime.datetime) -> datetime.timedelta:
    """The least time, in any 32 days starting in the window's first year, inside blocks of 4 h or more (a block
    cut by the span's edge counts for its part inside)."""
    counted = [(s, e) for s, e in blocks(rule, start, end) if e - s >= MIN_BLOCK]
    # the availability of [t, t + 32 d] is piecewise linear in t: its least value is at a t where t or t + 32 d
    # is a block's start or end
    candidates = {start} | {
        edge - shift for block in counted for edge in block for shift in (datetime.timedelta(), ROLLING)
    }
    least = None
    for t in sorted(c for c in candidates if start <= c <= start + HORIZON):
        span_end = t + ROLLING
        have = sum((min(e, span_end) - max(s, t) for s, e in counted if s < span_end and e > t), datetime.timedelta())
        least = have if least is None else min(least, have)
    return least if least is not None else datetime.timedelta()
