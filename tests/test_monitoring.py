"""Monitoring: TPU PodMonitoring, exactly one metrics adapter with member-level IAM, and the dashboard."""

import json
from pathlib import Path

import pulumi
import pytest
import yaml

from stacks.monitoring import dashboard, metrics
from stacks.monitoring.adapters.prometheus_adapter import rules as prometheus_adapter_rules
from stacks.monitoring.adapters.prometheus_adapter import server_rules
from tests import promql
from tests.conftest import make_config, stack_ksa
from workloads.jetstream import server as jetstream_server
from workloads.vllm import metrics as vllm_metrics

PODMON = "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
APISERVICE = "kubernetes:apiregistration.k8s.io/v1:APIService"
IAM = "gcp:projects/iAMMember:IAMMember"
PRINCIPAL = (
    "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
    "tpu-test-project.svc.id.goog/subject/ns/custom-metrics/sa/{}"
)


def adapter_iam(rec):
    return [m.inputs for m in rec.of_type(IAM) if m.name.startswith("monitoring-")]


def test_tpu_device_plugin_podmonitoring(run):
    rec = run(make_config())
    podmon = rec.one(PODMON, "monitoring-tpu-device-plugin").inputs
    assert podmon["metadata"]["namespace"] == "kube-system"
    assert podmon["spec"] == {
        "selector": {"matchLabels": {"k8s-app": "tpu-device-plugin"}},
        "endpoints": [{"port": 2112, "interval": "15s"}],
        # `node` for per-node panels and HBM ratios; pod/container as the CRD's defaults
        "targetLabels": {"metadata": ["pod", "container", "node"]},
    }
    assert rec.one(PODMON).provider.startswith(rec.one("pulumi:providers:kubernetes", "cluster-k8s").urn)


def test_no_tpu_podmonitoring_without_tpu_pools(run):
    assert not run(make_config(tpu_serving__tpuPools=[])).of_type(PODMON)
    assert not run(make_config(tpu_serving__monitoring={"tpuMetrics": False})).of_type(PODMON)


def test_stackdriver_adapter_objects_are_complete(run):
    rec = run(make_config())
    kinds = sorted(
        (r.type.split(":")[-1], r.inputs["metadata"]["name"])
        for r in rec.resources
        if r.custom and r.type.startswith("kubernetes:") and r.name.startswith("monitoring-") and r.type != PODMON
    )
    assert kinds == sorted(
        [
            ("Namespace", "custom-metrics"),
            ("ServiceAccount", stack_ksa("custom-metrics-stackdriver-adapter")),
            ("ClusterRoleBinding", "custom-metrics:system:auth-delegator"),
            ("RoleBinding", "custom-metrics-auth-reader"),
            ("ClusterRole", "custom-metrics-resource-reader"),
            ("ClusterRoleBinding", "custom-metrics-resource-reader"),
            ("Deployment", "custom-metrics-stackdriver-adapter"),
            ("Service", "custom-metrics-stackdriver-adapter"),
            ("APIService", "v1beta1.custom.metrics.k8s.io"),
            ("APIService", "v1beta2.custom.metrics.k8s.io"),
            ("APIService", "v1beta1.external.metrics.k8s.io"),
            ("ClusterRole", "external-metrics-reader"),
            ("ClusterRoleBinding", "external-metrics-reader"),
            # default-deny ingress, the namespace's own pods, the API server to the adapter port (test_network_policy)
            ("NetworkPolicy", "default-deny-ingress"),
            ("NetworkPolicy", "allow-same-namespace"),
            ("NetworkPolicy", "allow-metrics-api-clients"),
        ]
    )
    service = rec.one("kubernetes:core/v1:Service", "monitoring-adapter-svc")
    deployment = rec.one("kubernetes:apps/v1:Deployment", "monitoring-adapter")
    for api in rec.of_type(APISERVICE):
        assert api.inputs["spec"]["service"] == {
            "name": "custom-metrics-stackdriver-adapter",
            "namespace": "custom-metrics",
        }
        assert service.urn in api.dependencies and deployment.urn in api.dependencies
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"tpu-serving/role": "system"}
    assert pod["containers"][0]["image"] == "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
    assert "tolerations" not in pod
    assert service.inputs["spec"]["selector"] == deployment.inputs["spec"]["selector"]["matchLabels"]
    # RBAC subjects point at the adapter's ServiceAccount
    for binding in [
        r for r in rec.resources if r.type.endswith("RoleBinding") and r.name.startswith("monitoring-adapter")
    ]:
        assert binding.inputs["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": stack_ksa("custom-metrics-stackdriver-adapter"),
                "namespace": "custom-metrics",
            }
        ]


def test_stackdriver_adapter_iam_is_project_monitoring_viewer_member_only(run):
    rec = run(make_config())
    assert adapter_iam(rec) == [
        {
            "project": "tpu-test-project",
            "role": "roles/monitoring.viewer",
            "member": PRINCIPAL.format(stack_ksa("custom-metrics-stackdriver-adapter")),
        }
    ]


def test_prometheus_adapter_with_gmp_frontend(run):
    rec = run(make_config(tpu_serving__monitoring={"adapter": "prometheus-adapter"}))
    # the stack registers the external metrics APIService (the chart renders none with these values), after the
    # release, pointing at the chart's Service
    api = rec.one(APISERVICE, "monitoring-apiservice-external-v1beta1")
    assert api.inputs["spec"]["service"] == {"name": "prometheus-adapter", "namespace": "custom-metrics"}
    assert rec.one("kubernetes:helm.sh/v3:Release", "monitoring-prometheus-adapter").urn in api.dependencies
    release = rec.one("kubernetes:helm.sh/v3:Release", "monitoring-prometheus-adapter").inputs
    assert release["chart"] == "oci://ghcr.io/prometheus-community/charts/prometheus-adapter"
    assert release["version"] == "5.3.0" and release["namespace"] == "custom-metrics"
    values = release["values"]
    assert values["prometheus"] == {"url": "http://prometheus.custom-metrics.svc", "port": 9090}
    assert values["nodeSelector"] == {"tpu-serving/role": "system"}
    assert values["rules"]["default"] is False
    configmap = rec.one("kubernetes:core/v1:ConfigMap", "monitoring-prometheus-adapter-rules").inputs
    assert values["rules"]["existing"] == configmap["metadata"]["name"]
    external = yaml.safe_load(configmap["data"]["config.yaml"])["externalRules"]
    for rule in external:
        assert 'cluster="tpu-serving-dev"' in rule["metricsQuery"]
        assert 'namespace=~"' in rule["metricsQuery"]
    # the shared TPU rules only: no workload here autoscales on a server metric of its type (a JetStream one's rules
    # come with it, through its plan's hpa_metrics: test_adapter_rules_filter_by_cluster_and_namespaces)
    names = [r["name"]["as"] for r in external]
    assert names == ["memory_used", "memory_used_percentage"]
    frontend = rec.one("kubernetes:apps/v1:Deployment", "monitoring-gmp-frontend").inputs["spec"]["template"]["spec"]
    container = frontend["containers"][0]
    assert "--query.project-id=tpu-test-project" in container["args"]
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["readinessProbe"]["httpGet"]["path"] == "/-/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/-/healthy"
    assert frontend["serviceAccountName"] == stack_ksa("gmp-frontend")
    svc = rec.one("kubernetes:core/v1:Service", "monitoring-gmp-frontend-svc").inputs
    assert svc["metadata"]["name"] == "prometheus" and svc["spec"]["ports"][0]["port"] == 9090
    assert adapter_iam(rec) == [
        {
            "project": "tpu-test-project",
            "role": "roles/monitoring.viewer",
            "member": PRINCIPAL.format(stack_ksa("gmp-frontend")),
        }
    ]
    assert not rec.of_type("kubernetes:core/v1:ServiceAccount") or all(
        r.inputs["metadata"]["name"] != "custom-metrics-stackdriver-adapter"
        for r in rec.of_type("kubernetes:core/v1:ServiceAccount")
    )


def test_adapter_none_installs_no_adapter(run):
    rec = run(make_config(tpu_serving__monitoring={"adapter": "none"}))
    assert not rec.of_type(APISERVICE)
    assert not adapter_iam(rec)
    assert "monitoring-prometheus-adapter" not in {r.name for r in rec.resources}


def test_unknown_adapter_is_an_error(run):
    with pytest.raises(
        pulumi.RunError,
        match=r"tpu-serving:monitoring.adapter: 'kedaa' is not allowed; allowed: custom-metrics-stackdriver, prometheus-adapter, keda, none",
    ):
        run(make_config(tpu_serving__monitoring={"adapter": "kedaa"}))


def test_adapter_rules_filter_by_cluster_and_namespaces():
    rules = [
        *server_rules("c1", [(m, ["b", "a"]) for m in jetstream_server.JETSTREAM_HPA_METRICS.values()]),
        *prometheus_adapter_rules("c1", ["b", "a"]),
    ]
    for rule in rules:
        assert 'cluster="c1"' in rule["seriesQuery"] and 'cluster="c1"' in rule["metricsQuery"]
        # the HPA's namespace arrives in <<.LabelMatchers>> (prometheus-adapter@v0.12.0 pkg/naming/metrics_query.go)
        assert "<<.LabelMatchers>>" in rule["metricsQuery"]
    assert 'namespace=~"a|b"' in rules[0]["seriesQuery"]
    assert rules[0]["resources"] == {"template": "<<.Resource>>"}
    for rule in rules[2:]:  # TPU metrics: the workload's namespace is exported_namespace
        assert 'exported_namespace=~"a|b"' in rule["seriesQuery"] and "container=" not in rule["metricsQuery"]
        assert rule["resources"] == {"overrides": {"exported_namespace": {"resource": "namespace"}}}
    # no workloads: the rules match nothing, never every namespace of every cluster
    assert 'namespace=~""' in prometheus_adapter_rules("c1", [])[0]["seriesQuery"]


def test_dashboard(run):
    rec = run(make_config())
    board = rec.one("gcp:monitoring/dashboard:Dashboard").inputs
    body = json.loads(board["dashboardJson"])
    titles = [t["widget"]["title"] for t in body["mosaicLayout"]["tiles"]]
    for expected in ("TPU HBM used", "TPU duty cycle", "Serving replicas (Deployments)"):
        assert expected in titles
    # no JetStream workload, no JetStream tile: a type's tiles come with its workloads' plans (dashboard_panels)
    assert not [t for t in titles if t.startswith("JetStream")]
    for tile in body["mosaicLayout"]["tiles"]:
        query = tile["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["prometheusQuery"]
        assert 'cluster="tpu-serving-dev"' in query
    assert rec.outputs["dashboardUrl"] == (
        "https://console.cloud.google.com/monitoring/dashboards/builder/monitoring-dashboard-id?project=tpu-test-project"
    )
    assert not run(make_config(tpu_serving__monitoring={"dashboard": False})).of_type(
        "gcp:monitoring/dashboard:Dashboard"
    )


def test_dashboard_url_from_resource_id():
    assert dashboard.dashboard_url("projects/123/dashboards/abc-def", "p") == (
        "https://console.cloud.google.com/monitoring/dashboards/builder/abc-def?project=p"
    )


def test_pod_monitoring_helper_builds_valid_objects():
    obj = metrics.pod_monitoring(
        "jetstream", "llama", {"app": "jetstream"}, "metrics", path="/", target_labels=["pod", "container", "node"]
    )
    assert obj["spec"] == {
        "selector": {"matchLabels": {"app": "jetstream"}},
        "endpoints": [{"port": "metrics", "interval": "15s", "path": "/"}],
        "targetLabels": {"metadata": ["pod", "container", "node"]},
    }


def test_dashboard_queries_use_only_labels_the_podmonitorings_produce():
    """Every label a dashboard query groups or filters by is on the series it reads (stacks.monitoring.metrics.SERIES_LABELS,
    derived from the PodMonitorings' target labels: the PodMonitoring CRD's targetLabels.metadata,
    ../shared/reference/crds/monitoring.googleapis.com_podmonitorings.yaml)."""
    # every query parses (tests/promql.py) and reads only series and labels the scraping produces; the stack's own
    # tiles and those the workloads and the gateway add (the endpoint pickers', the cost per million tokens)
    cost = dashboard.cost_panel("c1", "ns", "w-.+", 1.0, "vllm:num_requests_waiting", "vllm:generation_tokens")
    head = [*(p for p, _ in jetstream_server.all_panels("c1")), *dashboard.gateway_panels("c1"), cost]
    for title, query, _ in dashboard.panels("c1", head=head):
        assert promql.groupings(query), title
        promql.check_scraped(
            query, {**metrics.SERIES_LABELS, **jetstream_server.SERIES_LABELS, **vllm_metrics.SERIES_LABELS}
        )
    # the device plugin's PodMonitoring is what attaches `node` to memory_used/duty_cycle
    assert "node" in metrics.tpu_device_plugin_monitoring("15s")["spec"]["targetLabels"]["metadata"]
    assert "node" not in metrics.SERIES_LABELS["memory_used"] - set(metrics.TPU_DEVICE_PLUGIN_TARGET_LABELS)


GEMMA_HPA = Path(__file__).resolve().parents[1] / "examples/gemma-hpa/Pulumi.gemma-hpa.yaml"


def tile_queries(rec) -> dict[str, str]:
    body = json.loads(rec.one("gcp:monitoring/dashboard:Dashboard").inputs["dashboardJson"])
    return {
        t["widget"]["title"]: t["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["prometheusQuery"]
        for t in body["mosaicLayout"]["tiles"]
    }


def test_dashboard_drops_tiles_the_engine_provably_lacks_and_reads_either_slots_series(run):
    """The pinned maxengine-server:v0.2.2 runs JetStream 0.2.2, whose only gauges are
    jetstream_prefill_backlog_size and jetstream_slots_available_percentage
    (AI-Hypercomputer/JetStream@v0.2.2:jetstream/core/metrics/prometheus.py); its tutorial shows
    jetstream_slots_used_percentage (disputed). So its stack has no generate/transfer backlog tiles, and the slots
    tile reads used, or else 1 - available. An engine the matrix does not know keeps every tile."""
    from tooling.harness.offline import load_stack_file

    config = load_stack_file(GEMMA_HPA)
    queries = tile_queries(run(config, stack="gemma-hpa"))
    assert "JetStream prefill backlog" in queries
    assert "JetStream generate backlog" not in queries
    assert "JetStream transfer backlog (disaggregated)" not in queries
    slots = queries["JetStream slots used"]
    assert "jetstream_slots_used_percentage{" in slots and "(1 - jetstream_slots_available_percentage{" in slots
    (workload,) = config["tpu-serving:workloads"]
    other = {**config, "tpu-serving:workloads": [{**workload, "images": {"server": "example.com/engine:v1"}}]}
    titles = set(tile_queries(run(other, stack="gemma-hpa")))
    assert {"JetStream generate backlog", "JetStream transfer backlog (disaggregated)"} <= titles


def test_dashboard_draws_fractions_as_percent():
    head = [p for p, _ in jetstream_server.all_panels("c1")]
    queries = {title: (query, label) for title, query, label in dashboard.panels("c1", head=head)}
    for title in ("JetStream slots used", "TPU HBM used"):
        query, label = queries[title]
        assert query.endswith("* 100") and label.startswith("%")
