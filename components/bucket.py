"""The stack's GCS bucket: checkpoints, Saxml state (sax-root) and Pathways scratch.

Private by construction (uniform bucket-level access, public access prevention enforced), versioned with
noncurrent versions expired, Pathways scratch expired, optionally encrypted with a customer-managed key (CMEK), and
protected or torn down by the environment profile. Its usage and storage logs go to a log bucket of its own
(`<bucket>-logs`), private the same way, expiring them after `bucket.accessLogDays`, with the same profile; none of
that with `bucket.accessLogs: false` (the writer is a principal outside the project's domain).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp

from stacks import naming
from stacks.facts import kms
from stacks.model.config_model import BucketConfig
from stacks.pieces.bucket import BucketPlan
from stacks.security import bucket_access


def lifecycle_rules(config: BucketConfig) -> list[gcp.storage.BucketLifecycleRuleArgs]:
    delete = gcp.storage.BucketLifecycleRuleActionArgs(type="Delete")
    rules = [
        gcp.storage.BucketLifecycleRuleArgs(
            action=delete,
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                matches_prefixes=[naming.PATHWAYS_SCRATCH_PREFIX], age=config.scratch_ttl_days
            ),
        )
    ]
    if config.versioning:
        rules.append(
            gcp.storage.BucketLifecycleRuleArgs(
                action=delete,
                condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                    with_state="ARCHIVED", days_since_noncurrent_time=config.noncurrent_version_days
                ),
            )
        )
    return rules


# https://cloud.google.com/storage/docs/access-logs: Cloud Storage writes usage and storage logs as the group
# cloud-storage-analytics@google.com, which needs roles/storage.objectCreator on the log bucket.
ACCESS_LOG_WRITER = "group:cloud-storage-analytics@google.com"
ACCESS_LOG_ROLE = "roles/storage.objectCreator"


def key_access(name: str, key: str, project: str, parent: pulumi.Resource) -> gcp.kms.CryptoKeyIAMMember:
    """The project's Cloud Storage service agent may use `key` (a bucket's default CMEK): Cloud Storage encrypts
    and decrypts with it as that agent (https://cloud.google.com/storage/docs/encryption/using-customer-managed-keys:
    the service agent needs roles/cloudkms.cryptoKeyEncrypterDecrypter on the key). A member, not the key's policy:
    nothing else's access to the key is touched. The lookup creates the agent if the project has none yet."""
    agent = gcp.storage.get_project_service_account_output(project=project)
    return gcp.kms.CryptoKeyIAMMember(
        name,
        gcp.kms.CryptoKeyIAMMemberArgs(
            crypto_key_id=key,
            role=kms.ENCRYPTER_DECRYPTER,
            member=agent.email_address.apply(lambda e: f"serviceAccount:{e}"),
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def _private_bucket(
    resource: str,
    name: str,
    plan: BucketPlan,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
    **extra: Any,
) -> gcp.storage.Bucket:
    """A bucket private by construction, with the plan's soft delete, teardown and protection (the environment
    profile's, resolved in stacks/pieces/bucket.py); the log bucket shares them with the bucket."""
    key = plan.config.kms_key_name
    return gcp.storage.Bucket(
        resource,
        gcp.storage.BucketArgs(
            name=name,
            location=plan.location.upper(),
            project=plan.project,
            storage_class="STANDARD",
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                retention_duration_seconds=plan.soft_delete_seconds
            ),
            force_destroy=plan.force_destroy,
            labels=plan.labels,
            encryption=gcp.storage.BucketEncryptionArgs(default_kms_key_name=key) if key else None,
            **extra,
        ),
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=list(depends_on),
            protect=plan.protect,
            retain_on_delete=plan.retain_on_delete,
            delete_before_replace=True,
        ),
    )


class Bucket(pulumi.ComponentResource):
    name: pulumi.Output[str]
    url: pulumi.Output[str]
    bucket_get_role: pulumi.Output[str]
    """`projects/<project>/roles/<id>` of the stack's custom role holding storage.buckets.get only."""
    bucket: gcp.storage.Bucket
    log_bucket: gcp.storage.Bucket | None
    """None without bucket.accessLogs."""

    def __init__(
        self,
        name: str,
        *,
        plan: BucketPlan,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The bucket `plan` says (stacks/pieces/bucket.py); it depends on nothing else the stack builds."""
        super().__init__("tpu-serving:storage:Bucket", name, None, opts)
        config, bucket_name = plan.config, plan.name
        key = config.kms_key_name
        # the bucket names the key only once the agent may use it (else writes fail until the grant lands)
        grant = [key_access(f"{name}-kms-encrypter", key, plan.project, self)] if key else []
        # The log bucket keeps the logs `accessLogDays`; it logs nothing itself (its writes are Cloud Storage's own).
        # Without accessLogs none of it: no log bucket, no grant outside the project's domain, no logging.
        self.log_bucket = None
        logging, writer = None, []
        if config.access_logs:
            self.log_bucket = _private_bucket(
                f"{name}-logs",
                naming.access_log_bucket_name(bucket_name),
                plan,
                self,
                grant,
                versioning=gcp.storage.BucketVersioningArgs(enabled=False),
                lifecycle_rules=[
                    gcp.storage.BucketLifecycleRuleArgs(
                        action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                        condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=config.access_log_days),
                    )
                ],
            )
            writer = [
                gcp.storage.BucketIAMMember(
                    f"{name}-logs-writer",
                    gcp.storage.BucketIAMMemberArgs(
                        bucket=self.log_bucket.name, role=ACCESS_LOG_ROLE, member=ACCESS_LOG_WRITER
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            ]
            # usage (hourly) and storage (daily) logs, once their writer may write them
            logging = gcp.storage.BucketLoggingArgs(log_bucket=self.log_bucket.name)
        self.bucket = _private_bucket(
            f"{name}-gcs",
            bucket_name,
            plan,
            self,
            [*grant, *writer],
            versioning=gcp.storage.BucketVersioningArgs(enabled=config.versioning),
            lifecycle_rules=lifecycle_rules(config),
            logging=logging,
        )
        # storage.buckets.get alone, for every workload identity on the bucket it reads (stacks/security/bucket_access.py)
        role = gcp.projects.IAMCustomRole(
            f"{name}-bucket-get",
            gcp.projects.IAMCustomRoleArgs(
                role_id=bucket_access.bucket_get_role_id(bucket_name),
                project=plan.project,
                title="tpu-serving bucket metadata reader",
                description=f"storage.buckets.get only: Cloud Storage clients read gs://{bucket_name}'s metadata "
                "before its objects",
                permissions=[bucket_access.BUCKET_GET_PERMISSION],
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        # the role's `name` (projects/<project>/roles/<id>), built from its own outputs so every binding waits for it
        self.bucket_get_role = pulumi.Output.concat("projects/", role.project, "/roles/", role.role_id)
        self.name = self.bucket.name
        self.url = self.bucket.url
        self.register_outputs({"name": self.name, "url": self.url})
