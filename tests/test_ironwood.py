"""examples/ironwood: vLLM on a TPU7x multi-host slice, shaped as vLLM's own TPU7x multi-host test.

Upstream facts relied on:
- vllm-project/tpu-inference@v0.27.0 (the pinned vllm/vllm-tpu:v0.27.0) README.md: "Recommended: v7x, v5e, v6e";
- tpu-inference@v0.27.0 .buildkite/features/multi-host.yml: the multi-host correctness test serves
  Qwen3-30B-A3B with --tensor-parallel-size 16 on queue tpu_v7x_16_queue; support_matrices/release/v7x/vllm/
  feature_support_matrix.csv: "multi-host" correctness passing;
- AI-Hypercomputer/xpk@367c838 src/xpk/core/system_characteristics.py: device type f'{prefix}-{num_tensorcores}',
  so tpu7x-16 is 16 TensorCores = 8 chips (2 per chip) = the 2x2x2 slice of two tpu7x-standard-4t VMs;
- tpu-inference@v0.27.0 examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml (in the reference
  directory): vLLM's own GKE multi-host example is this shape, a LeaderWorkerSet of size 2 on tpu7x 2x2x2 with
  google.com/tpu 4 per pod and --tensor-parallel-size 16, compared field by field below.
"""

from __future__ import annotations

import pytest
import yaml

from stacks.facts import catalog
from tests.conftest import on_pool, recorded, reference_dir
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT

IRONWOOD = ROOT / "examples/ironwood/Pulumi.ironwood.yaml"
UPSTREAM = reference_dir() / "tpu-inference/examples/offload/gke/benchmarks/multi-host/deploy-baseline.yaml"


def test_ironwood_serves_vllm_on_the_slice_shape_upstream_tests():
    shape = catalog.slice_shape("tpu7x", "2x2x2")
    assert (shape.chips, shape.hosts, shape.devices) == (8, 2, 16)  # v7x-16: 16 TensorCores on 2 hosts
    rec = recorded(IRONWOOD, False)
    (lws,) = [o for o in kubernetes_objects(rec) if o["kind"] == "LeaderWorkerSet"]
    tmpl = lws["spec"]["leaderWorkerTemplate"]
    assert tmpl["size"] == shape.hosts
    for role in ("leaderTemplate", "workerTemplate"):
        pod = tmpl[role]["spec"]
        assert pod["nodeSelector"] == {
            "cloud.google.com/gke-tpu-accelerator": "tpu7x",
            "cloud.google.com/gke-tpu-topology": "2x2x2",
            "tpu-serving/pool": "iw-2x2x2",
        }
        container = pod["containers"][0]  # the server (the leader's compile-cache push beside it)
        # the pinned docker.io/vllm/vllm-tpu:v0.32.0 through the stack's Docker Hub remote repository
        assert container["image"] == "us-central1-docker.pkg.dev/my-tpu-project/docker-hub/vllm/vllm-tpu:v0.32.0"
        assert container["resources"]["limits"]["google.com/tpu"] == "4"
    leader = tmpl["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    assert "--tensor-parallel-size=16" in leader and "Qwen/Qwen3-30B-A3B" in leader
    # the slice is placed by its workload policy (no tpu_topology), as every multi-host tpu7x pool
    (node_pool,) = [
        r
        for r in rec.of_type("gcp:container/nodePool:NodePool")
        if r.inputs["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
    ]
    assert "tpuTopology" not in node_pool.inputs["placementPolicy"]
    assert node_pool.inputs["placementPolicy"]["policyName"]


@pytest.mark.skipif(not UPSTREAM.is_file(), reason=f"reference manifest missing: {UPSTREAM}")
def test_ironwood_matches_vllm_s_own_tpu7x_multi_host_gke_example():
    (theirs,) = [d for d in yaml.safe_load_all(UPSTREAM.read_text()) if d and d["kind"] == "LeaderWorkerSet"]
    (ours,) = [o for o in kubernetes_objects(recorded(IRONWOOD, False)) if o["kind"] == "LeaderWorkerSet"]
    tmpl, ref_tmpl = ours["spec"]["leaderWorkerTemplate"], theirs["spec"]["leaderWorkerTemplate"]
    assert tmpl["size"] == ref_tmpl["size"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        c, (ref_c,) = tmpl[role]["spec"]["containers"][0], ref_tmpl[role]["spec"]["containers"]
        assert tmpl[role]["spec"]["nodeSelector"] == on_pool(ref_tmpl[role]["spec"]["nodeSelector"], "iw-2x2x2")
        assert c["resources"]["limits"]["google.com/tpu"] == str(ref_c["resources"]["limits"]["google.com/tpu"])
        ref_env = {e["name"]: e.get("value") for e in ref_c["env"]}
        assert {"name": "TPU_MULTIHOST_BACKEND", "value": ref_env["TPU_MULTIHOST_BACKEND"]} in c["env"]
    ref_leader = " ".join(ref_tmpl["leaderTemplate"]["spec"]["containers"][0]["args"])
    leader = tmpl["leaderTemplate"]["spec"]["containers"][0]["command"][-1]
    assert "--tensor-parallel-size 16" in ref_leader and "--tensor-parallel-size=16" in leader
