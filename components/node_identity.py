"""A dedicated, least-privilege Google service account for GKE nodes (instead of the Compute Engine default).

Nodes only need to write logs and metrics and pull images; workloads get their own identities through
Workload Identity, never the node's. Roles are granted with member-level (non-authoritative) IAM.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks import naming

NODE_ROLES = (
    "roles/container.defaultNodeServiceAccount",  # logging, monitoring, metadata for GKE nodes
    "roles/artifactregistry.reader",  # pull images from Artifact Registry in this project
)


class NodeServiceAccount(pulumi.ComponentResource):
    email: pulumi.Output[str]
    """Email of the account, known only after its role grants exist: pools that use it wait for them."""
    grants: list[gcp.projects.IAMMember]

    def __init__(
        self,
        name: str,
        *,
        account_id: str,
        project: str,
        display_name: str | None = None,
        description: str = "tpu-serving: node service account (logging, monitoring, image pulls only)",
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:identity:NodeServiceAccount", name, None, opts)
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            gcp.serviceaccount.AccountArgs(
                account_id=account_id,
                project=project,
                display_name=naming.service_account_display_name(
                    display_name or f"GKE nodes of {account_id.removesuffix('-nodes')}"
                ),
                description=naming.fit_bytes(description, naming.SERVICE_ACCOUNT_DESCRIPTION_BYTES),
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        grants = []
        for role in NODE_ROLES:
            grant = gcp.projects.IAMMember(
                f"{name}-{role.split('/')[-1].replace('.', '-').lower()}",
                gcp.projects.IAMMemberArgs(
                    project=project, role=role, member=account.email.apply(lambda e: f"serviceAccount:{e}")
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            grants.append(grant)
        self.grants = grants
        # The email that node pools and the cluster use resolves only once every role is granted, so no node boots
        # (and fails to write logs or pull images) before its roles exist.
        self.email = pulumi.Output.all(account.email, *(g.id for g in grants)).apply(lambda values: values[0])
        self.register_outputs({"email": self.email})
