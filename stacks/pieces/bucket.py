"""The bucket piece (tpu-serving:bucket): the stack's GCS bucket and its log bucket. Its rules and its plan: the
name, location and what the environment profile decides (teardown, soft delete, protection, retention)
(components/bucket.py builds it)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts import storage_locations
from stacks.model.config_model import BucketConfig
from stacks.model.profiles import Profile
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, check_key, parse_section
from stacks.problems import Problem
from stacks.serving.workload_type import WorkloadRegistry

NAME = "bucket"
KEYS = ("bucket",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    return {"bucket": parse_section(raw, "bucket", BucketConfig, found.problems_at("bucket"))}


PATH = f"{NS}:bucket"
BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]")


@dataclass(frozen=True)
class BucketPlan:
    """The bucket as the stack builds it: every default resolved, the environment profile's included."""

    config: BucketConfig
    name: str
    location: str
    project: str
    labels: dict[str, str]
    force_destroy: bool
    """bucket.forceDestroy, else the profile's: `pulumi destroy` deletes the objects with the bucket."""
    soft_delete_seconds: int
    protect: bool
    retain_on_delete: bool


def visit(ctx: Context, found: Findings) -> BucketPlan | None:
    """Its name (once gcp:project is known), rules and warnings; its plan, with the stack's labels."""
    given, bucket = ctx.invocation, ctx.sections.bucket
    if bucket is None:
        return None
    project = given.gcp_project
    ctx.bucket_name = name(bucket, project, given.pulumi_project, given.stack) if project else None
    found.problems_at("bucket.rules").extend(problems(bucket, bucket_name=ctx.bucket_name, region=ctx.region))
    if ctx.profile is None:
        return None
    found.warnings_at("bucket").extend(warnings(bucket, ctx.profile))
    if not found.clean or not (ctx.bucket_name and ctx.region and project and ctx.labels is not None):
        return None
    return plan(
        bucket, name=ctx.bucket_name, region=ctx.region, project=project, profile=ctx.profile, labels=ctx.labels
    )


def name(bucket: BucketConfig, gcp_project: str, pulumi_project: str, stack: str) -> str:
    return bucket.name or naming.default_bucket_name(gcp_project, pulumi_project, stack)


def location(bucket: BucketConfig, region: str) -> str:
    """bucket.location, else gcp:region."""
    return bucket.location or region


def plan(
    bucket: BucketConfig, *, name: str, region: str, project: str, profile: Profile, labels: dict[str, str]
) -> BucketPlan:
    return BucketPlan(
        config=bucket,
        name=name,
        location=location(bucket, region),
        project=project,
        labels=labels,
        force_destroy=profile.bucket_force_destroy if bucket.force_destroy is None else bucket.force_destroy,
        soft_delete_seconds=profile.bucket_soft_delete_seconds,
        protect=profile.protect,
        retain_on_delete=profile.retain_bucket,
    )


def warnings(bucket: BucketConfig, profile: Profile) -> list[str]:
    """An override of the profile is said, never applied silently; access logs off, said."""
    out = []
    if bucket.force_destroy is not None and bucket.force_destroy != profile.bucket_force_destroy:
        out.append(
            f"{PATH}.forceDestroy={str(bucket.force_destroy).lower()} overrides the {profile.name} profile "
            f"({str(profile.bucket_force_destroy).lower()})"
        )
    if not bucket.access_logs:
        said = f"{PATH}.accessLogs=false: the bucket keeps no usage or storage logs (checkov CKV_GCP_62 fails on it)"
        if profile.protect:  # the log bucket of a live stack is protected: its delete fails until unprotected
            said += (
                f"; on a live {profile.name} stack `pulumi state unprotect` its bucket-logs resource first (then "
                "removed from the stack, left in place with its logs)"
            )
        out.append(said)
    return out


def check_bucket_name(name: str) -> str | None:
    """Why `name` is not a bucket name this stack accepts, or None. Dots are refused: they need domain proof."""
    if not BUCKET_RE.fullmatch(name):
        return (
            f"{name!r} is not a valid bucket name: 3-63 characters of lowercase letters, digits, '-' and '_', "
            "starting and ending with a letter or digit (dotted names need domain verification and are not accepted)"
        )
    if name.startswith("goog") or "google" in name or "g00gle" in name or "go0gle" in name:
        return f"{name!r} is not a valid bucket name: it may not start with 'goog' or contain 'google'"
    return None


def problems(bucket: BucketConfig, *, bucket_name: str | None, region: str | None) -> list[Problem]:
    """The bucket's rules: its name (None: unknown while gcp:project has problems), its key in its location, and
    a location Cloud Storage has (stacks/facts/storage_locations.py, from Google's list)."""
    found: list[Problem] = []
    why = check_bucket_name(bucket_name) if bucket_name is not None else None
    if why:
        found.append(Problem(f"{PATH}.name", why))
    if region:
        check_key(f"{PATH}.kmsKeyName", bucket.kms_key_name, location(bucket, region), "the bucket's location", found)
    s = storage_locations
    if bucket.location is None and region and s.is_region(region) and not s.is_location(region):
        near = [r for r in s.close_regions(region) if s.is_location(r)][:1] or ["us"]
        found.append(
            Problem(
                f"{PATH}.location",
                f"unset, so gcp:region {region!r}, where Cloud Storage has no location ({s.SOURCE}): set it, e.g. "
                f"{near[0]} or a multi-region ({', '.join(s.MULTI_REGIONS)})",
            )
        )
    if bucket.location is not None and not storage_locations.is_location(bucket.location):
        close = [r for r in s.close_regions(bucket.location) if s.is_location(r)]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        found.append(
            Problem(
                f"{PATH}.location",
                f"{bucket.location!r} is not a Cloud Storage location; {hint}allowed: one of its {len(s.REGIONS)} "
                f"regions (e.g. us-east5, europe-west4; all at {s.SOURCE}), a dual-region "
                f"({', '.join(s.DUAL_REGIONS)}) or a multi-region ({', '.join(s.MULTI_REGIONS)})",
            )
        )
    return found
