"""The tpu-serving policy pack: stacks/guardrails.py's rules as Pulumi policies (docs/policy.md).

Each rule is a policy (and a stack policy where it looks across resources) whose enforcement level is the one the
stack's environment gets (guardrails.ENFORCEMENT). The environment is, first found (guardrails.environment_of):
- the stack tag `tpu-serving:environment` (`pulumi stack tag set`),
- the stack's config `tpu-serving:environment`,
- a word of the stack's name (dev, staging, prod), else prod.
The engine hands the pack the stack's name, config and tags in ConfigureStack, right after starting it and before any
GetAnalyzerInfo or Analyze (pulumi/pulumi@v3.274.1 pkg/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer);
pulumi-policy@v1.21.0 keeps only the tags (pulumi_policy/policy.py _PolicyAnalyzerServicer.ConfigureStack), so the
pack wraps that call to read the rest. A pack started by a language host also finds them in PULUMI_CONFIG and
PULUMI_STACK (pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go RunPlugin), read at start. Analyze reads
each policy's level when it reports (pulumi_policy/policy.py _get_enforcement_level), so setting it on
ConfigureStack is what the engine sees. An organisation overrides any level with the standard policy config
(`--policy-pack-config`, {"<policy>": "advisory"}), which wins over both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import policy as policy_sdk
from pulumi_policy.proxy import UnknownValueError

# Through tpu_serving, whose import first checks that stacks/components/workloads are the ones installed beside it
# (tpu_serving/_namespace.py): never a `stacks` of the user's. The pack's environment has the tpu-serving wheel
# (requirements.txt); in this repository, scripts/run-pack-dev puts the checkout on PYTHONPATH instead.
from tpu_serving import guardrails

NAME = "tpu-serving-guardrails"
LEVELS = {
    guardrails.ADVISORY: EnforcementLevel.ADVISORY,
    guardrails.MANDATORY: EnforcementLevel.MANDATORY,
    guardrails.DISABLED: EnforcementLevel.DISABLED,
}


def plain(value: Any) -> Any:
    """The analyzer's properties as plain values, an unknown one as guardrails.UNKNOWN (pulumi_policy's proxy raises
    UnknownValueError on reading one: pulumi-policy@v1.21.0 pulumi_policy/proxy.py)."""
    if isinstance(value, Mapping):
        out = {}
        for key in list(value.keys()):
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = guardrails.UNKNOWN
        return out
    if isinstance(value, (list, tuple)) or type(value).__name__.endswith("ListProxy"):
        items = []
        for i in range(len(value)):
            try:
                items.append(plain(value[i]))
            except UnknownValueError:
                items.append(guardrails.UNKNOWN)
        return items
    return value


def resource_of(args: Any) -> guardrails.Resource:
    """A guardrails.Resource of a ResourceValidationArgs or a PolicyResource (the `protect` option: pulumi-policy@v1.21.0
    pulumi_policy/policy.py PolicyResourceOptions.protect)."""
    return guardrails.Resource(args.resource_type, args.name, plain(args.props), bool(args.opts.protect), args.urn)


ENVIRONMENT_KEY = "tpu-serving:environment"


def environment(tags: Mapping[str, str], config: Mapping[str, str], stack: str | None) -> str:
    """The environment of a stack: its tag, else its config, else its name (guardrails.environment_of). A configured
    value that is no environment is kept (CURRENT["problem"]) and reported by no-public-endpoint-stack."""
    configured = tags.get(ENVIRONMENT_KEY) or config.get(ENVIRONMENT_KEY)
    CURRENT["problem"] = guardrails.environment_problem(configured) or ""
    return guardrails.environment_of(configured, stack)


def startup_environment() -> str:
    """The environment from what a language host passes at start (PULUMI_CONFIG, PULUMI_STACK), which pulumi.policy
    loads into the SDK's config; prod (the strictest) when there is none."""
    try:
        stack: str | None = pulumi.get_stack()
    except Exception:  # noqa: BLE001 (started without a stack: the engine's ConfigureStack says it)
        stack = None
    return environment({}, {ENVIRONMENT_KEY: pulumi.Config("tpu-serving").get("environment") or ""}, stack)


# The environment whose levels the policies have now (a resource rule reads it too: prod-protected), and why the
# configured one was not used (an unknown value), if it was not.
CURRENT = {"environment": guardrails.PROD, "problem": ""}


def set_levels(policies: list[Any], env: str) -> None:
    CURRENT["environment"] = env
    for p in policies:
        p.enforcement_level = LEVELS[guardrails.ENFORCEMENT[p.rule][env]]


def on_configure_stack(policies: list[Any]) -> None:
    """Set the policies' levels from the stack the engine configures (the SDK's own handler runs too)."""
    sdk_handler = policy_sdk._PolicyAnalyzerServicer.ConfigureStack

    def configure_stack(self: Any, request: Any, context: Any) -> Any:
        set_levels(policies, environment(dict(request.tags), dict(request.config), request.stack or None))
        return sdk_handler(self, request, context)

    policy_sdk._PolicyAnalyzerServicer.ConfigureStack = configure_stack  # type: ignore[method-assign,assignment]


def resource_policy(rule: str, env: str) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for violation in guardrails.resource_violations(resource_of(args), CURRENT["environment"]):
            if violation.rule == rule:
                report_violation(violation.message, None)

    policy = ResourceValidationPolicy(
        name=rule,
        description=guardrails.DESCRIPTIONS[rule],
        enforcement_level=LEVELS[guardrails.ENFORCEMENT[rule][env]],
        validate=validate,
    )
    policy.rule = rule  # type: ignore[attr-defined]
    return policy


def stack_policy(rule: str, env: str) -> StackValidationPolicy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        if rule == guardrails.PUBLIC_ENDPOINT and CURRENT["problem"]:
            report_violation(CURRENT["problem"], None)  # at prod's levels: mandatory, the stack is refused
        for violation in guardrails.stack_violations(resource_of(r) for r in args.resources):
            if violation.rule == rule:
                report_violation(violation.message, violation.resource.urn or None)

    policy = StackValidationPolicy(
        name=f"{rule}-stack",
        description=guardrails.DESCRIPTIONS[rule],
        enforcement_level=LEVELS[guardrails.ENFORCEMENT[rule][env]],
        validate=validate,
    )
    policy.rule = rule  # type: ignore[attr-defined]
    return policy


# the rules with a per-resource part, and those with a part over the whole stack (guardrails.stack_violations)
RESOURCE_RULES = (
    guardrails.PUBLIC_ENDPOINT,
    guardrails.POD_SECURITY,
    guardrails.PROTECTED,
    guardrails.IMAGES,
    guardrails.GKE_MANAGED,
)
STACK_RULES = (guardrails.PUBLIC_ENDPOINT, guardrails.POD_SECURITY, guardrails.BUCKET_GRANTS)


def policies(env: str) -> list[Any]:
    return [*(resource_policy(r, env) for r in RESOURCE_RULES), *(stack_policy(r, env) for r in STACK_RULES)]


if __name__ == "__main__":
    PACK = policies(guardrails.PROD)
    set_levels(PACK, startup_environment())
    on_configure_stack(PACK)
    PolicyPack(name=NAME, policies=PACK)
