"""Saxml's own rules: the cell's name, the HTTP server's exposure, the models (their names and classes, their
replicas and sizes against the pool), a multi-host pool on which JobSet can name the model server pods, and a model
image that serves its TPU generation; `check` returns the plan when none is broken."""

from __future__ import annotations

import ipaddress
import re

from stacks import guardrails, naming
from stacks.facts import catalog
from stacks.facts.versions import Serves, image_gaps
from stacks.problems import Problem
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_type import WorkloadContext
from workloads.saxml.config import SaxHttpConfig, SaxmlWorkload
from workloads.saxml.manifests import ServedSaxmlPlan
from workloads.saxml.plan import (
    CELL_PREFIX,
    MODEL_SERVER_JOB,
    MODEL_SERVER_ROLE,
    PLATFORM_CHIPS,
    SAX_WEIGHT_BITS,
    SaxmlPlan,
    cell_of,
    params_billion,
    platform_chip,
)

# A Sax model name (google/saxml@v1.1.0:saxml/common/naming.go validateModelName, pattern "^[a-z]+[a-z0-9-_]*$").
SAX_NAME_RE = re.compile(r"[a-z]+[a-z0-9_-]*")
# A model class as Saxml's registry finds it: `<module>.<Class>` (full_registration_name), or that name relative to
# its REGISTRY_ROOT (google/saxml@v1.1.0:saxml/server/servable_model_registry.py register/get): Python identifiers
# joined by dots.
MODEL_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
CELL_RE = re.compile(rf"{CELL_PREFIX}[a-z][a-z0-9_-]{{0,62}}")  # a Sax name (SAX_NAME_RE): a letter first


def longest_pod_name(name: str, slices: int, hosts: int) -> str:
    """The longest model server pod name JobSet's webhook checks (stacks/naming.py jobset_longest_names): the JobSet
    is `<name>-model-server`, its replicated Job `sax-model-server` with one Job per slice and one pod per host."""
    return naming.jobset_longest_names(f"{name}-{MODEL_SERVER_ROLE}", MODEL_SERVER_JOB, slices, hosts)[1]


def check(
    path: str,
    workload: SaxmlWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> SaxmlPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    cell = cell_of(workload)
    if not CELL_RE.fullmatch(cell):
        problems.append(
            Problem(
                f"{path}.cell",
                f"{cell!r} is not of the form /sax/<name> (a lowercase letter, then lowercase letters, digits, '-', "
                "'_'; Saxml's naming.go)",
            )
        )
    _check_http(path, workload.http, ctx.environment, problems)
    _check_models(path, workload, cell, problems)
    if pool is None or not _check_pool(path, workload, pool, problems):
        return None
    plan = ServedSaxmlPlan.on(workload, pool, namespace, ctx)
    model_image = plan.image("model")
    generation = pool.shape.generation.name
    gaps = image_gaps(model_image, Serves(tpus=frozenset({generation})))
    for gap in gaps:
        problems.append(Problem(f"{path}.pool", f"pool {pool.name!r} is {generation}, but {gap}"))
    if not gaps and platform_chip(generation) is None:  # the model server would not start (plan.py PLATFORM_CHIPS)
        chips = ", ".join(g for g, chip in PLATFORM_CHIPS.items() if chip)
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is {generation}, which Saxml has no --platform_chip for; allowed: {chips}",
            )
        )
    _check_models_fit(path, workload, pool, problems, warnings)
    return plan


def _check_models(path: str, workload: SaxmlWorkload, cell: str, problems: list[Problem]) -> None:
    """Each model is in the workload's cell, named as Sax names models, once, with a model class Saxml can look up
    (an empty or malformed modelPath fails only when the publish Job runs)."""
    seen: dict[str, int] = {}
    for i, model in enumerate(workload.models or []):
        where = f"{path}.models[{i}]"
        if model.model.startswith(CELL_PREFIX) and not model.model.startswith(f"{cell}/"):
            problems.append(Problem(f"{where}.model", f"{model.model!r} is not in the cell {cell}"))
            continue
        name = model.model.removeprefix(f"{cell}/")
        if not SAX_NAME_RE.fullmatch(name):
            problems.append(
                Problem(
                    f"{where}.model",
                    f"{model.model!r} is not a Sax model name: a lowercase letter, then lowercase letters, digits, "
                    f"'-' and '_' (or {cell}/<that name>)",
                )
            )
        elif f"{cell}/{name}" in seen:
            problems.append(
                Problem(
                    f"{where}.model",
                    f"{model.model!r} is the model {cell}/{name} of models[{seen[f'{cell}/{name}']}] again; a cell "
                    "publishes each model once (give it another name)",
                )
            )
        seen.setdefault(f"{cell}/{name}", i)
        if not MODEL_PATH_RE.fullmatch(model.model_path):
            problems.append(
                Problem(
                    f"{where}.modelPath",
                    f"{model.model_path!r} is not a Saxml model class: Python identifiers joined by dots, e.g. "
                    "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test",
                )
            )


def _check_http(path: str, http: SaxHttpConfig, environment: str, problems: list[Problem]) -> None:
    """Who may reach the HTTP server, which has no authentication: listed CIDRs, the whole internet only in dev."""
    if http.exposure == "external" and not http.source_ranges:
        problems.append(
            Problem(
                f"{path}.http.sourceRanges",
                "required with exposure 'external': the CIDRs allowed to reach the public load balancer "
                "(Saxml's HTTP API has no authentication)",
            )
        )
    for i, cidr in enumerate(http.source_ranges):
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError as err:
            problems.append(Problem(f"{path}.http.sourceRanges[{i}]", f"{cidr!r} is not a valid CIDR block ({err})"))
            continue
        # guardrails.whole_internet: the policy pack's no-public-endpoint reads source ranges the same way
        # and refused where the pack's no-public-endpoint refuses (guardrails.level)
        if (
            guardrails.whole_internet(str(network))
            and http.exposure == "external"
            and guardrails.level(guardrails.PUBLIC_ENDPOINT, environment) == guardrails.MANDATORY
        ):
            problems.append(
                Problem(
                    f"{path}.http.sourceRanges[{i}]",
                    f"{cidr!r} opens Saxml's unauthenticated HTTP API to the whole internet; allowed only in "
                    f"{', '.join(guardrails.allowed_in(guardrails.PUBLIC_ENDPOINT))} (environment is "
                    f"{environment!r}): list the CIDRs of its clients",
                )
            )
    if http.source_ranges and http.exposure == "cluster":
        problems.append(
            Problem(
                f"{path}.http.sourceRanges", "only used with exposure 'internal' or 'external' (exposure is 'cluster')"
            )
        )


def _check_pool(path: str, workload: SaxmlWorkload, pool: PoolPlan, problems: list[Problem]) -> bool:
    """A multi-host pool, on which JobSet can name the model server pods; False when it cannot serve there."""
    if not pool.shape.multi_host:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is single-host ({pool.shape.generation.name} {pool.shape.topology}); "
                "Saxml multi-host serving needs a multi-host pool",
            )
        )
        return False
    longest = longest_pod_name(workload.name, pool.slices, pool.shape.hosts)
    if len(longest) > naming.DNS_LABEL_MAX:
        problems.append(
            Problem(
                f"{path}.name",
                f"{workload.name!r} is too long for a Saxml workload on pool {pool.name!r}: JobSet names its model "
                f"server pods up to {longest!r} ({len(longest)} characters, with the Job controller's 5 random "
                f"ones), and JobSet refuses names over {naming.DNS_LABEL_MAX}; use at most "
                f"{len(workload.name) - len(longest) + naming.DNS_LABEL_MAX} characters",
            )
        )
    return True


def _check_models_fit(
    path: str, workload: SaxmlWorkload, pool: PoolPlan, problems: list[Problem], warnings: list[str]
) -> None:
    """Each model's replicas fit the pool's model servers (one per slice), and its weights one slice's HBM."""
    for i, model in enumerate(workload.models or []):
        if model.replicas > pool.slices:
            problems.append(
                Problem(
                    f"{path}.models[{i}].replicas",
                    f"{model.replicas} is more than the {pool.slices} model server(s) of pool {pool.name!r} (one per slice)",
                )
            )
        size = model.params_billion or params_billion(model.model_path)
        if size:
            warning = catalog.sizing_warning(size, SAX_WEIGHT_BITS, pool.shape, f"{path}.models[{i}]")
            if warning:
                warnings.append(warning)
