"""Disabling an add-on whose CRDs Helm manages leaves its CRDs, and so every object of their kinds (issue 36 #8).

kubernetes-sigs/kueue@v0.17.1 charts/kueue/templates/crd/ templates eleven CRDs, with no value that turns them off
and no `helm.sh/resource-policy: keep`: the release's uninstall (`addons.kueue.enabled: false`) would delete them, and
with them every ClusterQueue, LocalQueue, ResourceFlavor and Workload operators made. Helm's uninstall keeps what the
release's stored manifest annotates with the keep policy (helm/helm@v3.20.2 pkg/action/uninstall.go deleteRelease,
pkg/action/resource_policy.go filterManifestsToKeep; pulumi-kubernetes's Release runs that uninstall,
provider/pkg/provider/helm_release.go Delete, helm.sh/helm/v3 v3.20.2 in its go.mod), and the stored manifest is the
post-rendered one (pkg/action/action.go renderResources). So such a release runs scripts/helm_postrender_keep_crds.py.

The stack's own CRD route (stacks/facts/versions.py ChartCrds, applied from the repository at the tag) does not fit Kueue:
config/components/crd/bases/ lacks the conversion webhooks the chart's CRDs carry (config/components/crd/
kustomization.yaml patches them in, webhook_in_*.yaml), so the chart's own CRDs are kept instead.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from stacks import addons as addon_registry
from stacks.addons.addon import KEEP_CRDS, CrdPolicy
from tests.conftest import make_config, session_run
from tests.helm_charts import assert_standalone_script, post_renderer, render_release

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / KEEP_CRDS
RELEASE = "kubernetes:helm.sh/v3:Release"
KEEP = {"helm.sh/resource-policy": "keep"}


def _every_addon_on() -> dict[str, Any]:
    return make_config(
        tpu_serving__addons={entry.key: {"enabled": True} for entry in addon_registry.ADDONS if entry.key != "keda"}
    )


def _post_render(text: str) -> str:
    out: str = post_renderer(SCRIPT).post_render(text)
    return out


def test_every_release_whose_crds_helm_manages_keeps_them():
    """Over every add-on of the registry, enabled: a chart release runs the keep post-renderer exactly when Helm
    manages its CRDs (the others' CRDs are the stack's, AddonCrds, kept by Helm's keep annotation on the live CRD)."""
    rec = session_run(_every_addon_on())
    releases = {r.inputs["name"]: r for r in rec.of_type(RELEASE)}
    checked = 0
    for entry in addon_registry.ADDONS:
        release = entry.releases[entry.default_version]
        policy = entry.crd_policy(release)
        if policy is CrdPolicy.MANIFEST or entry.key == "keda":
            continue
        registered = releases[release.release_name].inputs
        assert (registered.get("postrender") == KEEP_CRDS) == (policy is CrdPolicy.HELM), entry.key
        checked += policy is CrdPolicy.HELM
    assert checked, "no add-on whose CRDs Helm manages: the rule checked nothing"


def test_the_kueue_release_keeps_every_crd_it_templates_and_changes_nothing_else():
    """The pinned Helm renders kubernetes-sigs/kueue@v0.17.1 charts/kueue with the registered release's values and
    post-renderer: every CRD carries the keep policy; without the policy, the objects are those of a plain render."""
    rec = session_run(_every_addon_on())
    (kueue,) = [r for r in rec.of_type(RELEASE) if r.inputs["name"] == "kueue"]
    assert kueue.inputs["postrender"] == KEEP_CRDS
    kept = render_release(kueue)
    plain_registration = copy.deepcopy(kueue)
    del plain_registration.inputs["postrender"]
    plain = render_release(plain_registration)
    crds = [o for o in kept if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) == 11, [o["metadata"]["name"] for o in crds]  # charts/kueue/templates/crd/
    for crd in crds:
        assert crd["metadata"]["annotations"].items() >= KEEP.items(), crd["metadata"]["name"]
        # the chart's conversion webhook stays (the reason the repository's bases files are not used)
        assert crd["spec"].get("conversion", {}).get("strategy") in (None, "None", "Webhook")
    assert any(c["spec"].get("conversion", {}).get("strategy") == "Webhook" for c in crds)
    unkept = copy.deepcopy(kept)
    for obj in unkept:
        if obj["kind"] == "CustomResourceDefinition":
            del obj["metadata"]["annotations"]["helm.sh/resource-policy"]
    # the chart's two aggregated ClusterRoles are left out (scripts/helm_postrender_keep_crds.py: their deletion
    # races the clusterrole-aggregation-controller, which re-creates them), nothing else
    aggregated = [o for o in plain if o["kind"] == "ClusterRole" and "aggregationRule" in o]
    assert sorted(o["metadata"]["name"] for o in aggregated) == ["kueue-batch-admin-role", "kueue-batch-user-role"]
    assert unkept == [o for o in plain if o not in aggregated]
    assert not [o for o in kept if o["kind"] == "ClusterRole" and "aggregationRule" in o]
    assert not [o for o in plain if (o["metadata"].get("annotations") or {}).get("helm.sh/resource-policy")]


def test_the_post_renderer_annotates_each_crds_own_metadata():
    stream = (
        "---\n# Source: a.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n"
        "  labels:\n    a: b\n  annotations:\n    controller-gen.kubebuilder.io/version: v0.20.1\n  name: a.x\n"
        "spec:\n  versions:\n  - schema:\n      metadata:\n        annotations:\n          x: y\n"
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: b.x\n"
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations: {}\n"
        "  name: c.x\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  annotations:\n    e: f\n"
        "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  annotations:\n"
        "    helm.sh/resource-policy: keep\n  name: e.x\n"
    )
    out = _post_render(stream)
    assert out.count("helm.sh/resource-policy: keep") == 4
    assert (
        "  annotations:\n    helm.sh/resource-policy: keep\n    controller-gen.kubebuilder.io/version: v0.20.1\n" in out
    )
    assert "metadata:\n  annotations:\n    helm.sh/resource-policy: keep\n  name: b.x\n" in out
    assert "metadata:\n  annotations:\n    helm.sh/resource-policy: keep\n  name: c.x\n" in out
    assert "        annotations:\n          x: y\n" in out  # a nested `metadata` is the schema's, untouched
    assert "  name: d\n  annotations:\n    e: f\n" in out  # not a CRD
    assert _post_render("") == ""


def test_the_post_renderer_refuses_what_it_cannot_read():
    module = post_renderer(SCRIPT)
    head = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
    for body in (
        "metadata:\n  annotations: {a: b}\n  name: x\n",  # a flow mapping
        "metadata:\n  annotations:\n    helm.sh/resource-policy: delete\n",  # another policy
        "spec: {}\n",  # no metadata
    ):
        with pytest.raises(module.Unreadable):
            module.post_render(head + body)


def test_the_post_renderer_is_an_executable_on_the_standard_library():
    assert_standalone_script(SCRIPT)


def test_the_post_renderer_leaves_out_aggregated_cluster_roles_only():
    aggregated = (
        "---\n# Source: kueue/templates/rbac/batch_admin_role.yaml\napiVersion: rbac.authorization.k8s.io/v1\n"
        "kind: ClusterRole\nmetadata:\n  name: kueue-batch-admin-role\naggregationRule:\n  clusterRoleSelectors:\n"
        '    - matchLabels:\n        rbac.kueue.x-k8s.io/batch-admin: "true"\n'
    )
    plain = (
        "---\n# Source: kueue/templates/rbac/job_editor_role.yaml\napiVersion: rbac.authorization.k8s.io/v1\n"
        'kind: ClusterRole\nmetadata:\n  labels:\n    rbac.kueue.x-k8s.io/batch-admin: "true"\n'
        "  name: kueue-job-editor-role\nrules:\n- apiGroups: [batch]\n  resources: [jobs]\n  verbs: [get]\n"
    )
    assert _post_render(aggregated + plain) == plain
    assert _post_render(plain) == plain
