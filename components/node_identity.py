"""A dedicated, least-privilege Google service account for GKE nodes (instead of the Compute Engine default).

Nodes only need to write logs and metrics and pull images; workloads get their own identities through
Workload Identity, never the node's. Roles are granted with member-level (non-authoritative) IAM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from stacks.facts.images import READER_ROLE
from stacks.pieces.node_identity import NodeAccountPlan

NODE_ROLE = "roles/container.defaultNodeServiceAccount"  # logging, monitoring, metadata for GKE nodes
PROJECT_READER = READER_ROLE  # pull images from any Artifact Registry repository in this project


def project_roles(repositories: Mapping[str, object]) -> tuple[str, ...]:
    """Project-level roles: the node role, and Artifact Registry reader on the whole project only when the stack
    has no repositories of its own (cluster.images.mirror off); with them, reader on each instead (least
    privilege: https://cloud.google.com/artifact-registry/docs/access-control grants roles on a repository)."""
    return (NODE_ROLE,) if repositories else (NODE_ROLE, PROJECT_READER)


@dataclass(frozen=True)
class NodeAccountDeps:
    """What the account's grants name: the stack's image repositories (components/images.py), if any."""

    repositories: Mapping[str, gcp.artifactregistry.Repository] = field(default_factory=dict)
    """By repository id."""


class NodeServiceAccount(pulumi.ComponentResource):
    email: pulumi.Output[str]
    """Email of the account, known only after its role grants exist: pools that use it wait for them."""
    grants: list[pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        *,
        plan: NodeAccountPlan,
        deps: NodeAccountDeps,
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
        repositories = deps.repositories
        member = account.email.apply(lambda e: f"serviceAccount:{e}")
        grants: list[pulumi.CustomResource] = []
        for role in project_roles(repositories):
            grant = gcp.projects.IAMMember(
                f"{name}-{role.split('/')[-1].replace('.', '-').lower()}",
                gcp.projects.IAMMemberArgs(project=project, role=role, member=member),
                opts=pulumi.ResourceOptions(parent=self),
            )
            grants.append(grant)
        for repository_id, repository in repositories.items():
            grants.append(
                gcp.artifactregistry.RepositoryIamMember(
                    f"{name}-reads-{repository_id}",
                    gcp.artifactregistry.RepositoryIamMemberArgs(
                        project=repository.project,
                        location=repository.location,
                        repository=repository.repository_id,
                        role=READER_ROLE,
                        member=member,
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        self.grants = grants
        # The email that node pools and the cluster use resolves only once every role is granted, so no node boots
        # (and fails to write logs or pull images) before its roles exist.
        self.email = pulumi.Output.all(account.email, *(g.id for g in grants)).apply(lambda values: values[0])
        self.register_outputs({"email": self.email})
