"""The environment piece (tpu-serving:environment, tpu-serving:decommission): which profile (stacks/model/profiles.py)
the stack runs, checked against what its stack and project names say; the profile is resolved here once and
handed to every piece's plan."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stacks.facts import storage_locations
from stacks.model import config_parse
from stacks.model.profiles import PROFILES, Profile
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import NS, REGION_RE, check_region
from stacks.problems import Problem, fmt
from stacks.serving.workload_type import WorkloadRegistry

NAME = "environment"
KEYS = ("environment", "paused", "decommission")


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    """environment as given (its rule reports a name that is not a profile's); paused and decommission, booleans."""
    at = found.problems_at
    paused = config_parse.parse(f"{NS}:paused", bool, raw.get("paused", False), at("paused"))
    decommission = config_parse.parse(f"{NS}:decommission", bool, raw.get("decommission", False), at("decommission"))
    return {"environment": raw.get("environment"), "paused": paused or False, "decommission": decommission or False}


# The gcp:project every example ships with (examples/*/Pulumi.*.yaml, Pulumi.dev.yaml): a stack made from an example
# keeps it until the user sets theirs. The offline render warns; a real `pulumi preview`/`up` refuses it.
PLACEHOLDER_PROJECT = "my-tpu-project"
GCP_PROJECT_RE = re.compile(r"[a-z][-a-z0-9]{4,28}[a-z0-9]")
# Words of a stack or project name (its runs of letters, lowercased: 'Prod1' and 'acme_prod.eu' say prod) that say
# which environment it is for. Checked in this order, so 'preprod' is staging, not prod.
ENVIRONMENT_WORDS = {
    "staging": ("staging", "stage", "stg", "preprod", "preproduction"),
    "prod": ("prod", "production", "prd"),
}
# A word that starts or ends with one of these says that environment too ('myprod', 'prodeu', 'stagingeu'), except
# English words that merely start with it ('product', 'producer', 'produce').
ENVIRONMENT_AFFIXES = {"staging": ("staging",), "prod": ("prod",)}
NOT_ENVIRONMENT_PREFIXES = ("produc",)


def visit(ctx: Context, found: Findings) -> Profile | None:
    """The invocation (the gcp: settings, unknown keys, how the token is set), tpu-serving:environment against the
    profiles and against what the stack's and project's names say, the placeholder project; then the profile,
    resolved here once for every piece (None: the environment is no profile, reported)."""
    given, sections = ctx.invocation, ctx.sections
    ctx.region = invocation_problems(
        given.gcp_project,
        given.region,
        given.extra_keys,
        given.known_keys,
        given.hf_token,
        found.problems_at("invocation"),
    )
    environment = sections.environment
    found.problems_at("environment").extend(problems(environment))
    name_problems(environment, given.stack, given.gcp_project, found.problems_at("environment.rules"))
    if given.refuse_placeholder:
        found.problems_at("environment.rules").extend(placeholder_problems(given.gcp_project))
    found.warnings_at("environment").extend(placeholder_warnings(given.gcp_project))
    ctx.protect = protect(environment, sections.decommission)
    if not isinstance(environment, str) or environment not in PROFILES:
        return None
    ctx.profile, decommissioned = profile(environment, sections.decommission)
    found.warnings_at("profile").extend(decommissioned)
    if sections.paused:
        found.warnings_at("profile").append(
            f"{NS}:paused=true: workloads are at zero and TPU pools scale to zero nodes"
        )
    return ctx.profile


def problems(environment: Any) -> list[Problem]:
    """tpu-serving:environment names a profile."""
    if environment is None:
        return [Problem(f"{NS}:environment", f"required: one of {', '.join(PROFILES)}")]
    if environment not in PROFILES:
        return [Problem(f"{NS}:environment", f"{fmt(environment)} is not allowed; allowed: {', '.join(PROFILES)}")]
    return []


def profile(environment: str, decommission: bool) -> tuple[Profile, list[str]]:
    """The environment's profile, with protection lifted when decommissioning (said in a warning)."""
    chosen = PROFILES[environment]
    if not decommission:
        return chosen, []
    return chosen.decommissioned(), [
        f"{NS}:decommission=true: protection of the {environment} cluster, TPU pools and bucket is off so that "
        "`pulumi destroy` can run; the bucket is still retained (left in place) on destroy"
    ]


def protect(environment: Any, decommission: bool) -> bool:
    """The profile's Pulumi protection (`profile`), for the plans made while the config is checked; False for an
    environment that is no profile (a problem already)."""
    return isinstance(environment, str) and environment in PROFILES and profile(environment, decommission)[0].protect


def named_environment(name: str | None) -> str | None:
    """The environment a stack or project name says it is for ('acme-prod', 'Prod', 'prod1', 'myprod' -> prod;
    'product-demo' -> None), or None."""
    words = re.findall(r"[a-z]+", (name or "").lower())
    for env, names in ENVIRONMENT_WORDS.items():
        if any(word in names for word in words):
            return env
    return next((env for env in ENVIRONMENT_AFFIXES if any(_word_says(word, env) for word in words)), None)


def _word_says(word: str, env: str) -> bool:
    """`word` starts or ends with one of env's affixes, and is not an English word that merely starts with one."""
    if word.startswith(NOT_ENVIRONMENT_PREFIXES):
        return False
    return any(word.startswith(a) or word.endswith(a) for a in ENVIRONMENT_AFFIXES[env])


def name_problems(environment: Any, stack: str, gcp_project: str | None, problems: list[Problem]) -> None:
    """A stack or project named like prod (or staging) runs that environment's profile, not a lower one: `dev` there
    means no deletion protection and a bucket destroyed with its contents."""
    rank = {name: i for i, name in enumerate(PROFILES)}  # dev, staging, prod: least to most protected
    if not isinstance(environment, str) or environment not in rank:
        return  # reported at its key already
    for what, name in (("stack", stack), ("gcp:project", gcp_project)):
        named = named_environment(name)
        # a project may host a lower environment than its name (staging in 'acme-prod'), but never dev
        if named is None or rank[environment] >= rank[named] or (what == "gcp:project" and environment != "dev"):
            continue
        problems.append(
            Problem(
                f"{NS}:environment",
                f"{fmt(environment)} with {what} {name!r}, which is named like {named}: the {environment} profile "
                f"has {_protection(PROFILES[environment])}; set tpu-serving:environment: {named}, or use a "
                f"{what.removeprefix('gcp:')} name that does not say {named}",
            )
        )


def _protection(profile: Profile) -> str:
    if profile.protect:
        return "deletion protection on the cluster, TPU pools and bucket"
    if profile.bucket_force_destroy:
        return "no deletion protection, and `pulumi destroy` deletes the bucket with its contents"
    return "no deletion protection"


def placeholder_problems(gcp_project: str | None) -> list[Problem]:
    """The placeholder project, refused (a real preview or up: load_stack_config)."""
    placeholder = placeholder_project_problem(gcp_project)
    return [placeholder] if placeholder is not None else []


def placeholder_warnings(gcp_project: str | None) -> list[str]:
    """The placeholder project, warned about where it is not refused (the offline render and tests)."""
    placeholder = placeholder_project_problem(gcp_project)
    return [f"{placeholder}; `pulumi preview` and `pulumi up` refuse it"] if placeholder is not None else []


def placeholder_project_problem(gcp_project: str | None) -> Problem | None:
    """gcp:project still the examples' placeholder: refused by a real preview/up (load_stack_config)."""
    if gcp_project != PLACEHOLDER_PROJECT:
        return None
    return Problem(
        "gcp:project",
        f"{PLACEHOLDER_PROJECT!r} is the examples' placeholder, not your project: pulumi config set gcp:project "
        "<your project id> (or edit the stack file)",
    )


def project_problems(gcp_project: str | None) -> list[Problem]:
    """gcp:project missing, or not a project id (GCP_PROJECT_RE, which the JSON Schema's pattern is)."""
    if not gcp_project:
        return [Problem("gcp:project", "required: the Google Cloud project id (pulumi config set gcp:project ...)")]
    if not GCP_PROJECT_RE.fullmatch(gcp_project):
        return [Problem("gcp:project", f"{gcp_project!r} is not a project id (6-30 lowercase letters, digits, '-')")]
    return []


def invocation_problems(
    gcp_project: str | None,
    region: str | None,
    extra_keys: tuple[str, ...],
    known_keys: tuple[str, ...],
    hf_token: str | None,
    problems: list[Problem],
) -> str | None:
    """What comes from outside `tpu-serving:` keys: the gcp: settings, unknown keys, how the token is set.
    Returns the region when it is one."""
    if hf_token == "plain":
        problems.append(
            Problem(
                f"{NS}:hfToken",
                "is set in plain text; set it as a secret so it is encrypted in the stack file and state: "
                "pulumi config set --secret tpu-serving:hfToken <token>",
            )
        )
    for key in extra_keys:
        problems.append(Problem(f"{NS}:{key}", f"unknown key; allowed: {', '.join(known_keys)}"))
    problems.extend(project_problems(gcp_project))
    if not region:
        problems.append(Problem("gcp:region", "required: the region of the cluster and TPUs, e.g. us-east5"))
    elif not REGION_RE.fullmatch(region):
        problems.append(Problem("gcp:region", storage_locations.region_problem(region) or "not a region name"))
        return None
    else:  # well formed; one of the list, or reported with its close matches (the checks that need it still run)
        check_region("gcp:region", region, problems)
    return region
