"""The stack bucket: private, versioned, expiring scratch, and protected by the profile."""

from tests.conftest import make_config

BUCKET = "gcp:storage/bucket:Bucket"


def test_bucket_safe_defaults(run):
    rec = run(make_config())
    bucket = rec.one(BUCKET)
    inputs = bucket.inputs
    assert inputs["name"] == "tpu-test-project-tpu-serving-dev"
    assert inputs["location"] == "US-EAST5"
    assert inputs["uniformBucketLevelAccess"] is True
    assert inputs["publicAccessPrevention"] == "enforced"
    assert inputs["versioning"] == {"enabled": True}
    rules = inputs["lifecycleRules"]
    assert {"action": {"type": "Delete"}, "condition": {"matchesPrefixes": ["pathways/"], "age": 7}} in rules
    assert {
        "action": {"type": "Delete"},
        "condition": {"withState": "ARCHIVED", "daysSinceNoncurrentTime": 30},
    } in rules
    assert inputs["labels"]["app"] == "tpu-serving"
    assert rec.outputs["bucketName"] == "tpu-test-project-tpu-serving-dev"
    assert rec.outputs["bucketUrl"] == "gs://tpu-test-project-tpu-serving-dev"


def test_bucket_config(run):
    rec = run(
        make_config(
            tpu_serving__bucket={"name": "my-ckpts", "location": "us", "versioning": False, "scratchTtlDays": 2}
        )
    )
    inputs = rec.one(BUCKET).inputs
    assert (inputs["name"], inputs["location"]) == ("my-ckpts", "US")
    assert inputs["versioning"] == {"enabled": False}
    assert inputs["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"matchesPrefixes": ["pathways/"], "age": 2}}
    ]
