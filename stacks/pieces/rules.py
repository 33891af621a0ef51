"""Checks and patterns the pieces share: key paths under `tpu-serving:`, GCP names, CIDRs, labels, KMS keys."""

from __future__ import annotations

import datetime
import ipaddress
import re
from collections.abc import Mapping
from typing import Any

from stacks import naming
from stacks.facts import kms, storage_locations
from stacks.facts import maintenance as maintenance_rules
from stacks.model import config_parse
from stacks.problems import Problem

NS = "tpu-serving"


def parse_section(raw: Mapping[str, Any], key: str, model: Any, problems: list[Problem]) -> Any:
    """`tpu-serving:<key>`, a mapping (unset: {}), parsed by `model` (None: it does not parse; its problems added)."""
    return config_parse.parse(f"{NS}:{key}", model, config_parse.section(dict(raw), key), problems)


# Google Cloud region and zone names (https://cloud.google.com/compute/docs/regions-zones): a geography prefix,
# a direction and a number (us-east5, europe-west4, me-central2); zones add a letter (us-east5-b) or, for AI
# zones, ai<n><letter> (us-central1-ai1a, https://cloud.google.com/tpu/docs/regions-zones).
REGION_RE = re.compile(r"(us|europe|asia|australia|northamerica|southamerica|me|africa)-[a-z]+[1-9][0-9]?")
ZONE_RE = re.compile(rf"({REGION_RE.pattern})-(?:[a-h]|ai[1-9][a-z]?)")
# Compute Engine machine types: e2-standard-4, n2-custom-4-16384, ct6e-standard-4t.
MACHINE_TYPE_RE = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")


# The region of a regional resource's path: projects/<p>/regions/<region>/...
PATH_REGION_RE = re.compile(r"(?:^|/)regions/([^/]+)/")


def check_region(path: str, region: str, problems: list[Problem]) -> bool:
    """A region of the list (stacks/facts/storage_locations.py), else a problem naming its close matches."""
    why = storage_locations.region_problem(region)
    if why:
        problems.append(Problem(path, why))
    return why is None


def check_zone_region(path: str, zone: str, problems: list[Problem]) -> bool:
    """A zone-shaped value's region is one of the list, else a problem naming the close zones; True when it is
    (or the value is not zone-shaped: its shape is the caller's to report)."""
    match = ZONE_RE.fullmatch(zone)
    if match is None or storage_locations.is_region(match.group(1)):
        return True
    region, letter = match.group(1), zone[len(match.group(1)) :]
    close = [f"{c}{letter}" for c in storage_locations.close_regions(region)]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    problems.append(
        Problem(
            path,
            f"{zone!r} is not a zone of a Google Cloud region ({region!r} is not one){hint} "
            f"(the {len(storage_locations.REGIONS)} regions of {storage_locations.SOURCE})",
        )
    )
    return False


def check_path_region(path: str, value: str | None, problems: list[Problem]) -> None:
    """The region a resource path names (projects/<p>/regions/<region>/...) is one of the list."""
    match = PATH_REGION_RE.search(value or "")
    if match:
        check_region(path, match.group(1), problems)


def check_cidr(path: str, value: str, problems: list[Problem]) -> ipaddress.IPv4Network | None:
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as err:
        problems.append(Problem(path, f"{value!r} is not a valid IPv4 CIDR block ({err}); e.g. 10.0.0.0/20"))
        return None


def check_name(path: str, value: str, max_len: int, what: str, problems: list[Problem]) -> None:
    if len(value) > max_len or not naming.RFC1035.fullmatch(value):
        problems.append(
            Problem(
                path,
                f"{value!r} is not a valid {what}: lowercase letters, digits and hyphens, starting with a letter, "
                f"not ending with a hyphen, at most {max_len} characters",
            )
        )


def check_labels(path: str, labels: dict[str, str], problems: list[Problem]) -> None:
    for key, value in labels.items():
        if not naming.LABEL_KEY.fullmatch(key) or not naming.LABEL_VALUE.fullmatch(value):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"label {key}={value!r} is invalid: keys start with a lowercase letter; keys and values use "
                    "lowercase letters, digits, '_' and '-', at most 63 characters",
                )
            )


def check_key(path: str, key: str | None, location: str, of_what: str, problems: list[Problem]) -> None:
    """A Cloud KMS key in config: its resource name, in the location of the data it encrypts (Cloud Storage:
    https://cloud.google.com/storage/docs/encryption/customer-managed-keys, key resource locations; GKE:
    https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets, a key in the cluster's location)."""
    why = kms.key_problem(key, location, of_what) if key is not None else None
    if why:
        problems.append(Problem(path, why))


def rfc3339(path: str, value: str, problems: list[Problem]) -> datetime.datetime | None:
    """A time as the provider parses it (Go time.RFC3339: seconds and a zone; google-beta
    verify.ValidateRFC3339Date), else a problem."""
    parsed = maintenance_rules.parse_time(value)
    if parsed is None:
        problems.append(
            Problem(path, f"{value!r} is not an RFC 3339 time with seconds and a zone, e.g. 2025-01-04T03:00:00Z")
        )
        return None
    return parsed
