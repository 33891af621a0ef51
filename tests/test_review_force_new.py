"""The review calls a change a replacement where the Kubernetes provider replaces the object (tooling/review/
transition.py FORCE_NEW, from pulumi/pulumi-kubernetes provider/v4 pkg/provider/diff.go forceNew): the first real
namespace change of gemma-hpa-prometheus (make e2e) replaced the prometheus-adapter rules ConfigMap, whose data
names the workload's namespace, while the review called it in place."""

from __future__ import annotations

from tooling.harness.offline import Registration
from tooling.review import transition


def _reg(type_: str, **inputs) -> Registration:
    return Registration(type=type_, name="x", urn=f"urn:pulumi:s::p::{type_}::x", custom=True, inputs=inputs)


def test_a_configmaps_data_change_replaces_it_and_a_label_change_does_not() -> None:
    cm = "kubernetes:core/v1:ConfigMap"
    old = _reg(cm, metadata={"name": "rules", "labels": {"a": "1"}}, data={"config.yaml": "a"})
    assert transition._replaced(
        old, _reg(cm, metadata={"name": "rules", "labels": {"a": "1"}}, data={"config.yaml": "b"})
    )
    assert not transition._replaced(
        old, _reg(cm, metadata={"name": "rules", "labels": {"a": "2"}}, data={"config.yaml": "a"})
    )


def test_a_secrets_data_a_jobs_template_and_a_bindings_role_replace_them() -> None:
    secret = "kubernetes:core/v1:Secret"
    assert transition._replaced(_reg(secret, stringData={"k": "a"}), _reg(secret, stringData={"k": "b"}))
    job = "kubernetes:batch/v1:Job"
    assert transition._replaced(_reg(job, spec={"template": {"a": 1}}), _reg(job, spec={"template": {"a": 2}}))
    assert not transition._replaced(_reg(job, spec={"ttlSecondsAfterFinished": 1, "template": {}}),
                                    _reg(job, spec={"ttlSecondsAfterFinished": 2, "template": {}}))  # fmt: skip
    binding = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
    assert transition._replaced(_reg(binding, roleRef={"name": "a"}), _reg(binding, roleRef={"name": "b"}))
    assert not transition._replaced(
        _reg(binding, roleRef={"name": "a"}, subjects=[]), _reg(binding, roleRef={"name": "a"}, subjects=[{"n": 1}])
    )
