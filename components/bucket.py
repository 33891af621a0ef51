"""The stack's GCS bucket: checkpoints, Saxml state (sax-root) and Pathways scratch.

Private by construction (uniform bucket-level access, public access prevention enforced), versioned with
noncurrent versions expired, Pathways scratch expired, optionally encrypted with a customer-managed key (CMEK), and
protected or torn down by the environment profile.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks import kms, naming
from stacks.config_model import BucketConfig
from stacks.profiles import Profile


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


class Bucket(pulumi.ComponentResource):
    name: pulumi.Output[str]
    url: pulumi.Output[str]
    bucket: gcp.storage.Bucket

    def __init__(
        self,
        name: str,
        *,
        bucket_name: str,
        location: str,
        project: str,
        config: BucketConfig,
        profile: Profile,
        force_destroy: bool,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:storage:Bucket", name, None, opts)
        key = config.kms_key_name
        # the bucket names the key only once the agent may use it (else writes fail until the grant lands)
        grant = [key_access(f"{name}-kms-encrypter", key, project, self)] if key else []
        self.bucket = gcp.storage.Bucket(
            f"{name}-gcs",
            gcp.storage.BucketArgs(
                name=bucket_name,
                location=location.upper(),
                project=project,
                storage_class="STANDARD",
                uniform_bucket_level_access=True,
                public_access_prevention="enforced",
                versioning=gcp.storage.BucketVersioningArgs(enabled=config.versioning),
                lifecycle_rules=lifecycle_rules(config),
                soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(
                    retention_duration_seconds=profile.bucket_soft_delete_seconds
                ),
                force_destroy=force_destroy,
                labels=labels,
                encryption=gcp.storage.BucketEncryptionArgs(default_kms_key_name=key) if key else None,
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=grant,
                protect=profile.protect,
                retain_on_delete=profile.retain_bucket,
                delete_before_replace=True,
            ),
        )
        self.name = self.bucket.name
        self.url = self.bucket.url
        self.register_outputs({"name": self.name, "url": self.url})
