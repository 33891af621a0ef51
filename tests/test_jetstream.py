"""jetstream (single-host, HPA): the ai-on-gke reference reproduced for both adapters, and the capacity,
adapter and metric rules."""

from __future__ import annotations

import pulumi
import pytest
import yaml

from stacks.facts import versions
from stacks.monitoring import metrics
from tests.conftest import make_config, on_pool, pool, recorded, reference_dir, stack_ksa, workload_grants
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT
from tooling.oracles.schemas import crd_dir, validate_objects

AI_ON_GKE = reference_dir() / "ai-on-gke"
KUBECTL = (
    AI_ON_GKE
    / "tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/kubectl/deployment.yaml"
)
TEMPLATES = AI_ON_GKE / "modules/jetstream-maxtext-deployment/templates"
needs_reference = pytest.mark.skipif(not KUBECTL.is_file(), reason=f"reference manifests missing: {KUBECTL}")
EXAMPLES = {
    "custom-metrics-stackdriver": ROOT / "examples/gemma-hpa/Pulumi.gemma-hpa.yaml",
    "prometheus-adapter": ROOT / "examples/gemma-hpa/Pulumi.gemma-hpa-prometheus.yaml",
}


def objects_of(rec) -> dict:
    return {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects(rec)}


def reference(kind: str) -> dict:
    return next(d for d in yaml.safe_load_all(KUBECTL.read_text()) if d and d["kind"] == kind)


@needs_reference
@pytest.mark.parametrize("adapter", list(EXAMPLES))
def test_deployment_and_service_match_reference(adapter):
    objects = objects_of(recorded(EXAMPLES[adapter], False))
    ours, theirs = objects[("Deployment", "gemma")], reference("Deployment")
    assert "replicas" not in ours["spec"]  # the HPA owns it (the reference fixes 2)
    pod, ref_pod = ours["spec"]["template"]["spec"], theirs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == on_pool(ref_pod["nodeSelector"], "v5e-2x4")
    assert [c["name"] for c in pod["containers"]] == [c["name"] for c in ref_pod["containers"]]
    engine, ref_engine = pod["containers"][0], ref_pod["containers"][0]
    assert engine["image"] == ref_engine["image"]
    expected_args = [a.replace("gs://BUCKET_NAME/", "gs://my-tpu-project-checkpoints/") for a in ref_engine["args"]]
    # the reference's arguments, and the compile cache in the stack bucket (keyed by image tag and slice; issue 26)
    cache = engine["args"][-1]
    assert (
        cache.startswith("jax_cache_dir=gs://my-tpu-project-tpu-serving-gemma-hpa") and "/compile-cache/gemma/" in cache
    )
    assert cache.endswith(f"/{versions.IMAGES['maxengineServer'].rsplit(':', 1)[1]}/v5e-2x4/")
    assert engine["args"][:-1] == expected_args
    # the reference's TPU request and limit, and a quarter of the host's CPU and memory (ct5lp-hightpu-8t: 224 vCPU /
    # 384 GB), so the pod is not BestEffort
    as_read = {k: str(v) for k, v in ref_engine["resources"]["limits"].items()}  # as the API reads them back
    assert engine["resources"]["limits"] == as_read
    assert engine["resources"]["requests"] == {
        **{k: str(v) for k, v in ref_engine["resources"]["requests"].items()},
        "cpu": "56",
        "memory": "96G",
    }
    assert engine["ports"][:1] == ref_engine["ports"]
    assert {"containerPort": 9100, "name": "metrics"} in engine["ports"]
    # GKE >= 1.28 needs no privileged container for TPUs; the reference predates that
    assert ref_engine["securityContext"] == {"privileged": True} and not engine["securityContext"]["privileged"]
    http, ref_http = pod["containers"][1], ref_pod["containers"][1]
    # the reference's jetstream-http:v0.2.2 has no /healthcheck, which the probes use: v0.2.3 has it
    # (ai-on-gke .../jetstream/http-server/http_server.py, added in 707c3e38; kubernetes-engine-samples
    # ai-ml/llm-serving-tpus-jetstream/pathways/*.yaml probe /healthcheck on jetstream-http:v0.2.3)
    assert ref_http["image"].endswith(":v0.2.2") and http["image"].endswith("/jetstream-http:v0.2.3")
    assert http["ports"] == ref_http["ports"]
    assert pod["serviceAccountName"] == stack_ksa("gemma", EXAMPLES[adapter].name[len("Pulumi.") : -len(".yaml")])
    svc, ref_svc = objects[("Service", "gemma-svc")], reference("Service")
    assert svc["spec"]["ports"] == ref_svc["spec"]["ports"]
    assert svc["spec"]["selector"] == {"app": "gemma"} == ours["spec"]["selector"]["matchLabels"]


@needs_reference
def test_podmonitoring_matches_reference_template():
    podmon = objects_of(recorded(EXAMPLES["custom-metrics-stackdriver"], False))[("PodMonitoring", "gemma-jetstream")]
    template = (TEMPLATES / "podmonitoring.yaml.tftpl").read_text()
    ref = yaml.safe_load(template.replace("${metrics_scrape_interval}", "15").replace("${metrics_port}", "9100"))
    (endpoint,), (ref_endpoint,) = podmon["spec"]["endpoints"], ref["spec"]["endpoints"]
    assert (endpoint["path"], endpoint["interval"]) == (ref_endpoint["path"], ref_endpoint["interval"])
    assert endpoint["port"] == "metrics"  # named, so the `container` target label is filled
    assert podmon["spec"]["targetLabels"] == ref["spec"]["targetLabels"]
    assert podmon["spec"]["selector"] == {"matchLabels": {"app": "gemma"}}  # the reference template has none


@needs_reference
def test_stackdriver_hpa_matches_reference_template():
    hpa = objects_of(recorded(EXAMPLES["custom-metrics-stackdriver"], False))[("HorizontalPodAutoscaler", "gemma")]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gemma"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 4)
    pods, external = hpa["spec"]["metrics"]
    # as the reference template: jetstream_* are Pods metrics, memory_used is External, targets AverageValue
    assert pods == {
        "type": "Pods",
        "pods": {
            "metric": {"name": "prometheus.googleapis.com|jetstream_prefill_backlog_size|gauge"},
            "target": {"type": "AverageValue", "averageValue": "10"},
        },
    }
    assert external["type"] == "External"
    assert external["external"]["metric"]["name"] == "prometheus.googleapis.com|memory_used|gauge"
    # the reference's selector has no cluster: any cluster of the project with a `gemma` namespace would count.
    # prometheus_target's cluster label is resource.labels.cluster (GoogleCloudPlatform/k8s-stackdriver
    # custom-metrics-stackdriver-adapter/pkg/adapter/translator/utils/filter_builder.go, PrometheusSchema), and
    # resource.labels.* selectors are allowed for External metrics (translator/query_builder.go).
    assert external["external"]["metric"]["selector"] == {
        "matchLabels": {"metric.labels.exported_namespace": "gemma", "resource.labels.cluster": "tpu-serving-gemma-hpa"}
    }
    assert external["external"]["target"] == {"type": "AverageValue", "averageValue": "100000000000"}
    template = (TEMPLATES / "custom-metrics-stackdriver-adapter/hpa.jetstream.yaml.tftpl").read_text()
    assert "type: Pods" in template and "prometheus.googleapis.com|${rule.target_query}|gauge" in template


@needs_reference
def test_prometheus_adapter_hpa_matches_reference_template():
    rec = recorded(EXAMPLES["prometheus-adapter"], False)
    hpa = objects_of(rec)[("HorizontalPodAutoscaler", "gemma")]
    assert [m["type"] for m in hpa["spec"]["metrics"]] == ["External", "External"]
    assert [m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]] == [
        "jetstream_prefill_backlog_size",
        "memory_used_percentage",
    ]
    # memory_used_percentage is a 0-1 ratio, as the reference rule computes it (values.yaml.tftpl)
    assert hpa["spec"]["metrics"][1]["external"]["target"] == {"type": "AverageValue", "averageValue": "800m"}
    assert hpa["spec"]["behavior"] == {"scaleDown": {"stabilizationWindowSeconds": 300}}
    template = (TEMPLATES / "prometheus-adapter/hpa.jetstream.yaml.tftpl").read_text()
    assert "- type: External" in template and "name: ${rule.target_query}" in template
    # the adapter's rules are filtered to the workload's namespace
    rules = rec.one("kubernetes:core/v1:ConfigMap", "monitoring-prometheus-adapter-rules").inputs["data"]
    external = yaml.safe_load(rules["config.yaml"])["externalRules"]
    assert external
    for rule in external:
        assert '=~"gemma"' in rule["seriesQuery"] and "<<.LabelMatchers>>" in rule["metricsQuery"]


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
@pytest.mark.parametrize("adapter", list(EXAMPLES))
def test_objects_validate(adapter):
    report = validate_objects(kubernetes_objects(recorded(EXAMPLES[adapter], False)), "1.34")
    assert report.ok and not report.unchecked, report.errors


def js(**fields) -> dict:
    base = {
        "type": "jetstream",
        "name": "gemma",
        "pool": "single",
        "model": "gemma-7b",
        "checkpoint": "gs://ckpts/gemma",
    }
    base.update(fields)
    return base


POOLS = [
    pool(name="single", tpu="v5e", topology="2x4", zone="us-east5-a", autoscaling={"minNodes": 0, "maxNodes": 3}),
    pool(name="multi", tpu="v5e", topology="4x8", zone="us-east5-a"),
    pool(name="v6e", tpu="v6e", topology="2x4", zone="us-east5-b"),
]
AUTO = {"minReplicas": 1, "maxReplicas": 3, "metrics": [{"name": "jetstream_prefill_backlog_size", "target": 5}]}


def test_fixed_replicas_without_autoscaling(run):
    rec = run(make_config(tpu_serving__tpuPools=POOLS[:1], tpu_serving__workloads=[js(replicas=2)]))
    objects = objects_of(rec)
    assert objects[("Deployment", "gemma")]["spec"]["replicas"] == 2
    assert ("HorizontalPodAutoscaler", "gemma") not in objects
    assert "watchHpa" not in rec.outputs["workloads"]["gemma"]


def test_hpa_depends_on_adapter_and_deployment(run):
    rec = run(make_config(tpu_serving__tpuPools=POOLS[:1], tpu_serving__workloads=[js(autoscaling=AUTO)]))
    hpa = rec.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    assert rec.one("kubernetes:apps/v1:Deployment", "workload-gemma-deployment").urn in hpa.dependencies
    for api in rec.of_type("kubernetes:apiregistration.k8s.io/v1:APIService"):
        assert api.urn in hpa.dependencies
    outputs = rec.outputs["workloads"]["gemma"]
    assert outputs["watchHpa"] == "kubectl -n gemma get hpa gemma --watch"
    assert outputs["portForward"] == "kubectl -n gemma port-forward svc/gemma-svc 8000:8000 9000:9000"
    # runs as given through the port-forward: no cloned repositories, no downloaded dataset (tests/test_local_ports.py)
    assert outputs["loadTest"].startswith("seq 200 | xargs -P 16 ") and "localhost:8000/generate" in outputs["loadTest"]


def test_identity_reads_only_the_checkpoint_bucket(run):
    rec = run(make_config(tpu_serving__tpuPools=POOLS[:1], tpu_serving__workloads=[js()]))
    # by what each binds, not by registration order (which the mocks' asynchronous registrations do not fix)
    grants = workload_grants(rec)
    assert len(grants) == 2
    binding, cache = sorted(grants, key=lambda r: r.inputs["bucket"] != "ckpts")
    assert (binding.inputs["bucket"], binding.inputs["role"]) == ("ckpts", "roles/storage.objectViewer")
    # and its own compile caches in the stack bucket, nothing else there
    assert cache.inputs["role"] == "roles/storage.objectUser"
    assert "/objects/compile-cache/gemma/" in cache.inputs["condition"]["expression"]
    rec = run(make_config(tpu_serving__tpuPools=POOLS[:1], tpu_serving__workloads=[js(grantCheckpointRead=False)]))
    assert [g.inputs["role"] for g in workload_grants(rec)] == ["roles/storage.objectUser"]


def test_privileged_only_below_gke_1_28(run):
    config = make_config(
        tpu_serving__cluster={"minMasterVersion": "1.27.3-gke.100"},
        tpu_serving__tpuPools=POOLS[:1],
        tpu_serving__workloads=[js()],
    )
    engine = objects_of(run(config))[("Deployment", "gemma")]["spec"]["template"]["spec"]["containers"][0]
    assert engine["securityContext"] == {"privileged": True}


@pytest.mark.parametrize("value,expected", [(10, "10"), (0.5, "500m"), (80.0, "80"), (1e11, "100000000000")])
def test_hpa_target_quantities(value, expected):
    assert metrics.quantity(value) == expected


BAD = {
    "missing pool": ({"pool": "nope"}, "tpu-serving:workloads[0].pool: 'nope' is not a TPU pool of this stack"),
    "multi-host pool": (
        {"pool": "multi"},
        "tpu-serving:workloads[0].pool: pool 'multi' is multi-host (v5e 4x8, 8 hosts)",
    ),
    "min above max": (
        {"autoscaling": {**AUTO, "minReplicas": 3, "maxReplicas": 2}},
        "tpu-serving:workloads[0].autoscaling.minReplicas: 3 is above maxReplicas 2",
    ),
    "min below one": (
        {"autoscaling": {**AUTO, "minReplicas": 0}},
        "tpu-serving:workloads[0].autoscaling.minReplicas: 0 is below 1",
    ),
    "unknown metric": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "qps", "target": 1}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].name: 'qps' is not allowed; allowed: jetstream_prefill_backlog_size",
    ),
    "non-positive target": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "jetstream_prefill_backlog_size", "target": 0}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].target: 0 is not allowed; must be greater than 0",
    ),
    "metric the adapter does not serve": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "tpu_memory_used_percentage", "target": 80}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].name: 'tpu_memory_used_percentage' is not served by the "
        "custom-metrics-stackdriver adapter",
    ),
    # JetStream's slots metric is a 0-1 fraction (AI-Hypercomputer/JetStream@v0.3:jetstream/core/orchestrator.py)
    "fraction target written in percent": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "jetstream_slots_used_percentage", "target": 50}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].target: 50 is above 1: the unit is fraction, 0 to 1 of one "
        "replica's capacity (0.5 = half); for 50% write 0.5",
    ),
    # maxtext@jetstream-v0.2.2 (2024-06-05) predates MaxText's first Trillium support (bc4f66e0b, 2024-09-11)
    "TPU generation the engine image predates": (
        {"pool": "v6e"},
        "tpu-serving:workloads[0].images.server: us-docker.pkg.dev/cloud-tpu-images/inference/maxengine-server:v0.2.2 "
        "does not serve TPU generation v6e (it serves: v4, v5e, v5p;",
    ),
    "HTTP image without /healthcheck": (
        {"images": {"http": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2"}},
        "tpu-serving:workloads[0].images.http: us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2 does "
        "not serve endpoint /healthcheck",
    ),
    "max replicas beyond the pool": (
        {"autoscaling": {**AUTO, "maxReplicas": 4}},
        "tpu-serving:workloads[0].autoscaling.maxReplicas: 4 replicas x 8 chips = 32 chips, but pool 'single' holds at "
        "most 24 chips (3 nodes x 8)",
    ),
    "fixed replicas beyond the pool": (
        {"replicas": 5},
        "tpu-serving:workloads[0].replicas: 5 replicas x 8 chips = 40 chips",
    ),
    "missing checkpoint": ({"checkpoint": None}, "tpu-serving:workloads[0].checkpoint: required key is missing"),
    "non-gs checkpoint": (
        {"checkpoint": "/data/gemma"},
        "tpu-serving:workloads[0].checkpoint: '/data/gemma' is not a gs:// path",
    ),
    "unknown preset": ({"model": "gemma-2b"}, "tpu-serving:workloads[0].model: 'gemma-2b' is not a known preset"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_jetstream_errors(run, case):
    change, expected = BAD[case]
    wl = js()
    for key, value in change.items():
        if value is None:
            wl.pop(key)
        else:
            wl[key] = value
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__tpuPools=POOLS, tpu_serving__workloads=[wl]))
    assert expected in str(err.value)


ENGINE = "us-docker.pkg.dev/cloud-tpu-images/inference/maxengine-server:v0.2.2"
SLOTS = {**AUTO, "metrics": [{"name": "jetstream_slots_used_percentage", "target": 0.5}]}


@pytest.mark.parametrize("adapter", ["custom-metrics-stackdriver", "prometheus-adapter"])
def test_a_metric_whose_export_the_sources_dispute_is_a_warning(run, adapter):
    """maxengine-server:v0.2.2's build pins JetStream 0.2.2, which exports jetstream_slots_available_percentage
    (AI-Hypercomputer/JetStream@v0.2.2:jetstream/core/metrics/prometheus.py), yet Google's tutorial deploying this
    tag shows it exporting jetstream_slots_used_percentage (ai-on-gke single-host-inference/README.md, kubectl/
    deployment.yaml): the stack deploys it with a warning naming both sources and how the adapter reads it."""
    readme = AI_ON_GKE / "tutorials-and-examples/inference-servers/jetstream/maxtext/single-host-inference/README.md"
    if readme.is_file():
        assert "jetstream_slots_used_percentage{" in readme.read_text() and ENGINE in KUBECTL.read_text()
    config = make_config(
        tpu_serving__tpuPools=POOLS[:1],
        tpu_serving__workloads=[js(autoscaling=SLOTS)],
        tpu_serving__monitoring={"adapter": adapter},
    )
    rec = run(config)
    assert ("HorizontalPodAutoscaler", "gemma") in objects_of(rec)
    (warning,) = [w for w in rec.warnings if "sources conflict" in w]
    assert warning.startswith(
        f"tpu-serving:workloads[0].images.server: sources conflict on whether {ENGINE} exports "
        "jetstream_slots_used_percentage: its build pins say it exports jetstream_prefill_backlog_size, "
        "jetstream_slots_available_percentage ("
    )
    assert "single-host-inference/README.md" in warning
    either = "jetstream_slots_used_percentage or else 1 - jetstream_slots_available_percentage"
    if adapter == "prometheus-adapter":
        assert f"prometheus-adapter and the dashboard read {either}, so the HPA works either way" in warning
    else:
        assert "custom-metrics-stackdriver reads jetstream_slots_used_percentage only" in warning


def test_a_disputed_series_is_no_gap_but_a_provably_missing_one_is():
    from stacks.facts import versions

    needs = versions.Serves(metrics=frozenset({"jetstream_slots_used_percentage", "jetstream_generate_backlog_size"}))
    (gap,) = versions.image_gaps(ENGINE, needs)
    assert "does not serve metric jetstream_generate_backlog_size (" in gap
    assert list(versions.image_doubts(ENGINE, needs)) == ["jetstream_slots_used_percentage"]
    assert versions.may_export(ENGINE, "jetstream_slots_used_percentage")
    assert not versions.may_export(ENGINE, "jetstream_generate_backlog_size")
    assert versions.may_export("example.com/engine:v1", "jetstream_generate_backlog_size")


def test_unrecorded_image_is_a_warning_not_an_error(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS[:1], tpu_serving__workloads=[js(images={"server": "example.com/engine:v1"})]
    )
    rec = run(config)
    engine = objects_of(rec)[("Deployment", "gemma")]["spec"]["template"]["spec"]["containers"][0]
    assert engine["image"] == "example.com/engine:v1"
    assert any("example.com/engine:v1 is not in the version matrix" in w for w in rec.warnings), rec.warnings


def test_autoscaling_without_adapter_is_an_error(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[js(autoscaling=AUTO)],
        tpu_serving__monitoring={"adapter": "none"},
    )
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:workloads\[0\].autoscaling: needs a metrics adapter"):
        run(config)


def test_sizing_warning_follows_the_served_quantization(run):
    """llama2-13b: 26 GB of bfloat16 weights overflow one v5e chip (16 GB); served int8 (MaxText `quantization`),
    13 GB fit. The HBM check reads the merged MaxText arguments (stacks/serving/maxtext.py weight_bits)."""
    small = [pool(name="single", tpu="v5e", topology="1x1", zone="us-east5-a")]

    def warnings(**fields):
        wl = js(model="llama2-13b", **fields)
        return [
            w for w in run(make_config(tpu_serving__tpuPools=small, tpu_serving__workloads=[wl])).warnings if "HBM" in w
        ]

    assert any("a 13B model at 16-bit" in w for w in warnings()), warnings()
    assert warnings(maxtext={"quantization": "int8"}) == []
