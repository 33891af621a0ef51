"""The words an operator reads when TPU capacity is missing, shared by `make preflight` (tooling/operations/preflight.py) and
`make smoke` (scripts/smoke.py), so both name the same condition the same way.

- STOCKOUT: the zone has no free TPU capacity of the kind asked for, although quota allows it (GKE's cluster
  autoscaler reports a failed scale-up; pods stay Pending). Quota and reservations are checked before `up`; a stockout
  can only be seen when it happens.
- QUOTA_SHORT / RESERVATION_SHORT: what the preflight finds before `up`.
"""

from __future__ import annotations

STOCKOUT = "stockout"
QUOTA_SHORT = "quota short"
RESERVATION_SHORT = "reservation short"
STOCKOUT_NOTE = f"quota is not capacity: a {STOCKOUT} can still leave TPU pods Pending"
