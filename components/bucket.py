"""The stack's GCS bucket: checkpoints, Saxml state (sax-root) and Pathways scratch.

Private by construction (uniform bucket-level access, public access prevention enforced), versioned with
noncurrent versions expired, Pathways scratch expired, and protected or torn down by the environment profile.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks import naming
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
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=profile.protect,
                retain_on_delete=profile.retain_bucket,
                delete_before_replace=True,
            ),
        )
        self.name = self.bucket.name
        self.url = self.bucket.url
        self.register_outputs({"name": self.name, "url": self.url})
