"""Cost attribution (tpu-serving:cost; stacks/pieces/cost.py, components/cost.py): GKE cost allocation on the
cluster, the workloads' names on their TPU node pools' resource labels, an optional monthly budget.

Sources:
- GKE cost allocation: container v1 `Cluster.costManagementConfig` = `CostManagementConfig` {enabled}
  (google-api-python-client 2.202.0 container.v1.json); the provider's `cost_management_config.enabled`
  (hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/container/resource_container_cluster.go,
  in tooling/data/provider_rules.json); https://cloud.google.com/kubernetes-engine/docs/how-to/cost-allocations.
- Label rules: https://cloud.google.com/resource-manager/docs/labels-overview#requirements (naming.LABEL_VALUE).
- Budget: hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/billingbudgets/
  resource_billing_budget.go (the provider rules test_provider_schema.py checks every registration against, the
  "budget" feature config among them); billingbudgets v1 Filter.labels "a single label and value pair",
  Filter.projects `projects/{project}`, Budget.displayName at most 60 characters.
"""

from __future__ import annotations

import pulumi
import pytest

from stacks import naming
from stacks.pieces import cost as cost_piece
from tests.conftest import STACK_FILES, make_config, recorded
from tooling.harness.offline import PROJECT_NUMBER, Recording, load_stack_file, parse_stack_file
from tooling.oracles import gcp_requirements

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUDGET = "gcp:billing/budget:Budget"
ACCOUNT = "012345-6789AB-CDEF01"


def jetstream(name: str, pool: str = "v5e-2x4") -> dict:
    return {
        "type": "jetstream",
        "name": name,
        "namespace": name,
        "pool": pool,
        "model": "gemma-7b",
        "checkpoint": "gs://my-bucket/gemma-7b/items",
    }


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_stack_has_cost_allocation_and_each_pool_names_its_workloads(path):
    """Every shipped stack: cost allocation on; every node pool of every TPU pool carries tpu-workload naming the
    workloads whose `pool` is that pool (none when no workload names it), a valid label value."""
    cfg = parse_stack_file(path)
    rec = recorded(path, False)
    assert rec.one(CLUSTER).inputs["costManagementConfig"] == {"enabled": True}
    users: dict[str, list[str]] = {}
    for workload in cfg.workloads:
        users.setdefault(workload.pool.name, []).append(workload.name)
    node_pools = {r.inputs["name"]: r.inputs for r in rec.of_type(NODE_POOL)}
    for plan in cfg.pools:
        for name in plan.node_pool_names:
            labels = node_pools[name]["nodeConfig"]["resourceLabels"]
            expected = naming.label_value("_".join(sorted(users[plan.name]))) if plan.name in users else None
            assert labels.get(cost_piece.WORKLOAD_LABEL) == expected, name
            assert all(naming.LABEL_VALUE.fullmatch(v) and naming.LABEL_KEY.fullmatch(k) for k, v in labels.items())
            assert {k: labels[k] for k in cfg.labels} == cfg.labels  # the stack's own labels stay


def test_a_workload_added_to_a_pool_is_named_on_it(run):
    rec = run(make_config(tpu_serving__workloads=[jetstream("gemma"), jetstream("alpha")]))
    pools = {r.inputs["name"]: r.inputs for r in rec.of_type(NODE_POOL)}
    assert pools["v5e-2x4"]["nodeConfig"]["resourceLabels"][cost_piece.WORKLOAD_LABEL] == "alpha_gemma"
    assert cost_piece.WORKLOAD_LABEL not in pools["v6e-4x4-s0"]["nodeConfig"]["resourceLabels"]


def test_a_long_list_of_workloads_fits_a_label():
    value = cost_piece.workload_label([f"workload-number-{i}" for i in range(10)])
    assert len(value) <= naming.LABEL_MAX and naming.LABEL_VALUE.fullmatch(value)


def test_cost_allocation_can_be_turned_off(run):
    rec = run(make_config(tpu_serving__cost={"allocation": False}))
    assert rec.one(CLUSTER).inputs["costManagementConfig"] == {"enabled": False}


def test_no_budget_unless_configured():
    for path in STACK_FILES:
        configured = "tpu-serving:cost" in load_stack_file(path) and load_stack_file(path)["tpu-serving:cost"].get(
            "budget"
        )
        assert bool(recorded(path, False).of_type(BUDGET)) == bool(configured), path.name


def test_the_budget_scoped_to_the_stack(run):
    rec = run(
        make_config(
            tpu_serving__cost={
                "budget": {
                    "billingAccount": ACCOUNT,
                    "monthlyAmount": 20000,
                    "currencyCode": "USD",
                    "notificationChannels": ["projects/tpu-test-project/notificationChannels/123"],
                }
            }
        )
    )
    budget = rec.one(BUDGET).inputs
    assert budget["billingAccount"] == ACCOUNT
    assert budget["displayName"] == "tpu-serving tpu-test-project dev"
    assert budget["amount"] == {"specifiedAmount": {"units": "20000", "currencyCode": "USD"}}
    assert budget["budgetFilter"] == {
        "projects": [f"projects/{PROJECT_NUMBER}"],
        "labels": {"stack": "dev"},
        "calendarPeriod": "MONTH",
    }
    assert [r["thresholdPercent"] for r in budget["thresholdRules"]] == [0.5, 0.9, 1.0]
    assert {r["spendBasis"] for r in budget["thresholdRules"]} == {"CURRENT_SPEND"}
    assert budget["allUpdatesRule"] == {
        "monitoringNotificationChannels": ["projects/tpu-test-project/notificationChannels/123"]
    }


def test_a_project_budget_has_no_label_filter(run):
    rec = run(
        make_config(tpu_serving__cost={"budget": {"billingAccount": ACCOUNT, "monthlyAmount": 5, "scope": "project"}})
    )
    budget = rec.one(BUDGET).inputs
    assert "labels" not in budget["budgetFilter"] and "allUpdatesRule" not in budget


def test_a_budget_needs_its_api_and_billing_role_in_the_preflight(run):
    """The budget's API and roles/billing.costsManager (on the billing account) come from the Budget resource the
    stack registers (tooling/oracles/gcp_requirements.py); a stack without one needs neither."""
    budget_api = "billingbudgets.googleapis.com"
    plain = gcp_requirements.requirements((r.type, r.inputs) for r in run(make_config()).resources)
    assert budget_api not in plain.apis
    rec = run(make_config(tpu_serving__cost={"budget": {"billingAccount": ACCOUNT, "monthlyAmount": 5}}))
    needs = gcp_requirements.requirements((r.type, r.inputs) for r in rec.resources)
    assert needs.apis[budget_api] == ["budget (cost.budget)"]
    assert gcp_requirements.Role("roles/billing.costsManager", gcp_requirements.BILLING_ACCOUNT) in needs.roles


def test_every_budget_problem_at_once_before_anything_is_registered(run):
    recording = Recording()
    bad = {
        "billingAccount": "billingAccounts/0123",
        "monthlyAmount": 0,
        "thresholds": [0.5, 0.5, -1],
        "notificationChannels": ["alerts@example.com"] + [f"projects/p/notificationChannels/{i}" for i in range(5)],
        "scope": "folder",
    }
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__cost={"budget": bad, "allocaton": True}), recording=recording)
    message = str(err.value)
    for key in (
        "tpu-serving:cost.budget.billingAccount",
        "tpu-serving:cost.budget.monthlyAmount",
        "tpu-serving:cost.budget.thresholds",
        "tpu-serving:cost.budget.notificationChannels",
        "tpu-serving:cost.budget.scope",
        "tpu-serving:cost.allocaton",
    ):
        assert f"  - {key}" in message, message
    assert recording.resources == []


def test_the_budget_is_made_through_a_provider_that_bills_the_stacks_project(run):
    """The Warning of https://www.pulumi.com/registry/packages/gcp/api-docs/billing/budget (and the Terraform
    google_billing_budget page): with user ADC the Billing Budgets API answers 403 unless the provider sets
    billing_project and user_project_override true; the deployer needs serviceusage.services.use on that project."""
    rec = run(make_config(tpu_serving__cost={"budget": {"billingAccount": ACCOUNT, "monthlyAmount": 5}}))
    budget = rec.one(BUDGET)
    provider = rec.one("pulumi:providers:gcp")
    assert provider.inputs["billingProject"] == "tpu-test-project"
    assert provider.inputs["userProjectOverride"] in (True, "true")
    assert f"::{provider.name}::" in budget.provider, budget.provider
    assert provider.parent == budget.parent
