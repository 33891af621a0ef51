"""Environment profiles: what `tpu-serving:environment` decides about safety.

prod and staging protect what holds data or takes long to rebuild (cluster, TPU pools, bucket); dev tears down
completely. Keys that may override a profile are named here (`bucket.forceDestroy`, `decommission`), and each
override is reported as a warning, never applied silently.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SEVEN_DAYS = 7 * 24 * 3600


@dataclass(frozen=True)
class Profile:
    name: str
    # GKE's own deletion protection on the cluster (the API refuses deletes while true).
    deletion_protection: bool
    # Pulumi `protect` on the cluster, every TPU node pool and the bucket.
    protect: bool
    # Pulumi `retain_on_delete` on the bucket: `pulumi destroy` forgets it and leaves the data in place.
    retain_bucket: bool
    # Delete the bucket's objects on destroy (otherwise a non-empty bucket blocks the delete).
    bucket_force_destroy: bool
    # Soft-deleted objects are kept (and billed) this long; 0 lets a dev teardown leave nothing behind.
    bucket_soft_delete_seconds: int
    # A maintenance exclusion keeps GKE from upgrading the minor version and the node pools (which recreates a
    # serving slice) until an operator chooses to (cluster.maintenance.holdMinorAndNodeUpgrades overrides it).
    hold_minor_and_node_upgrades: bool = False
    # VPC flow logs on the created subnet and intranode visibility on the cluster (traffic records for audits);
    # cluster.network.flowLogs and cluster.intranodeVisibility override them.
    vpc_flow_logs: bool = False
    intranode_visibility: bool = False

    def decommissioned(self) -> Profile:
        """The profile with protection lifted on purpose (tpu-serving:decommission): the data stays retained."""
        return replace(self, deletion_protection=False, protect=False)


PROFILES: dict[str, Profile] = {
    "dev": Profile("dev", False, False, False, True, 0),
    "staging": Profile("staging", True, True, True, False, SEVEN_DAYS, hold_minor_and_node_upgrades=True),
    "prod": Profile(
        "prod",
        True,
        True,
        True,
        False,
        SEVEN_DAYS,
        hold_minor_and_node_upgrades=True,
        vpc_flow_logs=True,
        intranode_visibility=True,
    ),
}
