"""Environment profiles: prod and staging protect data and clusters; dev tears down completely."""

import pytest

from tests.conftest import make_config

PROTECTED_TYPES = {"gcp:container/cluster:Cluster", "gcp:storage/bucket:Bucket"}


CRD_PATCH = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"


def protected_names(rec):
    return {r.name for r in rec.resources if r.protect}


@pytest.mark.parametrize("environment", ["prod", "staging"])
def test_prod_and_staging_protect_cluster_tpu_pools_and_bucket(run, environment):
    rec = run(make_config(tpu_serving__environment=environment), stack=environment)
    assert protected_names(rec) == {"cluster-gke", "bucket-gcs", "bucket-logs", "tpu-v6e-4x4-s0", "tpu-v5e-2x4"}
    gke = rec.one("gcp:container/cluster:Cluster")
    assert gke.inputs["deletionProtection"] is True
    for bucket in rec.of_type("gcp:storage/bucket:Bucket"):  # the stack bucket and its access-log bucket
        assert bucket.retain_on_delete is True, bucket.name
        assert bucket.inputs["forceDestroy"] is False, bucket.name
        assert bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 7 * 24 * 3600}, bucket.name
    # no masterAuthorizedNetworks: the IP endpoint is closed to the internet (private endpoint only), so there is
    # nothing to warn about; operators and CI use the DNS endpoint
    assert gke.inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert not any("controlPlaneEndpoint" in w or "masterAuthorizedNetworks" in w for w in rec.warnings)


def test_dev_tears_down_completely(run):
    rec = run(make_config())
    assert protected_names(rec) == set()
    # only the CRDs' keep patches are retained: a Patch cannot be deleted while it manages a required field, and
    # the CRD it patches is deleted by its ConfigGroup (tests/test_crd_keep_patch.py)
    assert not any(r.retain_on_delete for r in rec.resources if r.type != CRD_PATCH)
    assert rec.one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is False
    buckets = rec.of_type("gcp:storage/bucket:Bucket")
    assert {b.name for b in buckets} == {"bucket-gcs", "bucket-logs"}
    for bucket in buckets:  # the access logs go with the data in dev
        assert bucket.inputs["forceDestroy"] is True, bucket.name
        assert bucket.inputs["softDeletePolicy"] == {"retentionDurationSeconds": 0}, bucket.name
    # nothing to warn about but BASE's on-demand v5e pool in us-east5-a, a zone Google's TPU zone list marks
    # single-tenant (reserved capacity only) for v5e
    assert [w for w in rec.warnings if ".zone: v5e in us-east5-a is single-tenant" not in w] == []


def test_force_destroy_override_is_applied_and_reported(run):
    rec = run(make_config(tpu_serving__environment="prod", tpu_serving__bucket={"forceDestroy": True}), stack="prod")
    assert rec.one("gcp:storage/bucket:Bucket", "bucket-gcs").inputs["forceDestroy"] is True
    assert any("bucket.forceDestroy=true overrides the prod profile (false)" in w for w in rec.warnings)
    # the override touches only what it names
    assert rec.one("gcp:storage/bucket:Bucket", "bucket-gcs").protect is True
