"""What a metrics adapter is, as data: the registry entry type and what an adapter's pure builder returns.

An adapter serves metrics APIs to the HPA controller. Its entry says what it serves (the metrics API groups and
which `HpaMetric`s), how an HPA names each metric for it, and how it is built: Kubernetes manifests, Helm charts
and project-level IAM grants, each with the names of what it must wait for. `components/monitoring.py` registers
what a build describes without knowing which adapter it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from stacks import naming
from stacks.facts.versions import ChartVersion
from stacks.monitoring.metrics import HpaMetric
from stacks.security import pod_security, scan_exceptions

# The metrics API groups an HPA reads (kubernetes pkg/controller/podautoscaler/metrics/client.go: `Pods` and
# `Object` metrics from custom.metrics.k8s.io, `External` ones from external.metrics.k8s.io).
CUSTOM_METRICS_API = "custom.metrics.k8s.io"
EXTERNAL_METRICS_API = "external.metrics.k8s.io"
METRICS_APIS = (CUSTOM_METRICS_API, EXTERNAL_METRICS_API)
# The HPA metric source types each API serves (autoscaling/v2 MetricSpec `type`).
API_OF_METRIC_TYPE = {"Pods": CUSTOM_METRICS_API, "Object": CUSTOM_METRICS_API, "External": EXTERNAL_METRICS_API}

# Every adapter runs in this namespace: the candidates register the same APIServices, so there is one per cluster.
ADAPTER_NAMESPACE = "custom-metrics"

# What a Part may wait for besides other parts and grants of the same build (the component supplies them).
NAMESPACE = "namespace"
SYSTEM_POOL = "system-pool"

Origin = Literal["server", "tpu", "gateway"]


@dataclass(frozen=True)
class AdapterContext:
    """The facts of the stack an adapter's builder reads (pure data, filled from the stack config)."""

    project: str
    cluster: str
    identity_suffix: str  # makes every KSA with Google access unique per stack
    chart: Callable[[str], ChartVersion]  # the pinned chart release of a `versions.CHARTS` key
    namespace: str = ADAPTER_NAMESPACE  # the entry's namespace
    hpa_namespaces: Sequence[str] = ()  # namespaces of every autoscaled workload
    # the workload types' own server metrics (beyond stacks.monitoring.metrics.HPA_METRICS), each with the namespaces of the
    # autoscaled workloads whose HPA may scale on it (stacks.pieces.monitoring.own_server_metrics)
    server_metrics: Sequence[tuple[HpaMetric, Sequence[str]]] = ()


@dataclass(frozen=True)
class Grant:
    """A project-level IAM role for a Kubernetes ServiceAccount of the adapter namespace (member-level, direct
    Workload Identity principal, no Google service account)."""

    key: str  # the resource name suffix, and how parts name it in `after`
    role: str
    service_account: str


# The Helm post-renderer (a path from the project root, where Pulumi runs its providers: pulumi/pulumi
# pkg/engine/project.go getPwdMain, sdk/go/common/resource/plugin/plugin.go execPlugin cmd.Dir) that takes every
# APIService out of a chart's manifest: the stack registers them (api_service), whichever adapter serves them.
DROP_API_SERVICES = "scripts/helm_postrender_drop_apiservices.py"


@dataclass(frozen=True)
class Chart:
    """A Helm release of a pinned chart with the stack's values, into the adapter namespace (managed by the stack)."""

    chart: ChartVersion
    values: dict[str, Any]
    # a post-renderer the release runs over the chart's manifests (DROP_API_SERVICES for a chart that renders an
    # APIService whatever its values), None for none
    postrender: str | None = None


@dataclass(frozen=True)
class Part:
    """One object of an adapter: a Kubernetes manifest (camelCase, as the API server takes it) or a Helm chart."""

    key: str  # the resource name suffix (`<component name>-<key>`), unique within the build
    body: dict[str, Any] | Chart
    after: tuple[str, ...] = ()  # keys of parts/grants of this build, NAMESPACE or SYSTEM_POOL
    serves_api: bool = False  # HPAs wait for it (it registers a metrics APIService)


@dataclass(frozen=True)
class AdapterBuild:
    grants: list[Grant]
    parts: list[Part]
    chart_levels: tuple[str, ...] = ()  # Pod Security levels the charts' pods pass (the stack cannot see them)

    def namespace_level(self) -> str:
        """The Pod Security level of the adapter namespace: the strictest that every pod in it passes."""
        level = pod_security.strictest_level(p.body for p in self.parts if not isinstance(p.body, Chart))
        return min((level, *self.chart_levels), key=pod_security.LEVELS.index)


@dataclass(frozen=True)
class MetricsAdapter:
    """One metrics adapter: everything about it. The registry (`stacks.monitoring.adapters.ADAPTERS`) holds one per
    name; config validation, the workload plans, the component and the README table read it."""

    name: str  # the value of tpu-serving:monitoring.adapter
    description: str  # one line for the README table
    apis: tuple[str, ...]  # the metrics API groups it serves to HPAs (METRICS_APIS)
    origins: frozenset[Origin]  # which HpaMetric sources it serves (server series, TPU device plugin)
    ratios: bool  # whether it serves a metric with a denominator (a used/total ratio)
    api_port: int  # the port the API server reaches it on (admitted by the namespace's NetworkPolicy)
    # The autoscaling/v2 metric spec for a served metric: (metric, target, namespace, cluster, selector) -> spec.
    metric_spec: Callable[[HpaMetric, dict[str, Any], str, str, Mapping[str, str] | None], dict[str, Any]]
    build: Callable[[AdapterContext], AdapterBuild]  # pure: what the stack registers for it
    namespace: str = ADAPTER_NAMESPACE
    # whether it reads a metric from its fallback series when the image exports that instead (HpaMetric.fallback)
    fallbacks: bool = False
    # whether workloads scale through a KEDA ScaledObject (which makes the HPA, and may scale to zero) instead of
    # an HPA of their own (stacks.serving.workload_plan.autoscaler_manifest)
    scaled_objects: bool = False

    def serves(self, metric: HpaMetric) -> bool:
        return metric.origin in self.origins and (self.ratios or metric.denominator is None)


def meta(
    name: str,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    skips: Sequence[scan_exceptions.Skip] = (),
) -> dict[str, Any]:
    """Metadata with the stack's labels, and the checkov findings the object accepts (`skips`) as annotations."""
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["labels"] = {**naming.MANAGED_BY_LABELS, **(labels or {})}
    if skips:
        out["annotations"] = scan_exceptions.skip_annotations(skips)
    return out


def subject(name: str, namespace: str) -> dict[str, str]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def role_ref(kind: str, name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}


# ---- what every adapter registers the same way ------------------------------------------------------------------
#
# The adapters register the same cluster-scoped objects (the APIService `v1beta1.external.metrics.k8s.io`, the HPA
# controller's reader role): each is a stack resource under the same key in every adapter's build, so switching
# `monitoring.adapter` updates it in place (same URN) instead of deleting one owner's object while the other
# creates it (which Helm refuses to adopt, or the API server answers AlreadyExists). Pulumi creates and updates in
# dependency order and deletes what left the program last (pulumi/pulumi pkg/resource/deploy), so a chart that
# rendered the APIService would be installed over the stack's object on the way to it and, uninstalled at the end of
# the way back, delete it: a chart that renders one whatever its values (KEDA's) runs DROP_API_SERVICES, and every
# APIService has one owner, the stack, in every mode.

# external.metrics.k8s.io serves one resource per metric name, so the HPA controller's role names them all
# (upstream adapter_new_resource_model.yaml); the group holds no Secrets.
EXTERNAL_METRICS_SKIPS: tuple[scan_exceptions.Skip, ...] = (
    ("CKV_K8S_49", "external.metrics.k8s.io resources are metric names; the upstream role lists them all"),
    ("CKV2_K8S_5", "the wildcard is limited to the external.metrics.k8s.io group, which holds no Secrets"),
)


def api_service_key(group: str, version: str) -> str:
    """The part key (so the resource name) of the APIService of `version`.`group`, the same in every adapter."""
    return f"apiservice-{group.split('.')[0]}-{version}"


def api_service(group: str, version: str, priority: int, service: str, namespace: str, after: tuple[str, ...]) -> Part:
    """A metrics APIService served by `service` (port 443) in `namespace`, registered once it serves (`after`), so
    discovery does not break meanwhile."""
    return Part(
        api_service_key(group, version),
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": meta(f"{version}.{group}"),
            "spec": {
                "group": group,
                "version": version,
                "groupPriorityMinimum": 100,
                "versionPriority": priority,
                # as upstream (both adapters): the adapter serves a self-signed certificate
                "insecureSkipTLSVerify": True,
                "service": {"name": service, "namespace": namespace},
            },
        },
        after=after,
        serves_api=True,
    )


def external_metrics_reader() -> list[Part]:
    """The HPA controller reads external.metrics.k8s.io (upstream adapter_new_resource_model.yaml; the
    prometheus-adapter chart's external-metrics-cluster-role(-binding-hpa).yaml grant the same)."""
    return [
        Part(
            "external-metrics-reader",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta("external-metrics-reader", skips=EXTERNAL_METRICS_SKIPS),
                "rules": [{"apiGroups": [EXTERNAL_METRICS_API], "resources": ["*"], "verbs": ["list", "get", "watch"]}],
            },
        ),
        Part(
            "external-metrics-reader-binding",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": meta("external-metrics-reader", skips=EXTERNAL_METRICS_SKIPS),
                "roleRef": role_ref("ClusterRole", "external-metrics-reader"),
                "subjects": [subject("horizontal-pod-autoscaler", "kube-system")],
            },
            after=("external-metrics-reader",),
        ),
    ]
