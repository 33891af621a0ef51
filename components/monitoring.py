"""Monitoring: TPU metrics scraping, the one metrics adapter for HPAs, and the serving dashboard.

Managed Prometheus (enabled on the cluster) scrapes what PodMonitoring objects select. Exactly one adapter
serves the custom/external metrics APIs (the candidates register the same APIServices). Which one, and what it is
made of, is its entry in the registry `stacks/metrics_adapters`: this component registers what the entry's pure
builder describes (its namespace with the Pod Security level its pods pass, a default-deny NetworkPolicy that
admits the API server on the entry's port, its IAM grants as direct Workload Identity principals, its manifests
and charts in the order their `after` names), without knowing which adapter it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.addons import AddonCrds, release_args
from components.manifests import custom_resource, register_manifest, snake
from stacks import naming
from stacks.model.local_target import REGISTRY, Sources
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import dashboard, metrics
from stacks.monitoring.adapters import AdapterContext, Chart, Grant, MetricsAdapter, Part
from stacks.monitoring.adapters.entry import NAMESPACE, SYSTEM_POOL
from stacks.pieces import monitoring as monitoring_piece
from stacks.pieces.monitoring import MonitoringPlan
from stacks.security import network_policy, pod_security


def create_pod_monitoring(
    resource_name: str,
    manifest: dict[str, Any],
    *,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.apiextensions.CustomResource:
    """Register a PodMonitoring built with `stacks.monitoring.metrics.pod_monitoring` (for workloads and add-ons alike)."""
    return custom_resource(
        resource_name,
        manifest["apiVersion"],
        manifest["kind"],
        pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
        metadata=manifest["metadata"],
        spec=manifest["spec"],
    )


@dataclass(frozen=True)
class MonitoringDeps:
    """The cluster monitoring goes into: its Kubernetes provider and its system pool (where the adapter runs, and
    what serves GMP's admission webhook before 0.16)."""

    provider: k8s.Provider
    system_pool: pulumi.Resource
    cloud: bool = True
    """False in local mode (stacks/model/local_target.py): no dashboard and no IAM grants, only the in-cluster objects."""
    sources: Sources = REGISTRY
    """Where the adapter's chart and CRD files come from."""


def _bucket_options(options: dict[str, Any]) -> gcp.logging.MetricBucketOptionsArgs:
    """A log-based metric's one kind of buckets (LogMetric BucketOptions), as its typed Args."""
    ((kind, fields),) = options.items()
    given = {snake(k): v for k, v in fields.items()}
    if kind == "linearBuckets":
        return gcp.logging.MetricBucketOptionsArgs(
            linear_buckets=gcp.logging.MetricBucketOptionsLinearBucketsArgs(**given)
        )
    return gcp.logging.MetricBucketOptionsArgs(
        exponential_buckets=gcp.logging.MetricBucketOptionsExponentialBucketsArgs(**given)
    )


class Monitoring(pulumi.ComponentResource):
    dashboard_url: pulumi.Output[str] | None
    adapter: str
    adapter_resources: list[pulumi.Resource]
    """What serves the metrics APIs (for HPAs to depend on); empty without an adapter."""

    def __init__(
        self,
        name: str,
        *,
        plan: MonitoringPlan,
        deps: MonitoringDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """Monitoring as `plan` says (stacks/pieces/monitoring.py), in the cluster of `deps`."""
        super().__init__("tpu-serving:monitoring:Monitoring", name, None, opts)
        # (not _name/_provider: pulumi.Resource uses those itself)
        self._prefix = name
        self._plan = plan
        self._k8s_provider = provider = deps.provider
        self._system_pool = system_pool = deps.system_pool
        self._cloud, self._sources = deps.cloud, deps.sources
        monitoring = plan.config
        self.adapter = monitoring.adapter
        self.adapter_resources = []

        if monitoring.tpu_metrics and plan.has_tpu_pools:
            create_pod_monitoring(
                f"{name}-tpu-device-plugin",
                metrics.tpu_device_plugin_monitoring(monitoring.scrape_interval),
                provider=provider,
                parent=self,
                # GMP before 0.16 admits PodMonitorings through a webhook (failurePolicy: Fail) served from nodes.
                depends_on=[system_pool],
            )

        entry = metrics_adapters.get(monitoring.adapter)
        if entry is not None:
            self._metrics_adapter(entry)

        self.dashboard_url = None
        if monitoring.dashboard and deps.cloud:
            board = gcp.monitoring.Dashboard(
                f"{name}-dashboard",
                gcp.monitoring.DashboardArgs(
                    project=plan.project,
                    dashboard_json=dashboard.dashboard_json(
                        plan.cluster_name,
                        f"tpu-serving: {plan.cluster_name}",
                        head=list(plan.dashboard_panels),
                        tail=list(plan.gate_panels),
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self, depends_on=self._gate_metrics()),
            )
            self.dashboard_url = board.id.apply(lambda i: dashboard.dashboard_url(i, plan.project))
        self.register_outputs({"adapter": self.adapter, "dashboardUrl": self.dashboard_url})

    def _gate_metrics(self) -> list[pulumi.Resource]:
        """The release gate's log-based metrics (stacks/serving/benchmark_metrics.py), which the dashboard's gate
        tiles chart: created first, so the tiles name metrics that exist."""
        found: list[pulumi.Resource] = []
        for spec in self._plan.gate_metrics:
            key = spec["name"].rsplit("/", 1)[-1]
            descriptor = spec["metricDescriptor"]
            found.append(
                gcp.logging.Metric(
                    f"{self._prefix}-gate-{key}",
                    gcp.logging.MetricArgs(
                        project=self._plan.project,
                        name=spec["name"],
                        description=spec["description"],
                        filter=spec["filter"],
                        metric_descriptor=gcp.logging.MetricMetricDescriptorArgs(
                            metric_kind=descriptor["metricKind"],
                            value_type=descriptor["valueType"],
                            unit=descriptor["unit"],
                            display_name=descriptor["displayName"],
                            labels=[
                                gcp.logging.MetricMetricDescriptorLabelArgs(
                                    key=label["key"], value_type=label["valueType"], description=label["description"]
                                )
                                for label in descriptor["labels"]
                            ],
                        ),
                        value_extractor=spec["valueExtractor"],
                        label_extractors=spec["labelExtractors"],
                        bucket_options=_bucket_options(spec["bucketOptions"]),
                    ),
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        return found

    # ---- helpers --------------------------------------------------------------------------------------

    def _k8s(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self._k8s_provider, depends_on=list(depends_on))

    # ---- the metrics adapter, as its registry entry describes it ----------------------------------------

    def _context(self, entry: MetricsAdapter) -> AdapterContext:
        plan = self._plan
        return AdapterContext(
            project=plan.project,
            cluster=plan.cluster_name,
            identity_suffix=plan.identity_suffix,
            chart=monitoring_piece.pinned_chart,
            namespace=entry.namespace,
            hpa_namespaces=plan.hpa_namespaces,
            server_metrics=plan.server_metrics,
        )

    def _metrics_adapter(self, entry: MetricsAdapter) -> None:
        build = entry.build(self._context(entry))
        namespace = self._adapter_namespace(entry, build.namespace_level())
        done: dict[str, pulumi.Resource] = {
            NAMESPACE: namespace,
            SYSTEM_POOL: self._system_pool,
        }
        if self._cloud:
            project_number = gcp.organizations.get_project_output(project_id=self._plan.project).number
            for grant in build.grants:
                done[grant.key] = self._grant(entry, grant, project_number)
        else:  # local mode: no IAM; what waits for a grant waits for the namespace
            done.update({grant.key: namespace for grant in build.grants})
        for part in build.parts:
            done[part.key] = self._part(part, [done[key] for key in part.after])
            if part.serves_api:
                self.adapter_resources.append(done[part.key])

    def _adapter_namespace(self, entry: MetricsAdapter, level: str) -> k8s.core.v1.Namespace:
        """The adapter's namespace, enforcing `level`; default-deny ingress, the adapter's pods to each other, and
        the API server (not a pod: a rule without `from`) to the port that serves the metrics APIs."""
        ns = entry.namespace
        namespace = k8s.core.v1.Namespace(
            f"{self._prefix}-adapter-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=ns,
                labels={
                    **naming.MANAGED_BY_LABELS,
                    **pod_security.namespace_labels(level, self._plan.kubernetes_minor),
                },
            ),
            opts=self._k8s(),
        )
        for policy in [
            *network_policy.namespace_baseline(ns),
            network_policy.allow_clients("metrics-api", ns, {}, [entry.api_port]),
        ]:
            k8s.networking.v1.NetworkPolicy(
                f"{self._prefix}-{policy['metadata']['name']}",
                metadata=policy["metadata"],
                spec=policy["spec"],
                opts=self._k8s(namespace),
            )
        return namespace

    def _grant(self, entry: MetricsAdapter, grant: Grant, project_number: pulumi.Output[str]) -> gcp.projects.IAMMember:
        """A project-level role for one KSA of the adapter namespace, as a direct Workload Identity principal."""
        project, ns, ksa = self._plan.project, entry.namespace, grant.service_account
        return gcp.projects.IAMMember(
            f"{self._prefix}-{grant.key}",
            gcp.projects.IAMMemberArgs(
                project=project,
                role=grant.role,
                member=project_number.apply(lambda n: naming.workload_identity_principal(n, project, ns, ksa)),
            ),
            # The principal names the Workload Identity pool, created with the cluster: wait for the cluster's
            # provider, which exists only after the cluster (terraform-google-kubernetes-engine#916).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self._k8s_provider]),
        )

    def _part(self, part: Part, after: list[pulumi.Resource]) -> pulumi.Resource:
        name = f"{self._prefix}-{part.key}"
        if isinstance(part.body, Chart):
            chart = part.body.chart
            if chart.crds is not None:
                # the chart's CRDs, applied from its upstream files at the tag as the add-ons' are (the release
                # skips them), so an upgrade updates them and an uninstall keeps every custom resource
                crds = AddonCrds(
                    f"{name}-crds",
                    crds=chart.crds,
                    chart=chart,
                    crd_provider=self._k8s_provider,
                    provider=self._k8s_provider,
                    depends_on=[self._system_pool],
                    sources=self._sources,
                    opts=pulumi.ResourceOptions(parent=self),
                )
                after = [*after, crds.group, *crds.keep]
            # create_namespace off: the adapter namespace is the stack's (it may hold more than the chart).
            args = release_args(
                chart, part.body.values, create_namespace=False, sources=self._sources, postrender=part.body.postrender
            )
            return k8s.helm.v3.Release(name, args, opts=self._k8s(*after))
        return register_manifest(name, part.body, self._k8s(*after))
