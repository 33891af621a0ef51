"""Customer-managed keys: the bucket's default CMEK and the cluster's application-layer Secrets encryption.

Each key's service agent gets roles/cloudkms.cryptoKeyEncrypterDecrypter on the key, as a member (never the key's
policy), before the resource that names the key: Cloud Storage's agent before the bucket
(https://cloud.google.com/storage/docs/encryption/using-customer-managed-keys), GKE's
(service-<project number>@container-engine-robot.iam.gserviceaccount.com) before the cluster
(https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets). Argument names: pulumi-gcp's
storage.BucketEncryptionArgs(default_kms_key_name), container.ClusterDatabaseEncryptionArgs(state, key_name),
kms.CryptoKeyIAMMemberArgs(crypto_key_id, role, member; the full key name is one of the id forms
terraform-provider-google's kms.ParseKmsCryptoKeyId accepts).
"""

from __future__ import annotations

import pulumi
import pytest

from stacks.facts import kms
from tests.conftest import make_config
from tooling.harness.offline import PROJECT_NUMBER

KEY_MEMBER = "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember"
BUCKET = "gcp:storage/bucket:Bucket"
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET_KEY = "projects/tpu-keys/locations/us-east5/keyRings/tpu-serving/cryptoKeys/bucket"
SECRETS_KEY = "projects/tpu-keys/locations/us-east5/keyRings/tpu-serving/cryptoKeys/secrets"


def test_no_key_by_default(run):
    rec = run(make_config())
    assert not rec.of_type(KEY_MEMBER)
    assert "encryption" not in rec.one(BUCKET, "bucket-gcs").inputs
    # explicitly off, so removing a key decrypts instead of keeping the last state
    assert rec.one(CLUSTER).inputs["databaseEncryption"] == {"state": "DECRYPTED"}


@pytest.mark.parametrize(
    "config,agent,resource,expected",
    [
        (
            {"tpu_serving__bucket": {"kmsKeyName": BUCKET_KEY}},
            f"service-{PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com",
            BUCKET,
            {"encryption": {"defaultKmsKeyName": BUCKET_KEY}},
        ),
        (
            {"tpu_serving__cluster": {"secretsEncryptionKey": SECRETS_KEY}},
            f"service-{PROJECT_NUMBER}@container-engine-robot.iam.gserviceaccount.com",
            CLUSTER,
            {"databaseEncryption": {"state": "ENCRYPTED", "keyName": SECRETS_KEY}},
        ),
    ],
    ids=["bucket CMEK", "cluster secrets"],
)
def test_the_key_is_used_only_after_its_service_agent_may_use_it(run, config, agent, resource, expected):
    rec = run(make_config(**config))
    (grant,) = rec.of_type(KEY_MEMBER)
    key = next(iter(expected.values()))
    assert grant.inputs == {
        "cryptoKeyId": key.get("defaultKmsKeyName") or key.get("keyName"),
        "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "member": f"serviceAccount:{agent}",
    }
    users = rec.of_type(resource)  # the bucket CMEK: the stack bucket and its log bucket
    assert users
    for user in users:
        assert {k: user.inputs[k] for k in expected} == expected, user.name
        assert grant.urn in user.dependencies, user.name


def test_bad_keys_are_reported_together_before_anything_is_registered(run):
    config = make_config(
        tpu_serving__bucket={"kmsKeyName": "tpu-keys/us-east5/tpu-serving/bucket"},
        tpu_serving__cluster={"secretsEncryptionKey": SECRETS_KEY.replace("us-east5", "us")},
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    text = str(err.value)
    assert (
        "tpu-serving:bucket.kmsKeyName: 'tpu-keys/us-east5/tpu-serving/bucket' is not a Cloud KMS key name; "
        f"expected {kms.KEY_NAME_FORM}"
    ) in text
    assert (
        "tpu-serving:cluster.secretsEncryptionKey: the key is in 'us', not in the cluster's region 'us-east5'"
    ) in text


@pytest.mark.parametrize(
    "bucket_location,key_location,ok",
    [("US", "us", True), ("us-east5", "us-east5", True), ("US", "us-east5", False), ("us-east5", "us", False)],
)
def test_bucket_key_is_in_the_bucket_location(bucket_location, key_location, ok):
    key = BUCKET_KEY.replace("us-east5", key_location)
    assert (kms.key_problem(key, bucket_location, "the bucket's location") is None) == ok


@pytest.mark.parametrize(
    "name",
    [
        "projects/example.com:tpu-keys/locations/us/keyRings/r_1/cryptoKeys/k-2",
        "projects/123456789012/locations/europe-west4/keyRings/R/cryptoKeys/K",
    ],
)
def test_key_names_the_provider_parses(name):
    assert kms.KEY_NAME_RE.fullmatch(name)
