"""tpu-serving:alerts and each workload's `slo`: the Cloud Monitoring alert policies, SLOs and log-based metrics, as
registered, over every workload type of the registry (and one a test adds).

Sources:
- Provider schema, hashicorp/terraform-provider-google-beta@v7.45.0:google-beta/services/monitoring/
  resource_monitoring_alert_policy.go: conditionPrometheusQueryLanguage {query (required), duration,
  disable_metric_validation ("allows alerting policies to be defined on metrics that do not yet exist"),
  evaluation_interval, labels, rule_group, alert_rule}; severity CRITICAL | ERROR | WARNING;
  resource_monitoring_slo.go: goal "0 < goal <= 0.9999" (validateMonitoringSloGoal), rolling_period_days
  IntBetween(1, 30), request_based_sli {distribution_cut {distribution_filter, range {min, max}}, good_total_ratio
  {good_service_filter, bad_service_filter, total_service_filter}}. pulumi-gcp 10.2.0 monitoring/_inputs.py has the
  same fields (AlertPolicyConditionConditionPrometheusQueryLanguageArgs.disable_metric_validation).
- Prometheus metrics as SLIs: "For latency SLIs, you can use Prometheus histogram ... Prometheus metrics start with
  prometheus.googleapis.com/" (https://cloud.google.com/stackdriver/docs/solutions/slo-monitoring/sli-metrics/prometheus);
  kube state metrics are written as prometheus.googleapis.com/<name>/<gauge|counter|histogram> on prometheus_target,
  "identical to the metric name exposed by open source Kubernetes"
  (https://cloud.google.com/kubernetes-engine/docs/how-to/kube-state-metrics).
- Burn-rate alerts: select_slo_burn_rate("<slo>", "<lookback>")
  (https://cloud.google.com/stackdriver/docs/solutions/slo-monitoring/alerting-on-budget-burn-rate); the windows and
  rates of the Google SRE workbook, "Alerting on SLOs" (1 h/5 min at 14.4x, 6 h/30 min at 6x).
- The endpoint picker: llm-d/llm-d-router@v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go (series and labels),
  pkg/epp/handlers/server.go and pkg/common/error/error.go (error_code is never an HTTP status: ModelServerError
  for any non-200 answer of the model server, else the picker's canonical error code), cmd/epp/runner/feature_gate_test.go (the
  flowControl gate, off by default), config/charts/routerlib templates/_gke.yaml (the PodMonitoring it renders with
  monitoring.provider gmp and prometheus.enabled) and templates/_deployment.yaml (container port metrics 9090).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from stacks.config import ConfigError
from stacks.monitoring import alerts, dashboard, metrics
from stacks.reports import cost
from stacks.security import pod_security
from stacks.serving import gateway
from tests import promql
from tests.conftest import STACK_FILES, make_config, pool, reference_file
from tests.test_workload_registry import ECHO_CONFIG, echo_registered  # noqa: F401 (a fixture)
from tooling.generate import readme_tables
from tooling.harness.offline import load_stack_file, parse_config
from tooling.oracles import chart_objects
from workloads.jetstream import server as jetstream_server
from workloads.jetstream.server import JETSTREAM_METRICS
from workloads.pathways_job.plan import HEAD_JOB, WORKER_JOB
from workloads.registry import WORKLOAD_TYPES
from workloads.vllm import metrics as vllm_metrics

POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"
VLLM = {
    "type": "vllm",
    "name": "chat",
    "pool": "v6e-4x4",
    "model": "meta-llama/Llama-3.1-8B",
    "autoscaling": {
        "minReplicas": 1,
        "maxReplicas": 2,
        "metrics": [{"name": "vllm:num_requests_waiting", "target": 8}],
    },
}
GATEWAY_GKE = "1.34.0-gke.1626000"
ROOT = Path(__file__).resolve().parents[1]  # tests/test_gateway.py INFERENCE_POOL_GKE


def vllm_config(environment: str = "staging", **changes: Any) -> dict[str, Any]:
    cfg = make_config(
        tpu_serving__environment=environment,
        tpu_serving__tpuPools=[
            pool(
                name="v6e-4x4", tpu="v6e", topology="2x2", zone="us-east5-b", autoscaling={"minNodes": 0, "maxNodes": 2}
            )
        ],
        tpu_serving__workloads=[{**VLLM, **changes.pop("workload", {})}],
        tpu_serving__cluster={"minMasterVersion": GATEWAY_GKE},
    )
    cfg.update({f"tpu-serving:{k}": v for k, v in changes.items()})
    return cfg


def example_configs(enabled: bool = True) -> list[Any]:
    """Every shipped regional stack (a fleet stack has no workloads of its own), with the alerts on (dev stacks too)
    and the gateway on where it can be."""
    out = []
    for path in STACK_FILES:
        raw = load_stack_file(path)
        raw["tpu-serving:alerts"] = {"enabled": enabled}
        out.append(parse_config(raw, path.name.removeprefix("Pulumi.").removesuffix(".yaml")))
    return out


# ---- every query reads what the scraping produces ------------------------------------------------------------


def check_query(query: str) -> None:
    promql.check_scraped(
        query, {**metrics.SERIES_LABELS, **jetstream_server.SERIES_LABELS, **vllm_metrics.SERIES_LABELS}
    )


def every_rule_query() -> list[str]:
    plans = [cfg.alerts_plan for cfg in example_configs()]
    plans.append(parse_config(vllm_config(gateway={"enabled": True}), "staging").alerts_plan)
    queries = [r.query for p in plans for w in p.workloads for r in w.rules]
    assert queries
    return queries


def test_every_alert_and_dashboard_query_parses_and_reads_only_labels_the_scraping_produces():
    gateway_served = parse_config(vllm_config(gateway={"enabled": True}), "staging")
    panels = [q for _, q, _ in dashboard.panels("c1", head=gateway_served.monitoring_plan.dashboard_panels)]
    assert any("llm_d_epp_flow_control_queue_size" in q for q in panels)
    assert any("generation_tokens_total" in q for q in panels)
    for query in every_rule_query() + panels:
        check_query(query)


def test_the_query_check_fails_on_a_label_nothing_produces_and_on_bad_syntax():
    with pytest.raises(AssertionError):
        check_query('sum(vllm:num_requests_waiting{deployment="x"}) > 1')  # vLLM's series carry no deployment
    with pytest.raises(AssertionError):
        check_query("sum(kube_pod_info) > 1")  # not scraped
    for bad in ("sum(rate(x[5m]) > 1", "rate(x) > 1", 'x{a="b"', "sum by (a (x)", "x >"):
        with pytest.raises(SyntaxError):
            promql.parse(bad)


def test_every_keda_trigger_reads_a_series_the_scraping_produces(run):
    """Each metric the KEDA adapter can trigger on (every HPA metric of an origin it serves: the server's, the TPU
    device plugin's and the endpoint picker's), as the query its ScaledObject sends (stacks/monitoring/adapters/keda.py
    query), and the example's rendered triggers: every series and label is one the stack's scraping produces. The
    picker's series come from its chart's PodMonitoring (test_the_endpoint_picker_is_scraped_and_runs_with_flow_control);
    `llm_d_epp_average_running_requests` is labelled `name` (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/
    llm_d_router_metrics.go llmdInferencePoolAvgRunningRequests, poolLabels = ["name"] in metrics.go)."""
    from stacks.monitoring.adapters import keda

    scope = keda.Scope("p", "tpu-serving-s", "w", {"app": "w"}, pool="w")
    served = {**JETSTREAM_METRICS, **vllm_metrics.VLLM_METRICS}
    served = {n: m for n, m in served.items() if m.origin in keda.ADAPTER.origins}
    assert {"epp_flow_control_queue_size", "epp_running_requests", "vllm:num_requests_waiting"} <= set(served)
    for metric in served.values():
        check_query(keda.query(metric, scope))
    example = load_stack_file(ROOT / "examples" / "vllm-single-host" / "Pulumi.vllm-single-host-keda.yaml")
    triggers = run(example, stack="vllm-single-host-keda").one("kubernetes:keda.sh/v1alpha1:ScaledObject")
    queries = [t["metadata"]["query"] for t in triggers.inputs["spec"]["triggers"]]
    assert any("llm_d_epp_flow_control_queue_size" in q for q in queries)
    for query in queries:
        check_query(query)


# ---- every workload type of the registry ------------------------------------------------------------------------


def replicated_jobs(plan: Any, name: str) -> list[str]:
    """The replicated jobs of the workload's JobSet `name`: from its manifest, or the PathwaysJob controller's
    (google/pathways-job@v0.1.4: a `pathways-head` job and a `worker` job)."""
    for manifest in plan.pod_manifests():
        if manifest.get("kind") == "JobSet" and manifest["metadata"]["name"] == name:
            return [r["name"] for r in manifest["spec"]["replicatedJobs"]]
    assert plan.workload.type == "pathways-job", (plan.workload.type, name)
    return [HEAD_JOB, WORKER_JOB]


def pod_names(plan: Any) -> tuple[list[str], list[str]]:
    """Pod names a cluster would have in the workload's namespace: its serving pods (named as each controller kind
    names them, stacks.monitoring.alerts.POD_NAMES' sources), and the pods that are not (the endpoint picker's Deployment
    `<name>-epp`, llm-d-router's chart; each Job of the workload, a weights staging Job among them)."""
    serving = []
    for unit in plan.disruption_units():
        if unit.kind == "Deployment":
            serving.append(f"{unit.name}-7d9f8b6c5d-x2k4p")
        elif unit.kind == "LeaderWorkerSet":
            serving += [f"{unit.name}-0", f"{unit.name}-1", f"{unit.name}-1-3"]
        elif unit.kind == "JobSet":
            serving += [f"{unit.name}-{r}-0-1-q8z2m" for r in replicated_jobs(plan, unit.name)]
        else:
            raise AssertionError(f"no pod naming for a {unit.kind}: add it to stacks.monitoring.alerts.POD_NAMES")
    other = [f"{gateway.epp_name(plan.name)}-6c8f9d7b4-abcde", f"{plan.name}-weights-299216fe-k2j9d"]
    other += [
        f"{m['metadata']['name']}-{suffix}"
        for m in plan.pod_manifests()
        if m.get("kind") == "Job"
        for suffix in ("x7k2p", "0-x7k2p")
    ]
    return serving, other


def check_selects_exactly_the_serving_pods(plan: Any, query: str) -> None:
    (pattern,) = {v for sel in promql.parse(query) for label, op, v in sel.matchers if label == "pod" and op == "=~"}
    serving, other = pod_names(plan)
    for pod in serving:
        assert re.fullmatch(pattern, pod), (plan.workload.type, pod, pattern)
    for pod in other:
        assert not re.fullmatch(pattern, pod), (plan.workload.type, pod, pattern)


# kube-state-metrics' container readiness series, app containers and init containers apart
# (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md: both labelled `container`, `pod`, `namespace`).
READINESS_SERIES = ("kube_pod_container_status_ready", "kube_pod_init_container_status_ready")


def serving_pod_containers(plan: Any) -> tuple[set[str], set[str], set[str]]:
    """(app containers with a readiness probe, app containers without one, init containers) of the workload's
    controllers' pods, read from its rendered pod manifests (not from the plan's own answer); a Job's pods (staging,
    publishing) run to completion and are never a replica."""
    probed: set[str] = set()
    unprobed: set[str] = set()
    init: set[str] = set()
    for manifest in plan.pod_manifests():
        if manifest.get("kind") == "Job":
            continue
        for spec in pod_security.pod_specs(manifest):
            for c in spec.get("containers", []):
                (probed if "readinessProbe" in c else unprobed).add(c["name"])
            init |= {c["name"] for c in spec.get("initContainers", [])}
    return probed, unprobed, init


def check_reads_readiness_per_serving_container(plan: Any, query: str) -> None:
    """Every readiness series the query reads names the workload's serving containers (`container`), taken per pod
    at its lowest (`min by (pod)`): a container without a readiness probe is ready while it runs ("If a container does
    not provide a readiness probe, the default state is Success",
    https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-probes), so summing a pod's containers
    counts a sidecar (a compile-cache push, a Pathways proxy or resource manager) as a ready replica. Where some
    container of the pods has a readiness probe, exactly the probed ones are named; never an init container (those
    are another series); and a type whose pods probe none names containers its pods have."""
    selectors = [s for s in promql.parse(query) if s.metric in READINESS_SERIES]
    assert selectors, query
    probed, unprobed, init = serving_pod_containers(plan)
    for sel in selectors:
        assert sel.metric == "kube_pod_container_status_ready", (plan.name, "init containers are not the server")
        matchers = {label: (op, value) for label, op, value in sel.matchers}
        assert "container" in matchers, (plan.workload.type, "reads every container of the pod", query)
        op, value = matchers["container"]
        assert op in ("=", "=~"), query
        named = set(value.split("|")) if op == "=~" else {value}
        assert named, query
        assert not named & init, (plan.workload.type, named & init)
        if probed:
            assert named == probed, (plan.workload.type, named, probed)
        else:
            assert named <= unprobed, (plan.workload.type, named, unprobed)
    assert re.search(r"min by \(pod\) \(kube_pod_container_status_ready\{", query), query


def readiness_queries(rules: dict[str, Any]) -> list[str]:
    return [r.query for r in rules.values() if any(series in r.query for series in READINESS_SERIES)]


def test_every_registry_type_gets_its_policies_and_they_select_exactly_its_serving_pods():
    """The pod selectors match each controller's pods and neither the endpoint picker's nor a Job's (the old
    `<name>-.+` matched both: the picker's ready container masked "no ready replica")."""
    seen = set()
    for cfg in example_configs():
        rules = {w.name: {r.key: r for r in w.rules} for w in cfg.alerts_plan.workloads}
        for plan in cfg.workloads:
            seen.add(plan.workload.type)
            mine = rules[plan.name]
            assert f"{plan.name}-pods-pending" in mine
            assert (f"{plan.name}-no-ready-replica" in mine) == plan.serves_requests
            for key in ("no-ready-replica", "pods-pending", "requests-waiting"):
                if f"{plan.name}-{key}" in mine:
                    check_selects_exactly_the_serving_pods(plan, mine[f"{plan.name}-{key}"].query)
            assert bool(readiness_queries(mine)) == plan.serves_requests
            for query in readiness_queries(mine):
                check_reads_readiness_per_serving_container(plan, query)
            if getattr(plan.workload, "autoscaling", None) is not None:
                assert f"{plan.name}-autoscaler-at-max" in mine
    # every type of the registry is in some shipped stack, so the loop above covered it
    assert seen == set(WORKLOAD_TYPES)
    with pytest.raises(AssertionError):  # the old selector
        check_selects_exactly_the_serving_pods(
            cfg.workloads[0], f'sum(kube_pod_status_phase{{pod=~"{cfg.workloads[0].name}-.+"}})'
        )


def test_a_type_added_to_the_registry_gets_the_policies(run, echo_registered):  # noqa: F811
    rec = run(make_config(tpu_serving__environment="staging", tpu_serving__workloads=[ECHO_CONFIG]), stack="staging")
    names = {r.name for r in rec.of_type(POLICY)}
    assert {"alerts-echo-no-ready-replica", "alerts-echo-pods-pending", "alerts-echo-hbm-near-full"} <= names
    plan = parse_config(
        make_config(tpu_serving__environment="staging", tpu_serving__workloads=[ECHO_CONFIG]), "staging"
    ).workloads[0]
    for key in ("no-ready-replica", "pods-pending"):
        query = rec.one(POLICY, f"alerts-echo-{key}").inputs["conditions"][0]["conditionPrometheusQueryLanguage"]
        check_selects_exactly_the_serving_pods(plan, query["query"])
    ready = rec.one(POLICY, "alerts-echo-no-ready-replica").inputs["conditions"][0]["conditionPrometheusQueryLanguage"]
    check_reads_readiness_per_serving_container(plan, ready["query"])  # no probe: its one container


def test_no_readiness_query_of_an_alert_or_tile_counts_a_sidecar():
    """Over every shipped stack's policies and dashboard tiles: a readiness series is only ever read per serving
    container. The old query, the sum of every container of the pod, fails the check (a vLLM pod's compile-cache push
    and a Pathways leader's proxy and resource manager have no readiness probe)."""
    checked = set()
    for cfg in example_configs():
        rules = {w.name: {r.key: r for r in w.rules} for w in cfg.alerts_plan.workloads}
        panels = [q for _, q, _ in dashboard.panels("c1", head=cfg.monitoring_plan.dashboard_panels)]
        assert not [q for q in panels if any(series in q for series in READINESS_SERIES)], "a tile reads readiness"
        for plan in cfg.workloads:
            for query in readiness_queries(rules[plan.name]):
                check_reads_readiness_per_serving_container(plan, query)
                checked.add(plan.workload.type)
    assert checked == set(WORKLOAD_TYPES)  # every type has a serving workload in some shipped stack
    sidecars = {
        plan.workload.type: plan
        for cfg in example_configs()
        for plan in cfg.workloads
        if plan.serves_requests and serving_pod_containers(plan)[0] and serving_pod_containers(plan)[1]
    }
    assert {"vllm", "jetstream-pathways"} <= set(sidecars)
    for plan in sidecars.values():
        old = f'(sum(kube_pod_container_status_ready{{pod=~"{plan.name}-.+"}}) or vector(0)) < 1'
        with pytest.raises(AssertionError):
            check_reads_readiness_per_serving_container(plan, old)


# ---- at zero replicas nothing is down ----------------------------------------------------------------------------
# KEDA scales a `minReplicas: 0` workload to zero when idle (docs/autoscaling.md "Scale to zero"): no pod, so no
# readiness series and the picker counts 0 ready endpoints (llm_d_epp_ready_endpoints, a gauge of the pool). The
# controller then asks for 0 replicas: kube_deployment_spec_replicas of a Deployment, kube_statefulset_replicas of a
# LeaderWorkerSet's leader StatefulSet `<lws>` (kubernetes/kube-state-metrics docs/metrics/workload/
# deployment-metrics.md, statefulset-metrics.md; kubernetes-sigs/lws@v0.7.0 pkg/controllers/
# leaderworkerset_controller.go constructLeaderStatefulSetApplyConfiguration). KEDA's HPA stays, its maximum set.
SCALING_KINDS = {
    "Deployment": ("kube_deployment_spec_replicas", "deployment"),
    "LeaderWorkerSet": ("kube_statefulset_replicas", "statefulset"),
}


def world(plan: Any, cluster: str, replicas: int) -> list[tuple[str, dict[str, str], float]]:
    """The series GKE's kube-state-metrics and the picker report for `plan` while its controllers ask for `replicas`
    and no pod of it is ready (none runs at 0; at 1, one is starting)."""
    where = {"cluster": cluster, "namespace": plan.namespace}
    out = [
        (metric, {**where, label: unit.name}, float(replicas))
        for unit in plan.disruption_units()
        for metric, label in [SCALING_KINDS[unit.kind]]
    ]
    out.append(("llm_d_epp_ready_endpoints", {**where, "name": plan.name}, 0.0))
    out.append(("llm_d_epp_flow_control_queue_size", {**where, "inference_pool": plan.name}, 0.0))
    hpa = {**where, "horizontalpodautoscaler": plan.hpa_name}
    out += [
        ("kube_horizontalpodautoscaler_status_current_replicas", hpa, float(replicas)),
        ("kube_horizontalpodautoscaler_spec_max_replicas", hpa, 2.0),
    ]
    if replicas:
        out += [
            ("kube_pod_container_status_ready", {**where, "pod": pod, "container": c}, 0.0)
            for pod in pod_names(plan)[0][:1]
            for c in plan.serving_containers()
        ]
    return out


def check_idle_at_zero(plan: Any, rules: Any, cluster: str) -> None:
    """No condition of the workload's policies holds at zero replicas; "no ready replica" does at one wanted and
    none ready (the gate does not silence the outage)."""
    for rule in rules:
        fired = promql.evaluate(rule.query, world(plan, cluster, 0))
        assert not fired, (plan.workload.type, rule.key, "fires at zero replicas", rule.query)
    down = {r.key: promql.evaluate(r.query, world(plan, cluster, 1)) for r in rules}
    for key in (f"{plan.name}-no-ready-replica", f"{plan.name}-gateway-no-endpoint"):
        if key in down:
            assert down[key], (plan.workload.type, key, "silent while a replica is wanted and none is ready")


def test_at_zero_replicas_no_alert_fires_for_any_type_that_scales(echo_registered):  # noqa: F811
    """Every registry type whose controllers scale (a Deployment, a LeaderWorkerSet), and one a test adds at
    `replicas: 0`: at zero replicas no policy's condition holds, evaluated over the series the cluster then has
    (tests/promql.py evaluate). The old "no ready replica" and "gateway sees no endpoint", `(... or vector(0)) < 1`,
    were true there: a page every idle period of a scale-to-zero workload. A type with a JobSet has no scale: its pod
    count is fixed while it runs (and a paused stack disables its policies), so it never autoscales."""
    checked = set()
    for cfg in example_configs():
        rules = {w.name: w.rules for w in cfg.alerts_plan.workloads}
        for plan in cfg.workloads:
            kinds = {u.kind for u in plan.disruption_units()}
            if not kinds <= set(SCALING_KINDS):
                assert getattr(plan.workload, "autoscaling", None) is None, plan.workload.type
                continue
            check_idle_at_zero(plan, rules[plan.name], cfg.alerts_plan.cluster_name)
            checked.add((plan.workload.type, *sorted(kinds)))
    assert {("vllm", "Deployment"), ("jetstream", "Deployment")} <= checked, checked
    assert any("LeaderWorkerSet" in kinds for kinds in checked), checked
    echo = parse_config(
        make_config(
            tpu_serving__environment="staging",
            tpu_serving__alerts={"enabled": True},
            tpu_serving__workloads=[{**ECHO_CONFIG, "replicas": 0}],
        ),
        "staging",
    )
    assert echo.workloads[0].min_replicas == 0
    check_idle_at_zero(echo.workloads[0], echo.alerts_plan.workloads[0].rules, echo.alerts_plan.cluster_name)


def test_the_scale_to_zero_example_with_alerts_on_pages_nobody_while_idle():
    """examples/vllm-single-host/Pulumi.vllm-single-host-keda.yaml (KEDA, minReplicas 0, behind the gateway) with the
    alerts on: neither "no ready replica" nor "gateway sees no endpoint" holds while it sits at zero."""
    raw = load_stack_file(ROOT / "examples/vllm-single-host/Pulumi.vllm-single-host-keda.yaml")
    raw["tpu-serving:alerts"] = {"enabled": True}
    cfg = parse_config(raw, "vllm-single-host-keda")
    (plan,) = cfg.workloads
    assert plan.keda and plan.min_replicas == 0
    (mine,) = cfg.alerts_plan.workloads
    assert {f"{plan.name}-no-ready-replica", f"{plan.name}-gateway-no-endpoint"} <= {r.key for r in mine.rules}
    check_idle_at_zero(plan, mine.rules, cfg.alerts_plan.cluster_name)


# ---- defaults, pause, routing -----------------------------------------------------------------------------------


def test_alerts_are_on_in_staging_and_prod_off_in_dev_and_page_only_in_prod():
    plans = {env: parse_config(vllm_config(env), env).alerts_plan for env in ("dev", "staging", "prod")}
    assert [(p.enabled, p.paging) for p in plans.values()] == [(False, False), (True, False), (True, True)]
    assert plans["dev"].workloads == () and plans["dev"].cluster_rules == ()
    on = parse_config(vllm_config("dev", alerts={"enabled": True, "paging": True}), "dev").alerts_plan
    assert on.enabled and on.paging and on.workloads


def test_registered_policies_notify_by_severity_and_stay_disabled_while_paused(run):
    channels = [
        {"type": "email", "address": "oncall@example.com"},
        {"type": "existing", "address": "projects/my-project/notificationChannels/42", "page": True},
    ]
    rec = run(vllm_config("prod", alerts={"channels": channels}), stack="prod")
    email = rec.one("gcp:monitoring/notificationChannel:NotificationChannel")
    assert email.inputs["type"] == "email" and email.inputs["labels"] == {"email_address": "oncall@example.com"}
    policies = rec.of_type(POLICY)
    assert policies and all(p.inputs["enabled"] is True for p in policies)
    page = "projects/my-project/notificationChannels/42"
    for p in policies:
        assert p.inputs["severity"] in ("CRITICAL", "WARNING")
        assert (page in p.inputs["notificationChannels"]) == (p.inputs["severity"] == "CRITICAL"), p.name
        assert len(p.inputs["notificationChannels"]) == (2 if p.inputs["severity"] == "CRITICAL" else 1)
        for condition in p.inputs["conditions"]:
            if "conditionPrometheusQueryLanguage" in condition:
                assert condition["conditionPrometheusQueryLanguage"]["disableMetricValidation"] is True
    assert set(rec.outputs["alertPolicies"]) == {p.name.removeprefix("alerts-") for p in policies}
    # staging: the paging channel gets nothing
    staging = run(vllm_config("staging", alerts={"channels": channels}), stack="staging")
    assert all(page not in p.inputs["notificationChannels"] for p in staging.of_type(POLICY))
    paused = run({**vllm_config("prod", alerts={"channels": channels}), "tpu-serving:paused": True}, stack="prod")
    assert {p.name for p in paused.of_type(POLICY)} == {p.name for p in policies}
    assert all(p.inputs["enabled"] is False for p in paused.of_type(POLICY))


def test_dev_registers_no_policy(run):
    rec = run(vllm_config("dev"))
    assert not rec.of_type(POLICY) and "alertPolicies" not in rec.outputs


# ---- config problems --------------------------------------------------------------------------------------------


def test_every_channel_and_slo_problem_is_reported_at_once():
    # a JetStream workload (its server exports no TTFT histogram nor finished-request counter)
    cfg = load_stack_file(ROOT / "examples/gemma-hpa/Pulumi.gemma-hpa.yaml")
    cfg["tpu-serving:alerts"] = {
        "channels": [
            {"type": "email", "address": "not-an-address"},
            {"type": "pubsub", "address": "alerts"},
            {"type": "existing", "address": "projects/my-project/notificationChannels/abc"},
        ]
    }
    cfg["tpu-serving:workloads"][0]["slo"] = {"timeToFirstToken": {"thresholdSeconds": 1}, "availability": 0.99}
    with pytest.raises(ConfigError) as err:
        parse_config(cfg, "gemma-hpa")
    paths = [p.path for p in err.value.problems]
    for path in (
        "tpu-serving:alerts.channels[0].address",
        "tpu-serving:alerts.channels[1].address",
        "tpu-serving:alerts.channels[2].address",
        "tpu-serving:workloads[0].slo.timeToFirstToken",
        "tpu-serving:workloads[0].slo.availability",
    ):
        assert path in paths, (path, [str(p) for p in err.value.problems])
    message = str(err.value)
    assert "'alerts' is not a Pub/Sub topic path (type pubsub); e.g. projects/my-project/topics/alerts" in message
    with pytest.raises(ConfigError, match=r"slo\.timeToFirstToken\.goal.*0\.9999"):
        parse_config(vllm_config(workload={"slo": {"timeToFirstToken": {"thresholdSeconds": 1, "goal": 1}}}), "s")
    with pytest.raises(ConfigError, match=r"slo\.windowDays"):
        parse_config(vllm_config(workload={"slo": {"windowDays": 31}}), "staging")


# ---- SLOs -------------------------------------------------------------------------------------------------------


def test_slos_are_request_based_on_the_scraped_series_with_multi_window_burn_rate_policies(run):
    slo = {"timeToFirstToken": {"thresholdSeconds": 2.5, "goal": 0.95}, "availability": 0.99, "windowDays": 7}
    rec = run(vllm_config(workload={"slo": slo}), stack="staging")
    service = rec.one("gcp:monitoring/customService:CustomService")
    assert service.inputs["serviceId"] == "tpu-serving-tpu-serving-staging-chat"
    slos = {r.name: r.inputs for r in rec.of_type("gcp:monitoring/slo:Slo")}
    ttft = slos["alerts-chat-ttft-slo"]
    assert ttft["goal"] == 0.95 and ttft["rollingPeriodDays"] == 7
    cut = ttft["requestBasedSli"]["distributionCut"]
    assert cut["range"] == {"min": 0, "max": 2.5}
    assert cut["distributionFilter"] == (
        'metric.type="prometheus.googleapis.com/vllm:time_to_first_token_seconds/histogram" '
        'resource.type="prometheus_target" resource.labels.cluster="tpu-serving-staging" '
        'resource.labels.namespace="chat"'
    )
    ratio = slos["alerts-chat-availability-slo"]["requestBasedSli"]["goodTotalRatio"]
    assert "vllm:request_success_total/counter" in ratio["totalServiceFilter"]
    assert ratio["goodServiceFilter"].endswith('metric.labels.finished_reason=one_of("stop", "length")')
    # a client's cancel (vLLM finished_reason "abort": FinishReason.ABORT, vllm-project/vllm v0.27.0
    # vllm/v1/engine/__init__.py) is not the server's failure: not in the total; the server's "error" is
    assert ratio["totalServiceFilter"].endswith('metric.labels.finished_reason=one_of("stop", "length", "error")')
    assert "abort" not in ratio["totalServiceFilter"]
    # the series each SLI reads is one the scraping produces, with the label it filters by
    assert "vllm:time_to_first_token_seconds_bucket" in vllm_metrics.SERIES_LABELS
    assert "finished_reason" in vllm_metrics.SERIES_LABELS["vllm:request_success_total"]
    for key in ("ttft", "availability"):
        for window in alerts.BURN_WINDOWS:
            policy = rec.one(POLICY, f"alerts-chat-{key}-{window.name}-burn").inputs
            assert policy["combiner"] == "AND" and policy["severity"] == window.severity
            filters = [c["conditionThreshold"]["filter"] for c in policy["conditions"]]
            assert [f.split('", ')[1] for f in filters] == [f'"{window.long}")', f'"{window.short}")']
            assert all(f.startswith("select_slo_burn_rate(") for f in filters)
            assert {c["conditionThreshold"]["thresholdValue"] for c in policy["conditions"]} == {window.rate}


# ---- the cluster's capacity -------------------------------------------------------------------------------------


def test_capacity_signals_are_log_match_policies_with_a_rate_limit_and_no_log_based_metric(run):
    """A policy on a log-based metric made in the same `up` is refused until the metric exists ("Cannot find
    metric(s)", hashicorp/terraform-provider-google#11102, GoogleCloudPlatform/cloud-foundation-fabric#3739): each
    capacity signal is a log-match condition (conditionMatchedLog.filter, required), whose policy must set
    alertStrategy.notificationRateLimit ("Required for alert policies with a LogMatch condition",
    hashicorp/terraform-provider-google-beta@v7.45.0:google-beta/services/monitoring/resource_monitoring_alert_policy.go;
    the provider rules data holds both fields)."""
    rules = json.loads((ROOT / "tooling/data/provider_rules.json").read_text())["resources"]
    fields = rules[POLICY]["fields"]
    assert fields["conditions.condition_matched_log.filter"]["required"] is True
    assert "alert_strategy.notification_rate_limit.period" in fields
    rec = run(vllm_config(), stack="staging")
    assert not rec.of_type("gcp:logging/metric:Metric")
    logged = {}
    for key in ("tpu-stockout", "node-interruptions", "upcoming-maintenance"):
        policy = rec.one(POLICY, f"alerts-{key}").inputs
        (condition,) = policy["conditions"]
        assert set(condition) == {"displayName", "conditionMatchedLog"}, key
        assert policy["alertStrategy"]["notificationRateLimit"]["period"].endswith("s")
        logged[key] = condition["conditionMatchedLog"]["filter"]
    stockout = logged["tpu-stockout"]
    assert "container.googleapis.com%2Fcluster-autoscaler-visibility" in stockout
    assert 'resource.labels.cluster_name="tpu-serving-staging"' in stockout
    assert "noScaleUp" in stockout and "scale\\.up\\.error" in stockout
    # every Compute Engine event that takes a VM away (host-maintenance-overview: a TERMINATE VM is stopped)
    for method in (
        "compute.instances.preempted",
        "compute.instances.hostError",
        "compute.instances.terminateOnHostMaintenance",
    ):
        assert f'"{method}"' in logged["node-interruptions"]
    assert '"compute.instances.upcomingMaintenance"' in logged["upcoming-maintenance"]
    # the VM events of the TPU pools' zones only (gce_instance's zone label), not the whole project
    for key in ("node-interruptions", "upcoming-maintenance"):
        assert 'resource.type="gce_instance" resource.labels.zone=("us-east5-b")' in logged[key], logged[key]
    # a paused stack disables them like the others
    paused = run({**vllm_config(), "tpu-serving:paused": True}, stack="staging")
    assert paused.one(POLICY, "alerts-tpu-stockout").inputs["enabled"] is False


# ---- the gateway's own signals ----------------------------------------------------------------------------------


BACKEND = gateway.GatewayBackend("chat", "chat", {"app": "chat"}, 8000, "m", model_server_type="vllm")


def test_the_endpoint_picker_is_scraped_and_runs_with_flow_control():
    values = gateway.router_values(BACKEND, {"tpu-serving/role": "system"})["router"]
    assert values["monitoring"] == {"provider": {"name": "gmp"}, "prometheus": {"enabled": True}}
    epp = values["epp"]
    config = yaml.safe_load(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    assert config["featureGates"] == ["flowControl"]
    assert config["kind"] == "EndpointPickerConfig" and config["apiVersion"] == "llm-d.ai/v1alpha1"
    # the chart renders the PodMonitoring (and its token's RBAC) for these values: its recorded objects
    record = chart_objects.load()[chart_objects.key(gateway.LLM_D_ROUTER.chart, gateway.LLM_D_ROUTER.version)]
    assert {(o["kind"], o["name"]) for o in record["objects"]} >= {
        ("PodMonitoring", "{release}"),
        ("Secret", "{release}-metrics-reader-secret"),
        ("RoleBinding", "gmp-system:collector:{namespace}-{release}-metrics-reader-secret-read"),
    }


def test_the_chart_scrapes_the_metrics_port_the_network_policy_opens():
    gke = reference_file("charts/llm-d-router-v0.10.0/config/charts/routerlib/templates/_gke.yaml").read_text()
    deployment = reference_file(
        "charts/llm-d-router-v0.10.0/config/charts/routerlib/templates/_deployment.yaml"
    ).read_text()
    config_template = reference_file(
        "charts/llm-d-router-v0.10.0/config/charts/routerlib/templates/_config.yaml"
    ).read_text()
    assert "kind: PodMonitoring" in gke and "- port: metrics" in gke
    assert f"- name: metrics\n              containerPort: {gateway.EPP_METRICS_PORT}" in deployment
    # the stack's picker config keeps the chart's default scorers and weights (templates/_config.yaml)
    for scorer, weight in (("queue-scorer", 2), ("kv-cache-utilization-scorer", 2), ("prefix-cache-scorer", 3)):
        assert f"- pluginRef: {scorer}\n        weight: {weight}" in config_template
        assert {"pluginRef": scorer, "weight": weight} in json.loads(gateway.epp_config())["schedulingProfiles"][0][
            "plugins"
        ]
    cfg = parse_config(vllm_config(gateway={"enabled": True}), "staging")
    policies = cfg.namespaces_plan.network_policies["chat"]
    allow = next(p for p in policies if p["metadata"]["name"] == f"allow-{gateway.epp_name('chat')}-metrics")
    assert allow["spec"]["ingress"][0]["ports"] == [{"port": gateway.EPP_METRICS_PORT, "protocol": "TCP"}]
    assert allow["spec"]["podSelector"]["matchLabels"] == gateway.epp_pod_labels("chat")


def test_gateway_served_workloads_get_the_pickers_alerts_and_tiles():
    cfg = parse_config(vllm_config(gateway={"enabled": True}), "staging")
    keys = {r.key for w in cfg.alerts_plan.workloads for r in w.rules}
    assert {"chat-gateway-errors", "chat-gateway-no-endpoint", "chat-gateway-queue"} <= keys
    titles = [t for t, _, _ in cfg.monitoring_plan.dashboard_panels]
    assert "Gateway flow-control queue" in titles and "Gateway ready endpoints" in titles
    off = parse_config(vllm_config(), "staging")
    assert not {r.key for w in off.alerts_plan.workloads for r in w.rules} & {k for k in keys if "gateway" in k}
    assert "Gateway flow-control queue" not in [t for t, _, _ in off.monitoring_plan.dashboard_panels]


# The endpoint picker's error_code values, as llm-d/llm-d-router@v0.10.0:pkg/common/error/error.go declares them
# (its const block; CanonicalCode returns one of them, Unknown for any other error). pkg/epp/handlers/server.go
# records ModelServerError for any response status but 200, else CanonicalCode(err): never an HTTP status.
EPP_ERROR_CODES = frozenset(
    {
        "Unknown",
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "PreconditionFailed",
        "Internal",
        "ServiceUnavailable",
        "ModelServerError",
        "ResourceExhausted",
    }
)
EPP_CLIENT_ERRORS = frozenset({"BadRequest", "Unauthorized", "Forbidden", "NotFound", "PreconditionFailed"})


def error_codes_read(query: str) -> set[str]:
    """Every error_code value a query's matchers can select, against the picker's whole set."""
    found: set[str] = set()
    for selector in promql.parse(query):
        for label, op, value in selector.matchers:
            if label != "error_code":
                continue
            assert op in ("=", "=~"), (op, query)
            pattern = value if op == "=~" else re.escape(value)
            matched = {code for code in EPP_ERROR_CODES if re.fullmatch(pattern, code)}
            # a value that matches none of the picker's codes (an HTTP status) selects nothing
            assert matched, (value, query)
            found |= matched
    return found


def test_the_gateway_error_ratio_reads_error_codes_the_picker_records():
    cfg = parse_config(vllm_config(gateway={"enabled": True}), "staging")
    (rule,) = [r for w in cfg.alerts_plan.workloads for r in w.rules if r.key == "chat-gateway-errors"]
    codes = error_codes_read(rule.query)
    assert (
        codes == set(alerts.GATEWAY_SERVER_ERRORS) == {"ModelServerError", "Internal", "ServiceUnavailable", "Unknown"}
    )
    assert not codes & EPP_CLIENT_ERRORS and "ResourceExhausted" not in codes
    # the old query's 5xx regular expression selects no value the picker records
    with pytest.raises(AssertionError):
        error_codes_read('sum(rate(llm_d_epp_request_error_total{error_code=~"5.."}[5m]))')


def test_the_picker_error_codes_are_the_upstream_set():
    """Where the upstream source is at hand (TPU_SERVING_REFERENCE or ../shared/reference holding
    llm-d-router-v0.10.0/pkg/common/error/error.go), its const block is exactly EPP_ERROR_CODES."""
    source = reference_file("llm-d-router-v0.10.0/pkg/common/error/error.go").read_text()
    block = source.split("const (", 2)[2].split(")", 1)[0]
    assert set(re.findall(r'^\s*\w+\s*=\s*"(\w+)"', block, re.M)) == EPP_ERROR_CODES


# ---- cost per million output tokens ------------------------------------------------------------------------------


def test_the_cost_tile_prices_a_replicas_chips_over_its_generated_tokens():
    cfg = parse_config(vllm_config(), "staging")
    plan = cfg.workloads[0]
    tile = next(p for p in cfg.monitoring_plan.dashboard_panels if p[0].startswith("Cost per million"))
    price = cost.chip_price("v6e", "on-demand")
    assert price is not None and plan.chips_per_replica == 4  # v6e 2x2: one host, 4 chips
    assert tile[1].startswith(f"{price * 4:g} * count by (namespace) (count by (namespace, pod) (")
    assert "rate(vllm:generation_tokens_total{" in tile[1] and "* 3600 / 1000000" in tile[1]
    # no token counter (JetStream): no tile
    jetstream = next(c for c in example_configs() if {w.workload.type for w in c.workloads} == {"jetstream"})
    assert all(not t.startswith("Cost per million") for t, _, _ in jetstream.monitoring_plan.dashboard_panels)


def test_the_docs_list_every_alert_with_its_command():
    """docs/operations.md "Alerts" holds the generated table (tooling/generate/readme_tables.py alerts_table), which names
    every policy a workload and the cluster can get."""
    text = (ROOT / "docs/operations.md").read_text()
    assert readme_tables.alerts_table() in text
    titles = {
        r.title.split(": ", 1)[1] for cfg in example_configs() for w in cfg.alerts_plan.workloads for r in w.rules
    }
    titles |= {s.title for cfg in example_configs() for s in cfg.alerts_plan.cluster_rules}
    for title in titles:
        assert title in text, title


def test_pulumi_error_names_the_key(run):
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:alerts\.channels\[0\]\.address"):
        run(vllm_config(alerts={"channels": [{"type": "email", "address": "x"}]}), stack="staging")
