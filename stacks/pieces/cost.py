"""Cost attribution: GKE cost allocation on the cluster, the workloads' names on their TPU node pools' resource
labels, and the optional monthly budget (tpu-serving:cost, stacks.model.config_model.CostConfig).

Sources:
- GKE cost allocation: the cluster's `costManagementConfig.enabled` (container v1 `CostManagementConfig`; pulumi-gcp
  10.2.0 container.ClusterCostManagementConfigArgs(enabled)); with it on, the billing export carries k8s-namespace and
  k8s-label labels, and GKE's own goog-k8s-cluster-name / goog-k8s-node-pool-name on every node VM
  (https://cloud.google.com/kubernetes-engine/docs/how-to/cost-allocations).
- Labels: keys and values at most 63 characters, lowercase letters, digits, `_` and `-`
  (https://cloud.google.com/resource-manager/docs/labels-overview#requirements; naming.label_value).
- The budget: hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/billingbudgets/
  resource_billing_budget.go (billing_account Required, amount.specified_amount {units, currency_code},
  threshold_rules[].threshold_percent, budget_filter {projects, labels, calendar_period},
  all_updates_rule.monitoring_notification_channels MaxItems 5); billingbudgets v1 `Filter.labels`: "A single label
  and value pair ... multiple entries ... are not allowed"; `Filter.projects` of the form `projects/{project}`;
  `Budget.displayName` at most 60 characters (google-api-python-client 2.202.0 billingbudgets.v1.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stacks import naming
from stacks.model.config_model import CostConfig
from stacks.pieces.context import Context, Findings
from stacks.pieces.rules import parse_section
from stacks.serving.workload_type import WorkloadRegistry

if TYPE_CHECKING:
    from stacks.serving.workload_plan import WorkloadPlan

NAME = "cost"
KEYS = ("cost",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    return {"cost": parse_section(raw, "cost", CostConfig, found.problems_at("cost"))}


WORKLOAD_LABEL = "tpu-workload"  # on each TPU node pool: the workloads that run on it
DISPLAY_NAME_MAX = 60


@dataclass(frozen=True)
class BudgetPlan:
    billing_account: str
    display_name: str
    units: str  # int64 as the API's string
    currency_code: str | None
    thresholds: tuple[float, ...]
    notification_channels: tuple[str, ...]
    project: str
    labels: dict[str, str]
    """The budget filter's one label pair (scope stack), or none (scope project)."""


@dataclass(frozen=True)
class CostPlan:
    allocation: bool = True
    pool_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """By TPU pool name: the resource labels its node pools add (WORKLOAD_LABEL)."""
    budget: BudgetPlan | None = None

    @property
    def budgeted(self) -> bool:
        """The stack has a budget: the only cost resource of its own (components/cost.py)."""
        return self.budget is not None


def workload_label(names: list[str]) -> str:
    """The label value naming every workload of a pool: sorted, joined by `_` (never in a workload name, a DNS
    label), made a valid label value."""
    return naming.label_value("_".join(sorted(names)))


def pool_labels(workloads: list[WorkloadPlan]) -> dict[str, dict[str, str]]:
    names: dict[str, list[str]] = {}
    for workload in workloads:
        names.setdefault(workload.pool.name, []).append(workload.name)
    return {pool: {WORKLOAD_LABEL: workload_label(found)} for pool, found in names.items()}


def visit(ctx: Context, found: Findings) -> CostPlan | None:
    """Its plan: the workloads' labels on their pools, the budget (no rules beyond its model's)."""
    given = ctx.invocation
    if not found.clean or not given.gcp_project:
        return None
    return plan(
        ctx.sections.cost or CostConfig(), project=given.gcp_project, stack=given.stack, workloads=ctx.workloads
    )


def plan(cost: CostConfig, *, project: str, stack: str, workloads: list[WorkloadPlan]) -> CostPlan:
    budget = cost.budget
    return CostPlan(
        allocation=cost.allocation,
        pool_labels=pool_labels(workloads),
        budget=BudgetPlan(
            billing_account=budget.billing_account,
            display_name=naming.fit(f"tpu-serving {project} {stack}", DISPLAY_NAME_MAX),
            units=str(budget.monthly_amount),
            currency_code=budget.currency_code,
            thresholds=tuple(budget.thresholds),
            notification_channels=tuple(budget.notification_channels),
            project=project,
            labels={"stack": naming.label_value(stack)} if budget.scope == "stack" else {},
        )
        if budget is not None
        else None,
    )
