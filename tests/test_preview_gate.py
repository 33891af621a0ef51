"""The preview gate refuses replacing or deleting the cluster, TPU pools and bucket, unless allowed."""

import json

import pytest

from tooling.review import preview_gate

STACK = "urn:pulumi:prod::tpu-serving::"
CLUSTER = STACK + "tpu-serving:cluster:Cluster$gcp:container/cluster:Cluster::cluster-gke"
TPU_POOL = STACK + "tpu-serving:tpu:TpuSlicePool$gcp:container/nodePool:NodePool::tpu-v6e-s0"
SYSTEM_POOL = STACK + "tpu-serving:cluster:Cluster$gcp:container/nodePool:NodePool::cluster-system"
BUCKET = STACK + "tpu-serving:storage:Bucket$gcp:storage/bucket:Bucket::bucket-gcs"
DEPLOYMENT = STACK + "tpu-serving:workloads:JetStream$kubernetes:apps/v1:Deployment::workload-gemma-deployment"


def preview(*steps):
    """The shape of `pulumi preview --json` (PreviewDigest, pulumi/pulumi sdk/go/common/display/json.go)."""
    return {"steps": [{"op": op, "urn": urn} for op, urn in steps], "changeSummary": {"same": len(steps)}}


def test_protected_resources():
    assert (
        preview_gate.is_protected(CLUSTER) and preview_gate.is_protected(TPU_POOL) and preview_gate.is_protected(BUCKET)
    )
    assert not preview_gate.is_protected(SYSTEM_POOL) and not preview_gate.is_protected(DEPLOYMENT)


def test_destructive_steps_on_protected_resources_are_found():
    found = preview_gate.destructive_changes(
        preview(
            ("replace", TPU_POOL),
            ("create-replacement", TPU_POOL),
            ("delete", BUCKET),
            ("update", CLUSTER),
            ("replace", SYSTEM_POOL),
            ("delete", DEPLOYMENT),
        )
    )
    assert found == [f"create-replacement {TPU_POOL}", f"delete {BUCKET}", f"replace {TPU_POOL}"]


def test_cli_fails_unless_allowed(tmp_path, capsys):
    path = tmp_path / "preview.json"
    path.write_text(json.dumps(preview(("replace", CLUSTER))))
    assert preview_gate.main([str(path)]) == 1
    assert "allow-replace" in capsys.readouterr().err
    assert preview_gate.main([str(path), "--allow"]) == 0
    path.write_text(json.dumps(preview(("update", CLUSTER), ("same", BUCKET))))
    assert preview_gate.main([str(path)]) == 0


@pytest.mark.parametrize(
    "text, reason",
    [
        ("{}", "no `changeSummary`"),
        ("", "is not JSON"),
        ("{not json", "is not JSON"),
        ("[]", "expected a JSON object"),
        ('{"changeSummary": {}, "steps": {}}', "`steps` is not a list"),
        ('{"changeSummary": {}, "steps": [{"op": "delete"}]}', "steps[0] has no `op` and `urn`"),
        ('{"changeSummary": {}, "steps": [], "diagnostics": [{"severity": "error", "message": "boom"}]}', "boom"),
    ],
)
def test_what_is_not_a_complete_preview_is_refused_even_when_allowed(tmp_path, capsys, text, reason):
    path = tmp_path / "preview.json"
    path.write_text(text)
    for extra in ([], ["--allow"]):
        assert preview_gate.main([str(path), *extra]) == 2
        err = capsys.readouterr().err
        assert "preview gate: refused:" in err and reason in err and "Traceback" not in err


def test_a_missing_file_is_refused(tmp_path, capsys):
    assert preview_gate.main([str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_complete_preview_without_steps_is_clean(tmp_path):
    """Pulumi omits `steps` when there are none (`json:"steps,omitempty"`); the change summary proves it finished."""
    path = tmp_path / "preview.json"
    path.write_text(json.dumps({"changeSummary": {}}))
    assert preview_gate.main([str(path)]) == 0


def test_a_capacity_list_pools_class_and_a_tpu7x_pools_policy_are_protected_with_the_pool(run):
    """The URNs the program registers for them (not hand-written ones) are what the gate protects."""
    from tests.conftest import make_config, pool

    rec = run(
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.2201000"},
            tpu_serving__tpuPools=[pool(tpu="tpu7x", topology="2x2x2", capacity=["spot", "on-demand"])],
        )
    )
    compute_class = rec.one("kubernetes:cloud.google.com/v1:ComputeClass")
    policy = rec.one("gcp:compute/resourcePolicy:ResourcePolicy")
    assert preview_gate.is_protected(compute_class.urn) and preview_gate.is_protected(policy.urn)
