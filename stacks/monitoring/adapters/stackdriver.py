"""custom-metrics-stackdriver: the objects of the upstream adapter_new_resource_model.yaml
(GoogleCloudPlatform/k8s-stackdriver custom-metrics-stackdriver-adapter/deploy/production), reading Cloud Monitoring
with project-level `roles/monitoring.viewer` granted to its KSA through Workload Identity."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stacks import naming
from stacks.facts.versions import IMAGES
from stacks.monitoring.adapters.entry import (
    CUSTOM_METRICS_API,
    EXTERNAL_METRICS_API,
    NAMESPACE,
    SYSTEM_POOL,
    AdapterBuild,
    AdapterContext,
    Grant,
    MetricsAdapter,
    Part,
    api_service,
    external_metrics_reader,
    meta,
    role_ref,
    subject,
)
from stacks.monitoring.metrics import HpaMetric
from stacks.security import pod_security, scan_exceptions

NAME = "custom-metrics-stackdriver"
SERVICE_ACCOUNT = "custom-metrics-stackdriver-adapter"
SERVICE_PORT = 443  # upstream adapter_new_resource_model.yaml's Service port: an APIService reaches its Service on 443
# The port the adapter listens on, behind the Service's 443 (targetPort), the readiness probe's and the one the
# namespace's NetworkPolicy admits the API server on: unprivileged, so the adapter needs neither root nor
# NET_BIND_SERVICE (upstream binds 443 as root). The same as prometheus-adapter's and KEDA's metrics server's.
PORT = 6443
GRANT = "stackdriver-adapter-monitoring-viewer"
# The adapter's own flags (GoogleCloudPlatform/k8s-stackdriver@673c7dd8, the commit of image v0.16.9-gke.0:
# custom-metrics-stackdriver-adapter/adapter.go main) and those its library registers in cmd.Flags()
# (kubernetes-sigs/custom-metrics-apiserver@v1.35.0 pkg/cmd/builder.go InstallFlags, pkg/cmd/options/options.go
# AddFlags -> k8s.io/apiserver@v0.35.2 pkg/server/options/serving.go SecureServingOptions.AddFlags):
# --secure-port (default 443, NewSecureServingOptions BindPort) and --cert-dir (default
# "apiserver.local.config/certificates" under the working directory, /, where a non-root user cannot write). An
# empty --cert-dir makes MaybeDefaultWithSelfSignedCerts keep the self-signed serving certificate in memory
# (GeneratedCert): nothing is written, so the root filesystem stays read-only.
FLAGS = (
    "--use-new-resource-model=true",
    "--fallback-for-container-metrics=true",
    f"--secure-port={PORT}",
    "--cert-dir=",
)

# The checkov findings the adapter accepts (stacks/security/scan_exceptions.py), with their reasons.
SKIPS: tuple[scan_exceptions.Skip, ...] = (
    *scan_exceptions.TAG_PINNED,
    ("CKV_K8S_38", "the adapter serves an aggregated API and reads pods and nodes: it needs its token"),
    ("CKV_K8S_8", "no liveness probe upstream (adapter_new_resource_model.yaml has a readiness probe only)"),
)
# GoogleCloudPlatform/k8s-stackdriver custom-metrics-stackdriver-adapter/Dockerfile builds on gcr.io/distroless/static
# with no USER: the stack runs it as NON_ROOT_UID (distroless' own `nonroot`, 65532), every capability dropped, the
# root filesystem read-only (FLAGS: an unprivileged port, the certificate in memory). The namespace is `restricted`.
SECURITY = pod_security.RESTRICTED_CONTAINER
# The APIServices of the upstream manifest: (group, version, versionPriority).
API_SERVICES = (
    (CUSTOM_METRICS_API, "v1beta1", 100),
    (CUSTOM_METRICS_API, "v1beta2", 200),
    (EXTERNAL_METRICS_API, "v1beta1", 100),
)


def adapter_pod(service_account: str = SERVICE_ACCOUNT) -> dict[str, Any]:
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
                    "command": ["/adapter", *FLAGS],
                    "ports": [{"name": "https", "containerPort": PORT}],
                    "resources": {
                        "limits": {"cpu": "250m", "memory": "200Mi"},
                        "requests": {"cpu": "250m", "memory": "200Mi"},
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/healthz", "port": PORT, "scheme": "HTTPS"},
                        "initialDelaySeconds": 40,
                        "periodSeconds": 10,
                        "timeoutSeconds": 5,
                    },
                }
            ],
        },
        SECURITY,
        uses_kubernetes_api=True,  # it serves an aggregated API and reads pods/nodes
    )


def _rbac(ksa: str, ns: str) -> list[Part]:
    """The adapter's access: delegated authentication, the auth config reader, and reading pods and nodes."""
    return [
        Part(
            "adapter-auth-delegator",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": meta("custom-metrics:system:auth-delegator"),
                "roleRef": role_ref("ClusterRole", "system:auth-delegator"),
                "subjects": [subject(ksa, ns)],
            },
        ),
        Part(
            "adapter-auth-reader",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta("custom-metrics-auth-reader", "kube-system"),
                "roleRef": role_ref("Role", "extension-apiserver-authentication-reader"),
                "subjects": [subject(ksa, ns)],
            },
        ),
        Part(
            "adapter-resource-reader",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta("custom-metrics-resource-reader"),
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["pods", "nodes", "nodes/stats"],
                        "verbs": ["get", "list", "watch"],
                    }
                ],
            },
        ),
        Part(
            "adapter-resource-reader-binding",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": meta("custom-metrics-resource-reader"),
                "roleRef": role_ref("ClusterRole", "custom-metrics-resource-reader"),
                "subjects": [subject(ksa, ns)],
            },
            after=("adapter-resource-reader",),
        ),
    ]


def _server(ksa: str, ns: str) -> list[Part]:
    """The adapter's Deployment and Service."""
    labels = {"run": SERVICE_ACCOUNT, "k8s-app": SERVICE_ACCOUNT}
    service_labels = {**labels, "kubernetes.io/cluster-service": "true"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(SERVICE_ACCOUNT, ns, labels, SKIPS),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": service_labels}, "spec": adapter_pod(ksa)},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(SERVICE_ACCOUNT, ns, {**service_labels, "kubernetes.io/name": "Adapter"}),
        "spec": {
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{"port": SERVICE_PORT, "protocol": "TCP", "targetPort": PORT}],
        },
    }
    return [
        Part("adapter", deployment, after=("adapter-sa", GRANT, SYSTEM_POOL)),
        Part("adapter-svc", service, after=(NAMESPACE,)),
    ]


def _api_services(ns: str) -> list[Part]:
    return [
        api_service(group, version, priority, SERVICE_ACCOUNT, ns, after=("adapter-svc", "adapter"))
        for group, version, priority in API_SERVICES
    ]


def build(ctx: AdapterContext) -> AdapterBuild:
    ns = ctx.namespace
    # The KSA holds Google access (Workload Identity), so its name is unique per stack.
    ksa = naming.stack_service_account(SERVICE_ACCOUNT, ctx.identity_suffix)
    account = Part(
        "adapter-sa", {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ksa, ns)}, after=(NAMESPACE,)
    )
    return AdapterBuild(
        grants=[Grant(GRANT, "roles/monitoring.viewer", ksa)],
        parts=[account, *_rbac(ksa, ns), *_server(ksa, ns), *_api_services(ns), *external_metrics_reader()],
    )


def metric_spec(
    metric: HpaMetric, goal: dict[str, Any], namespace: str, cluster: str, selector: Mapping[str, str] | None
) -> dict[str, Any]:
    """Cloud Monitoring names the series `prometheus.googleapis.com|<series>|gauge`."""
    name = f"prometheus.googleapis.com|{metric.series}|gauge"
    if metric.origin == "server":
        # per-pod server series: a Pods metric, averaged over the ready pods by the HPA itself
        return {"type": "Pods", "pods": {"metric": {"name": name}, "target": goal}}
    # per-chip device-plugin series of this cluster (prometheus_target's `cluster` resource label,
    # GoogleCloudPlatform/k8s-stackdriver custom-metrics-stackdriver-adapter/pkg/adapter/translator/
    # utils/filter_builder.go PrometheusSchema) and the workload's namespace; the HPA sums them.
    match = {"metric.labels.exported_namespace": namespace, "resource.labels.cluster": cluster}
    return {
        "type": "External",
        "external": {"metric": {"name": name, "selector": {"matchLabels": match}}, "target": goal},
    }


ADAPTER = MetricsAdapter(
    name=NAME,
    description="the objects of the upstream `adapter_new_resource_model.yaml`; reads Cloud Monitoring directly",
    apis=tuple(dict.fromkeys(group for group, _, _ in API_SERVICES)),
    origins=frozenset({"server", "tpu"}),
    # it reads one Cloud Monitoring metric at a time: no used/total ratio
    ratios=False,
    api_port=PORT,
    metric_spec=metric_spec,
    build=build,
)
