"""The stack bucket: private, versioned, expiring scratch, and protected by the profile."""

from tests.conftest import make_config

BUCKET = "gcp:storage/bucket:Bucket"


def test_bucket_safe_defaults(run):
    rec = run(make_config())
    bucket = rec.one(BUCKET, "bucket-gcs")
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
    inputs = rec.one(BUCKET, "bucket-gcs").inputs
    assert (inputs["name"], inputs["location"]) == ("my-ckpts", "US")
    assert inputs["versioning"] == {"enabled": False}
    assert inputs["lifecycleRules"] == [
        {"action": {"type": "Delete"}, "condition": {"matchesPrefixes": ["pathways/"], "age": 2}}
    ]


def test_access_logs_go_to_a_private_log_bucket_that_expires_them(run):
    """checkov CKV_GCP_62 (checkov@3.3.30 terraform/checks/resource/gcp/CloudStorageLogging.py: `logging.log_bucket`
    set). Cloud Storage writes usage and storage logs as cloud-storage-analytics@google.com, which needs
    roles/storage.objectCreator on the log bucket (https://cloud.google.com/storage/docs/access-logs)."""
    rec = run(make_config(tpu_serving__bucket={"accessLogDays": 30}))
    bucket, logs = rec.one(BUCKET, "bucket-gcs"), rec.one(BUCKET, "bucket-logs")
    assert logs.inputs["name"] == "tpu-test-project-tpu-serving-dev-logs"
    assert bucket.inputs["logging"] == {"logBucket": logs.inputs["name"]}
    assert logs.inputs["location"] == bucket.inputs["location"]
    assert logs.inputs["uniformBucketLevelAccess"] is True and logs.inputs["publicAccessPrevention"] == "enforced"
    assert logs.inputs["lifecycleRules"] == [{"action": {"type": "Delete"}, "condition": {"age": 30}}]
    assert "logging" not in logs.inputs  # a log bucket logging to itself would log its own log writes
    (writer,) = [
        m for m in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if m.name == "bucket-logs-writer"
    ]
    assert writer.inputs == {
        "bucket": logs.inputs["name"],
        "role": "roles/storage.objectCreator",
        "member": "group:cloud-storage-analytics@google.com",
    }
    assert writer.urn in bucket.dependencies  # logging starts once the writer may write


def test_access_logs_off_creates_no_log_bucket_and_grants_nothing_outside_the_project(run):
    """bucket.accessLogs: false (an organization whose domain restricted sharing refuses Cloud Storage's log writer,
    tooling/operations/preflight.py): no log bucket, no grant to group:cloud-storage-analytics@google.com, no `logging` on the
    bucket, so nothing the stack bucket waits for; the warning says what is lost, and in a protected profile how to
    turn it off on a live stack."""
    rec = run(make_config(tpu_serving__bucket={"accessLogs": False}))
    assert [b.name for b in rec.of_type(BUCKET)] == ["bucket-gcs"]
    members = [m.inputs["member"] for m in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")]
    assert "group:cloud-storage-analytics@google.com" not in members
    assert "logging" not in rec.one(BUCKET, "bucket-gcs").inputs
    assert any("bucket.accessLogs=false: the bucket keeps no usage or storage logs" in w for w in rec.warnings)
    prod = run(make_config(tpu_serving__environment="prod", tpu_serving__bucket={"accessLogs": False}), stack="prod")
    assert any("`pulumi state unprotect` its bucket-logs resource first" in w for w in prod.warnings), prod.warnings


def test_turning_access_logs_off_and_on_is_a_clean_up(run):
    """Either way on a live (dev) stack: no object under two URNs, no replacement, nothing deleted out of order
    (tooling/review/transition.py); the bucket's `logging` changes in place."""
    from tooling.review import transition

    on, off = run(make_config()), run(make_config(tpu_serving__bucket={"accessLogs": False}))
    assert list(transition.problems(on, off)) == [] and list(transition.problems(off, on)) == []


def test_log_bucket_name_fits_63_characters():
    from stacks import naming

    name = naming.access_log_bucket_name("a" * 63)
    assert len(name) <= 63 and name != naming.access_log_bucket_name("a" * 62 + "b")
    assert naming.access_log_bucket_name("ckpts") == "ckpts-logs"
