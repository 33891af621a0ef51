"""Least-privilege storage: every workload identity holds roles on prefixes of the stack bucket only, each the prefix
its manifests use, read-only where the server only reads.

The prefixes are derived here from the recorded Kubernetes objects (what the servers are told to read and write),
never from the plans' grant functions; what each server does with them is pinned by the upstream sources cited at
each rule below and in tests/test_saxml.py.
"""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from typing import Any

import pulumi
import pytest

from stacks.security import bucket_access
from stacks.security.bucket_access import OBJECT_USER, OBJECT_VIEWER, gcs_location, prefix_expression
from tests.conftest import EXAMPLES, is_bucket_get, make_config, pool, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import load_stack_file

MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
# The Saxml admin image's entrypoint: admin_config/admin_server --sax_root=gs://$GSBUCKET/sax-root and
# admin_config --fs_root=gs://$GSBUCKET/sax-fs-root (google/saxml@v1.1.0:saxml/tools/docker/Dockerfile.admin).
ADMIN_ROOTS = ("sax-root", "sax-fs-root")


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {})
    if obj["kind"] in ("Deployment", "Job"):
        return [spec["template"]["spec"]]
    if obj["kind"] == "LeaderWorkerSet":
        template = spec["leaderWorkerTemplate"]
        return [template[k]["spec"] for k in ("leaderTemplate", "workerTemplate") if k in template]
    if obj["kind"] == "JobSet":
        return [job["template"]["spec"]["template"]["spec"] for job in spec["replicatedJobs"]]
    return []


def _stack_dir(url: str, bucket: str) -> str | None:
    """The prefix of a gs:// directory in the stack bucket, or None when it is elsewhere."""
    where, prefix = gcs_location(url)
    return prefix if where == bucket else None


def _parent(url: str, bucket: str) -> str | None:
    prefix = _stack_dir(url, bucket)
    return prefix.rstrip("/").rsplit("/", 1)[0] + "/" if prefix else None


def _cache_root(prefix: str | None) -> str | None:
    """compile-cache/<workload>/ of a compile-cache/<workload>/<image tag>/<slice>/ prefix: every image and shape."""
    return "/".join(prefix.split("/")[:2]) + "/" if prefix else None


def _container_uses(pod: dict[str, Any], bucket: str, cells: list[str]) -> set[tuple[str, str | None]]:
    """(role, stack-bucket prefix) each container of a pod is told to use."""
    uses: set[tuple[str, str | None]] = set()
    for c in [*pod.get("initContainers", []), *pod["containers"]]:
        env = {e["name"]: e.get("value", "") for e in c.get("env", [])}
        args = c.get("args", [])
        command = c.get("command") or []
        # a server started from a shell line (the vLLM leader): its words are its arguments too
        words = [*args, *(shlex.split(command[2]) if command[:2] == ["sh", "-c"] else [])]
        for arg in words:
            key, _, value = arg.lstrip("-").partition("=")
            if key in ("load_parameters_path", "model") and value.startswith("gs://"):
                # MaxText reads its checkpoint, vLLM streams its weights: read-only
                uses.add((OBJECT_VIEWER, _stack_dir(value, bucket)))
            if key == "jax_cache_dir" and value.startswith("gs://"):
                # MaxText's compile cache (JAX reads and writes it): the workload's compile-cache/<name>/
                uses.add((OBJECT_USER, _cache_root(_stack_dir(value, bucket))))
            if key == "gcs_scratch_location":
                # Pathways server/proxy write their scratch (kubernetes-engine-samples
                # ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml); the workload's directory holds it
                uses.add((OBJECT_USER, _parent(value, bucket)))
        if "CACHE_PREFIX" in env and env["CACHE_BUCKET"] == bucket:  # vLLM's compile-cache pull and push
            uses.add((OBJECT_USER, _cache_root(env["CACHE_PREFIX"])))
        if (
            "MARKER" in env and env["BUCKET"] == bucket
        ):  # vLLM's staging Job writes its model's (and adapters') prefixes
            uses |= {(OBJECT_USER, item["prefix"]) for item in json.loads(env["ITEMS"])}
        if "ITEMS" in env and "MARKER" not in env:  # vLLM's adapter and draft copies read their prefixes
            for item in json.loads(env["ITEMS"]):
                if item["url"].startswith("gs://"):
                    uses.add((OBJECT_VIEWER, _stack_dir(item["url"], bucket)))
        if "GSBUCKET" in env:  # the Saxml admin server writes both of its roots' cell directories
            cell = env["SAX_CELL"].strip("/")
            uses |= {(OBJECT_USER, f"{root}/{cell}/") for root in ADMIN_ROOTS if env["GSBUCKET"] == bucket}
        elif "SAX_ROOT" in env:  # model and HTTP servers read their cell's directory under SAX_ROOT
            root = _stack_dir(env["SAX_ROOT"], bucket)
            flag = [a.split("=", 1)[1].strip("/") for a in args if a.startswith("--sax_cell=")]
            uses |= {(OBJECT_VIEWER, f"{root}{cell}/") for cell in (flag or cells)}
        if "MODELS" in env:  # the Saxml publication Job: the model servers load these checkpoints
            for model in json.loads(env["MODELS"]):
                if model["checkpoint"].startswith("gs://"):
                    uses.add((OBJECT_VIEWER, _stack_dir(model["checkpoint"], bucket)))
    for volume in pod.get("volumes", []):  # vLLM's GCS FUSE volume: its only-dir, read-write
        attributes = volume.get("csi", {}).get("volumeAttributes", {})
        if attributes.get("bucketName") == bucket:
            only = [o.split("=", 1)[1] for o in attributes["mountOptions"].split(",") if o.startswith("only-dir=")]
            uses |= {(OBJECT_USER, f"{d}/") for d in only}
    return uses


def _gate_uses(pod: dict[str, Any], bucket: str, namespace: str, objects: list[dict[str, Any]]) -> set:
    """The release gate's inference-perf (stacks/serving/benchmark.py) uploads each report under its config's
    storage.google_cloud_storage path (kubernetes-sigs/inference-perf v0.7.0 inference_perf/client/filestorage/gcs.py
    `<path>/<file>`), read from the ConfigMap its pod mounts; each step's Job has its own path under the workload's
    benchmarks/<workload>/, which its identity holds."""
    uses: set[tuple[str, str | None]] = set()
    maps = {
        o["metadata"]["name"]: o.get("data", {})
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == namespace
    }
    for c in pod["containers"]:
        # the gate's container runs inference-perf from its summary script (benchmark.summary_command)
        if "'inference-perf'" not in " ".join(c.get("command", [])):
            continue
        for volume in pod.get("volumes", []):
            data = maps.get(volume.get("configMap", {}).get("name", ""), {})
            for text in data.values():
                storage = (json.loads(text).get("storage") or {}).get("google_cloud_storage") or {}
                if storage.get("bucket_name") == bucket:
                    uses.add((OBJECT_USER, storage["path"].rstrip("/").rsplit("/", 1)[0] + "/"))
    return uses


def _identities(rec, config) -> dict[str, set[tuple[str, str | None]]]:
    """Google identity (email) -> what the pods running as it are told to use in the stack bucket."""
    bucket = rec.outputs["bucketName"]
    objects = kubernetes_objects(rec)
    gsa = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["metadata"]["annotations"][
            "iam.gke.io/gcp-service-account"
        ]
        for o in objects
        if o["kind"] == "ServiceAccount" and "iam.gke.io/gcp-service-account" in o["metadata"].get("annotations", {})
    }
    accounts = {r.name: r.inputs["accountId"] for r in rec.of_type("gcp:serviceaccount/account:Account")}
    project = config["gcp:project"]
    workloads = [w["name"] for w in config.get("tpu-serving:workloads", [])]

    def node_identity(obj: dict[str, Any]) -> str:
        # host-network pods (and every PathwaysJob pod) act as their workload's own node service account
        owner = max((w for w in workloads if obj["metadata"]["name"].startswith(w)), key=len)
        return f"{accounts[f'workload-{owner}-nodes-sa']}@{project}.iam.gserviceaccount.com"

    cells = defaultdict(list)  # namespace -> Saxml cells its model servers join (the HTTP server's cell)
    for o in objects:
        for pod in _pod_specs(o):
            for c in pod["containers"]:
                cells[o["metadata"]["namespace"]] += [
                    a.split("=", 1)[1].strip("/") for a in c.get("args", []) if a.startswith("--sax_cell=")
                ]
    uses: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
    for o in objects:
        namespace = o["metadata"].get("namespace")
        if o["kind"] == "PathwaysJob":  # the Pathways components write pathwaysDir
            uses[node_identity(o)].add((OBJECT_USER, _parent(o["spec"]["pathwaysDir"], bucket)))
        for pod in _pod_specs(o):
            used = _container_uses(pod, bucket, cells[namespace]) | _gate_uses(pod, bucket, namespace, objects)
            if pod.get("hostNetwork"):
                uses[node_identity(o)] |= used
            elif used:
                uses[gsa[(namespace, pod["serviceAccountName"])]] |= used
    return uses


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_no_identity_holds_an_unconditioned_role_on_the_stack_bucket(path):
    rec = recorded(path, False)
    bucket = rec.outputs["bucketName"]
    for member in [m for m in rec.of_type(MEMBER) if m.inputs["bucket"] == bucket and not is_bucket_get(m)]:
        condition = member.inputs.get("condition")
        assert condition, f"{member.name}: unconditioned {member.inputs['role']} on the stack bucket"
        prefix = condition["title"].removeprefix("only ")
        assert condition["expression"] == prefix_expression(bucket, prefix), member.name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_each_identity_gets_exactly_the_prefixes_its_manifests_use(path):
    rec = recorded(path, False)
    bucket = rec.outputs["bucketName"]
    granted: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
    for member in rec.of_type(MEMBER):
        if member.inputs["bucket"] == bucket and not is_bucket_get(member):
            email = member.inputs["member"].removeprefix("serviceAccount:")
            granted[email].add((member.inputs["role"], member.inputs["condition"]["title"].removeprefix("only ")))
    used = {
        email: {u for u in uses if u[1] is not None} for email, uses in _identities(rec, load_stack_file(path)).items()
    }
    assert {e: u for e, u in used.items() if u} == dict(granted)


def test_prefix_expression_and_locations():
    # IAM Conditions on Cloud Storage: objects are projects/_/buckets/<b>/objects/<name>; a list request is checked
    # on the bucket with its prefix in the storage.googleapis.com/objectListPrefix API attribute
    # (https://cloud.google.com/storage/docs/access-control/iam#conditions,
    # https://cloud.google.com/iam/docs/conditions-attribute-reference). The exact directory name: TF's GCS file
    # system stats it before listing, and fails on anything but NOT_FOUND (tensorflow
    # tsl/platform/cloud/gcs_file_system.cc GcsFileSystem::FileExists).
    assert prefix_expression("b", "ckpt/7b/") == (
        'resource.name.startsWith("projects/_/buckets/b/objects/ckpt/7b/") || '
        'resource.name == "projects/_/buckets/b/objects/ckpt/7b" || '
        'api.getAttribute("storage.googleapis.com/objectListPrefix", "").startsWith("ckpt/7b/")'
    )
    assert gcs_location("gs://b/ckpt/7b") == gcs_location("gs://b/ckpt/7b/") == ("b", "ckpt/7b/")
    assert gcs_location("gs://b") == gcs_location("gs://b/") == ("b", None)
    assert bucket_access.read_grant("c", "gs://b/x", "b", False) == bucket_access.Grant("c", "b", OBJECT_VIEWER, "x/")
    assert bucket_access.read_grant("c", "gs://o/x", "b", True) == bucket_access.Grant("c", "o", OBJECT_VIEWER, None)
    assert bucket_access.read_grant("c", "gs://o/x", "b", False) is None


@pytest.mark.parametrize(
    "workload,key",
    [
        ({"type": "jetstream", "name": "js", "model": "gemma-7b", "checkpoint": "gs://{b}/"}, "checkpoint"),
        (
            {"type": "saxml", "name": "sax", "models": [{"model": "m", "modelPath": "a.B", "checkpoint": "gs://{b}"}]},
            "models[0].checkpoint",
        ),
    ],
)
def test_a_path_at_the_stack_bucket_root_is_refused(run, workload, key):
    bucket = "tpu-test-project-tpu-serving-dev"
    raw = json.loads(json.dumps(workload).replace("{b}", bucket))
    pools = [pool(tpu="v5e", topology="2x4" if workload["type"] == "jetstream" else "4x8", name="p")]
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__tpuPools=pools, tpu_serving__workloads=[{**raw, "pool": "p"}]))
    assert f"tpu-serving:workloads[0].{key}: 'gs://{bucket}" in str(err.value)
    assert "is the root of the stack bucket; workloads get access to a prefix of it only" in str(err.value)
