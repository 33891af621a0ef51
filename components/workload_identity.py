"""One Kubernetes ServiceAccount with its own Google identity, scoped to prefixes of the stack bucket.

Creates the KSA (annotated with its Google service account), the GSA, `roles/iam.workloadIdentityUser` on the
GSA for exactly that KSA, and the bucket roles the workload needs, each limited to its prefix. All IAM is member-level
(non-authoritative): nothing else's access to the bucket or the service account is touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from stacks import naming
from stacks.model import local_target
from stacks.security import bucket_access

BUCKET_ROLES = (bucket_access.OBJECT_USER, bucket_access.OBJECT_VIEWER)
GSA_ANNOTATION = "iam.gke.io/gcp-service-account"


def check_grants(grants: Sequence[bucket_access.Grant], stack_bucket_name: str) -> None:
    """Only object roles, and never the whole stack bucket (a program error: plans derive every grant)."""
    bad = [g.role for g in grants if g.role not in BUCKET_ROLES]
    if bad:
        raise ValueError(f"bucket roles {bad} are not allowed; allowed: {', '.join(BUCKET_ROLES)}")
    whole = [g.key for g in grants if g.bucket == stack_bucket_name and g.prefix is None]
    if whole:
        raise ValueError(f"grants {whole} would cover the whole stack bucket; a workload gets a prefix of it only")


def register_grants(
    name: str,
    grants: Sequence[bucket_access.Grant],
    member: pulumi.Input[str],
    *,
    stack_bucket_name: str,
    stack_bucket: pulumi.Input[str],
    bucket_get_role: pulumi.Input[str],
    parent: pulumi.Resource,
    legacy: LegacyParent | None = None,
) -> list[gcp.storage.BucketIAMMember]:
    """One non-authoritative bucket IAM member per binding, `<name>-<binding>` (bucket_access.binding_suffix: the
    same binding has the same name in every workload type, so a type swap keeps it): limited to its prefix by an IAM
    condition (stacks.security.bucket_access), the whole bucket only for a bucket other than the stack's. A grant on
    the stack bucket names the bucket resource's output, so it waits for the bucket. Then, once per bucket,
    storage.buckets.get (bucket_access.BUCKET_GET_PERMISSION): `bucket_get_role` (the stack's custom role) on the
    stack bucket, roles/storage.legacyBucketReader on another.

    Each resource is aliased to the name it had before (`<name>-<key>`; a grant `legacy_outside`: `legacy`'s), so a
    stack of the same type sees no change."""
    check_grants(grants, stack_bucket_name)
    members = []
    by_bucket: dict[str, list[bucket_access.Grant]] = {}
    for grant in grants:
        by_bucket.setdefault(grant.bucket, []).append(grant)
    for bucket, on_it in by_bucket.items():
        own = bucket == stack_bucket_name
        suffix = "bucket-get" if own else f"bucket-get-{bucket}"
        outside = legacy is not None and all(g.legacy_outside for g in on_it)
        members.append(
            gcp.storage.BucketIAMMember(
                f"{name}-{suffix}",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=stack_bucket if own else bucket,
                    role=bucket_get_role if own else bucket_access.LEGACY_BUCKET_READER,
                    member=member,
                ),
                opts=pulumi.ResourceOptions(
                    parent=parent, aliases=legacy.aliases(suffix) if legacy is not None and outside else None
                ),
            )
        )
    for grant in dict((bucket_access.binding_suffix(g, stack_bucket_name), g) for g in grants).values():
        condition = bucket_access.prefix_condition(grant.bucket, grant.prefix) if grant.prefix else None
        binding = bucket_access.binding_suffix(grant, stack_bucket_name)
        if grant.legacy_outside and legacy is not None:
            aliases: list[pulumi.Alias] = legacy.aliases(grant.key)
        else:
            aliases = [pulumi.Alias(name=f"{name}-{grant.key}")] if grant.key != binding else []
        members.append(
            gcp.storage.BucketIAMMember(
                f"{name}-{binding}",
                gcp.storage.BucketIAMMemberArgs(
                    bucket=stack_bucket if grant.bucket == stack_bucket_name else grant.bucket,
                    role=grant.role,
                    member=member,
                    condition=gcp.storage.BucketIAMMemberConditionArgs(**condition) if condition else None,
                ),
                opts=pulumi.ResourceOptions(parent=parent, aliases=aliases or None),
            )
        )
    return members


@dataclass(frozen=True)
class LegacyParent:
    """Where a grant `legacy_outside` was registered until issue 36 #2: `<name>-<key>` under the workload component
    `parents` (the component itself, and its URN under each type token it once had: an alias with a parent other
    than the resource's own is matched only under that parent's URN, pulumi/pulumi
    pkg/resource/deploy/step_generator.go collapseAliasToUrn)."""

    name: str
    parents: tuple[pulumi.Input[str] | pulumi.Resource, ...]

    def aliases(self, key: str) -> list[pulumi.Alias]:
        return [pulumi.Alias(name=f"{self.name}-{key}", parent=p) for p in self.parents]


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
        stack_bucket_name: str,
        stack_bucket: pulumi.Input[str],
        bucket_get_role: pulumi.Input[str],
        grants: Sequence[bucket_access.Grant],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] | None = None,
        cloud: bool = True,
        legacy: LegacyParent | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`legacy`: where its grants `legacy_outside` were registered before (register_grants). `cloud` False (local mode, stacks/model/local_target.py): the KSA only, annotated with the email its Google
        service account would have."""
        check_grants(grants, stack_bucket_name)
        super().__init__("tpu-serving:identity:WorkloadIdentity", name, None, opts)
        self.namespace = namespace
        self.service_account_name = service_account_name

        account_id = naming.workload_service_account_id(stack, namespace, service_account_name)
        if cloud:
            self.email = self._google_identity(
                name,
                account_id,
                namespace,
                service_account_name,
                project,
                stack,
                grants,
                provider,
                stack_bucket_name=stack_bucket_name,
                stack_bucket=stack_bucket,
                bucket_get_role=bucket_get_role,
                legacy=legacy,
            )
        else:
            self.email = pulumi.Output.from_input(local_target.service_account_email(account_id, project))
        self.ksa = k8s.core.v1.ServiceAccount(
            f"{name}-ksa",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=service_account_name,
                namespace=namespace,
                annotations={GSA_ANNOTATION: self.email},
                labels=naming.MANAGED_BY_LABELS,
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or [])),
        )
        self.register_outputs({"email": self.email, "serviceAccountName": service_account_name})

    def _google_identity(
        self,
        name: str,
        account_id: str,
        namespace: str,
        service_account_name: str,
        project: str,
        stack: str,
        grants: Sequence[bucket_access.Grant],
        provider: k8s.Provider,
        *,
        stack_bucket_name: str,
        stack_bucket: pulumi.Input[str],
        bucket_get_role: pulumi.Input[str],
        legacy: LegacyParent | None,
    ) -> pulumi.Output[str]:
        """The GSA, its Workload Identity user binding for the KSA, and its bucket grants; returns its email."""
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
        register_grants(
            name,
            grants,
            gsa.email.apply(lambda e: f"serviceAccount:{e}"),
            stack_bucket_name=stack_bucket_name,
            stack_bucket=stack_bucket,
            bucket_get_role=bucket_get_role,
            parent=self,
            legacy=legacy,
        )
        return gsa.email
