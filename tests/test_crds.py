"""`make crds` (tooling/oracles/crds.py): the CRDs of exactly the matrix's versions, checked against recorded sha256 sums,
downloaded offline here from a local mirror of the reference copies (byte-for-byte upstream files at the tags
../shared/reference/SOURCES.md names), and the order in which validation finds a CRD folder."""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from functools import partial
from pathlib import Path

import pytest

from stacks import addons
from stacks.facts import versions
from tests.conftest import STACK_FILES, recorded, reference_dir
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.oracles import crds, documented_schemas

REFERENCE_CRDS = reference_dir() / "crds"


def upstream(rel: str) -> Path:
    """The upstream file of a matrix CRD: the reference copy, else the `make crds` cache's (which holds only files
    that matched their sums), else the missing reference path."""
    cached = crds.CACHE / rel
    return cached if not (REFERENCE_CRDS / rel).is_file() and cached.is_file() else REFERENCE_CRDS / rel


MISSING = sorted(rel for rel in crds.expected() if not upstream(rel).is_file())
needs_reference = pytest.mark.skipif(
    len(MISSING) == len(crds.expected()), reason=f"no upstream CRDs in {REFERENCE_CRDS} nor {crds.CACHE}"
)


@pytest.fixture
def present(monkeypatch):
    """The download tests over the matrix files at hand: KEDA's CRDs are in no reference copy, only in the
    `make crds` cache once it ran, so without it they are left out of the matrix (the rest still download)."""
    every = crds.expected()
    monkeypatch.setattr(crds, "expected", lambda: {rel: crd for rel, crd in every.items() if rel not in MISSING})


def mirror_tree(root: Path, tamper: str | None = None) -> Path:
    """<root>/<owner>/<repo>/<tag>/<path>, as raw.githubusercontent.com serves it, from the reference copies."""
    for rel, crd in crds.expected().items():
        target = root / crd.url.removeprefix(crds.GITHUB_RAW)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(upstream(rel), target)
        if rel == tamper:
            target.write_bytes(target.read_bytes() + b"# changed\n")
    return root


@needs_reference
def test_recorded_sums_are_those_of_the_upstream_files():
    for rel, crd in crds.expected().items():
        if rel not in MISSING:
            assert hashlib.sha256(upstream(rel).read_bytes()).hexdigest() == crd.sha256, rel
    if MISSING:
        pytest.skip(f"the others' sums hold; not in {REFERENCE_CRDS} nor {crds.CACHE} (`make crds`): {MISSING}")


def test_table_covers_exactly_the_supported_versions():
    # every supported release of every add-on has the CRDs its custom resources are validated against
    for addon in addons.ADDONS:
        assert list(versions.CRDS[addon.key]) == list(addon.releases), addon.key
    for rel, crd in crds.expected().items():
        assert crd.url == f"https://raw.githubusercontent.com/{crd.repo}/{crd.tag}/{crd.path}"
        assert rel.endswith(crd.file_name) and crd.tag.startswith("v")


def test_every_custom_resource_we_render_has_a_crd_in_the_table():
    validated = {rel.split("_", 1)[0] for rel in crds.expected() if "/" not in rel}
    groups = {
        obj["apiVersion"].split("/")[0]
        for path in STACK_FILES
        for obj in kubernetes_objects(recorded(path, True))
        if "." in obj["apiVersion"].split("/")[0] and not obj["apiVersion"].split("/")[0].endswith("k8s.io")
    }
    # GKE installs some CRDs itself and publishes them only as documentation: tooling/oracles/documented_schemas.py
    documented = {api_version.split("/")[0] for api_version, _ in documented_schemas.SCHEMAS}
    assert groups and groups <= validated | documented, groups - validated - documented


@needs_reference
def test_download_over_http_writes_verified_files_and_a_manifest(tmp_path, present):
    tree = mirror_tree(tmp_path / "mirror")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(http.server.SimpleHTTPRequestHandler, directory=str(tree))
    )
    server.RequestHandlerClass.log_message = lambda *a: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        cache = tmp_path / "cache"
        assert crds.main(["--cache", str(cache), "--mirror", f"http://127.0.0.1:{server.server_port}/"]) == 0
    finally:
        server.shutdown()
    for rel in crds.expected():
        assert (cache / rel).read_bytes() == upstream(rel).read_bytes()
    assert crds.cache_is_current(cache)
    assert (cache / "alternates/lws-v0.10.0/leaderworkerset.x-k8s.io_leaderworkersets.yaml").is_file()


@needs_reference
def test_a_wrong_checksum_fails_and_writes_nothing(tmp_path, capsys, present):
    tampered = "pathways-job.pathways.domain_pathwaysjobs.yaml"
    tree = mirror_tree(tmp_path / "mirror", tamper=tampered)
    cache = tmp_path / "cache"
    assert crds.main(["--cache", str(cache), "--mirror", tree.as_uri()]) == 1
    err = capsys.readouterr().err
    assert f"{tampered}: sha256 " in err and "does not match the recorded" in err and "1 problem(s)" in err
    assert not cache.exists()


def test_an_unreachable_source_fails_naming_the_url(tmp_path, capsys):
    assert crds.main(["--cache", str(tmp_path / "c"), "--mirror", (tmp_path / "empty").as_uri()]) == 1
    err = capsys.readouterr().err
    assert "cannot download file://" in err and "kubernetes-sigs/lws/v0.7.0/config/crd/bases/" in err
    assert not (tmp_path / "c").exists()


def test_lookup_order_env_then_current_cache_then_reference(monkeypatch, tmp_path):
    cache, reference, env = tmp_path / "cache", tmp_path / "reference", tmp_path / "env"
    reference.mkdir()
    env.mkdir()
    monkeypatch.delenv(crds.CRD_DIR_ENV, raising=False)
    assert crds.crd_source(cache, reference)[0] == reference
    cache.mkdir()
    (cache / crds.MANIFEST).write_text("0000  old.yaml\n")  # a cache from an older matrix is not used
    directory, why = crds.crd_source(cache, reference)
    assert directory == reference and "out of date" in why
    (cache / crds.MANIFEST).write_text(crds.manifest_text())
    assert crds.crd_source(cache, reference) == (cache, f"CRDs from the `make crds` cache ({cache})")
    monkeypatch.setenv(crds.CRD_DIR_ENV, str(env))
    assert crds.crd_source(cache, reference)[0] == env
    monkeypatch.setenv(crds.CRD_DIR_ENV, str(tmp_path / "missing"))
    assert crds.crd_source(cache, reference)[0] is None
    monkeypatch.delenv(crds.CRD_DIR_ENV)
    shutil.rmtree(reference)
    shutil.rmtree(cache)
    assert crds.crd_source(cache, reference) == (None, "no CRDs: run `make crds` (or set $TPU_SERVING_CRDS)")


def test_the_reference_folder_is_where_tpu_serving_reference_says(monkeypatch, tmp_path):
    """The suite's run with the folder hidden (.ci/run: TPU_SERVING_REFERENCE=/nonexistent) hides it from every
    reader: the tests' reference_dir() and the CRD lookup's fallback are one function."""
    from tests.conftest import reference_dir as tests_reference_dir

    (tmp_path / "ref" / "crds").mkdir(parents=True)
    monkeypatch.delenv(crds.CRD_DIR_ENV, raising=False)
    monkeypatch.setenv(crds.REFERENCE_ENV, str(tmp_path / "ref"))
    assert tests_reference_dir() == crds.reference_dir() == tmp_path / "ref"
    assert crds.crd_source(tmp_path / "no-cache")[0] == tmp_path / "ref" / "crds"
    monkeypatch.setenv(crds.REFERENCE_ENV, "/nonexistent")
    assert crds.crd_source(tmp_path / "no-cache")[0] is None
