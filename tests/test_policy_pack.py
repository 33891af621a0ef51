"""policy/: the guardrails as a Pulumi policy pack (pulumi-policy's Python SDK). Its policies call stacks/guardrails.py
(tests/test_guardrails.py tests the rules over every shipped stack); here, the pack's own part: one policy per rule,
the level its environment gets, the environment from what the engine says in ConfigureStack, and the versions.
e2e/test_policy_pack.py runs it under the real Pulumi engine."""

from __future__ import annotations

import runpy
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, PolicyResourceOptions, ResourceValidationArgs
from pulumi_policy import policy as policy_sdk
from pulumi_policy.proxy import unknown_checking_proxy

from stacks import guardrails as g
from stacks.facts import versions
from tooling.harness.offline import ROOT
from tooling.harness.requirements import pins
from tpu_serving.version import VERSION

PACK = ROOT / "policy"


@pytest.fixture
def pack(monkeypatch) -> dict[str, Any]:
    """The pack's module (its __main__.py, not serving), with the SDK's ConfigureStack restored after the test."""
    monkeypatch.setattr(
        policy_sdk._PolicyAnalyzerServicer, "ConfigureStack", policy_sdk._PolicyAnalyzerServicer.ConfigureStack
    )
    return runpy.run_path(str(PACK / "__main__.py"), run_name="tpu_serving_policy_pack")


def options(protect: bool = False) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect, [], None, [], None, [], None)  # type: ignore[arg-type]


def validate(policy: Any, type_: str, name: str, props: dict[str, Any], protect: bool = False) -> list[str]:
    reported: list[str] = []
    args = ResourceValidationArgs(type_, unknown_checking_proxy(props), f"urn:{name}", name, options(protect), None)
    policy.validate(args, lambda message, urn=None: reported.append(message))
    return reported


def test_every_rule_is_a_policy_of_the_pack(pack):
    policies = pack["policies"](g.PROD)
    assert {p.rule for p in policies} == set(g.RULES)
    assert len({p.name for p in policies}) == len(policies)


def test_a_policy_reports_its_rules_message_with_the_resource_and_field(pack):
    by_name = {p.name: p for p in pack["policies"](g.PROD)}
    svc = {"metadata": {"name": "web", "namespace": "serve"}, "spec": {"type": "LoadBalancer"}}
    [message] = validate(by_name[g.PUBLIC_ENDPOINT], g.SERVICE, "web", svc)
    assert "Service serve/web" in message and "spec.type LoadBalancer" in message and "Internal" in message
    assert validate(by_name[g.IMAGES], g.SERVICE, "web", svc) == []  # another rule's resource: nothing


def test_protect_is_read_from_the_resource_options(pack):
    # pulumi-policy@v1.21.0 pulumi_policy/policy.py ResourceValidationArgs.opts: PolicyResourceOptions.protect
    policies = pack["policies"](g.PROD)
    pack["set_levels"](policies, g.PROD)
    by_name = {p.name: p for p in policies}
    bucket = {"name": "b", "location": "US"}
    assert validate(by_name[g.PROTECTED], g.BUCKET, "bucket", bucket, protect=True) == []
    [message] = validate(by_name[g.PROTECTED], g.BUCKET, "bucket", bucket, protect=False)
    assert "protect is false in prod" in message


def test_an_unknown_value_is_read_as_unknown_never_raised(pack):
    # pulumi_policy's proxy raises UnknownValueError on reading an unknown (pulumi_policy/proxy.py); the pack's
    # plain() turns it into guardrails.UNKNOWN, which no rule guesses
    from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE

    by_name = {p.name: p for p in pack["policies"](g.PROD)}
    svc = {"metadata": {"name": "w"}, "spec": {"type": "LoadBalancer", "loadBalancerSourceRanges": UNKNOWN_ARRAY_VALUE}}
    assert validate(by_name[g.PUBLIC_ENDPOINT], g.SERVICE, "w", svc) == []


@pytest.mark.parametrize(
    "tags,config,stack,env",
    [
        ({}, {"tpu-serving:environment": "dev"}, "prod", "dev"),
        ({"tpu-serving:environment": "staging"}, {"tpu-serving:environment": "dev"}, "x", "staging"),
        ({}, {}, "team-prod", "prod"),
        ({}, {}, "scratch", "prod"),
    ],
)
def test_configure_stack_sets_each_policys_level_for_the_stacks_environment(pack, tags, config, stack, env):
    # the engine calls ConfigureStack with the stack, its config and tags right after starting the pack
    # (pulumi/pulumi@v3.274.1 pkg/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer)
    policies = pack["policies"](g.PROD)
    pack["on_configure_stack"](policies)
    request = analyzer_pb2.AnalyzerStackConfigureRequest(stack=stack, project="p", config=config, tags=tags)
    policy_sdk._PolicyAnalyzerServicer.ConfigureStack(SimpleNamespace(), request, None)
    levels = {"advisory": EnforcementLevel.ADVISORY, "mandatory": EnforcementLevel.MANDATORY}
    levels["disabled"] = EnforcementLevel.DISABLED
    for p in policies:
        assert p.enforcement_level == levels[g.ENFORCEMENT[p.rule][env]], (p.name, env)
    assert pack["CURRENT"]["environment"] == env


def run_stack_policies(pack: dict[str, Any], env: str, res: list[g.Resource]) -> dict[str, list[str]]:
    """Every policy of the pack over a stack's resources as the SDK hands them (PolicyResource, props through the
    SDK's unknown-checking proxy), at the levels `env` gets: {policy name: messages}."""
    from pulumi_policy import PolicyResource, StackValidationArgs

    policies = pack["policies"](env)
    pack["set_levels"](policies, env)
    args = [
        PolicyResource(
            r.type, unknown_checking_proxy(dict(r.props)), r.urn, r.name, options(r.protect), None, None, [], {}
        )
        for r in res
    ]
    out: dict[str, list[str]] = {}
    for policy in policies:
        report = out.setdefault(policy.name, []).append
        if isinstance(policy, policy_sdk.StackValidationPolicy):
            policy.validate(StackValidationArgs(args), lambda message, urn=None, report=report: report(message))
        else:
            for a in args:
                ra = ResourceValidationArgs(a.resource_type, a.props, a.urn, a.name, a.opts, None)
                policy.validate(ra, lambda message, urn=None, report=report: report(message))
    return {name: messages for name, messages in out.items() if messages}


@pytest.mark.parametrize("env", ["staging", "prod"])
@pytest.mark.parametrize("kind", ["source-ranges", "cloud-armor-policy"])
def test_the_pack_passes_the_programs_external_gateway(pack, kind, env):
    """The program's external Gateway (the Cloud Armor policy on each backend as a GCPBackendPolicy patch in the
    backend's namespace) passes every policy of the pack where no-public-endpoint refuses; without that patch the
    pack's no-public-endpoint-stack refuses it."""
    from tests.test_guardrails import external_variant

    res = external_variant(kind, env, True)
    assert run_stack_policies(pack, env, res) == {}
    unarmored = [r for r in res if r.type != f"{g.BACKEND_POLICY}Patch"]
    found = run_stack_policies(pack, env, unarmored)
    assert (
        list(found) == [f"{g.PUBLIC_ENDPOINT}-stack"]
        and "InferencePool chat/chat" in found[f"{g.PUBLIC_ENDPOINT}-stack"][0]
    )


@pytest.mark.parametrize("where", ["tags", "config"])
def test_an_environment_the_pack_does_not_know_is_refused_not_silently_read_as_another(pack, where):
    """`production` is none of dev, staging, prod: the pack applies prod's levels and says so in a mandatory
    violation (the program refuses that value too, stacks/pieces/environment.py), instead of reading it as the
    stack's name would give."""
    policies = pack["policies"](g.PROD)
    pack["on_configure_stack"](policies)
    given = {"tpu-serving:environment": "production"}
    request = analyzer_pb2.AnalyzerStackConfigureRequest(
        stack="team-dev", project="p", config=given if where == "config" else {}, tags=given if where == "tags" else {}
    )
    policy_sdk._PolicyAnalyzerServicer.ConfigureStack(SimpleNamespace(), request, None)
    assert pack["CURRENT"]["environment"] == g.PROD
    from pulumi_policy import StackValidationArgs

    (stack_policy,) = [p for p in policies if p.name == f"{g.PUBLIC_ENDPOINT}-stack"]
    reported: list[str] = []
    stack_policy.validate(StackValidationArgs([]), lambda message, urn=None: reported.append(message))
    assert (
        len(reported) == 1
        and "'production' is not an environment" in reported[0]
        and "dev, staging, prod" in reported[0]
    )
    assert stack_policy.enforcement_level == EnforcementLevel.MANDATORY
    request = analyzer_pb2.AnalyzerStackConfigureRequest(stack="team-dev", project="p", config={}, tags={})
    policy_sdk._PolicyAnalyzerServicer.ConfigureStack(SimpleNamespace(), request, None)
    reported.clear()
    stack_policy.validate(StackValidationArgs([]), lambda message, urn=None: reported.append(message))
    assert reported == [] and pack["CURRENT"]["environment"] == g.DEV


def test_public_endpoints_warn_in_dev_and_refuse_elsewhere():
    assert g.ENFORCEMENT[g.PUBLIC_ENDPOINT] == {"dev": "advisory", "staging": "mandatory", "prod": "mandatory"}


def test_the_pack_version_is_the_release_and_the_sdk_pins_agree():
    assert yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())["version"] == VERSION
    assert pins(PACK / "requirements.txt")["pulumi-policy"] == versions.PULUMI_POLICY == pins()["pulumi-policy"]
    assert pins(PACK / "requirements.txt")["pulumi"] == pins()["pulumi"]
    assert "tpu-serving" not in pins(PACK / "requirements.txt")  # the wheel, by path (tests/test_package.py)


def test_the_launcher_runs_the_pack_as_the_language_host_would():
    # pulumi/pulumi sdk/python/cmd/pulumi-language-python/main.go RunPlugin: `python -u -m pulumi.policy <args> <dir>`
    text = (PACK / "run-pack").read_text()
    assert '-u -m pulumi.policy "$@" "$dir"' in text
    assert (PACK / "run-pack").stat().st_mode & 0o111


# pulumi/pulumi@v3.274.1 pkg/resource/plugin/plugin.go buildPluginArguments: with --logflow the engine passes
# `--logtostderr` and `-v=<N>`, with tracing `--tracing <endpoint>`, all BEFORE the engine's address; the pulumi SDK's
# `python -m pulumi.policy` (pulumi 3.272.0 pulumi/policy/__main__.py) declares exactly those flags (argparse,
# parse_known_args) beside its two positionals (engineAddress, program).
@pytest.mark.parametrize(
    "flags",
    [[], ["--logtostderr", "-v=9"], ["--tracing", "http://127.0.0.1:1"], ["--logtostderr", "-v=3", "--tracing", "x"]],
    ids=["plain", "logflow", "tracing", "both"],
)
def test_the_launcher_starts_the_pack_whatever_flags_the_engine_puts_first(flags):
    import os
    import subprocess
    import sys

    env = {**os.environ, "PULUMI_PYTHON_CMD": sys.executable, "PYTHONPATH": str(ROOT)}
    env.pop("PULUMI_CONFIG", None)
    proc = subprocess.Popen(
        [str(PACK / "run-pack"), *flags, "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd="/",
    )
    try:
        first_line = proc.stdout.readline().decode() if proc.stdout else ""
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    # a served pack prints its port first (pulumi-policy@v1.21.0 pulumi_policy/policy.py PolicyPack.__init__)
    assert first_line.strip().isdigit(), (first_line, err.decode()[-2000:])


# ---- the ConfigureStack wrapper, pinned against the SDK it wraps (pulumi-policy 1.21.0) -------------------------
# pulumi/pulumi-policy@v1.21.0 sdk/python/lib/pulumi_policy/policy.py (the installed copy is read below):
# - PolicyPack.__init__ makes `servicer = _PolicyAnalyzerServicer(name, version, policies, enforcement_level, ...)`
#   and serves it: the class attribute the pack replaces is the handler the engine's call reaches;
# - _PolicyAnalyzerServicer.ConfigureStack keeps only `request.tags` (as __stack_tags, handed to every policy's
#   args) and answers AnalyzerStackConfigureResponse: the wrapper must still run it;
# - Analyze / AnalyzeStack read each policy's level per call through _get_enforcement_level (policy config from
#   Configure first, then `policy.enforcement_level`), and GetAnalyzerInfo reports `policy.enforcement_level`: a
#   level set on ConfigureStack is what the engine sees, and `--policy-pack-config` still wins.


def sdk_source(obj: Any) -> str:
    import inspect

    return inspect.getsource(obj)


def test_the_wrapped_sdk_is_pulumi_policy_1_21_0_as_read():
    from importlib.metadata import version

    assert version("pulumi-policy") == "1.21.0" == versions.PULUMI_POLICY
    servicer = policy_sdk._PolicyAnalyzerServicer
    assert "servicer = _PolicyAnalyzerServicer(" in sdk_source(policy_sdk.PolicyPack.__init__)
    configure = sdk_source(servicer.ConfigureStack)
    assert "self.__stack_tags = MappingProxyType(dict(request.tags))" in configure
    # the SDK reads neither the stack's config nor its name: what the wrapper adds (a later SDK that does: revisit)
    assert "request.config" not in configure and "request.stack" not in configure
    assert "return proto.AnalyzerStackConfigureResponse()" in configure
    for handler in (servicer.Analyze, servicer.AnalyzeStack):
        assert "enforcement_level = self._get_enforcement_level(policy)" in sdk_source(handler)
    levels = sdk_source(servicer._get_enforcement_level)
    assert levels.index("__policy_pack_config_enforcement_level") < levels.index("policy.enforcement_level")
    assert "policy.enforcement_level if policy.enforcement_level is not None" in sdk_source(servicer.GetAnalyzerInfo)


def served(policies: list[Any]) -> Any:
    """The servicer as PolicyPack.__init__ makes it (pulumi_policy/policy.py: positional name, version, policies,
    the pack's default level)."""
    return policy_sdk._PolicyAnalyzerServicer("tpu-serving-guardrails", "0.0.1", policies, EnforcementLevel.ADVISORY)


def test_the_wrapper_sets_the_levels_the_sdk_serves_and_keeps_the_sdks_own_handling(pack):
    from google.protobuf import empty_pb2

    policies = pack["policies"](g.PROD)
    pack["on_configure_stack"](policies)
    servicer = served(policies)
    tags = {"tpu-serving:environment": "dev", "team": "a"}
    request = analyzer_pb2.AnalyzerStackConfigureRequest(stack="llama-prod", project="p", tags=tags)
    response = servicer.ConfigureStack(request, None)
    assert isinstance(response, analyzer_pb2.AnalyzerStackConfigureResponse)
    assert dict(servicer._PolicyAnalyzerServicer__stack_tags) == tags  # the SDK's handler ran: tags for policies
    for p in policies:  # what Analyze and AnalyzeStack report at, per call
        assert servicer._get_enforcement_level(p) == LEVELS[g.ENFORCEMENT[p.rule]["dev"]], p.name
    info = {p.name: p.enforcementLevel for p in servicer.GetAnalyzerInfo(empty_pb2.Empty(), None).policies}
    assert info[g.PUBLIC_ENDPOINT] == servicer._map_enforcement_level(EnforcementLevel.ADVISORY)
    # an organisation's --policy-pack-config (the engine's Configure call) wins over the environment's level
    override = analyzer_pb2.ConfigureAnalyzerRequest()
    override.policyConfig[g.GKE_MANAGED].enforcementLevel = servicer._map_enforcement_level(EnforcementLevel.ADVISORY)
    servicer.Configure(override, None)
    [managed] = [p for p in policies if p.name == g.GKE_MANAGED]
    assert servicer._get_enforcement_level(managed) == EnforcementLevel.ADVISORY
    assert g.ENFORCEMENT[g.GKE_MANAGED]["dev"] == g.MANDATORY


LEVELS = {
    g.ADVISORY: EnforcementLevel.ADVISORY,
    g.MANDATORY: EnforcementLevel.MANDATORY,
    g.DISABLED: EnforcementLevel.DISABLED,
}


def test_the_docs_override_example_names_both_policies_of_a_split_rule(pack):
    """An override of a rule with a stack part must name both its policies (the SDK serves them separately): the docs'
    example does, for every such rule of the pack."""
    text = (ROOT / "docs/policy.md").read_text()
    names = {p.name for p in pack["policies"](g.PROD)}
    for rule in pack["STACK_RULES"]:
        both = [n for n in (rule, f"{rule}-stack") if n in names]
        assert all(f"`{n}`" in text or f'"{n}"' in text for n in both), both


# ---- the released pack has no fallback into its surroundings ------------------------------------------------------


def test_the_pack_imports_the_rules_through_tpu_serving_and_never_edits_sys_path():
    """Through tpu_serving, whose import checks that stacks/components/workloads are the ones installed beside it
    (tpu_serving/_namespace.py); a sys.path entry for the pack's parent folder could import a user's `stacks`."""
    import ast

    tree = ast.parse((PACK / "__main__.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert any(isinstance(n, ast.ImportFrom) and n.module == "tpu_serving" and n.names[0].name == "guardrails"
               for n in imports)  # fmt: skip
    assert not [n for n in imports if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("stacks")]
    assert "sys.path" not in (PACK / "__main__.py").read_text()


def test_the_launcher_never_falls_back_to_a_virtualenv_around_the_pack(tmp_path):
    """An unpacked pack with no venv/ and no PULUMI_PYTHON_CMD refuses to start, naming both, even with a .venv in
    the folder around it (a user's project)."""
    import os
    import shutil
    import subprocess

    pack = tmp_path / "project" / "pack"
    pack.mkdir(parents=True)
    shutil.copy(PACK / "run-pack", pack / "run-pack")
    (tmp_path / "project" / ".venv" / "bin").mkdir(parents=True)
    decoy = tmp_path / "project" / ".venv" / "bin" / "python"
    decoy.write_text("#!/bin/sh\necho decoy-ran\n")
    decoy.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PULUMI_PYTHON_CMD"}
    done = subprocess.run([str(pack / "run-pack"), "127.0.0.1:1"], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 1 and "decoy-ran" not in done.stdout
    assert "no " in done.stderr and "venv" in done.stderr and "PULUMI_PYTHON_CMD" in done.stderr


def test_the_dev_launcher_is_not_part_of_the_released_pack():
    import re

    makefile = (ROOT / "Makefile").read_text()
    files = re.search(r"^PACK_FILES = (.*)$", makefile, re.M)
    assert files is not None and "run-pack-dev" not in files.group(1)
    assert (ROOT / "scripts/run-pack-dev").stat().st_mode & 0o111
