"""The keep patch of every CRD the stack applies carries the CRD's spec.group, spec.names.kind and spec.scope.

The Kubernetes provider's Check adds every CustomResourceDefinition it sees, a CustomResourceDefinitionPatch included,
to its CRD cache keyed by group and kind, and fails without them: "expected .spec.group"
(pulumi/pulumi-kubernetes provider/pkg/clients/cache.go groupKindFromCRD, called from provider/pkg/provider/provider.go
Check). The first real `pulumi up` (make e2e, gemma-fallback) stopped there on addons-jobset-crds-keep-*.

Because it manages spec.group, a required field, the provider cannot delete the patch (it would release the field):
"this Patch resource is currently managing a required field, so it can't be deleted directly. Either set the
`retainOnDelete` resource option, or transfer ownership of the field before deleting" (pulumi/pulumi-kubernetes
provider/v4 pkg/provider/provider.go Delete). The first real `pulumi destroy` (make e2e, gemma-fallback) stopped
there: every keep patch is retained, and the CRD goes with the ConfigGroup that applies it, which the patch depends on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stacks.facts import versions
from tests.conftest import STACK_FILES, recorded
from tooling.review.render import stack_name

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT.parent / "shared" / "reference"


def _every_crd() -> dict[str, tuple[str, str, str]]:
    """CRD name -> (repo, tag, path), over every version of every chart that applies its CRDs itself."""
    out = {}
    for chart in versions.CHARTS.values():
        for release in chart.values():
            if release.crds:
                for name, path in zip(release.crds.names, release.crds.paths, strict=True):
                    out[name] = (release.crds.repo, release.crds.tag, path)
    return out


def test_every_crd_the_stack_applies_has_its_kind():
    assert set(_every_crd()) <= set(versions.CRD_KINDS), sorted(set(_every_crd()) - set(versions.CRD_KINDS))


@pytest.mark.parametrize("name", sorted(_every_crd()))
def test_the_kind_is_the_upstream_files(name: str):
    recorded = json.loads((ROOT / "tooling" / "data" / "crd_schemas.json").read_text())["crds"]
    file_name = _every_crd()[name][2].rsplit("/", 1)[-1]
    if file_name in recorded:
        assert recorded[file_name]["kind"] == versions.CRD_KINDS[name]
        return
    found = sorted(REFERENCE.rglob(file_name)) if REFERENCE.exists() else []
    if not found:
        pytest.skip(f"no copy of {file_name} in {REFERENCE} (../shared/reference)")
    crd = next(d for d in yaml.safe_load_all(found[0].read_text()) if d)
    assert crd["spec"]["names"]["kind"] == versions.CRD_KINDS[name]
    assert crd["spec"]["group"] == name.split(".", 1)[1]


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_the_keep_patch_carries_group_and_kind(path: Path):
    for res in recorded(path, False).of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"):
        name = res.inputs["metadata"]["name"]
        assert res.inputs["spec"]["group"] == name.split(".", 1)[1], res.name
        assert res.inputs["spec"]["names"]["kind"] == versions.CRD_KINDS[name], res.name
        # and the scope: the provider's CRD cache answers "is this kind namespaced?" from the last CRD it Checked,
        # the patch; without "Namespaced" its Diff ignores a namespace change (versions.CLUSTER_SCOPED_CRDS)
        assert res.inputs["spec"]["scope"] == versions.crd_scope(name), res.name


@pytest.mark.parametrize("name", sorted(versions.CRD_KINDS))
def test_the_scope_is_the_upstream_files(name: str):
    """pulumi/pulumi-kubernetes provider/v4 pkg/clients/clients.go IsNamespacedKind reads `spec.scope` of the cached
    CRD; the patch must say what the upstream CRD says."""
    group, plural = name.split(".", 1)[1], name.split(".", 1)[0]
    found = sorted(REFERENCE.rglob(f"{group}_{plural}.yaml")) if REFERENCE.exists() else []
    if not found:
        pytest.skip(f"no copy of {group}_{plural}.yaml in {REFERENCE} (../shared/reference)")
    for path in found:
        crd = next(d for d in yaml.safe_load_all(path.read_text()) if d)
        assert crd["spec"]["scope"] == versions.crd_scope(name), path


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_the_keep_patch_is_retained_and_its_crd_deleted_by_its_group(path: Path):
    rec = recorded(path, False)
    by_urn = {r.urn: r for r in rec.resources}
    for res in rec.of_type("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"):
        assert res.retain_on_delete, res.name
        groups = [by_urn[d] for d in res.dependencies if by_urn[d].type == "kubernetes:yaml/v2:ConfigGroup"]
        assert groups and not any(g.retain_on_delete for g in groups), res.name
