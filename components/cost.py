"""Cost attribution as resources (its plan: stacks/pieces/cost.py CostPlan): the optional monthly Cloud Billing
budget. GKE cost allocation is a cluster setting (components/cluster.py) and the workloads' labels go on their node
pools (components/tpu_pool.py), both from the same plan.

Thresholds alert on current spend; the billing account's administrators and users get the emails (the budget's
default IAM recipients, all_updates_rule.disable_default_iam_recipients false), plus the configured Cloud Monitoring
email channels. Scoped to the project (by number, the form the
provider's example and the billing export use) and, with scope stack, to the resources labelled with the stack.

The budget is made through its own provider that bills the API call to the stack's project (`billing_project`,
`user_project_override`): with user Application Default Credentials the Billing Budgets API answers 403 otherwise,
and the deployer needs serviceusage.services.use on that project (the Warning of
https://www.pulumi.com/registry/packages/gcp/api-docs/billing/budget, the same as the google_billing_budget page of
the Terraform provider).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks.pieces.cost import BudgetPlan, CostPlan


def budget_args(plan: BudgetPlan, project_number: pulumi.Input[str]) -> gcp.billing.BudgetArgs:
    return gcp.billing.BudgetArgs(
        billing_account=plan.billing_account,
        display_name=plan.display_name,
        amount=gcp.billing.BudgetAmountArgs(
            specified_amount=gcp.billing.BudgetAmountSpecifiedAmountArgs(
                units=plan.units, currency_code=plan.currency_code
            )
        ),
        budget_filter=gcp.billing.BudgetBudgetFilterArgs(
            projects=[pulumi.Output.concat("projects/", project_number)],
            labels=plan.labels or None,
            calendar_period="MONTH",
        ),
        threshold_rules=[
            gcp.billing.BudgetThresholdRuleArgs(threshold_percent=t, spend_basis="CURRENT_SPEND")
            for t in plan.thresholds
        ],
        all_updates_rule=(
            gcp.billing.BudgetAllUpdatesRuleArgs(monitoring_notification_channels=list(plan.notification_channels))
            if plan.notification_channels
            else None
        ),
    )


class CostAttribution(pulumi.ComponentResource):
    budget: gcp.billing.Budget | None

    def __init__(self, name: str, *, plan: CostPlan, opts: pulumi.ResourceOptions | None = None):
        super().__init__("tpu-serving:billing:CostAttribution", name, None, opts)
        self.budget = None
        if plan.budget is not None:
            number = gcp.organizations.get_project_output(project_id=plan.budget.project).number
            provider = gcp.Provider(
                f"{name}-billing",
                gcp.ProviderArgs(
                    project=plan.budget.project, billing_project=plan.budget.project, user_project_override=True
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.budget = gcp.billing.Budget(
                f"{name}-budget",
                budget_args(plan.budget, number),
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        self.register_outputs({})
