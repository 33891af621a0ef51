"""Every identity that reads or writes objects of a bucket can also read that bucket's metadata (storage.buckets.get),
and so can every server that streams its weights from gs:// with the Run:ai streamer.

Sources:
- the Run:ai streamer's GCS listing (which vLLM's ModelConfig uses for the config and tokenizer of a gs:// model)
  calls `gcs.get_bucket(bucket_name)` before `list_blobs` (run-ai/runai-model-streamer@2d9f367
  py/runai_model_streamer_gcs/runai_model_streamer_gcs/files/files.py list_files); Bucket.get needs
  storage.buckets.get (https://cloud.google.com/storage/docs/access-control/iam-permissions);
- roles/storage.objectViewer is storage.objects.get + list, roles/storage.legacyBucketReader is storage.buckets.get +
  storage.objects.list (https://cloud.google.com/storage/docs/access-control/iam-roles; googleapis java-storage
  StorageRoles);
- a custom role's id: letters, digits, `_` and `.`, at most 64 characters
  (https://cloud.google.com/iam/docs/reference/rest/v1/projects.roles/create `roleId`); a project's custom role is
  granted only inside that project (https://cloud.google.com/iam/docs/understanding-custom-roles).
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from stacks.security import bucket_access
from tests.conftest import session_run
from tests.test_pod_placement import stacks_with, tpu_pods, workload_objects
from tests.test_startup import _containers, _flags
from workloads import registry

OBJECT_ROLES = {bucket_access.OBJECT_USER, bucket_access.OBJECT_VIEWER}


def _role_name(rec) -> str:
    (role,) = rec.of_type("gcp:projects/iAMCustomRole:IAMCustomRole")
    return f"projects/{role.inputs['project']}/roles/{role.inputs['roleId']}"


def _bucket_roles(rec) -> dict[tuple[str, str], set[str]]:
    """(parent component, bucket) -> the unconditioned and conditioned roles bound there."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for member in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember"):
        found[(member.parent, member.inputs["bucket"])].add(member.inputs["role"])
    return found


def _all_cases():
    seen, out = set(), []
    for type_name in registry.WORKLOAD_TYPES:
        for case, config, stack in stacks_with(type_name):
            if case not in seen:
                seen.add(case)
                out.append((case, config, stack))
    return out


@pytest.mark.parametrize("case", _all_cases(), ids=lambda c: c[0])
def test_every_identity_with_object_access_can_get_the_bucket(case):
    _, config, stack = case
    rec = session_run(config, stack=stack)
    stack_role = _role_name(rec)
    roles = _bucket_roles(rec)
    assert roles
    for (parent, bucket), held in roles.items():
        if held & OBJECT_ROLES and "logs-writer" not in parent:
            getters = {stack_role, bucket_access.LEGACY_BUCKET_READER}
            assert held & getters, (parent, bucket, held)


@pytest.mark.parametrize("type_name", list(registry.WORKLOAD_TYPES))
def test_every_runai_streamer_server_can_get_its_weights_bucket(type_name):
    """Wherever `--load-format=runai_streamer` renders (every type, every shipped stack), the pod's identity holds
    storage.buckets.get on the bucket of its --model."""
    streamed = 0
    for _case, config, stack in stacks_with(type_name):
        rec = session_run(config, stack=stack)
        stack_role = _role_name(rec)
        ksa_parent = {
            (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]): r.parent
            for r in rec.of_type("kubernetes:core/v1:ServiceAccount")
        }
        roles = _bucket_roles(rec)
        for workload in (w["name"] for w in config.get("tpu-serving:workloads") or []):
            for obj in workload_objects(rec, workload):
                for pod in tpu_pods(obj):
                    flags = [f for c in _containers(pod) for f in _flags(c)]
                    if "--load-format=runai_streamer" not in flags:
                        continue
                    model = next(f.split("=", 1)[1] for f in flags if f.startswith("--model="))
                    bucket = bucket_access.gcs_location(model)[0]
                    parent = ksa_parent[(obj["metadata"]["namespace"], pod["serviceAccountName"])]
                    held = roles[(parent, bucket)]
                    assert held & {stack_role, bucket_access.LEGACY_BUCKET_READER}, (workload, bucket, held)
                    streamed += 1
    assert streamed or type_name != "vllm", "no vLLM server streams: the rule above checked nothing"


def test_the_custom_role_holds_only_bucket_get_and_its_id_is_valid():
    from tests.conftest import BASE

    rec = session_run(BASE)
    (role,) = rec.of_type("gcp:projects/iAMCustomRole:IAMCustomRole")
    assert role.inputs["permissions"] == [bucket_access.BUCKET_GET_PERMISSION]
    assert bucket_access.ROLE_ID_RE.fullmatch(role.inputs["roleId"])
    for bucket in ("a-b-c", "x" * 63, "my_bucket-1"):
        role_id = bucket_access.bucket_get_role_id(bucket)
        assert bucket_access.ROLE_ID_RE.fullmatch(role_id), role_id
    # unique per stack: the bucket name is global, and two long names differing only at the end stay apart
    assert bucket_access.bucket_get_role_id("a" * 60 + "1") != bucket_access.bucket_get_role_id("a" * 60 + "2")


@pytest.mark.parametrize("type_name", list(registry.WORKLOAD_TYPES))
def test_every_gs_compile_cache_directory_exists_before_its_server(type_name):
    """A JAX compile cache on gs:// (jax_cache_dir): JAX's LRUCache mkdirs it at start (jax-ml/jax
    jax/_src/lru_cache.py `self.path.mkdir(parents=True, exist_ok=True)`), which asks whether the directory exists
    (tensorflow tsl GcsFileSystem::RecursivelyCreateDir; gcsfs checks the bucket): an object under the exact prefix
    answers inside the identity's grant, and the identity can get the bucket."""
    from tests.test_startup import plans_of

    checked = 0
    for _case, plan, rec in plans_of(type_name):
        startup = plan.startup
        if startup is None or startup.compile_cache != "gcs":
            continue
        bucket, prefix = bucket_access.gcs_location(startup.compile_cache_url)
        objects = {(o.inputs["bucket"], o.inputs["name"]) for o in rec.of_type("gcp:storage/bucketObject:BucketObject")}
        assert (bucket, f"{prefix}.keep") in objects, (plan.name, objects)
        checked += 1
    assert checked or type_name != "jetstream", "no JetStream cache checked"


def test_a_vllm_model_in_another_bucket_is_granted_whole_and_only_with_grant_model_read(run):
    """IAM conditions need uniform bucket-level access on the bucket (https://cloud.google.com/storage/docs/
    access-control/iam#conditions): a user's own bucket gets an unconditioned objectViewer (and legacyBucketReader
    for its metadata) with grantModelRead, as JetStream's checkpoint with grantCheckpointRead, and nothing without."""
    from tests.conftest import make_config

    wl = {"type": "vllm", "name": "llm", "pool": "v5e-2x4", "model": "gs://weights/llama-8b"}
    rec = run(make_config(tpu_serving__workloads=[wl]))
    on_theirs = [
        m.inputs for m in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if m.inputs["bucket"] == "weights"
    ]
    assert sorted(m["role"] for m in on_theirs) == [bucket_access.LEGACY_BUCKET_READER, bucket_access.OBJECT_VIEWER]
    assert all(not m.get("condition") for m in on_theirs)
    rec = run(make_config(tpu_serving__workloads=[{**wl, "grantModelRead": False}]))
    assert not [
        m for m in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember") if m.inputs["bucket"] == "weights"
    ]
    # in the stack bucket: its prefix, conditioned, whatever grantModelRead says
    own = {**wl, "model": "gs://tpu-test-project-tpu-serving-dev/models/llama-8b", "grantModelRead": False}
    rec = run(make_config(tpu_serving__workloads=[own]))
    titles = {
        (m.inputs.get("condition") or {}).get("title")
        for m in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
        if m.inputs["role"] == bucket_access.OBJECT_VIEWER
    }
    assert "only models/llama-8b/" in titles
