"""The vLLM compile cache's pull and push scripts (workloads/vllm/compile_cache.py), run here against a fake bucket.

JAX writes a cache entry in place (jax-ml/jax@1e79d0a jax/_src/lru_cache.py LRUCache.put: `file.write_bytes(val)`,
no temporary file and rename), so the push may see a half-written file: it uploads a file only once its size is the
same at two scans, and again when the bucket's copy differs in size. The pull keeps CACHE_PULL_WORKERS downloads in
flight (standard-library threads: the image's google-cloud-storage is unpinned, vllm-project/tpu-inference@v0.27.0
requirements.txt).
"""

from __future__ import annotations

import sys
import threading
import time
import types
from pathlib import Path

from workloads.vllm import compile_cache


class FakeBlob:
    def __init__(self, bucket: FakeBucket, name: str):
        self.bucket, self.name = bucket, name

    @property
    def size(self) -> int:
        return len(self.bucket.objects[self.name])

    def upload_from_filename(self, path: str) -> None:
        self.bucket.objects[self.name] = Path(path).read_bytes()
        self.bucket.uploads.append(self.name)

    def download_to_filename(self, path: str) -> None:
        with self.bucket.lock:
            self.bucket.in_flight += 1
            self.bucket.peak = max(self.bucket.peak, self.bucket.in_flight)
        time.sleep(0.02)
        Path(path).write_bytes(self.bucket.objects[self.name])
        with self.bucket.lock:
            self.bucket.in_flight -= 1


class FakeBucket:
    def __init__(self, objects: dict[str, bytes] | None = None):
        self.objects = dict(objects or {})
        self.uploads: list[str] = []
        self.lock, self.in_flight, self.peak = threading.Lock(), 0, 0

    def list_blobs(self, prefix: str = ""):
        return [FakeBlob(self, n) for n in sorted(self.objects) if n.startswith(prefix)]

    def blob(self, name: str) -> FakeBlob:
        return FakeBlob(self, name)


def _push():
    scope: dict = {"__name__": "not-main"}
    exec(compile_cache.CACHE_PUSH_SCRIPT, scope)  # the rendered script's body, its loop left out
    return scope["push"]


def test_the_push_waits_for_a_stable_size_and_replaces_a_half_written_copy(tmp_path):
    push, bucket, prefix = _push(), FakeBucket(), "compile-cache/w/tag/v6e-2x4/"
    entry = tmp_path / "jit_f-abc"
    entry.write_bytes(b"half")  # JAX is still writing it
    sizes = push(bucket, prefix, str(tmp_path), {})
    assert bucket.uploads == []  # first seen: not uploaded yet
    entry.write_bytes(b"half and the rest")  # grew since the last scan
    sizes = push(bucket, prefix, str(tmp_path), sizes)
    assert bucket.uploads == []
    sizes = push(bucket, prefix, str(tmp_path), sizes)  # stable across two scans: uploaded whole
    assert bucket.objects[prefix + "jit_f-abc"] == b"half and the rest"
    push(bucket, prefix, str(tmp_path), sizes)
    assert bucket.uploads == [prefix + "jit_f-abc"]  # same size as its blob: not again
    # a blob an earlier push left half-written is replaced once the local file is stable
    bucket.objects[prefix + "jit_f-abc"] = b"half"
    push(bucket, prefix, str(tmp_path), sizes)
    assert bucket.objects[prefix + "jit_f-abc"] == b"half and the rest"
    # lock and placeholder files (dot files) are never uploaded
    (tmp_path / ".lockfile").write_bytes(b"")
    sizes = push(bucket, prefix, str(tmp_path), push(bucket, prefix, str(tmp_path), sizes))
    assert prefix + ".lockfile" not in bucket.objects


def test_the_pull_keeps_several_downloads_in_flight(tmp_path, monkeypatch):
    prefix = "compile-cache/w/tag/v6e-2x4/"
    bucket = FakeBucket({f"{prefix}e{i}": bytes([i]) * 10 for i in range(32)})
    client = types.SimpleNamespace(list_blobs=lambda name, prefix: bucket.list_blobs(prefix))
    storage = types.ModuleType("google.cloud.storage")
    storage.Client = lambda: client  # type: ignore[attr-defined]
    cloud = types.ModuleType("google.cloud")
    cloud.storage = storage  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google.cloud", cloud)
    monkeypatch.setitem(sys.modules, "google.cloud.storage", storage)
    env = {"CACHE_BUCKET": "b", "CACHE_PREFIX": prefix, "CACHE_DIR": str(tmp_path), "CACHE_PULL_WORKERS": "8"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    exec(compile_cache.CACHE_PULL_SCRIPT, {"__name__": "__main__"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"e{i}" for i in range(32))
    assert bucket.peak > 1  # downloads overlapped, not one blob at a time
