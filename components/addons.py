"""Cluster add-ons the serving workloads stand on: LeaderWorkerSet and JobSet (on by default), Kueue and the
PathwaysJob controller (off by default).

Charts are installed as `helm.v3.Release` from their OCI registries at the versions pinned in stacks/versions.py.
A Release is one resource that the first preview can plan before the cluster exists, and its chart brings the
CRDs. Controllers run on the CPU system pool. Custom resources of a kind depend on that kind's release
(`Addons.dependency`), so no LeaderWorkerSet or JobSet is ever applied before its CRD and webhook exist.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks import addon_values, naming, pod_security
from stacks.config import StackConfig
from stacks.versions import ChartVersion


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
        # Roll back a failed upgrade instead of leaving a half-applied controller; keep a short history.
        atomic=True,
        cleanup_on_fail=True,
        max_history=10,
        timeout=600,
    )


class Addons(pulumi.ComponentResource):
    releases: dict[str, k8s.helm.v3.Release]
    """Installed releases by add-on: lws, jobset, kueue."""
    pathways_job: k8s.yaml.v2.ConfigFile | None

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        depends_on: list[pulumi.Resource] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:addons:Addons", name, None, opts)
        addons = config.addons
        # Controllers need somewhere to run: wait for the system pool, not just the control plane.
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(depends_on or []))
        self.releases = {}
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
            self.releases[key] = k8s.helm.v3.Release(
                f"{name}-{key}",
                release_args(chart, values(chart, addon.values), create_namespace=False),
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace])),
            )

        self.pathways_job = None
        if addons.pathways_job.enabled:
            manifest = config.pathways_job
            # The upstream release manifest, applied server-side as its README says; needs JobSet's CRDs first.
            self.pathways_job = k8s.yaml.v2.ConfigFile(
                f"{name}-pathways-job",
                file=manifest.url,
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[self.releases["jobset"], *(depends_on or [])]
                ),
            )
        self.register_outputs({"releases": sorted(self.releases), "pathwaysJob": self.pathways_job is not None})

    def dependency(self, addon: str) -> list[pulumi.Resource]:
        """What a custom resource of this add-on must depend on (its release), for `depends_on`."""
        if addon == "pathwaysJob":
            if self.pathways_job is None:
                raise ValueError("add-on 'pathwaysJob' is not installed; enable tpu-serving:addons.pathwaysJob")
            return [self.pathways_job]
        release = self.releases.get(addon)
        if release is None:
            raise ValueError(f"add-on {addon!r} is not installed; enable tpu-serving:addons.{addon}")
        return [release]
