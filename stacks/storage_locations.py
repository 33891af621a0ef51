"""Cloud Storage bucket locations: the one list the stack checks `tpu-serving:bucket.location` against.

Source: Google's list of bucket locations, https://cloud.google.com/storage/docs/locations ("Available
locations": regions, predefined dual-regions, multi-regions), as read for this version of the stack. Location codes
are case-insensitive (the API reports them upper-case). Not listed, on purpose: zones (zonal locations are for Rapid
buckets only, which this stack does not create) and configurable dual-regions (a multi-region code plus
`customPlacementConfig`, which the stack does not set). A code written like a region but not listed here is a
warning, not an error (may_be_new_region): Google adds regions, and Cloud Storage itself refuses a location that does
not exist when the bucket is created; anything else not listed is refused.
"""

from __future__ import annotations

import re

SOURCE = "https://cloud.google.com/storage/docs/locations"

REGIONS = (
    # North America
    "NORTHAMERICA-NORTHEAST1",
    "NORTHAMERICA-NORTHEAST2",
    "NORTHAMERICA-SOUTH1",
    "US-CENTRAL1",
    "US-EAST1",
    "US-EAST4",
    "US-EAST5",
    "US-SOUTH1",
    "US-WEST1",
    "US-WEST2",
    "US-WEST3",
    "US-WEST4",
    # South America
    "SOUTHAMERICA-EAST1",
    "SOUTHAMERICA-WEST1",
    # Europe
    "EUROPE-CENTRAL2",
    "EUROPE-NORTH1",
    "EUROPE-NORTH2",
    "EUROPE-SOUTHWEST1",
    "EUROPE-WEST1",
    "EUROPE-WEST2",
    "EUROPE-WEST3",
    "EUROPE-WEST4",
    "EUROPE-WEST6",
    "EUROPE-WEST8",
    "EUROPE-WEST9",
    "EUROPE-WEST10",
    "EUROPE-WEST12",
    # Middle East
    "ME-CENTRAL1",
    "ME-CENTRAL2",
    "ME-WEST1",
    # Asia
    "ASIA-EAST1",
    "ASIA-EAST2",
    "ASIA-NORTHEAST1",
    "ASIA-NORTHEAST2",
    "ASIA-NORTHEAST3",
    "ASIA-SOUTH1",
    "ASIA-SOUTH2",
    "ASIA-SOUTHEAST1",
    "ASIA-SOUTHEAST2",
    "ASIA-SOUTHEAST3",
    # Australia
    "AUSTRALIA-SOUTHEAST1",
    "AUSTRALIA-SOUTHEAST2",
    # Africa
    "AFRICA-SOUTH1",
)
# Predefined dual-regions: ASIA1 (Tokyo, Osaka), EUR4 (Finland, Netherlands), EUR5 (Belgium, London),
# EUR7 (London, Frankfurt), EUR8 (Frankfurt, Zurich), NAM4 (Iowa, South Carolina).
DUAL_REGIONS = ("ASIA1", "EUR4", "EUR5", "EUR7", "EUR8", "NAM4")
MULTI_REGIONS = ("ASIA", "EU", "US")

LOCATIONS = frozenset(REGIONS + DUAL_REGIONS + MULTI_REGIONS)


# A Google Cloud region code: <area>-<direction><n> (us-east5, northamerica-south1, europe-west10).
REGION_SHAPE = re.compile(r"[A-Z]+-[A-Z]+[1-9][0-9]?")


def is_location(location: str) -> bool:
    """A Cloud Storage bucket location (any case)."""
    return location.upper() in LOCATIONS


def may_be_new_region(location: str) -> bool:
    """Not in the list, but written like a region code: perhaps a region added after the list was read."""
    return not is_location(location) and REGION_SHAPE.fullmatch(location.upper()) is not None
