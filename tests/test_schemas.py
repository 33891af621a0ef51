"""Every Kubernetes object we ship is valid: built-ins with kubernetes-validate (strict), custom resources
against the upstream CRDs in ../shared/reference/crds. And the validator itself rejects bad objects."""

import pytest

from tests.conftest import STACK_FILES, make_config, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import parse_stack_file
from tooling.oracles.crds import crd_source
from tooling.oracles.schemas import crd_dir, validate_objects

needs_crds = pytest.mark.skipif(crd_dir() is None, reason=crd_source()[1])


@needs_crds
@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_every_shipped_object_is_valid(path, preview):
    rec = recorded(path, preview)
    objects = kubernetes_objects(rec)
    report = validate_objects(objects, parse_stack_file(path).kubernetes_minor)
    assert report.errors == []
    # only the kinds whose matrix CRDs the folder lacks (KEDA's are in no reference copy: `make crds`) go unchecked
    absent = _groups_without_crds()
    assert [u for u in report.unchecked if u.split("/", 1)[0] not in absent] == []
    assert report.checked == len(objects) - len(report.unchecked) > 0
    if report.unchecked:
        pytest.skip(f"the rest is valid; no CRDs for {sorted(absent)} in {crd_dir()}: {report.unchecked}")


def _groups_without_crds() -> set[str]:
    from tooling.oracles import crds

    folder = crd_dir()
    return {
        rel.split("_", 1)[0]
        for rel in crds.expected()
        if "/" not in rel and (folder is None or not (folder / rel).is_file())
    }


@needs_crds
@pytest.mark.parametrize("adapter", ["prometheus-adapter", "none"])
def test_objects_valid_with_each_adapter(run, adapter):
    objects = kubernetes_objects(run(make_config(tpu_serving__monitoring={"adapter": adapter})))
    report = validate_objects(objects, "1.34")
    assert report.ok and not report.unchecked, report.errors


@needs_crds
def test_bad_custom_resource_is_rejected():
    bad = {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "x", "namespace": "y"},
        "spec": {"selector": {"match_labels": {"a": "b"}}, "endpoints": [{"port": 80}]},
    }
    errors = validate_objects([bad], "1.34").errors
    assert any("match_labels" in e for e in errors)  # snake_case key: unknown field
    assert any("'interval' is a required property" in e for e in errors)


def test_bad_builtin_is_rejected():
    bad = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": "http"}]}}
    errors = validate_objects([bad], "1.34").errors
    assert errors and "ports" in errors[0]


def test_unknown_custom_kind_is_reported_not_passed(monkeypatch, tmp_path):
    monkeypatch.setenv("TPU_SERVING_CRDS", str(tmp_path))
    report = validate_objects([{"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}], "1.34")
    assert report.checked == 0 and report.unchecked and report.errors == []


def test_kubernetes_minor_follows_min_master_version(tmp_path):
    path = tmp_path / "Pulumi.v.yaml"
    path.write_text(
        "config:\n  gcp:project: tpu-test-project\n  gcp:region: us-east5\n  tpu-serving:environment: dev\n"
        "  tpu-serving:cluster:\n    minMasterVersion: 1.33.5-gke.1000\n"
    )
    assert parse_stack_file(path).kubernetes_minor == "1.33"
    assert parse_stack_file(STACK_FILES[0]).kubernetes_minor == "1.34"
