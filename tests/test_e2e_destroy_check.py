"""The e2e's destroy check (e2e/run_example.py later_steps): a CRD the stack keeps on purpose (Kueue's, helm.sh/
resource-policy: keep) stays after `destroy`, and so do the APIServices kube-apiserver registers for it
(`<version>.<group>` per served version, no service: k8s.io/kubernetes@v1.35.4
pkg/controlplane/controller/crdregistration/crdregistration_controller.go). Seen in make e2e on pathways-job:
`destroy left: {'apiservices': ['v1beta1.kueue.x-k8s.io', 'v1beta2.kueue.x-k8s.io']}`. Pure: a stub API."""

from __future__ import annotations

from typing import Any

from e2e import cluster as c


class StubKube:
    def __init__(self, objects: dict[str, dict[str, Any]], lists: dict[str, list[dict[str, Any]]]) -> None:
        self.objects, self.lists = objects, lists

    def get(self, path: str) -> dict[str, Any]:
        if path not in self.objects:
            raise c.KubeError(404, path)
        return self.objects[path]

    def items(self, path: str) -> list[dict[str, Any]]:
        return self.lists.get(path, [])


def crd(name: str, group: str, *versions: tuple[str, bool]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"group": group, "versions": [{"name": v, "served": served} for v, served in versions]},
    }


def api(name: str, service: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"service": service} if service else {}}


def test_only_the_api_servers_own_apiservices_of_the_kept_crds_are_expected():
    crds = c.CLUSTER_SCOPED["crds"]
    kube = StubKube(
        {
            f"{crds}/workloads.kueue.x-k8s.io": crd(
                "workloads.kueue.x-k8s.io", "kueue.x-k8s.io", ("v1beta1", True), ("v1beta2", True), ("v1alpha1", False)
            ),
        },
        {
            c.CLUSTER_SCOPED["apiservices"]: [
                api("v1beta1.kueue.x-k8s.io"),
                api("v1beta2.kueue.x-k8s.io"),
                api("v1beta1.external.metrics.k8s.io", {"name": "keda-operator-metrics-apiserver", "namespace": "x"}),
                api("v1.jobset.x-k8s.io"),
            ]
        },
    )
    found = c.crd_api_services(kube, {"workloads.kueue.x-k8s.io", "gone.example.com"})
    assert found == {"v1beta1.kueue.x-k8s.io", "v1beta2.kueue.x-k8s.io"}
    assert c.crd_api_services(kube, set()) == set()
