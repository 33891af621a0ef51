"""The persistent XLA compile cache's two helper programs (run in the vLLM image as `python3 -c`) and the values
they share with the pods that run them (workloads/vllm/manifests.py)."""

from __future__ import annotations

XLA_CACHE_DIR = "/xla-cache"  # a local emptyDir (node disk): the compile cache the server reads and writes
CACHE_PUSH_INTERVAL_S = 60  # how often the serving pod copies new compile-cache entries back to the bucket


# The compile cache's two halves, with the image's own Python and google-cloud-storage (tpu-inference@v0.27.0
# requirements.txt), as the workload's identity. The pull runs before the server and never fails the pod (no cache
# is a cold start); the push copies entries the bucket lacks (JAX names each entry by its key, so an existing name
# is the same entry). tpu-inference@v0.27.0 .buildkite/xla_autotune/README.md "JAX compile cache": its CI pulls the
# GCS cache to local disk before the server starts and pushes it back after.
CACHE_PULL_SCRIPT = """
import os, sys
from concurrent.futures import ThreadPoolExecutor
from google.cloud import storage
bucket, prefix, local = os.environ["CACHE_BUCKET"], os.environ["CACHE_PREFIX"], os.environ["CACHE_DIR"]


def fetch(blob):
    path = os.path.join(local, blob.name[len(prefix):])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    blob.download_to_filename(path)


try:
    blobs = [b for b in storage.Client().list_blobs(bucket, prefix=prefix) if not b.name.endswith("/")]
    with ThreadPoolExecutor(int(os.environ["CACHE_PULL_WORKERS"])) as pool:
        list(pool.map(fetch, blobs))
    print(f"compile cache: {len(blobs)} entries from gs://{bucket}/{prefix}")
except Exception as e:  # a cold start, not a failed pod
    print(f"compile cache not read ({e}); compiling from scratch", file=sys.stderr)
"""
# Downloads the pull keeps in flight (threads, each one blob at a time: a cache is many small entries, so one stream
# would take the whole cache at one request's rate). The image's google-cloud-storage is unpinned (tpu-inference@v0.27.0
# requirements.txt), so the pull uses only the standard library's threads and Blob.download_to_filename.
CACHE_PULL_WORKERS = 16
# JAX writes a cache entry in place (jax-ml/jax@1e79d0a jax/_src/lru_cache.py LRUCache.put: `file.write_bytes(val)`,
# no temporary file and rename), so a scan can find an entry half written. The push uploads a file only once its size
# is the same at two scans one interval apart, and again whenever the bucket's copy differs in size (one uploaded
# half-written by an earlier version, or cut short).
CACHE_PUSH_SCRIPT = """
import os, sys, time


def push(bucket, prefix, local, previous):
    \"\"\"One scan: upload every file whose size is unchanged since `previous` (path -> size at the last scan) and
    differs from its blob's; return this scan's sizes.\"\"\"
    remote = {blob.name[len(prefix):]: blob.size for blob in bucket.list_blobs(prefix=prefix)}
    sizes = {}
    for root, _, files in os.walk(local):
        for f in files:
            if f.startswith("."):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, local)
            sizes[rel] = os.path.getsize(path)
            if previous.get(rel) == sizes[rel] and remote.get(rel) != sizes[rel]:
                bucket.blob(prefix + rel).upload_from_filename(path)
    return sizes


if __name__ == "__main__":
    from google.cloud import storage

    name, prefix, local = os.environ["CACHE_BUCKET"], os.environ["CACHE_PREFIX"], os.environ["CACHE_DIR"]
    interval = int(os.environ["CACHE_PUSH_INTERVAL"])
    sizes = {}
    while True:
        time.sleep(interval)
        try:
            sizes = push(storage.Client().bucket(name), prefix, local, sizes)
        except Exception as e:
            print(f"compile cache push: {e}", file=sys.stderr)
"""

CACHE_MOUNT = {"name": "xla-cache", "mountPath": XLA_CACHE_DIR}
CACHE_HELPER_RESOURCES = {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
