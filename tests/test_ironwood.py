"""examples/ironwood: vLLM on a TPU7x multi-host slice, shaped as vLLM's own TPU7x multi-host test.

Upstream facts relied on:
- vllm-project/tpu-inference@v0.27.0 (the pinned vllm/vllm-tpu:v0.27.0) README.md: "Recommended: v7x, v5e, v6e";
- tpu-inference@v0.27.0 .buildkite/features/multi-host.yml: the multi-host correctness test serves
  Qwen3-30B-A3B with --tensor-parallel-size 16 on queue tpu_v7x_16_queue; support_matrices/release/v7x/vllm/
  feature_support_matrix.csv: "multi-host" correctness passing;
- AI-Hypercomputer/xpk@367c838 src/xpk/core/system_characteristics.py: device type f'{prefix}-{num_tensorcores}',
  so tpu7x-16 is 16 TensorCores = 8 chips (2 per chip) = the 2x2x2 slice of two tpu7x-standard-4t VMs.
"""

from __future__ import annotations

from stacks import catalog
from tests.conftest import recorded
from tooling.k8s_objects import kubernetes_objects
from tooling.offline import ROOT

IRONWOOD = ROOT / "examples/ironwood/Pulumi.ironwood.yaml"


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
        }
        (container,) = pod["containers"]
        assert container["image"] == "docker.io/vllm/vllm-tpu:v0.27.0"
        assert container["resources"]["limits"]["google.com/tpu"] == 4
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
