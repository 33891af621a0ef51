"""Cluster add-ons the serving workloads stand on: LeaderWorkerSet and JobSet (on by default), Kueue and the
PathwaysJob controller (off by default).

Charts are installed as `helm.v3.Release` from their OCI registries at the versions pinned in stacks/versions.py.
A Release is one resource that the first preview can plan before the cluster exists. Controllers run on the CPU
system pool. Custom resources of a kind depend on that kind's release and CRDs (`Addons.dependency`), so no
LeaderWorkerSet or JobSet is ever applied before its CRD and webhook exist.

CRDs of charts with several supported versions are the stack's, not Helm's: Helm never applies a chart's `crds/`
on upgrade and deletes a templated CRD (and every object of its kind) once it leaves the templates. See
`AddonCrds`.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks import addon_values, naming, pod_security
from stacks.config import StackConfig
from stacks.versions import ChartCrds, ChartVersion

# Helm skips deleting an object whose LIVE annotations carry this when it leaves a release's manifest
# (helm/helm@v3.16.0 pkg/kube/client.go `Update`: info.Get(), then ResourcePolicyIsKeep(annotations)).
HELM_KEEP = {"helm.sh/resource-policy": "keep"}


def release_args(
    chart: ChartVersion, values: dict[str, Any], *, create_namespace: bool = True
) -> k8s.helm.v3.ReleaseArgs:
    return k8s.helm.v3.ReleaseArgs(
        name=chart.release_name,
        chart=chart.chart,
        version=chart.version,
        namespace=chart.namespace,
        create_namespace=create_namespace,
        values=values,
        # The stack applies the CRDs of charts that pin them (AddonCrds); Helm would install `crds/` only once.
        skip_crds=True if chart.crds is not None else None,
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
    """One add-on's CRDs at its chart version, applied from the chart's own files at the release tag.

    The ConfigGroup's name is the add-on's, not the version's, and each CRD's resource name is its metadata.name, so
    a version change updates every CRD in place (server-side apply) and never deletes one. Every CRD also carries
    Helm's keep annotation, so a chart that stops templating it (lws 0.7.0 -> 0.10.0) leaves it in place.
    A chart that templates its CRD creates it on install: the group then follows the release; otherwise it precedes
    it, and the release skips `crds/`.
    """

    group: k8s.yaml.v2.ConfigGroup
    keep: list[k8s.apiextensions.v1.CustomResourceDefinitionPatch]

    def __init__(
        self,
        name: str,
        *,
        crds: ChartCrds,
        crd_provider: k8s.Provider,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:addons:AddonCrds", name, None, opts)
        self.group = k8s.yaml.v2.ConfigGroup(
            name,
            files=list(crds.urls),
            opts=pulumi.ResourceOptions(parent=self, provider=crd_provider, depends_on=depends_on),
        )
        self.keep = [
            k8s.apiextensions.v1.CustomResourceDefinitionPatch(
                f"{name}-keep-{crd}",
                metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=crd, annotations=dict(HELM_KEEP)),
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.group]),
            )
            for crd in crds.names
        ]
        self.register_outputs({"urls": list(crds.urls), "names": list(crds.names)})


class Addons(pulumi.ComponentResource):
    releases: dict[str, k8s.helm.v3.Release]
    """Installed releases by add-on: lws, jobset, kueue."""
    crds: dict[str, AddonCrds]
    """The stack-managed CRDs by add-on (charts whose versions pin their CRD files)."""
    pathways_job: k8s.yaml.v2.ConfigFile | None

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        kubeconfig: pulumi.Input[str],
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:addons:Addons", name, None, opts)
        addons = config.addons
        # Controllers need somewhere to run: wait for the system pool, not just the control plane.
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        self.releases = {}
        self.crds = {}
        crd_providers: list[k8s.Provider] = []

        def add_crds(key: str, crds: ChartCrds, after: list[pulumi.Resource]) -> AddonCrds:
            if not crd_providers:
                crd_providers.append(
                    k8s.Provider(
                        f"{name}-crds-k8s", crd_provider_args(kubeconfig), opts=pulumi.ResourceOptions(parent=self)
                    )
                )
            return AddonCrds(
                f"{name}-{key}-crds",
                crds=crds,
                crd_provider=crd_providers[0],
                provider=provider,
                depends_on=after,
                opts=pulumi.ResourceOptions(parent=self),
            )

        builders = {
            "lws": (addons.lws, addon_values.lws_values),
            "jobset": (addons.jobset, addon_values.jobset_values),
            "kueue": (addons.kueue, addon_values.kueue_values),
        }
        for key, (addon, values) in builders.items():
            if not addon.enabled:
                continue
            chart = config.chart(key)
            # The namespace is ours, not Helm's: it carries the Pod Security labels, and `pulumi destroy` removes
            # it (Helm never deletes a namespace it created).
            labels = pod_security.namespace_labels(addon_values.CHART_POD_SECURITY[key], config.kubernetes_minor)
            namespace = k8s.core.v1.Namespace(
                f"{name}-{key}-ns",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=chart.namespace, labels={**naming.MANAGED_BY_LABELS, **labels}
                ),
                opts=child,
            )
            before: list[pulumi.Resource] = [namespace]
            if chart.crds is not None and not chart.crds.templated:
                self.crds[key] = add_crds(key, chart.crds, list(depends_on or []))
                before += [self.crds[key].group, *self.crds[key].keep]
            self.releases[key] = k8s.helm.v3.Release(
                f"{name}-{key}",
                release_args(chart, values(chart, addon.values), create_namespace=False),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=before)),
            )
            if chart.crds is not None and chart.crds.templated:
                # The chart creates the CRD from its template on install; the group adopts it afterwards.
                self.crds[key] = add_crds(key, chart.crds, [self.releases[key]])

        self.pathways_job = None
        if addons.pathways_job.enabled:
            manifest = config.pathways_job
            # The upstream release manifest, applied server-side as its README says; needs JobSet's CRDs first.
            self.pathways_job = k8s.yaml.v2.ConfigFile(
                f"{name}-pathways-job",
                file=manifest.url,
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[*self.dependency("jobset"), *(depends_on or [])]
                ),
            )
        self.register_outputs(
            {"releases": sorted(self.releases), "crds": sorted(self.crds), "pathwaysJob": self.pathways_job is not None}
        )

    def dependency(self, addon: str) -> list[pulumi.Resource]:
        """What a custom resource of this add-on must depend on (its release and CRDs), for `depends_on`."""
        if addon == "pathwaysJob":
            if self.pathways_job is None:
                raise ValueError("add-on 'pathwaysJob' is not installed; enable tpu-serving:addons.pathwaysJob")
            return [self.pathways_job]
        release = self.releases.get(addon)
        if release is None:
            raise ValueError(f"add-on {addon!r} is not installed; enable tpu-serving:addons.{addon}")
        crds = self.crds.get(addon)
        return [release] if crds is None else [release, crds.group, *crds.keep]
