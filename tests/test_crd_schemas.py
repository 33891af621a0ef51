"""The recorded CRD schemas (tooling/data/crd_schemas.json, tooling/oracles/crd_schemas.py): what CI validates KEDA's objects
against, since neither ../shared/reference nor CI holds kedacore/keda@v2.20.2:config/crd/bases.

Sources: the pins (repo, tag, path, sha256) in stacks/facts/versions.py CRDS["keda"]["2.20.2"], which `make crds`
checks on download; the files themselves where they are at hand (the `make crds` cache, $TPU_SERVING_CRDS).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from stacks.facts import versions
from tooling.oracles import crd_schemas, schemas
from tooling.oracles.crds import crd_source


def test_the_record_names_each_pinned_file_with_its_origin_and_sum():
    record = json.loads(crd_schemas.DATA.read_text())
    assert record["origin"] and record["generatedBy"] == "python -m tooling.oracles.crd_schemas"
    pinned = {c.file_name: c for c in versions.CRDS["keda"]["2.20.2"]}
    assert set(record["crds"]) == set(pinned)
    for name, entry in record["crds"].items():
        crd = pinned[name]
        assert entry["source"] == f"kedacore/keda@v2.20.2:config/crd/bases/{name}" == crd_schemas.origin(crd)
        assert entry["sha256"] == crd.sha256
        # <group>_<plural>.yaml: keda.sh and eventing.keda.sh
        assert entry["group"] == name.split("_", 1)[0] and list(entry["versions"]) == ["v1alpha1"]
    kinds = {e["kind"] for e in record["crds"].values()}
    assert kinds == {
        "ScaledObject",
        "ScaledJob",
        "TriggerAuthentication",
        "ClusterTriggerAuthentication",
        "CloudEventSource",
        "ClusterCloudEventSource",
    }


def test_the_record_equals_the_upstream_files_where_they_are_at_hand():
    directory, why = crd_source()
    missing = [
        c.file_name for c in crd_schemas.recorded_files() if not directory or not (directory / c.file_name).is_file()
    ]
    if missing:
        pytest.skip(f"{', '.join(missing)} not at hand ({why}): run `make crds` (or set $TPU_SERVING_CRDS)")
    assert directory is not None
    for crd in crd_schemas.recorded_files():
        assert hashlib.sha256((directory / crd.file_name).read_bytes()).hexdigest() == crd.sha256, crd.file_name
    entries, absent = crd_schemas.read(directory)
    assert not absent and entries == crd_schemas.load(), (
        "run `python -m tooling.oracles.crd_schemas` and commit the record"
    )
    # and validation reads the files, which say the same
    for (api_version, kind), schema in crd_schemas.schemas("keda.sh").items():
        files = schemas._crd_schemas(str(directory), "keda.sh")[(api_version, kind)]
        assert crd_schemas.without_prose(files) == schemas.strict(schema)


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    crd = crd_schemas.recorded_files()[0]
    with pytest.raises(ValueError, match="is not the pinned"):
        crd_schemas.extract(crd, b"kind: CustomResourceDefinition\n")


def test_prose_goes_but_a_field_named_description_stays():
    schema = {
        "description": "prose",
        "type": "object",
        "properties": {"description": {"type": "string", "description": "prose"}, "x": {"description": "p"}},
    }
    assert crd_schemas.without_prose(schema) == {
        "type": "object",
        "properties": {"description": {"type": "string"}, "x": {}},
    }


def test_validation_uses_the_record_when_no_crd_file_is_at_hand(tmp_path, monkeypatch):
    monkeypatch.setenv("TPU_SERVING_CRDS", str(tmp_path))  # an empty CRD folder
    auth = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ClusterTriggerAuthentication",
        "metadata": {"name": "a"},
        "spec": {"podIdentity": {"provider": "gcp"}},
    }
    report = schemas.validate_objects([auth], versions.DEFAULT_KUBERNETES_MINOR)
    assert report.checked == 1 and not report.errors and not report.unchecked
    # the CRD's podIdentity.provider enum (azure-workload, gcp, aws, aws-eks, none): a typo fails
    typo = {**auth, "spec": {"podIdentity": {"provider": "gke"}}}
    report = schemas.validate_objects([typo], versions.DEFAULT_KUBERNETES_MINOR)
    assert report.checked == 1 and report.errors
