"""The e2e finds the pool of every serving pod (e2e/cluster.py pod_pool), a ComputeClass pool's included: those pods
select `cloud.google.com/compute-class`, not `tpu-serving/pool` (stacks/serving/compute_class.py C3), so the first
e2e run of gemma-fallback found no serving pod and waited out its placement deadline. Needs no Go or cluster."""

from __future__ import annotations

from e2e.cluster import pod_pool
from stacks import naming
from stacks.serving import compute_class


def _pod(selector: dict[str, str]) -> dict:
    return {"spec": {"nodeSelector": selector}}


def test_a_pool_label_names_the_pool():
    assert pod_pool(_pod({naming.POOL_LABEL: "v6e-4"}), {}) == "v6e-4"


def test_a_compute_class_names_the_pool_its_class_is_labelled_with():
    cls = compute_class.class_name("v5e-2x4")
    pod = _pod({compute_class.COMPUTE_CLASS_LABEL: cls, "cloud.google.com/gke-tpu-topology": "2x4"})
    assert pod_pool(pod, {cls: "v5e-2x4"}) == "v5e-2x4"
    assert pod_pool(pod, {}) is None


def test_a_pod_selecting_no_pool_has_none():
    assert pod_pool(_pod({naming.ROLE_LABEL: "system"}), {"tpu-x": "x"}) is None
