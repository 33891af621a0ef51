"""Monitoring: TPU metrics scraping, the one metrics adapter for HPAs, and the serving dashboard.

Managed Prometheus (enabled on the cluster) scrapes what PodMonitoring objects select. Exactly one adapter
serves the custom/external metrics APIs, because both candidates register the same APIServices:
- custom-metrics-stackdriver: the upstream adapter_new_resource_model.yaml objects as typed resources;
- prometheus-adapter: the Helm chart, querying a GMP frontend that reads Cloud Monitoring.
Both read Cloud Monitoring with project-level `roles/monitoring.viewer` granted to their Kubernetes
ServiceAccount directly through Workload Identity (member-level, no Google service account).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.addons import release_args
from stacks import addon_values, dashboard, metrics, naming, network_policy, pod_security, scan_exceptions
from stacks.config import StackConfig
from stacks.versions import IMAGES

ADAPTER_NAMESPACE = "custom-metrics"
STACKDRIVER_ADAPTER = "custom-metrics-stackdriver-adapter"
GMP_FRONTEND = "gmp-frontend"
GMP_FRONTEND_SERVICE = "prometheus"
STACKDRIVER_ADAPTER_PORT = 443  # upstream adapter_new_resource_model.yaml (Service and readiness probe)
# prometheus-adapter chart 5.3.0 values.yaml `listenPort: 6443`
PROMETHEUS_ADAPTER_PORT = 6443


def create_pod_monitoring(
    resource_name: str,
    manifest: dict[str, Any],
    *,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource] = (),
) -> k8s.apiextensions.CustomResource:
    """Register a PodMonitoring built with `stacks.metrics.pod_monitoring` (for workloads and add-ons alike)."""
    return k8s.apiextensions.CustomResource(
        resource_name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
    )


def _meta(
    name: str,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    skips: Sequence[scan_exceptions.Skip] = (),
) -> k8s.meta.v1.ObjectMetaArgs:
    """Metadata with the stack's labels, and the checkov findings the object accepts (`skips`) as annotations."""
    return k8s.meta.v1.ObjectMetaArgs(
        name=name,
        namespace=namespace,
        labels={**naming.MANAGED_BY_LABELS, **(labels or {})},
        annotations=scan_exceptions.skip_annotations(skips) if skips else None,
    )


# The checkov findings the adapters accept (stacks/scan_exceptions.py), with their reasons.
STACKDRIVER_ADAPTER_SKIPS: tuple[scan_exceptions.Skip, ...] = (
    *scan_exceptions.TAG_PINNED,
    *scan_exceptions.IMAGE_USER,
    ("CKV_K8S_25", "NET_BIND_SERVICE: the adapter binds port 443 as in the upstream manifest"),
    ("CKV_K8S_38", "the adapter serves an aggregated API and reads pods and nodes: it needs its token"),
    ("CKV_K8S_8", "no liveness probe upstream (adapter_new_resource_model.yaml has a readiness probe only)"),
)
GMP_FRONTEND_SKIPS = (*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT)
# external.metrics.k8s.io serves one resource per metric name, so the HPA controller's role names them all
# (upstream adapter_new_resource_model.yaml); the group holds no Secrets.
EXTERNAL_METRICS_SKIPS: tuple[scan_exceptions.Skip, ...] = (
    ("CKV_K8S_49", "external.metrics.k8s.io resources are metric names; the upstream role lists them all"),
    ("CKV2_K8S_5", "the wildcard is limited to the external.metrics.k8s.io group, which holds no Secrets"),
)


def _subject(name: str, namespace: str) -> k8s.rbac.v1.SubjectArgs:
    return k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=name, namespace=namespace)


# custom-metrics-stackdriver-adapter: GoogleCloudPlatform/k8s-stackdriver
# custom-metrics-stackdriver-adapter/Dockerfile builds on gcr.io/distroless/static with no USER (root), and the
# adapter serves its API on port 443 (upstream adapter_new_resource_model.yaml): it keeps root with every
# capability dropped but NET_BIND_SERVICE (to bind 443), and a writable root filesystem (it generates its
# self-signed serving certificate at start; where it writes it is unverified). So the namespace is `baseline`.
STACKDRIVER_ADAPTER_SECURITY = pod_security.ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    add_capabilities=("NET_BIND_SERVICE",),
    why="binds port 443 as root (distroless/static image without USER)",
)
# The GMP query frontend runs as a non-root user upstream (ai-on-gke modules/prometheus-adapter, GKE's
# frontend.yaml: runAsUser 1000, drop ALL) and is a stateless HTTP proxy: restricted, read-only root, /tmp.
GMP_FRONTEND_SECURITY = pod_security.ContainerSecurity(writable=("/tmp",))
# prometheus-adapter chart 5.3.0 values.yaml: securityContext runAsNonRoot/runAsUser 10001, drop ALL,
# readOnlyRootFilesystem, allowPrivilegeEscalation false, seccompProfile RuntimeDefault: restricted.
PROMETHEUS_ADAPTER_CHART_LEVEL = pod_security.RESTRICTED


def stackdriver_adapter_pod(service_account: str = STACKDRIVER_ADAPTER) -> dict[str, Any]:
    return pod_security.secure_pod(
        {
            "serviceAccountName": service_account,
            # On the CPU system pool, never on TPU nodes (upstream tolerates TPU/GPU taints instead).
            "nodeSelector": dict(naming.SYSTEM_POOL_SELECTOR),
            "containers": [
                {
                    "name": "pod-custom-metrics-stackdriver-adapter",
                    "image": IMAGES["customMetricsStackdriverAdapter"],
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["/adapter", "--use-new-resource-model=true", "--fallback-for-container-metrics=true"],
                    "resources": {
                        "limits": {"cpu": "250m", "memory": "200Mi"},
                        "requests": {"cpu": "250m", "memory": "200Mi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": 443, "scheme": "HTTPS"},
                        "initialDelaySeconds": 40,
                        "periodSeconds": 10,
                        "timeoutSeconds": 5,
                    },
                }
            ],
        },
        STACKDRIVER_ADAPTER_SECURITY,
        uses_kubernetes_api=True,  # it serves an aggregated API and reads pods/nodes
    )


def gmp_frontend_pod(project: str, service_account: str = GMP_FRONTEND) -> dict[str, Any]:
    return pod_security.secure_pod(
        {
            "serviceAccountName": service_account,
            "nodeSelector": dict(naming.SYSTEM_POOL_SELECTOR),
            "containers": [
                {
                    "name": "frontend",
                    "image": IMAGES["gmpFrontend"],
                    "args": ["--web.listen-address=:9090", f"--query.project-id={project}"],
                    "ports": [{"name": "web", "containerPort": 9090}],
                    "readinessProbe": {"httpGet": {"path": "/-/ready", "port": "web"}},
                    "livenessProbe": {"httpGet": {"path": "/-/healthy", "port": "web"}},
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                }
            ],
        },
        GMP_FRONTEND_SECURITY,
        # Only Cloud Monitoring is called (through Workload Identity, which needs no Kubernetes token).
        uses_kubernetes_api=False,
    )


def _pod_spec(spec: dict[str, Any]) -> Any:
    """A PodSpec built by stacks.pod_security as the camelCase dict the provider takes (like the workloads')."""
    return spec


def adapter_namespace_level(adapter: str, project: str) -> str:
    """The Pod Security level of the adapter namespace: the strictest that every pod in it passes."""
    if adapter == "custom-metrics-stackdriver":
        return pod_security.strictest_level([stackdriver_adapter_pod()])
    frontend = pod_security.strictest_level([gmp_frontend_pod(project)])
    return min(frontend, PROMETHEUS_ADAPTER_CHART_LEVEL, key=pod_security.LEVELS.index)


class Monitoring(pulumi.ComponentResource):
    dashboard_url: pulumi.Output[str] | None
    adapter: str
    adapter_resources: list[pulumi.Resource]
    """What serves the metrics APIs (for HPAs to depend on); empty without an adapter."""

    def __init__(
        self,
        name: str,
        *,
        config: StackConfig,
        provider: k8s.Provider,
        system_pool: pulumi.Resource,
        hpa_namespaces: Sequence[str] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:monitoring:Monitoring", name, None, opts)
        # (not _name/_provider: pulumi.Resource uses those itself)
        self._prefix = name
        self._config = config
        self._k8s_provider = provider
        self._system_pool = system_pool
        monitoring = config.monitoring
        self.adapter = monitoring.adapter
        self.adapter_resources = []

        if monitoring.tpu_metrics and config.pools:
            create_pod_monitoring(
                f"{name}-tpu-device-plugin",
                metrics.tpu_device_plugin_monitoring(monitoring.scrape_interval),
                provider=provider,
                parent=self,
                # GMP before 0.16 admits PodMonitorings through a webhook (failurePolicy: Fail) served from nodes.
                depends_on=[system_pool],
            )

        if monitoring.adapter != "none":
            level = adapter_namespace_level(monitoring.adapter, config.gcp_project)
            self._namespace = k8s.core.v1.Namespace(
                f"{name}-adapter-ns",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=ADAPTER_NAMESPACE,
                    labels={
                        **naming.MANAGED_BY_LABELS,
                        **pod_security.namespace_labels(level, config.kubernetes_minor),
                    },
                ),
                opts=self._k8s(),
            )
            # Default-deny ingress; the adapters' pods to each other (prometheus-adapter -> GMP frontend), and the
            # API server (not a pod: a rule without `from`) to the port that serves the metrics APIs.
            api_port = (
                STACKDRIVER_ADAPTER_PORT
                if monitoring.adapter == "custom-metrics-stackdriver"
                else PROMETHEUS_ADAPTER_PORT
            )
            for policy in [
                *network_policy.namespace_baseline(ADAPTER_NAMESPACE),
                network_policy.allow_clients("metrics-api", ADAPTER_NAMESPACE, {}, [api_port]),
            ]:
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-{policy['metadata']['name']}",
                    metadata=policy["metadata"],
                    spec=policy["spec"],
                    opts=self._k8s(self._namespace),
                )
            project_number = gcp.organizations.get_project_output(project_id=config.gcp_project).number
            if monitoring.adapter == "custom-metrics-stackdriver":
                self._stackdriver_adapter(project_number)
            else:
                self._prometheus_adapter(project_number, hpa_namespaces)

        self.dashboard_url = None
        if monitoring.dashboard:
            board = gcp.monitoring.Dashboard(
                f"{name}-dashboard",
                gcp.monitoring.DashboardArgs(
                    project=config.gcp_project,
                    dashboard_json=dashboard.dashboard_json(
                        config.cluster_name,
                        f"tpu-serving: {config.cluster_name}",
                        vllm=any(w.workload.type == "vllm" for w in config.workloads),
                    ),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.dashboard_url = board.id.apply(lambda i: dashboard.dashboard_url(i, config.gcp_project))
        self.register_outputs({"adapter": self.adapter, "dashboardUrl": self.dashboard_url})

    # ---- helpers --------------------------------------------------------------------------------------

    def _k8s(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self._k8s_provider, depends_on=list(depends_on))

    def _monitoring_viewer(self, suffix: str, project_number: pulumi.Output[str], ksa: str) -> gcp.projects.IAMMember:
        """Project-level roles/monitoring.viewer for one KSA, as a direct Workload Identity principal."""
        project = self._config.gcp_project
        return gcp.projects.IAMMember(
            f"{self._prefix}-{suffix}-monitoring-viewer",
            gcp.projects.IAMMemberArgs(
                project=project,
                role="roles/monitoring.viewer",
                member=project_number.apply(
                    lambda n: naming.workload_identity_principal(n, project, ADAPTER_NAMESPACE, ksa)
                ),
            ),
            # The principal names the Workload Identity pool, created with the cluster: wait for the cluster's
            # provider, which exists only after the cluster (terraform-google-kubernetes-engine#916).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self._k8s_provider]),
        )

    # ---- custom-metrics-stackdriver-adapter -----------------------------------------------------------

    def _stackdriver_adapter(self, project_number: pulumi.Output[str]) -> None:
        n, ns, sa = self._prefix, ADAPTER_NAMESPACE, STACKDRIVER_ADAPTER
        labels = {"run": sa, "k8s-app": sa}
        # The KSA holds Google access (Workload Identity), so its name is unique per stack.
        ksa = naming.stack_service_account(sa, self._config.identity_suffix)
        iam = self._monitoring_viewer("stackdriver-adapter", project_number, ksa)
        account = k8s.core.v1.ServiceAccount(
            f"{n}-adapter-sa", metadata=_meta(ksa, ns), opts=self._k8s(self._namespace)
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{n}-adapter-auth-delegator",
            metadata=_meta("custom-metrics:system:auth-delegator"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="system:auth-delegator"
            ),
            subjects=[_subject(ksa, ns)],
            opts=self._k8s(),
        )
        k8s.rbac.v1.RoleBinding(
            f"{n}-adapter-auth-reader",
            metadata=_meta("custom-metrics-auth-reader", "kube-system"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="Role", name="extension-apiserver-authentication-reader"
            ),
            subjects=[_subject(ksa, ns)],
            opts=self._k8s(),
        )
        reader = k8s.rbac.v1.ClusterRole(
            f"{n}-adapter-resource-reader",
            metadata=_meta("custom-metrics-resource-reader"),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=[""], resources=["pods", "nodes", "nodes/stats"], verbs=["get", "list", "watch"]
                )
            ],
            opts=self._k8s(),
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{n}-adapter-resource-reader-binding",
            metadata=_meta("custom-metrics-resource-reader"),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="custom-metrics-resource-reader"
            ),
            subjects=[_subject(ksa, ns)],
            opts=self._k8s(reader),
        )
        deployment = k8s.apps.v1.Deployment(
            f"{n}-adapter",
            metadata=_meta(sa, ns, labels, STACKDRIVER_ADAPTER_SKIPS),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=1,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels={**labels, "kubernetes.io/cluster-service": "true"}),
                    spec=_pod_spec(stackdriver_adapter_pod(ksa)),
                ),
            ),
            opts=self._k8s(account, iam, self._system_pool),
        )
        service = k8s.core.v1.Service(
            f"{n}-adapter-svc",
            metadata=_meta(
                sa, ns, {**labels, "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "Adapter"}
            ),
            spec=k8s.core.v1.ServiceSpecArgs(
                type="ClusterIP",
                selector=labels,
                ports=[k8s.core.v1.ServicePortArgs(port=443, protocol="TCP", target_port=443)],
            ),
            opts=self._k8s(self._namespace),
        )
        for api_name, group, version, priority in (
            ("v1beta1.custom.metrics.k8s.io", "custom.metrics.k8s.io", "v1beta1", 100),
            ("v1beta2.custom.metrics.k8s.io", "custom.metrics.k8s.io", "v1beta2", 200),
            ("v1beta1.external.metrics.k8s.io", "external.metrics.k8s.io", "v1beta1", 100),
        ):
            api_service = k8s.apiregistration.v1.APIService(
                f"{n}-apiservice-{group.split('.')[0]}-{version}",
                metadata=_meta(api_name),
                spec=k8s.apiregistration.v1.APIServiceSpecArgs(
                    group=group,
                    version=version,
                    group_priority_minimum=100,
                    version_priority=priority,
                    # as upstream: the adapter serves a self-signed certificate
                    insecure_skip_tls_verify=True,
                    service=k8s.apiregistration.v1.ServiceReferenceArgs(name=sa, namespace=ns),
                ),
                # Register the API only once something serves it, so discovery does not break meanwhile.
                opts=self._k8s(service, deployment),
            )
            self.adapter_resources.append(api_service)
        external_reader = k8s.rbac.v1.ClusterRole(
            f"{n}-external-metrics-reader",
            metadata=_meta("external-metrics-reader", skips=EXTERNAL_METRICS_SKIPS),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(
                    api_groups=["external.metrics.k8s.io"], resources=["*"], verbs=["list", "get", "watch"]
                )
            ],
            opts=self._k8s(),
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{n}-external-metrics-reader-binding",
            metadata=_meta("external-metrics-reader", skips=EXTERNAL_METRICS_SKIPS),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="external-metrics-reader"
            ),
            subjects=[_subject("horizontal-pod-autoscaler", "kube-system")],
            opts=self._k8s(external_reader),
        )

    # ---- prometheus-adapter + GMP frontend ------------------------------------------------------------

    def _vllm_rules(self) -> list[dict]:
        """External rules for the autoscaled vLLM workloads' metrics (none without such a workload)."""
        namespaces = sorted(
            {
                w.namespace
                for w in self._config.workloads
                if w.workload.type == "vllm" and getattr(w, "autoscaled", False)
            }
        )
        return metrics.vllm_prometheus_adapter_rules(self._config.cluster_name, namespaces) if namespaces else []

    def _prometheus_adapter(self, project_number: pulumi.Output[str], hpa_namespaces: Sequence[str]) -> None:
        n, ns, config = self._prefix, ADAPTER_NAMESPACE, self._config
        labels = {"app": GMP_FRONTEND}
        # The KSA holds Google access (Workload Identity), so its name is unique per stack.
        ksa = naming.stack_service_account(GMP_FRONTEND, config.identity_suffix)
        iam = self._monitoring_viewer("gmp-frontend", project_number, ksa)
        account = k8s.core.v1.ServiceAccount(
            f"{n}-gmp-frontend-sa", metadata=_meta(ksa, ns), opts=self._k8s(self._namespace)
        )
        frontend = k8s.apps.v1.Deployment(
            f"{n}-gmp-frontend",
            metadata=_meta(GMP_FRONTEND, ns, labels, GMP_FRONTEND_SKIPS),
            spec=k8s.apps.v1.DeploymentSpecArgs(
                replicas=2,
                selector=k8s.meta.v1.LabelSelectorArgs(match_labels=labels),
                template=k8s.core.v1.PodTemplateSpecArgs(
                    metadata=k8s.meta.v1.ObjectMetaArgs(labels=labels),
                    spec=_pod_spec(gmp_frontend_pod(config.gcp_project, ksa)),
                ),
            ),
            opts=self._k8s(account, iam, self._system_pool),
        )
        service = k8s.core.v1.Service(
            f"{n}-gmp-frontend-svc",
            metadata=_meta(GMP_FRONTEND_SERVICE, ns, labels),
            spec=k8s.core.v1.ServiceSpecArgs(
                type="ClusterIP",
                selector=labels,
                ports=[k8s.core.v1.ServicePortArgs(name="web", port=9090, target_port="web")],
            ),
            opts=self._k8s(self._namespace),
        )
        chart = config.chart("prometheusAdapter")
        values = addon_values.prometheus_adapter_values(
            chart,
            f"http://{GMP_FRONTEND_SERVICE}.{ns}.svc",
            [*metrics.prometheus_adapter_rules(config.cluster_name, hpa_namespaces), *self._vllm_rules()],
            {},
        )
        # create_namespace off: the namespace above also holds the frontend and is managed here.
        release = k8s.helm.v3.Release(
            f"{n}-prometheus-adapter",
            release_args(chart, values, create_namespace=False),
            opts=self._k8s(self._namespace, service, frontend, self._system_pool),
        )
        self.adapter_resources.append(release)
