"""Google Cloud regions and Cloud Storage bucket locations: the one list every region, zone and location the stack
accepts is checked against (gcp:region, cluster.location, bucket.location, tpuPools[].zone, a region in a resource
path, the fleet's regions).

Source: Google's list of bucket locations, https://cloud.google.com/storage/docs/locations ("Available
locations": regions, predefined dual-regions, multi-regions), as read for this version of the stack. A stack's region
holds its bucket by default (bucket.location defaults to gcp:region), so the regions of that page are the regions a
stack may use, with the regions of TPU zones that page lacks (TPU_ONLY_REGIONS: us-central2, TPU v4's; from the
catalog's TPU zones, https://cloud.google.com/tpu/docs/regions-zones), where the bucket must be given a location. Location codes are case-insensitive (the API reports them upper-case). Not listed, on purpose: zones
(zonal locations are for Rapid buckets only, which this stack does not create) and configurable dual-regions (a
multi-region code plus `customPlacementConfig`, which the stack does not set). A code not listed is refused, naming
its close matches (`us-centrl1`: did you mean us-central1?): a region Google adds after this list was read is added
here, with the page as read.
"""

from __future__ import annotations

import difflib

from stacks.facts import catalog

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

# Regions Compute has and Cloud Storage does not: those of a TPU zone (Google's TPU regions and zones page, the
# catalog's ZONES_SOURCE) outside the list above (us-central2, v4's). A stack there keeps its bucket elsewhere.
TPU_ONLY_REGIONS = tuple(
    sorted({z.rsplit("-", 1)[0].upper() for g in catalog.GENERATIONS.values() for z in g.zones} - set(REGIONS))
)
# Every region a stack may name: the Cloud Storage regions and the TPU-only ones.
ALL_REGIONS = REGIONS + TPU_ONLY_REGIONS


def is_location(location: str) -> bool:
    """A Cloud Storage bucket location (any case)."""
    return location.upper() in LOCATIONS


def is_region(region: str) -> bool:
    """A Google Cloud region of the list (as written: region names are lower case)."""
    return region.upper() in ALL_REGIONS and region == region.lower()


def close_regions(value: str) -> list[str]:
    """The listed regions closest to a value (difflib's ratio of at least 0.8), closest first."""
    return difflib.get_close_matches(value.lower(), [r.lower() for r in ALL_REGIONS], n=3, cutoff=0.8)


def region_problem(value: str) -> str | None:
    """Why `value` is not a region of the list, with its close matches; None when it is one."""
    if is_region(value):
        return None
    close = close_regions(value)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return (
        f"{value!r} is not a Google Cloud region{hint} (the {len(REGIONS)} regions of {SOURCE}, and "
        f"{', '.join(r.lower() for r in TPU_ONLY_REGIONS)} of {catalog.ZONES_SOURCE})"
    )
