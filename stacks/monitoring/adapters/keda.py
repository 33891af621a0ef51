"""KEDA: the Helm chart (kedacore/charts@v2.20.2:keda), its CRDs applied by the stack, and one ScaledObject per
autoscaled workload whose `prometheus` triggers query Managed Prometheus's API in Cloud Monitoring directly
(`https://monitoring.googleapis.com/v1/projects/<project>/location/global/prometheus`, the address KEDA's own GCP
test uses: kedacore/keda@v2.20.2:tests/scalers/gcp/gcp_prometheus_workload_identity/
gcp_prometheus_workload_identity_test.go) as the KEDA operator's Workload Identity: a ClusterTriggerAuthentication
with `podIdentity.provider: gcp` (apis/keda/v1alpha1/triggerauthentication_types.go PodIdentityProviderGCP) makes
the prometheus scaler call with the operator's Google credentials and the monitoring.read scope
(pkg/scalers/prometheus_scaler.go NewPrometheusScaler -> gcp.GetGCPOAuth2HTTPTransport), so the operator's KSA
holds `roles/monitoring.viewer`, and nothing else.

KEDA creates the HPA itself (`keda-hpa-<ScaledObject>`, controllers/keda/hpa.go getHPAName) with one External
metric per trigger (`s<index>-prometheus`, pkg/scalers/scaler.go GenerateMetricNameWithIndex) whose AverageValue
target is the trigger's `threshold` (GetMetricSpecForScaling, GetMetricTargetMili; AverageValue unless
`metricType` says otherwise, GetMetricTargetType). The scaler's query must return ONE sample (ExecutePromQuery
refuses more) and the HPA divides it by the target: so every query is the SUM over the workload's replicas,
filtered by this cluster and the workload's namespace (Cloud Monitoring holds every cluster of the project).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts.versions import ChartVersion
from stacks.monitoring.adapters.entry import (
    DROP_API_SERVICES,
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
    meta,
)
from stacks.monitoring.metrics import HpaMetric
from stacks.security import pod_security

NAME = "keda"
CHART = "keda"  # the versions.CHARTS key
API_VERSION = "keda.sh/v1alpha1"
# keda chart values.yaml `service.portHttpsTarget: 6443`: the metrics API server's container port
PORT = 6443
OPERATOR = "keda-operator"  # the chart's operator ServiceAccount name (values.yaml serviceAccount.operator.name)
# the metrics server's Service: `<operator.name>-metrics-apiserver` (templates/metrics-server/service.yaml)
METRICS_SERVER = "keda-operator-metrics-apiserver"
GRANT = "keda-operator-monitoring-viewer"
TRIGGER_AUTH = "gmp-workload-identity"  # the ClusterTriggerAuthentication every trigger names
# apis/keda/v1alpha1/scaledobject_types.go PausedReplicasAnnotation: KEDA holds the target at this count and stops
# scaling it while the annotation is set.
PAUSED_REPLICAS_ANNOTATION = "autoscaling.keda.sh/paused-replicas"
# How often KEDA asks each trigger (ScaledObject spec.pollingInterval, seconds): the longest a request waits
# before KEDA sees it, and so what a scale-from-zero adds to a replica's start (WorkloadPlan.activation_seconds).
POLLING_SECONDS = 15
# ScaledObject spec.cooldownPeriod: how long the last trigger must be inactive before KEDA scales to zero; KEDA's
# default (pkg/scaling/executor/scale_executor.go defaultCooldownPeriod = 5 * 60), kept for a workload that never
# runs at zero (KEDA reads it only to scale to zero) and the least a scale-to-zero workload gets (`cooldowns`).
COOLDOWN_SECONDS = 300
# keda chart values.yaml: podSecurityContext runAsNonRoot; every container drops ALL capabilities, no privilege
# escalation, read-only root filesystem, seccomp RuntimeDefault: Pod Security `restricted`.
CHART_LEVEL = pod_security.RESTRICTED
IMAGE_UID = 65532  # kedacore/keda@v2.20.2 Dockerfile, Dockerfile.adapter: USER 65532:65532


def from_zero_budget(from_zero_s: float) -> int:
    """How long a scale from zero may take before anything gives up on it: the time-to-serve estimate's wait from
    zero (KEDA's poll, node provisioning, the warm phases: stacks.reports.time_to_serve Estimate.from_zero), one more poll
    for KEDA and the picker to see the replica Ready and the request it then runs, in whole minutes."""
    return math.ceil((from_zero_s + POLLING_SECONDS) / 60) * 60


def cooldowns(budget_s: int | None) -> dict[str, int]:
    """The ScaledObject's cooldowns. KEDA scales a target to zero once `LastActiveTime + cooldownPeriod` has passed,
    or, before any trigger was ever active, `creationTimestamp + initialCooldownPeriod` (default 0)
    (kedacore/keda@v2.20.2:pkg/scaling/executor/scale_scaledobjects.go scaleToZeroOrIdle; the fields:
    apis/keda/v1alpha1/scaledobject_types.go ScaledObjectSpec InitialCooldownPeriod, CooldownPeriod, int32 >= 0).
    For a workload that scales to zero (`budget_s`, WorkloadPlan.from_zero_budget_s) both cover a scale from zero:
    - cooldownPeriod: the request that woke it may be shed or cut (the picker's queue TTL, the load balancer's
      timeout) and its trigger fall inactive while the replica still starts; KEDA must not scale that replica
      away before it is Ready and the client's retry reaches it;
    - initialCooldownPeriod: the Deployment is created at 1 replica (spec.replicas left to the autoscaler), so a
      first deploy provisions a TPU node; with KEDA's default of 0 it scales the replica away at its first poll,
      its node already asked for. The stack lets that first replica come up (the rollout proves it starts and
      fills the compile cache) and scales it to zero after the same budget if nothing asked for it."""
    if budget_s is None:
        return {"cooldownPeriod": COOLDOWN_SECONDS}
    return {"cooldownPeriod": max(COOLDOWN_SECONDS, budget_s), "initialCooldownPeriod": budget_s}


def gmp_api(project: str) -> str:
    """Managed Prometheus's Prometheus-compatible query API of `project` (Cloud Monitoring)."""
    return f"https://monitoring.googleapis.com/v1/projects/{project}/location/global/prometheus"


def operator_account(identity_suffix: str) -> str:
    """The KEDA operator's KSA: it holds Google access, so its name is unique per stack."""
    return naming.stack_service_account(OPERATOR, identity_suffix)


def values(chart: ChartVersion, operator_sa: str) -> dict[str, Any]:
    """Keys of kedacore/charts@v2.20.2:keda/values.yaml."""
    image = {"registry": "ghcr.io", "tag": chart.image_tag}
    return {
        # the stack applies the CRDs (AddonCrds, from kedacore/keda at the tag): an upgrade updates them
        "crds": {"install": False},
        # The stack registers the APIService v1beta1.external.metrics.k8s.io (entry.api_service, with
        # insecureSkipTLSVerify as for the other adapters; the chart's own is post-rendered away), so the operator
        # must not inject its CA into it: the API server refuses a caBundle beside insecureSkipTLSVerify
        # (kubernetes pkg/apis/apiregistration/validation ValidateAPIServiceSpec). values.yaml
        # certificates.operator.apiServicePatching -> templates/manager/deployment.yaml --enable-apiservice-patching,
        # read by cmd/operator/main.go into pkg/certificates CertManager.EnableAPIServicePatching.
        "certificates": {"operator": {"apiServicePatching": {"enabled": False}}},
        "image": {
            "keda": {**image, "repository": "kedacore/keda"},
            "metricsApiServer": {**image, "repository": "kedacore/keda-metrics-apiserver"},
            "pullPolicy": "IfNotPresent",
        },
        # The admission webhooks (failurePolicy Ignore upstream) only reject a second ScaledObject on one target;
        # the stack makes exactly one per workload, and the adapter namespace admits the API server on the
        # metrics port only.
        "webhooks": {"enabled": False},
        # the stack registers the operator's KSA (it holds the Workload Identity grant); the chart's RBAC and
        # Deployment name it (templates/manager/deployment.yaml serviceAccountName)
        "serviceAccount": {"operator": {"create": False, "name": operator_sa}},
        # templates/*/deployment.yaml: `.Values.<component>.nodeSelector | default .Values.nodeSelector`
        "nodeSelector": dict(naming.SYSTEM_POOL_SELECTOR),
        # the images' own non-root user, stated (the chart sets runAsNonRoot only): kedacore/keda@v2.20.2 Dockerfile
        # and Dockerfile.adapter `USER 65532:65532` (distroless nonroot)
        "podSecurityContext": {
            component: {"runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID} for component in ("operator", "metricServer")
        },
    }


def build(ctx: AdapterContext) -> AdapterBuild:
    chart = ctx.chart(CHART)
    operator_sa = operator_account(ctx.identity_suffix)
    trigger_auth = {
        "apiVersion": API_VERSION,
        "kind": "ClusterTriggerAuthentication",
        "metadata": meta(TRIGGER_AUTH),
        "spec": {"podIdentity": {"provider": "gcp"}},
    }
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(operator_sa, ctx.namespace)}
    return AdapterBuild(
        grants=[Grant(GRANT, "roles/monitoring.viewer", operator_sa)],
        parts=[
            Part("keda-operator-sa", account, after=(NAMESPACE,)),
            # The chart renders the APIService v1beta1.external.metrics.k8s.io whatever its values
            # (templates/metrics-server/apiservice.yaml); the release post-renders it away and the stack registers
            # it, as for every adapter, under the shared key once the metrics server serves: one owner in every
            # mode, so switching to or from KEDA updates it in place (entry.py). The HPA controller's reader role
            # is the chart's (templates/metrics-server/clusterrole.yaml, another name than the stack's).
            Part(
                NAME,
                Chart(chart, values(chart, operator_sa), postrender=DROP_API_SERVICES),
                after=(NAMESPACE, "keda-operator-sa", GRANT, SYSTEM_POOL),
                serves_api=True,
            ),
            # as the chart's: kedacore/charts@v2.20.2 keda/templates/metrics-server/apiservice.yaml (service
            # `<operator.name>-metrics-apiserver`, port service.portHttps 443, priorities 100/100)
            api_service(EXTERNAL_METRICS_API, "v1beta1", 100, METRICS_SERVER, ctx.namespace, after=(NAME,)),
            Part("trigger-auth", trigger_auth, after=(NAME,), serves_api=True),
        ],
        chart_levels=(CHART_LEVEL,),
    )


# ---- triggers ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """Where a workload's series are: this cluster, its namespace, its pods' labels, its InferencePool."""

    project: str
    cluster: str
    namespace: str
    selector: Mapping[str, str]
    pool: str | None = None  # the InferencePool's name when the gateway serves the workload


def _matchers(labels: Mapping[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def query(metric: HpaMetric, scope: Scope) -> str:
    """PromQL returning ONE sample: the metric's total over the workload's replicas (for a pool-level gauge of
    the endpoint picker, the pool's value however many picker replicas export it)."""
    where = {"cluster": scope.cluster}
    if metric.origin == "gateway":
        if scope.pool is None or metric.pool_label is None:
            raise ValueError(f"{metric.name} is a gateway metric: the workload must be served through the gateway")
        where |= {"namespace": scope.namespace, metric.pool_label: scope.pool}
        own = f"{metric.series}{{{_matchers(where)}}}"
        if metric.multiplier is None:
            return f"sum({own})"  # each picker replica's own queue: the pool's is their sum
        # a pool-level gauge every picker replica exports alike (stacks.monitoring.metrics GATEWAY_HPA_METRICS): one
        # replica's product is the pool's total, a sum would count it once per picker replica
        return f"max({own} * {metric.multiplier}{{{_matchers(where)}}})"
    if metric.origin == "server":
        where |= {"namespace": scope.namespace, **{k: v for k, v in scope.selector.items() if k in metric.labels}}
        return f"sum({metric.read(_matchers(where))})"
    # device-plugin series live in kube-system: the workload's namespace is exported_namespace
    where |= {"exported_namespace": scope.namespace}
    used = f"{metric.series}{{{_matchers(where)}}}"
    if metric.denominator is None:
        return f"sum({used})"
    # one replica per node: the sum over nodes of used/total is the sum of the replicas' fractions
    total = f"{metric.denominator}{{{_matchers(where)}}}"
    return f"sum(sum by (node) ({used}) / sum by (node) ({total}))"


def number(value: float) -> str:
    """A number as a trigger's metadata gives it to a float64 field: KEDA parses the string as JSON
    (kedacore/keda@v2.20.2:pkg/scalers/scalersconfig/typed_config.go setConfigValueHelper: json.Unmarshal into the
    field's type), so `0.8`, never a Kubernetes quantity such as `800m`, which fails the trigger and, with it, the
    whole ScaledObject (no scaler, no HPA)."""
    as_float = float(value)
    if not math.isfinite(as_float):
        raise ValueError(f"{value!r} is not a finite number")
    # repr: the shortest decimal that reads back as the same float, in JSON's number grammar
    return str(int(as_float)) if as_float.is_integer() else repr(as_float)


def trigger(metric: HpaMetric, target: float, scope: Scope) -> dict[str, Any]:
    """A `prometheus` trigger (pkg/scalers/prometheus_scaler.go prometheusMetadata: serverAddress, query,
    threshold, a float64; `ignoreNullValues` defaults to true, so a series not yet exported reads as 0)."""
    return {
        "type": "prometheus",
        "name": metric.name.replace(":", "-").replace("_", "-"),
        "authenticationRef": {"name": TRIGGER_AUTH, "kind": "ClusterTriggerAuthentication"},
        "metadata": {
            "serverAddress": gmp_api(scope.project),
            "query": query(metric, scope),
            "threshold": number(target),
        },
    }


def metric_spec(
    metric: HpaMetric, goal: dict[str, Any], namespace: str, cluster: str, selector: Mapping[str, str] | None
) -> dict[str, Any]:
    """KEDA's HPA metric when `metric` is its ScaledObject's first trigger: External `s0-prometheus`, selected by
    the ScaledObject's name (controllers/keda/hpa.go adds `scaledobject.keda.sh/name`); the workload registers the
    ScaledObject, never this spec (stacks.serving.workload_plan.autoscaler_manifest)."""
    return {"type": "External", "external": {"metric": {"name": "s0-prometheus"}, "target": goal}}


ADAPTER = MetricsAdapter(
    name=NAME,
    description="KEDA (Helm chart, CRDs by the stack): a ScaledObject per workload whose triggers query Managed "
    "Prometheus's API with the operator's Workload Identity; scales on the gateway's queue, and from zero",
    apis=(EXTERNAL_METRICS_API,),
    origins=frozenset({"server", "tpu", "gateway"}),
    ratios=True,
    fallbacks=True,
    api_port=PORT,
    metric_spec=metric_spec,
    build=build,
    scaled_objects=True,
)
