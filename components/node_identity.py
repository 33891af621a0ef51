"""A dedicated, least-privilege Google service account for GKE nodes (instead of the Compute Engine default).

Nodes only need to write logs and metrics and pull images; workloads get their own identities through
Workload Identity, never the node's. Roles are granted with member-level (non-authoritative) IAM.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks.pieces.node_identity import NodeAccountPlan

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
        plan: NodeAccountPlan,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The account `plan` says (stacks/pieces/node_identity.py) and its role grants; it depends on nothing else
        the stack builds."""
        super().__init__("tpu-serving:identity:NodeServiceAccount", name, None, opts)
        project = plan.project
        account = gcp.serviceaccount.Account(
            f"{name}-sa",
            gcp.serviceaccount.AccountArgs(
                account_id=plan.account_id,
                project=project,
                display_name=plan.display_name,
                description=plan.description,
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
