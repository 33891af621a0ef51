"""The preview gate refuses replacing or deleting the cluster, TPU pools and bucket, unless allowed."""

import json

from tooling import preview_gate

STACK = "urn:pulumi:prod::tpu-serving::"
CLUSTER = STACK + "tpu-serving:cluster:Cluster$gcp:container/cluster:Cluster::cluster-gke"
TPU_POOL = STACK + "tpu-serving:tpu:TpuSlicePool$gcp:container/nodePool:NodePool::tpu-v6e-s0"
SYSTEM_POOL = STACK + "tpu-serving:cluster:Cluster$gcp:container/nodePool:NodePool::cluster-system"
BUCKET = STACK + "tpu-serving:storage:Bucket$gcp:storage/bucket:Bucket::bucket-gcs"
DEPLOYMENT = STACK + "tpu-serving:workloads:JetStream$kubernetes:apps/v1:Deployment::workload-gemma-deployment"


def preview(*steps):
    return {"steps": [{"op": op, "urn": urn} for op, urn in steps]}


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
