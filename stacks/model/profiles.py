"""Environment profiles: what `tpu-serving:environment` decides about safety.

prod and staging protect what holds data or takes long to rebuild (cluster, TPU pools, bucket); dev tears down
completely. Keys that may override a profile are named here (`bucket.forceDestroy`, `decommission`), and each
override is reported as a warning, never applied silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from stacks import guardrails

SEVEN_DAYS = 7 * 24 * 3600


def _doc(meaning: str, default: bool | None = None) -> Any:
    """A field with its meaning (docs/stack-config.md "Environment profiles" is generated from it)."""
    if default is None:
        return field(metadata={"doc": meaning})
    return field(default=default, metadata={"doc": meaning})


@dataclass(frozen=True)
class Profile:
    name: str
    deletion_protection: bool = _doc(
        "GKE's own `deletion_protection` on the cluster (the API refuses deletes while true)."
    )
    protect: bool = _doc("Pulumi `protect` on the cluster, every TPU node pool and the bucket.")
    retain_bucket: bool = _doc(
        "Pulumi `retain_on_delete` on the bucket: `pulumi destroy` forgets it and leaves the data in place."
    )
    bucket_force_destroy: bool = _doc(
        "Delete the bucket's objects on destroy (otherwise a non-empty bucket blocks the delete); "
        "`bucket.forceDestroy` overrides it (warned in staging and prod)."
    )
    bucket_soft_delete_seconds: int = _doc(
        "Soft-deleted objects are kept (and billed) this many seconds; 0 lets a dev teardown leave nothing behind."
    )
    hold_minor_and_node_upgrades: bool = _doc(
        "A maintenance exclusion keeps GKE from upgrading the minor version and the node pools (which recreates a "
        "serving slice) until an operator chooses to; `cluster.maintenance.holdMinorAndNodeUpgrades` overrides it.",
        False,
    )
    vpc_flow_logs: bool = _doc(
        "VPC flow logs on the created subnet (traffic records for audits); `cluster.network.flowLogs` overrides it.",
        False,
    )
    intranode_visibility: bool = _doc(
        "Intranode visibility on the cluster (pod-to-pod traffic on one node passes the VPC, so flow logs see it); "
        "`cluster.intranodeVisibility` overrides it.",
        False,
    )
    alerts: bool = _doc(
        "Cloud Monitoring alert policies and SLOs for the serving workloads and the TPU capacity "
        '(docs/operations.md "Alerts"); `alerts.enabled` overrides it.',
        False,
    )
    paging: bool = _doc(
        "The paging (CRITICAL) alerts go to the channels marked `page`; `alerts.paging` overrides it.", False
    )

    def decommissioned(self) -> Profile:
        """The profile with protection lifted on purpose (tpu-serving:decommission): the data stays retained."""
        return replace(self, deletion_protection=False, protect=False)


def _protects(environment: str) -> bool:
    """Pulumi `protect` where the policy pack's prod-protected applies (guardrails.PROTECTED_ENVIRONMENTS): one source."""
    return environment in guardrails.PROTECTED_ENVIRONMENTS


PROFILES: dict[str, Profile] = {
    "dev": Profile("dev", False, _protects("dev"), False, True, 0),
    "staging": Profile(
        "staging", True, _protects("staging"), True, False, SEVEN_DAYS, hold_minor_and_node_upgrades=True, alerts=True
    ),
    "prod": Profile(
        "prod",
        True,
        _protects("prod"),
        True,
        False,
        SEVEN_DAYS,
        hold_minor_and_node_upgrades=True,
        vpc_flow_logs=True,
        intranode_visibility=True,
        alerts=True,
        paging=True,
    ),
}
