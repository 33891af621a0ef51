"""prometheus-adapter: the Helm chart, querying a GMP query frontend that reads Cloud Monitoring (as ai-on-gke
modules/prometheus-adapter). The frontend's KSA holds project-level `roles/monitoring.viewer` through Workload
Identity; the adapter itself calls only the frontend.

Prometheus-adapter and the GMP frontend query the whole Cloud Monitoring project, so every rule is filtered by this
cluster's name and the workload namespaces (otherwise an HPA would scale on another cluster's data). Every rule
sums (see stacks/monitoring/metrics.py for why an External metric must return the load of all replicas).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from stacks import naming
from stacks.facts.addon_values import image_values
from stacks.facts.versions import IMAGES, ChartVersion
from stacks.monitoring import metrics
from stacks.monitoring.adapters.entry import (
    EXTERNAL_METRICS_API,
    NAMESPACE,
    SYSTEM_POOL,
    AdapterBuild,
    AdapterContext,
    Chart,
    Grant,
    MetricsAdapter,
    Part,
    api_service,
    external_metrics_reader,
    meta,
)
from stacks.monitoring.metrics import HpaMetric
from stacks.security import pod_security, scan_exceptions

NAME = "prometheus-adapter"
CHART = "prometheusAdapter"  # the versions.CHARTS key
# prometheus-adapter chart 5.3.0 values.yaml `listenPort: 6443`
PORT = 6443
GMP_FRONTEND = "gmp-frontend"
GMP_FRONTEND_SERVICE = "prometheus"
GRANT = "gmp-frontend-monitoring-viewer"
GMP_FRONTEND_SKIPS = (*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT)
# The GMP query frontend runs as a non-root user upstream (ai-on-gke modules/prometheus-adapter, GKE's
# frontend.yaml: runAsUser 1000, drop ALL) and is a stateless HTTP proxy: restricted, read-only root, /tmp.
GMP_FRONTEND_SECURITY = pod_security.ContainerSecurity(writable=("/tmp",))
# prometheus-adapter chart 5.3.0 values.yaml: securityContext runAsNonRoot/runAsUser 10001, drop ALL,
# readOnlyRootFilesystem, allowPrivilegeEscalation false, seccompProfile RuntimeDefault: restricted.
CHART_LEVEL = pod_security.RESTRICTED


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


# ---- rules ----------------------------------------------------------------------------------------------------


def _regex(values: Iterable[str]) -> str:
    return "|".join(sorted(set(values)))


def rule(metric: HpaMetric, cluster: str, namespaces: Iterable[str]) -> dict[str, Any]:
    """The external-metrics rule serving `metric`: the SUM over the HPA namespace's replicas.

    prometheus-adapter puts `<namespace label>="<the HPA's namespace>"` into <<.LabelMatchers>>
    (kubernetes-sigs/prometheus-adapter@v0.12.0:pkg/naming/metrics_query.go, BuildExternal) and returns one
    value per sample of the result (pkg/external-provider/metric_converter.go); the HPA sums them.
    """
    ns = _regex(namespaces)
    if metric.origin == "server":
        where = f'cluster="{cluster}",namespace=~"{ns}"'
        resources: dict[str, Any] = {"template": "<<.Resource>>"}
        query = f"sum(<<.Series>>{{<<.LabelMatchers>>,{where}}})"
        if metric.fallback is not None:
            # its series, or its fallback's where the image exports that instead (stacks/monitoring/metrics.py HpaMetric.read)
            query = f"sum({metric.read(f'<<.LabelMatchers>>,{where}')})"
    else:
        # device plugin series live in kube-system: the workload's namespace is exported_namespace
        where = f'cluster="{cluster}",exported_namespace=~"{ns}"'
        resources = {"overrides": {"exported_namespace": {"resource": "namespace"}}}
        used = f"{metric.series}{{<<.LabelMatchers>>,{where}}}"
        if metric.denominator is None:
            query = f"sum({used})"
        else:
            # one replica per node (single-host pools): sum over nodes of used/total = sum of replica fractions
            total = f"{metric.denominator}{{<<.LabelMatchers>>,{where}}}"
            query = f"sum(sum by (node) ({used}) / sum by (node) ({total}))"
    # a rule with a fallback lists both series (its discovery query selects either)
    names = metric.all_series
    series = f"{names[0]}{{{where}}}" if len(names) == 1 else f'{{__name__=~"{"|".join(names)}",{where}}}'
    return {
        "seriesQuery": series,
        "resources": resources,
        "name": {"matches": "", "as": metric.adapter_name or metric.name},
        "metricsQuery": query,
    }


def rules(cluster: str, namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """External-metrics rules for prometheus-adapter, each filtered by cluster and workload namespaces.

    With no namespaces (no autoscaled workload yet) the rules match nothing rather than everything.
    """
    names = list(namespaces)
    return [rule(m, cluster, names) for m in metrics.HPA_METRICS.values()]


def server_rules(cluster: str, server_metrics: Iterable[tuple[HpaMetric, Iterable[str]]]) -> list[dict[str, Any]]:
    """The rules serving a workload type's own server metrics (vLLM's, say) to the HPAs of its workloads in
    `namespaces` (the shared rules above serve the rest). Each sums over the pods matched by the HPA's namespace and
    selector (`app=<workload>`)."""
    return [rule(m, cluster, list(namespaces)) for m, namespaces in server_metrics]


# The adapter's Service: chart 5.3.0 names it fullname (fullnameOverride pins it) on `service.port: 443`.
RELEASE = "prometheus-adapter"
# The ConfigMap of the rules the stack registers (the chart's `rules.existing`).
RULES_CONFIGMAP = "prometheus-adapter-rules"
# prometheus-adapter chart 5.3.0 values.yaml has `resources: {}`: without requests the pod serving every HPA metric
# would be BestEffort, the first evicted under node pressure. Like the GMP frontend it proxies queries.
RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}


def rules_config(external: list[dict[str, Any]]) -> str:
    """The adapter's config.yaml, as chart 5.3.0 templates/configmap.yaml writes it for external rules only; written
    as JSON, which YAML 1.2 includes (the adapter parses the file as YAML)."""
    return json.dumps({"externalRules": external}, indent=2)


def values(chart: ChartVersion, prometheus_url: str, config: str) -> dict[str, Any]:
    # keys of prometheus-adapter 5.3.0 values.yaml: image.*, fullnameOverride, nodeSelector, resources,
    # podAnnotations, prometheus.{url,port}, rules.*
    return {
        "image": image_values(chart),
        "fullnameOverride": RELEASE,
        "nodeSelector": dict(naming.SYSTEM_POOL_SELECTOR),
        "resources": RESOURCES,
        # the config is the stack's ConfigMap, so the chart's checksum/config annotation no longer follows it: a
        # rules change rolls the pod through this one (the adapter reads its config at start only)
        "podAnnotations": {"tpu-serving/rules-sha256": hashlib.sha256(config.encode()).hexdigest()},
        "prometheus": {"url": prometheus_url, "port": 9090},
        # `rules.existing` names the stack's ConfigMap, and no rule list is set: the chart then renders neither its
        # ConfigMap nor, gated on `rules.external` / `rules.default or rules.custom`, any APIService or the HPA's
        # external-metrics role (chart 5.3.0 templates/configmap.yaml, external-metrics-apiservice.yaml,
        # custom-metrics-apiservice.yaml, external-metrics-cluster-role*.yaml). The stack registers those itself
        # under the same resources as every adapter (stacks/monitoring/adapters/entry.py), so switching adapters
        # never hands the APIService from Helm to the stack or back.
        "rules": {"default": False, "custom": [], "external": [], "existing": RULES_CONFIGMAP},
    }


# ---- the build --------------------------------------------------------------------------------------------------


def _frontend(ctx: AdapterContext) -> list[Part]:
    """The GMP query frontend: its KSA (Google access, so unique per stack), Deployment and Service."""
    ns, labels = ctx.namespace, {"app": GMP_FRONTEND}
    ksa = naming.stack_service_account(GMP_FRONTEND, ctx.identity_suffix)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(GMP_FRONTEND, ns, labels, GMP_FRONTEND_SKIPS),
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": gmp_frontend_pod(ctx.project, ksa)},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(GMP_FRONTEND_SERVICE, ns, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": labels,
            "ports": [{"name": "web", "port": 9090, "targetPort": "web"}],
        },
    }
    return [
        Part(
            "gmp-frontend-sa",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ksa, ns)},
            after=(NAMESPACE,),
        ),
        Part("gmp-frontend", deployment, after=("gmp-frontend-sa", GRANT, SYSTEM_POOL)),
        Part("gmp-frontend-svc", service, after=(NAMESPACE,)),
    ]


def build(ctx: AdapterContext) -> AdapterBuild:
    # the workload types' own server metrics first (JetStream's, vLLM's: their plans' hpa_metrics), then the shared
    # TPU ones; each rule names its own metric, so the order only keeps the rendered ConfigMap stable
    external = [*server_rules(ctx.cluster, ctx.server_metrics), *rules(ctx.cluster, ctx.hpa_namespaces)]
    chart = ctx.chart(CHART)
    config = rules_config(external)
    release = Chart(chart, values(chart, f"http://{GMP_FRONTEND_SERVICE}.{ctx.namespace}.svc", config))
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(RULES_CONFIGMAP, ctx.namespace),
        "data": {"config.yaml": config},
    }
    ksa = naming.stack_service_account(GMP_FRONTEND, ctx.identity_suffix)
    return AdapterBuild(
        grants=[Grant(GRANT, "roles/monitoring.viewer", ksa)],
        parts=[
            *_frontend(ctx),
            Part("prometheus-adapter-rules", configmap, after=(NAMESPACE,)),
            Part(
                "prometheus-adapter",
                release,
                after=(NAMESPACE, "prometheus-adapter-rules", "gmp-frontend-svc", "gmp-frontend", SYSTEM_POOL),
            ),
            # after the release: its Deployment serves (Helm waits for it), and a release of an earlier stack that
            # still rendered the APIService has removed it by then
            api_service(EXTERNAL_METRICS_API, "v1beta1", 100, RELEASE, ctx.namespace, after=("prometheus-adapter",)),
            *external_metrics_reader(),
        ],
        chart_levels=(CHART_LEVEL,),
    )


def metric_spec(
    metric: HpaMetric, goal: dict[str, Any], namespace: str, cluster: str, selector: Mapping[str, str] | None
) -> dict[str, Any]:
    """An External metric named as the rule's `name.as`; `selector` narrows a server metric to one workload's pods
    (labels its PodMonitoring attaches). The rules filter by cluster and namespace themselves."""
    external: dict[str, Any] = {"name": metric.adapter_name or metric.name}
    if selector and metric.origin == "server":
        external["selector"] = {"matchLabels": dict(selector)}
    return {"type": "External", "external": {"metric": external, "target": goal}}


ADAPTER = MetricsAdapter(
    name=NAME,
    description="the Helm chart with summing external-metrics rules, querying a GMP frontend that reads Cloud Monitoring",
    apis=(EXTERNAL_METRICS_API,),
    origins=frozenset({"server", "tpu"}),
    ratios=True,
    # its rules are PromQL: `<series> or (1 - <fallback>)` (HpaMetric.read)
    fallbacks=True,
    api_port=PORT,
    metric_spec=metric_spec,
    build=build,
)
