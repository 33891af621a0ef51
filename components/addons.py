"""Cluster add-ons the serving workloads stand on, as the registry in stacks/addons describes them (LeaderWorkerSet
and JobSet on by default, Kueue and the PathwaysJob controller off).

Charts are installed as `helm.v3.Release` from their OCI registries at the versions pinned in stacks/facts/versions.py.
A Release is one resource that the first preview can plan before the cluster exists. Controllers run on the CPU
system pool. Custom resources of a kind depend on that kind's release and CRDs (`Addons.dependency`), so no
LeaderWorkerSet or JobSet is ever applied before its CRD and webhook exist.

CRDs of charts with several supported versions are the stack's, not Helm's: Helm never applies a chart's `crds/`
on upgrade and deletes a templated CRD (and every object of its kind) once it leaves the templates. See
`AddonCrds`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks import addons as addon_registry
from stacks import naming
from stacks.addons import Addon, CrdPolicy
from stacks.addons.addon import KEEP_CRDS
from stacks.facts.versions import CRD_KINDS, ChartCrds, ChartVersion, ManifestVersion, crd_scope
from stacks.model.local_target import REGISTRY, Sources
from stacks.pieces.addons import AddonsPlan
from stacks.security import pod_security

# Helm skips deleting an object whose LIVE annotations carry this when it leaves a release's manifest
# (helm/helm@v3.16.0 pkg/kube/client.go `Update`: info.Get(), then ResourcePolicyIsKeep(annotations)).
HELM_KEEP = {"helm.sh/resource-policy": "keep"}


def helm_ownership(chart: ChartVersion) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) that make an existing object the release's: Helm's install and upgrade adopt an object
    their manifest renders that already exists only when it carries these, and fail otherwise with "invalid
    ownership metadata" (helm/helm@v3.17.3 pkg/action/validate.go existingResourceConflict / checkOwnership)."""
    return (
        {"app.kubernetes.io/managed-by": "Helm"},
        {"meta.helm.sh/release-name": chart.release_name, "meta.helm.sh/release-namespace": chart.namespace},
    )


def release_args(
    chart: ChartVersion,
    values: dict[str, Any],
    *,
    create_namespace: bool = True,
    sources: Sources = REGISTRY,
    postrender: str | None = None,
) -> k8s.helm.v3.ReleaseArgs:
    """The release of `chart` from `sources`: its registry at the pinned version (GKE), or its source folder at that
    version (local mode, stacks/model/local_target.py)."""
    ref, version, repository = sources.chart_ref(chart)
    return k8s.helm.v3.ReleaseArgs(
        name=chart.release_name,
        chart=ref,
        version=version,
        # a chart served from an HTTP chart repository rather than an OCI registry (ChartVersion.repository)
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repository) if repository else None,
        namespace=chart.namespace,
        create_namespace=create_namespace,
        values=values,
        # The stack applies the CRDs of charts that pin them (AddonCrds); Helm would install `crds/` only once.
        skip_crds=True if chart.crds is not None else None,
        # a post-renderer over the chart's manifests (stacks/monitoring/adapters/entry.py Chart.postrender)
        postrender=postrender,
        # Roll back a failed upgrade instead of leaving a half-applied controller; keep a short history.
        atomic=True,
        cleanup_on_fail=True,
        max_history=10,
        timeout=600,
    )


def crd_provider_args(kubeconfig: pulumi.Input[str]) -> k8s.ProviderArgs:
    """The provider that applies add-on CRDs: server-side apply that takes over fields Helm set (patch force) and
    adopts a CRD that already exists (Helm created it from a template, or an earlier version of this stack did)."""
    return k8s.ProviderArgs(
        kubeconfig=kubeconfig, enable_server_side_apply=True, enable_patch_force=True, upsert_existing_objects=True
    )


class AddonCrds(pulumi.ComponentResource):
    """One add-on's CRDs at its chart version, applied from the chart's own files at the release tag, before the
    release (which skips `crds/`).

    The ConfigGroup's name is the add-on's, not the version's, and each CRD's resource name is its metadata.name, so
    a version change updates every CRD in place (server-side apply). Every CRD also carries Helm's keep annotation,
    so a chart that stops templating it (lws 0.7.0 -> 0.10.0) leaves it in place, and Helm's ownership metadata for
    the release, so a chart version that templates it (lws 0.7.0, installed or reverted to from 0.10.0) adopts the
    CRD the stack applied instead of refusing it.
    """

    group: k8s.yaml.v2.ConfigGroup
    keep: list[k8s.apiextensions.v1.CustomResourceDefinitionPatch]

    def __init__(
        self,
        name: str,
        *,
        crds: ChartCrds,
        chart: ChartVersion,
        crd_provider: k8s.Provider,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
        sources: Sources = REGISTRY,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:addons:AddonCrds", name, None, opts)
        self.group = k8s.yaml.v2.ConfigGroup(
            name,
            files=list(sources.crd_files(crds, chart)),
            opts=pulumi.ResourceOptions(parent=self, provider=crd_provider, depends_on=depends_on),
        )
        labels, annotations = helm_ownership(chart)
        self.keep = [
            k8s.apiextensions.v1.CustomResourceDefinitionPatch(
                f"{name}-keep-{crd}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(
                    name=crd, labels=labels, annotations={**HELM_KEEP, **annotations}
                ),
                # the provider's Check caches every CRD by group and kind, a patch too (versions.CRD_KINDS)
                # and its scope, which the cache answers "namespaced?" from (versions.CLUSTER_SCOPED_CRDS)
                spec=k8s.apiextensions.v1.CustomResourceDefinitionSpecPatchArgs(
                    group=crd.split(".", 1)[1],
                    names=k8s.apiextensions.v1.CustomResourceDefinitionNamesPatchArgs(kind=CRD_KINDS[crd]),
                    scope=crd_scope(crd),
                ),
                # Deleting a Patch releases its fields, and the API server refuses to release a required one
                # (spec.group) from this manager: the provider then fails the delete ("this Patch resource is
                # currently managing a required field, so it can't be deleted directly. Either set the
                # `retainOnDelete` resource option, ...", pulumi/pulumi-kubernetes provider/v4 pkg/provider/
                # provider.go Delete), which stopped the first real `pulumi destroy` (make e2e). Retained, it
                # leaves only its annotations and labels on the CRD, which the group deletes next (it depends on the
                # group, so it goes first) or which stay on a CRD the stack still applies.
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[self.group], retain_on_delete=True
                ),
            )
            for crd in crds.names
        ]
        self.register_outputs({"urls": list(crds.urls), "names": list(crds.names)})


@dataclass(frozen=True)
class AddonsDeps:
    """The cluster the add-ons go into: its Kubernetes provider, its kubeconfig (for the CRD provider), and what
    controllers wait for (its system pool, where they run)."""

    provider: k8s.Provider
    kubeconfig: pulumi.Input[str]
    after: Sequence[pulumi.Resource] = ()
    sources: Sources = REGISTRY
    """Where charts, CRD files and manifests come from (stacks/model/local_target.py)."""


class Addons(pulumi.ComponentResource):
    """Every add-on the config enables, as its registry entry (stacks/addons) describes it; no per-add-on code."""

    releases: dict[str, k8s.helm.v3.Release]
    """Installed chart releases by add-on key."""
    crds: dict[str, AddonCrds]
    """The stack-managed CRDs by add-on key (charts whose versions pin their CRD files)."""
    manifests: dict[str, k8s.yaml.v2.ConfigFile]
    """Upstream release manifests applied, by add-on key."""

    def __init__(
        self,
        name: str,
        *,
        plan: AddonsPlan,
        deps: AddonsDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """The add-ons `plan` enables (stacks/pieces/addons.py), in the cluster of `deps`."""
        super().__init__("tpu-serving:addons:Addons", name, None, opts)
        self._stem, self._k8s_provider, self._kubeconfig = name, deps.provider, deps.kubeconfig
        self._sources = deps.sources
        # Controllers need somewhere to run: wait for the system pool, not just the control plane.
        self._after = list(deps.after)
        self._crd_provider: k8s.Provider | None = None
        self.releases, self.crds, self.manifests = {}, {}, {}
        self._admitted: dict[str, list[str]] = {}  # namespace -> add-ons whose webhooks admit its objects
        for entry, settings in addon_registry.enabled(plan.settings):
            release = entry.release(settings)
            for ns in entry.admits(settings):
                self._admitted.setdefault(ns, []).append(entry.key)
            needed = [r for key in entry.needs(release) for r in self.dependency(key)]
            if isinstance(release, ChartVersion):
                values = entry.chart_values(release, settings)
                self._install_chart(entry, release, values, needed, plan.kubernetes_minor)
            else:
                self._apply_manifest(entry, release, needed)
        self.register_outputs(
            {"releases": sorted(self.releases), "crds": sorted(self.crds), "manifests": sorted(self.manifests)}
        )

    def _install_chart(
        self, entry: Addon[Any], chart: ChartVersion, values: dict[str, Any], needed: list[pulumi.Resource], minor: str
    ) -> None:
        key, stem = entry.key, f"{self._stem}-{entry.resource_name}"
        child = pulumi.ResourceOptions(parent=self, provider=self._k8s_provider, depends_on=[*self._after, *needed])
        # The namespace is ours, not Helm's: it carries the Pod Security labels, and `pulumi destroy` removes
        # it (Helm never deletes a namespace it created).
        if entry.pod_security is None:
            raise ValueError(f"add-on {key!r} is a chart without a Pod Security level for its namespace")
        labels = pod_security.namespace_labels(entry.pod_security, minor)
        namespace = k8s.core.v1.Namespace(
            f"{stem}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=chart.namespace, labels={**naming.MANAGED_BY_LABELS, **labels}),
            opts=child,
        )
        before: list[pulumi.Resource] = [namespace]
        if entry.crd_policy(chart) in (CrdPolicy.STACK, CrdPolicy.ADOPTED):
            self.crds[key] = self._crds(stem, chart, self._after)
            before += [self.crds[key].group, *self.crds[key].keep]
        # Helm's own CRDs stay when the release goes (the add-on disabled): KEEP_CRDS marks them in its manifest
        postrender = KEEP_CRDS if entry.crd_policy(chart) is CrdPolicy.HELM else None
        self.releases[key] = k8s.helm.v3.Release(
            stem,
            release_args(chart, values, create_namespace=False, sources=self._sources, postrender=postrender),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before)),
        )

    def _crds(self, stem: str, chart: ChartVersion, after: list[pulumi.Resource]) -> AddonCrds:
        assert chart.crds is not None  # the policy is STACK or ADOPTED
        if self._crd_provider is None:
            self._crd_provider = k8s.Provider(
                f"{self._stem}-crds-k8s",
                crd_provider_args(self._kubeconfig),
                opts=pulumi.ResourceOptions(parent=self),
            )
        return AddonCrds(
            f"{stem}-crds",
            crds=chart.crds,
            chart=chart,
            crd_provider=self._crd_provider,
            provider=self._k8s_provider,
            depends_on=after,
            sources=self._sources,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _apply_manifest(self, entry: Addon[Any], manifest: ManifestVersion, needed: list[pulumi.Resource]) -> None:
        # The upstream release manifest, applied server-side as its README says, after the add-ons it needs.
        self.manifests[entry.key] = k8s.yaml.v2.ConfigFile(
            f"{self._stem}-{entry.resource_name}",
            file=self._sources.manifest_file(manifest),
            opts=pulumi.ResourceOptions(parent=self, provider=self._k8s_provider, depends_on=[*needed, *self._after]),
        )

    def admission(self, namespace: str) -> list[pulumi.Resource]:
        """What a namespace must wait for: the releases of the add-ons whose admission webhooks intercept its objects
        (`Addon.admits`), so nothing there is created before the webhook serves. Helm waits for the release's
        Deployments to be ready (the Release is not `skip_await`)."""
        return [r for key in self._admitted.get(namespace, []) for r in self.dependency(key)]

    def dependency(self, addon: str) -> list[pulumi.Resource]:
        """What a custom resource of this add-on must depend on (its release and CRDs), for `depends_on`."""
        manifest = self.manifests.get(addon)
        if manifest is not None:
            return [manifest]
        release = self.releases.get(addon)
        if release is None:
            raise ValueError(f"add-on {addon!r} is not installed; enable tpu-serving:addons.{addon}")
        crds = self.crds.get(addon)
        return [release] if crds is None else [release, crds.group, *crds.keep]
