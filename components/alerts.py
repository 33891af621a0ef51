"""Alerts: the notification channels, one Cloud Monitoring alert policy per rule of the alerts piece, the log-match
policies of the cluster's TPU capacity, and each workload's SLOs with burn-rate policies.

Nothing here waits for the cluster: Cloud Monitoring evaluates the PromQL once series exist, and each PromQL
condition skips the API's check that its metrics exist already (conditionPrometheusQueryLanguage
disableMetricValidation: "allows alerting policies to be defined on metrics that do not yet exist",
hashicorp/terraform-provider-google-beta@v7.45.0:google-beta/services/monitoring/resource_monitoring_alert_policy.go).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks.monitoring import alerts
from stacks.monitoring.alerts import LogSignal, Objective, Rule
from stacks.pieces.alerts import AlertsPlan

# The policy's own label naming the stack's alerts (user_labels), so `make smoke` finds them.
POLICY_LABEL = {"app": "tpu-serving"}


class Alerts(pulumi.ComponentResource):
    policies: dict[str, gcp.monitoring.AlertPolicy]
    """By rule key: every policy the stack registered."""

    def __init__(
        self,
        name: str,
        *,
        plan: AlertsPlan,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The alerts `plan` says (stacks/pieces/alerts.py); nothing the stack builds must exist first (the platform
        creates it only when the alerts are on)."""
        super().__init__("tpu-serving:alerts:Alerts", name, None, opts)
        self._prefix, self._plan = name, plan
        self.policies = {}
        self._channels = [self._channel(i, c) for i, c in enumerate(plan.channels)]
        for workload in plan.workloads:
            for rule in workload.rules:
                self._promql_policy(rule)
            if workload.objectives:
                self._objectives(workload.name, workload.objectives, workload.burn_command, workload.burn_note)
        for signal in plan.cluster_rules:
            self._log_policy(signal)
        self.register_outputs({"policies": list(self.policies)})

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _channel(self, index: int, channel) -> pulumi.Input[str]:
        """An existing channel's id as given; an email or Pub/Sub channel the stack creates (type `email` with label
        email_address, `pubsub` with label topic: https://cloud.google.com/monitoring/support/notification-options)."""
        if channel.type == "existing":
            return channel.address
        label = {"email": "email_address", "pubsub": "topic"}[channel.type]
        return gcp.monitoring.NotificationChannel(
            f"{self._prefix}-channel-{index}",
            gcp.monitoring.NotificationChannelArgs(
                project=self._plan.project,
                type=channel.type,
                display_name=f"tpu-serving {self._plan.cluster_name}: {channel.address}",
                labels={label: channel.address},
                enabled=True,
            ),
            opts=self._opts(),
        ).name

    def _policy(
        self,
        key: str,
        title: str,
        severity: str,
        doc: str,
        conditions: list,
        strategy: gcp.monitoring.AlertPolicyAlertStrategyArgs | None = None,
    ) -> gcp.monitoring.AlertPolicy:
        plan = self._plan
        policy = gcp.monitoring.AlertPolicy(
            f"{self._prefix}-{key}",
            gcp.monitoring.AlertPolicyArgs(
                project=plan.project,
                display_name=f"tpu-serving {plan.cluster_name}: {title}",
                combiner="AND",
                conditions=conditions,
                severity=severity,
                # paused: the policies stay, and none fires while the workloads are at zero on purpose
                enabled=not plan.paused,
                notification_channels=[self._channels[i] for i in plan.routes(severity)],
                documentation=gcp.monitoring.AlertPolicyDocumentationArgs(content=doc, mime_type="text/markdown"),
                user_labels={**POLICY_LABEL, "cluster": plan.cluster_name},
                alert_strategy=strategy,
            ),
            opts=self._opts(),
        )
        self.policies[key] = policy
        return policy

    def _promql_policy(self, rule: Rule) -> None:
        condition = gcp.monitoring.AlertPolicyConditionArgs(
            display_name=rule.title,
            condition_prometheus_query_language=gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                query=rule.query,
                duration=f"{rule.minutes * 60}s",
                disable_metric_validation=True,
            ),
        )
        self._policy(rule.key, rule.title, rule.severity, _doc(rule.threshold, rule.command), [condition])

    def _log_policy(self, signal: LogSignal) -> None:
        """A log-match policy: it fires on each log entry its filter matches, with no metric in between. A
        policy on a log-based metric made in the same `up` is refused until the metric's descriptor exists ("Cannot
        find metric(s) ... could take up to 10 minutes": hashicorp/terraform-provider-google#11102,
        GoogleCloudPlatform/cloud-foundation-fabric#3739). A log-match condition needs
        alertStrategy.notificationRateLimit ("Required for alert policies with a LogMatch condition":
        hashicorp/terraform-provider-google-beta@v7.45.0:google-beta/services/monitoring/
        resource_monitoring_alert_policy.go, pulumi-gcp 10.2.0 AlertPolicyAlertStrategyArgs; monitoring v3
        AlertStrategy.notificationRateLimit, https://cloud.google.com/monitoring/alerts/log-based-alerts)."""
        condition = gcp.monitoring.AlertPolicyConditionArgs(
            display_name=signal.title,
            condition_matched_log=gcp.monitoring.AlertPolicyConditionConditionMatchedLogArgs(filter=signal.filter),
        )
        strategy = gcp.monitoring.AlertPolicyAlertStrategyArgs(
            notification_rate_limit=gcp.monitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs(
                period=f"{signal.minutes * 60}s"
            )
        )
        doc = _doc(signal.threshold, signal.command)
        self._policy(signal.key, signal.title, signal.severity, doc, [condition], strategy)

    def _objectives(self, workload: str, objectives: tuple[Objective, ...], command: str, note: str) -> None:
        plan = self._plan
        service = gcp.monitoring.CustomService(
            f"{self._prefix}-{workload}-service",
            gcp.monitoring.CustomServiceArgs(
                project=plan.project,
                service_id=f"tpu-serving-{plan.cluster_name}-{workload}"[:128],
                display_name=f"tpu-serving {plan.cluster_name}: {workload}",
            ),
            opts=self._opts(),
        )
        for objective in objectives:
            slo = gcp.monitoring.Slo(
                f"{self._prefix}-{objective.key}-slo",
                gcp.monitoring.SloArgs(
                    project=plan.project,
                    service=service.service_id,
                    display_name=objective.title,
                    goal=objective.goal,
                    rolling_period_days=objective.days,
                    request_based_sli=_sli(objective),
                ),
                opts=self._opts(),
            )
            for window in alerts.BURN_WINDOWS:
                conditions = [
                    _burn_condition(slo.name, lookback, window.rate, f"{objective.title}: {window.name} burn")
                    for lookback in (window.long, window.short)
                ]
                doc = (
                    f"error budget burning over {window.rate:g}x over {window.long} and {window.short} "
                    f"(goal {objective.goal:g}, {objective.days} days)"
                )
                self._policy(
                    f"{objective.key}-{window.name}-burn",
                    f"{objective.title}, {window.name} burn",
                    window.severity,
                    _doc(doc, command, note),
                    conditions,
                )


def _sli(objective: Objective) -> gcp.monitoring.SloRequestBasedSliArgs:
    if objective.max_seconds is not None:
        return gcp.monitoring.SloRequestBasedSliArgs(
            distribution_cut=gcp.monitoring.SloRequestBasedSliDistributionCutArgs(
                distribution_filter=objective.metric_filter,
                range=gcp.monitoring.SloRequestBasedSliDistributionCutRangeArgs(min=0, max=objective.max_seconds),
            )
        )
    return gcp.monitoring.SloRequestBasedSliArgs(
        good_total_ratio=gcp.monitoring.SloRequestBasedSliGoodTotalRatioArgs(
            good_service_filter=objective.good_filter, total_service_filter=objective.metric_filter
        )
    )


def _burn_condition(
    slo_name: pulumi.Output[str], lookback: str, rate: float, title: str
) -> gcp.monitoring.AlertPolicyConditionArgs:
    return gcp.monitoring.AlertPolicyConditionArgs(
        display_name=f"{title} ({lookback})",
        condition_threshold=gcp.monitoring.AlertPolicyConditionConditionThresholdArgs(
            filter=slo_name.apply(lambda n: alerts.burn_rate_filter(n, lookback)),
            comparison="COMPARISON_GT",
            threshold_value=rate,
            duration="0s",
        ),
    )


def _doc(threshold: str, command: str, note: str = "") -> str:
    lead = f"{note}\n\n" if note else ""
    return f"{lead}Fires on: {threshold}.\n\nWhen it fires, run:\n\n    {command}\n\nRunbook: docs/operations.md#alerts"
