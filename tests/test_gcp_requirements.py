"""The one table of what each Google Cloud resource type needs (tooling/oracles/gcp_requirements.py): every `gcp:` type the
program registers has an entry, and `make preflight` checks for a stack exactly what its types need.

Sources of the table's roles: Google's IAM roles reference, one page per service
(https://cloud.google.com/iam/docs/roles-permissions/<service>; e.g. artifactregistry: roles/artifactregistry.admin
holds `artifactregistry.*`, repositories.create and setIamPolicy among them), cited per role in the module docstring.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest

from stacks.monitoring import adapters as metrics_adapters
from tests.conftest import FLEET_FILES, STACK_FILES, make_config, recorded
from tooling.harness.offline import ROOT, parse_stack_file, run_program
from tooling.harness.offline import Recording as OfflineRecording
from tooling.operations import preflight
from tooling.oracles import gcp_requirements

SHIPPED = [*STACK_FILES, *FLEET_FILES]
ALL_IN_ONE = ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml"
DEV = ROOT / "Pulumi.dev.yaml"


def gcp_types(rec: OfflineRecording) -> set[str]:
    return {r.type for r in rec.resources if r.type.startswith("gcp:")}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_every_registered_gcp_type_has_an_entry(path):
    """Every shipped stack (and every fleet stack) under mocks: each `gcp:` type it registers is in the table, so a
    new resource type without an entry fails here."""
    rec = recorded(path, False)
    missing = gcp_types(rec) - set(gcp_requirements.TYPES)
    assert not missing, (
        f"{path.name} registers types with no tooling/oracles/gcp_requirements.py entry: {sorted(missing)}"
    )
    gcp_requirements.requirements((r.type, r.inputs) for r in rec.resources)  # raises on none


def constructed_gcp_resources() -> set[str]:
    """The type token of every pulumi_gcp resource class the program's code constructs (`gcp.<module>.<Class>(`),
    configurations the shipped stacks do not turn on included (alerts' SLOs and channels, a budget, KMS grants)."""
    found = set()
    for folder in ("components", "stacks", "workloads"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                func = node.func if isinstance(node, ast.Call) else None
                if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)):
                    continue
                if not (isinstance(func.value.value, ast.Name) and func.value.value.id == "gcp"):
                    continue
                cls = getattr(getattr(gcp, func.value.attr), func.attr)
                if isinstance(cls, type) and issubclass(cls, pulumi.CustomResource):
                    found.add(cls.pulumi_type)
    return found


def test_every_gcp_resource_the_code_constructs_has_an_entry_and_no_entry_is_stale():
    constructed = constructed_gcp_resources()
    assert "gcp:monitoring/slo:Slo" in constructed and "gcp:billing/budget:Budget" in constructed
    assert constructed == set(gcp_requirements.TYPES)


def test_a_type_a_test_adds_without_an_entry_fails(tmp_path: Path):
    """A program that registers one more `gcp:` type (a firewall rule) than the table knows: caught by the same
    check the shipped stacks go through, and preflight refuses to guess what it needs."""
    program = tmp_path / "__main__.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import runpy
            import pulumi_gcp as gcp
            runpy.run_path({str(ROOT / "__main__.py")!r}, run_name="__main__")
            gcp.compute.Firewall("extra", gcp.compute.FirewallArgs(network="n", allows=[]))
            """
        )
    )
    rec = run_program(make_config(), program=program)
    assert gcp_types(rec) - set(gcp_requirements.TYPES) == {"gcp:compute/firewall:Firewall"}
    with pytest.raises(gcp_requirements.UnknownType, match="gcp:compute/firewall:Firewall"):
        gcp_requirements.requirements((r.type, r.inputs) for r in rec.resources)


def needs_of(path: Path) -> gcp_requirements.Requirements:
    return gcp_requirements.requirements((r.type, r.inputs) for r in recorded(path, False).resources)


def test_a_stack_needs_only_what_its_resources_need():
    """dev registers no alert policy, hub membership or budget: preflight checks neither their APIs nor their roles;
    all-in-one (alerts on) needs the alert-policy role, and no log-metric role (its capacity signals are log-match
    policies, which need no log-based metric)."""
    dev, full = needs_of(DEV), needs_of(ALL_IN_ONE)
    alert_role = gcp_requirements.Role("roles/monitoring.alertPolicyEditor")
    log_role = gcp_requirements.Role("roles/logging.configWriter")
    assert alert_role not in dev.roles and log_role not in dev.roles
    assert full.roles[alert_role] == ["alert policies (alerts)"]
    assert log_role not in full.roles
    assert gcp_requirements.Role("roles/artifactregistry.admin") in dev.roles  # the image mirror is on by default
    for needs in (dev, full):
        assert "gkehub.googleapis.com" not in needs.apis and "billingbudgets.googleapis.com" not in needs.apis
    fleet = needs_of(next(p for p in FLEET_FILES if p.name == "Pulumi.fleet.yaml"))
    assert gcp_requirements.Role("roles/gkehub.admin") in fleet.roles
    assert "multiclusteringress.googleapis.com" in fleet.apis


def test_image_streaming_off_needs_no_container_file_system_api(run):
    on = gcp_requirements.requirements((r.type, r.inputs) for r in run(make_config()).resources)
    assert gcp_requirements.STREAMING_API in on.apis
    off_config = make_config(tpu_serving__cluster={"images": {"streaming": False}})
    off = gcp_requirements.requirements((r.type, r.inputs) for r in run(off_config).resources)
    assert gcp_requirements.STREAMING_API not in off.apis


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_preflight_checks_exactly_the_stacks_needs(path):
    """The api and role rows are the table's needs for the stack's registered types, no more, no fewer; on the
    recorded ready project every one passes (the fixtures grant what every shipped stack needs)."""
    from tests.test_preflight import recorded_runner

    resources = [(r.type, r.inputs) for r in recorded(path, False).resources]
    rows = preflight.preflight(parse_stack_file(path), recorded_runner("ready"), resources)
    needs = gcp_requirements.requirements(resources)
    assert [r.subject for r in rows if r.check == "api"] == list(needs.apis)
    assert [r.subject for r in rows if r.check == "role"] == [role.name for role in needs.roles]
    for row in rows:
        if row.check in ("api", "role"):
            scope = next((r.scope for r in needs.roles if r.name == row.subject), gcp_requirements.PROJECT)
            assert row.status == (preflight.PASS if scope == gcp_requirements.PROJECT else preflight.WARN), row


def test_a_role_granted_elsewhere_is_a_warn_with_where_to_grant_it():
    needs = gcp_requirements.requirements([("gcp:billing/budget:Budget", {})])
    cfg = parse_stack_file(DEV)
    rows = {r.subject: r for r in preflight.role_rows(cfg.gcp_project, needs, "deployer@example.com", {"bindings": []})}
    row = rows["roles/billing.costsManager"]
    assert row.status == preflight.WARN
    assert "billing account" in row.detail and row.fix.endswith("on the billing account")
    # the Budget's calls bill the stack's project (user_project_override): a project role, checked there (missing
    # from the project's policy: a WARN, as every role a group or folder may grant)
    consumer = rows["roles/serviceusage.serviceUsageConsumer"]
    assert consumer.status == preflight.WARN and "billing account" not in consumer.fix


# ---- the deployer's least-privilege condition: every role the program grants on the project -----------------

PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"


def project_grants(rec: OfflineRecording) -> set[str]:
    return {r.inputs["role"] for r in rec.resources if r.type == PROJECT_MEMBER}


def test_the_deployers_condition_names_every_role_the_program_grants_on_the_project(run):
    """Every shipped stack and fleet stack under mocks, and the settings that add a project grant (the image mirror
    off: Artifact Registry reader on the project; each metrics adapter): the roles their gcp:projects/iAMMember
    resources grant are exactly PROJECT_GRANTS, and exactly the roles of the `hasOnly([...])` condition
    docs/deploying.md gives roles/resourcemanager.projectIamAdmin (a role granted but not listed there makes the
    deployer's `pulumi up` fail on that grant)."""
    granted: set[str] = set()
    for path in SHIPPED:
        granted |= project_grants(recorded(path, False))
    granted |= project_grants(run(make_config(tpu_serving__cluster={"images": {"mirror": False}})))
    for adapter in metrics_adapters.choices():  # the registry: an adapter added later is run too
        granted |= project_grants(run(make_config(tpu_serving__monitoring={"adapter": adapter})))
    assert granted == set(gcp_requirements.PROJECT_GRANTS)
    page = (ROOT / "docs" / "deploying.md").read_text()
    (condition,) = re.findall(r"modifiedGrantsByRole', \[\]\)\.hasOnly\(\[([^\]]*)\]\)", page)
    assert set(re.findall(r"'([^']+)'", condition)) == granted
