"""One Kubernetes ServiceAccount with its own Google identity, scoped to the stack bucket.

Creates the KSA (annotated with its Google service account), the GSA, `roles/iam.workloadIdentityUser` on the
GSA for exactly that KSA, and the bucket-level roles the workload needs. All IAM is member-level
(non-authoritative): nothing else's access to the bucket or the service account is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from stacks import bucket_access, naming

BUCKET_ROLES = ("roles/storage.objectUser", "roles/storage.objectViewer")
GSA_ANNOTATION = "iam.gke.io/gcp-service-account"


@dataclass(frozen=True)
class PrefixGrant:
    """A bucket role limited by an IAM condition to the objects under `prefix` and to listing it
    (stacks.bucket_access)."""

    key: str  # names the IAM member resource
    bucket: pulumi.Input[str]
    bucket_name: str  # for the condition's expression
    role: str
    prefix: str  # ends with "/"


class WorkloadIdentity(pulumi.ComponentResource):
    service_account_name: str
    """Name of the Kubernetes ServiceAccount, for pod specs."""
    namespace: str
    email: pulumi.Output[str]
    """Email of the Google service account."""
    ksa: k8s.core.v1.ServiceAccount

    def __init__(
        self,
        name: str,
        *,
        namespace: str,
        service_account_name: str,
        project: str,
        stack: str,
        bucket: pulumi.Input[str] | None,
        bucket_roles: Sequence[str],
        provider: k8s.Provider,
        prefix_grants: Sequence[PrefixGrant] = (),
        depends_on: Sequence[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        bad = [r for r in [*bucket_roles, *(g.role for g in prefix_grants)] if r not in BUCKET_ROLES]
        if bad:
            raise ValueError(f"bucket roles {bad} are not allowed; allowed: {', '.join(BUCKET_ROLES)}")
        if bucket_roles and bucket is None:
            raise ValueError("bucket roles need a bucket")
        super().__init__("tpu-serving:identity:WorkloadIdentity", name, None, opts)
        self.namespace = namespace
        self.service_account_name = service_account_name

        account_id = naming.workload_service_account_id(stack, namespace, service_account_name)
        gsa = gcp.serviceaccount.Account(
            f"{name}-gsa",
            gcp.serviceaccount.AccountArgs(
                account_id=account_id,
                project=project,
                display_name=naming.service_account_display_name(f"{namespace}/{service_account_name} ({stack})"),
                description=f"tpu-serving: Workload Identity of KSA {namespace}/{service_account_name}",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The member names the project's Workload Identity pool, which exists only once a cluster with Workload
        # Identity does: IAM refuses the grant before that ("Identity Pool does not exist",
        # terraform-google-kubernetes-engine#916). The cluster's provider is built from the cluster's endpoint, so
        # it exists only after the cluster: waiting for it waits for the pool.
        gcp.serviceaccount.IAMMember(
            f"{name}-wi-user",
            gcp.serviceaccount.IAMMemberArgs(
                service_account_id=gsa.name,
                role="roles/iam.workloadIdentityUser",
                member=naming.workload_identity_member(project, namespace, service_account_name),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[provider]),
        )
        member = gsa.email.apply(lambda e: f"serviceAccount:{e}")
        for role in bucket_roles:
            assert bucket is not None  # checked above
            gcp.storage.BucketIAMMember(
                f"{name}-{role.split('.')[-1].lower()}",
                gcp.storage.BucketIAMMemberArgs(bucket=bucket, role=role, member=member),
                opts=pulumi.ResourceOptions(parent=self),
            )
        for grant in prefix_grants:
            gcp.storage.BucketIAMMember(
                f"{name}-{grant.key}",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=grant.bucket,
                    role=grant.role,
                    member=member,
                    condition=gcp.storage.BucketIAMMemberConditionArgs(
                        **bucket_access.prefix_condition(grant.bucket_name, grant.prefix)
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.ksa = k8s.core.v1.ServiceAccount(
            f"{name}-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=service_account_name,
                namespace=namespace,
                annotations={GSA_ANNOTATION: gsa.email},
                labels=naming.MANAGED_BY_LABELS,
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or [])),
        )
        self.email = gsa.email
        self.register_outputs({"email": self.email, "serviceAccountName": service_account_name})
