"""tpu-serving:monitoring.adapter keda: what the stack registers for KEDA and for each autoscaled workload, the config
rules of scale to zero and of the gateway's metrics, pause, and validation against KEDA's CRDs.

Sources (kedacore/keda@v2.20.2 unless said): config/crd/bases/keda.sh_*.yaml (the CRDs, sha256 in
stacks/facts/versions.py CRDS); apis/keda/v1alpha1/scaledobject_types.go (PausedReplicasAnnotation
`autoscaling.keda.sh/paused-replicas`); apis/keda/v1alpha1/triggerauthentication_types.go (PodIdentityProviderGCP
`gcp`); tests/scalers/gcp/gcp_prometheus_workload_identity (the Managed Prometheus address with `podIdentity:
provider: gcp`); kedacore/charts@v2.20.2:keda/values.yaml (crds.install, serviceAccount.operator, webhooks.enabled,
nodeSelector); kubernetes-sigs/lws@v0.10.0 config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml (the scale
subresource a ScaledObject targets on a multi-host pool).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pulumi
import pytest

from stacks import naming
from stacks.facts import versions
from stacks.monitoring.adapters import keda
from stacks.reports import time_to_serve
from stacks.serving import gateway, workload_plan
from tests.conftest import STACK_FILES, load_large_yaml, recorded, reference_dir, stack_ksa
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT, load_stack_file
from tooling.oracles import chart_objects, schemas
from tooling.review import summary

EXAMPLE = ROOT / "examples" / "vllm-single-host" / "Pulumi.vllm-single-host-keda.yaml"
STACK = "vllm-single-host-keda"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
RELEASE = "kubernetes:helm.sh/v3:Release"


def example(**workload_changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(load_stack_file(EXAMPLE))
    config["tpu-serving:workloads"][0].update(workload_changes)
    return config


def autoscaling(**changes: Any) -> dict[str, Any]:
    auto = copy.deepcopy(load_stack_file(EXAMPLE)["tpu-serving:workloads"][0]["autoscaling"])
    return {**auto, **changes}


def test_the_example_scales_its_vllm_workload_on_the_gateway_queue_through_keda(run):
    rec = run(example(), stack=STACK)
    assert not rec.of_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")  # KEDA makes it
    scaled = rec.one(SCALED_OBJECT)
    spec = scaled.inputs["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama70b"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (0, 2)
    queue, running = spec["triggers"]
    for trigger in (queue, running):
        assert trigger["type"] == "prometheus"
        assert trigger["authenticationRef"] == {"name": keda.TRIGGER_AUTH, "kind": "ClusterTriggerAuthentication"}
        assert trigger["metadata"]["serverAddress"] == (
            "https://monitoring.googleapis.com/v1/projects/my-tpu-project/location/global/prometheus"
        )
    cluster = f'cluster="tpu-serving-{STACK}"'
    assert queue["metadata"] == {
        **queue["metadata"],
        "query": f'sum(llm_d_epp_flow_control_queue_size{{{cluster},namespace="llama70b",inference_pool="llama70b"}})',
        "threshold": "4",
    }
    where = f'{cluster},namespace="llama70b",name="llama70b"'
    assert running["metadata"]["query"] == (
        f"max(llm_d_epp_average_running_requests{{{where}}} * llm_d_epp_ready_endpoints{{{where}}})"
    )
    # the pool the queue is read for is the InferencePool the gateway routes the workload to: the endpoint picker
    # release's, named after it (stacks/serving/gateway.py inference_pool_manifest, from the release name)
    routers = [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == versions.LLM_D_ROUTER.chart]
    assert [(r.inputs["name"], r.inputs["namespace"]) for r in routers] == [("llama70b", "llama70b")]
    # after what it scales, KEDA's release (CRDs before it) and the trigger authentication
    deps = {rec.by_urn(u).name for u in scaled.dependencies}
    assert {"workload-llama70b-deployment", "monitoring-keda", "monitoring-trigger-auth"} <= deps
    assert rec.outputs["workloads"]["llama70b"]["watchHpa"].endswith("get hpa keda-hpa-llama70b --watch")


def test_keda_release_crds_and_least_privilege_identity(run):
    rec = run(example(), stack=STACK)
    release = rec.one(RELEASE, "monitoring-keda")
    chart = versions.CHARTS["keda"]["2.20.2"]
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]) == (
        "keda",
        "2.20.2",
        {"repo": "https://kedacore.github.io/charts"},
    )
    assert inputs["namespace"] == "custom-metrics" and inputs["skipCrds"] is True
    values = inputs["values"]
    ksa = stack_ksa("keda-operator", STACK)
    assert values["crds"] == {"install": False} and values["webhooks"] == {"enabled": False}
    assert values["serviceAccount"]["operator"] == {"create": False, "name": ksa}
    assert values["nodeSelector"] == naming.SYSTEM_POOL_SELECTOR
    # the CRDs, applied by the stack from kedacore/keda at the chart's app version, before the release
    crds = rec.one("kubernetes:yaml/v2:ConfigGroup", "monitoring-keda-crds")
    assert crds.inputs["files"] == list(chart.crds.urls) and crds.urn in release.dependencies
    assert {u.rsplit("/", 1)[-1] for u in chart.crds.urls} == {f.file_name for f in versions.CRDS["keda"]["2.20.2"]}
    # roles/monitoring.viewer, and nothing else, for the operator's KSA (unique per stack), direct principal
    grants = [g for g in rec.of_type("gcp:projects/iAMMember:IAMMember") if "keda" in g.name]
    assert [g.inputs["role"] for g in grants] == ["roles/monitoring.viewer"]
    assert grants[0].inputs["member"].endswith(f"/subject/ns/custom-metrics/sa/{ksa}")
    assert grants[0].urn in release.dependencies
    auth = rec.one("kubernetes:keda.sh/v1alpha1:ClusterTriggerAuthentication")
    assert auth.inputs["spec"] == {"podIdentity": {"provider": "gcp"}}
    # the adapter namespace admits the API server on KEDA's metrics port (values.yaml service.portHttpsTarget)
    policy = rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "monitoring-allow-metrics-api-clients")
    assert [p["port"] for rule in policy.inputs["spec"]["ingress"] for p in rule["ports"]] == [6443]


def test_every_keda_object_validates_against_its_crd(run):
    """Against the CRD files where they are at hand, else their recorded schemas (tooling/data/crd_schemas.json,
    kedacore/keda@v2.20.2:config/crd/bases, sha256 pinned in stacks/facts/versions.py CRDS): never skipped."""
    rec = run(example(), stack=STACK)
    paused = run({**example(), "tpu-serving:paused": True}, stack=STACK)
    objects = [o for o in kubernetes_objects(rec) + kubernetes_objects(paused) if o["apiVersion"] == keda.API_VERSION]
    assert {o["kind"] for o in objects} == {"ScaledObject", "ClusterTriggerAuthentication"}
    report = schemas.validate_objects(objects, versions.DEFAULT_KUBERNETES_MINOR)
    assert report.checked == len(objects) and not report.errors and not report.unchecked, report


def test_a_misspelled_scaledobject_field_fails_the_crd():
    crd = schemas.crd_schema(schemas.crd_dir(), keda.API_VERSION, "ScaledObject")
    assert crd is not None
    good = {
        "apiVersion": keda.API_VERSION,
        "kind": "ScaledObject",
        "metadata": {"name": "w", "namespace": "w"},
        "spec": {
            "scaleTargetRef": {"name": "w"},
            "minReplicaCount": 0,
            "triggers": [{"type": "prometheus", "metadata": {"query": "vector(1)", "threshold": "1"}}],
        },
    }
    assert schemas.validate_custom(good, crd) == []
    bad = copy.deepcopy(good)
    bad["spec"]["min_replica_count"] = bad["spec"].pop("minReplicaCount")
    assert schemas.validate_custom(bad, crd)
    # the trigger's `metadata` is a map of strings (the CRD's additionalProperties type string): a number fails
    bad = copy.deepcopy(good)
    bad["spec"]["triggers"][0]["metadata"]["threshold"] = 1
    assert schemas.validate_custom(bad, crd)


def test_pause_keeps_the_scaledobject_at_zero_replicas(run):
    rec = run({**example(), "tpu-serving:paused": True}, stack=STACK)
    scaled = rec.one(SCALED_OBJECT)
    # apis/keda/v1alpha1/scaledobject_types.go PausedReplicasAnnotation
    assert scaled.inputs["metadata"]["annotations"] == {"autoscaling.keda.sh/paused-replicas": "0"}
    deployment = rec.one("kubernetes:apps/v1:Deployment", "workload-llama70b-deployment")
    assert deployment.inputs["spec"]["replicas"] == 0


def test_a_multi_host_workload_is_scaled_through_its_leaderworkerset(run):
    config = load_stack_file(ROOT / "examples" / "vllm-multi-host" / "Pulumi.vllm-multi-host.yaml")
    config = {**config, "tpu-serving:monitoring": {"adapter": "keda"}}
    rec = run(config, stack="vllm-multi-host")
    spec = rec.one(SCALED_OBJECT).inputs["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "llama70b",
    }
    # server metrics: this cluster, the workload's namespace and its pods' `app` label (the vLLM PodMonitoring
    # copies it), summed
    assert spec["triggers"][0]["metadata"]["query"] == (
        'sum(vllm:num_requests_waiting{cluster="tpu-serving-vllm-multi-host",namespace="llama70b",app="llama70b"})'
    )


HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


def _keda_hpa_behaviors(rec) -> dict[str, Any]:
    """Scale target -> the `behavior` KEDA copies into the HPA it makes: the ScaledObject's
    advanced.horizontalPodAutoscalerConfig.behavior (kedacore/keda@v2.20.2 apis/keda/v1alpha1/scaledobject_types.go
    HorizontalPodAutoscalerConfig; controllers/keda/hpa.go newHPAForScaledObject sets the HPA's spec.behavior from
    it)."""
    return {
        r.inputs["spec"]["scaleTargetRef"]["name"]: r.inputs["spec"]
        .get("advanced", {})
        .get("horizontalPodAutoscalerConfig", {})
        .get("behavior")
        for r in rec.of_type(SCALED_OBJECT)
    }


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_kedas_hpa_gets_the_behavior_the_hpa_path_gives(run, path):
    """Every shipped stack's autoscaled workloads, through KEDA instead of their adapter: each ScaledObject carries
    the behavior the HPA path gives the same workload (stacks/serving/workload_plan.py hpa_behavior: on a multi-host pool
    the scale-down window MULTI_HOST_SCALE_DOWN_WINDOW_S), and validates against KEDA's CRD."""
    config = load_stack_file(path)
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    hpas = run(config, stack=stack).of_type(HPA)
    if not hpas:
        pytest.skip(f"{path.name} autoscales nothing through an HPA")
    expected = {h.inputs["spec"]["scaleTargetRef"]["name"]: h.inputs["spec"].get("behavior") for h in hpas}
    monitoring = {**config.get("tpu-serving:monitoring", {}), "adapter": "keda"}
    rec = run({**config, "tpu-serving:monitoring": monitoring}, stack=stack)
    assert _keda_hpa_behaviors(rec) == expected
    objects = [o for o in kubernetes_objects(rec) if o["kind"] == "ScaledObject"]
    report = schemas.validate_objects(objects, versions.DEFAULT_KUBERNETES_MINOR)
    assert report.checked == len(objects) and not report.errors and not report.unchecked, report


def test_a_multi_host_scaledobject_waits_out_a_lull_and_a_users_behavior_wins(run):
    config = load_stack_file(ROOT / "examples" / "vllm-multi-host" / "Pulumi.vllm-multi-host.yaml")
    config = {**config, "tpu-serving:monitoring": {"adapter": "keda"}}
    rec = run(config, stack="vllm-multi-host")
    window = workload_plan.MULTI_HOST_SCALE_DOWN_WINDOW_S
    assert _keda_hpa_behaviors(rec) == {"llama70b": {"scaleDown": {"stabilizationWindowSeconds": window}}}
    own = copy.deepcopy(config)
    policy = {"type": "Pods", "value": 1, "periodSeconds": 600}
    own["tpu-serving:workloads"][0]["autoscaling"]["behavior"] = {"scaleDown": {"policies": [policy]}}
    assert _keda_hpa_behaviors(run(own, stack="vllm-multi-host")) == {
        "llama70b": {"scaleDown": {"policies": [policy], "stabilizationWindowSeconds": window}}
    }
    # a single-host workload keeps Kubernetes' defaults: no `advanced` at all
    assert "advanced" not in run(example(), stack=STACK).one(SCALED_OBJECT).inputs["spec"]


def test_the_leaderworkerset_crd_has_the_scale_subresource_keda_targets():
    path = reference_dir() / "crds" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
    if not path.is_file():
        pytest.skip(f"no reference LWS CRD at {path}")
    crd = load_large_yaml(path)
    scale = crd["spec"]["versions"][0]["subresources"]["scale"]
    assert scale["specReplicasPath"] == ".spec.replicas" and scale["labelSelectorPath"]


def problems_of(run, config: dict[str, Any], stack: str = STACK) -> str:
    with pytest.raises(pulumi.RunError) as err:
        run(config, stack=stack)
    return str(err.value)


def test_scale_to_zero_is_refused_in_prod_naming_the_key(run):
    config = {**example(), "tpu-serving:environment": "prod"}
    message = problems_of(run, config, stack="prod")
    assert "tpu-serving:workloads[0].autoscaling.minReplicas: 0 (scale to zero) is not allowed in prod" in message


def test_scale_to_zero_needs_the_gateway_queue_and_keda(run):
    """KEDA activates (0 -> 1) only on a trigger whose value is above its activationThreshold, 0 by default
    (kedacore/keda@v2.20.2:pkg/scalers/prometheus_scaler.go GetMetricsAndActivity). At zero replicas the server's
    series are gone and the picker's running requests, average_running_requests x ready_endpoints
    (llm-d/llm-d-router@v0.10.0:pkg/epp/metrics/metrics.go), are 0: only the flow-control queue counts the requests
    waiting, so either alone is refused."""
    wanted = (
        r"minReplicas: 0 \(scale to zero\) needs, in autoscaling.metrics, a metric that counts the requests waiting"
    )
    for metric in ("vllm:num_requests_waiting", "epp_running_requests"):
        alone = autoscaling(metrics=[{"name": metric, "target": 10}])
        message = problems_of(run, example(autoscaling=alone))
        assert re.search(wanted + r".*one of: epp_flow_control_queue_size$", message, re.M), (metric, message)
    server_only = autoscaling(metrics=[{"name": "vllm:num_requests_waiting", "target": 10}])
    stackdriver = {
        **example(autoscaling=server_only),
        "tpu-serving:monitoring": {"adapter": "custom-metrics-stackdriver"},
    }
    message = problems_of(run, stackdriver)
    assert "minReplicas: 0 is below 1 (0, scale to zero, only with tpu-serving:monitoring.adapter keda)" in message


def test_gateway_metrics_need_the_gateway_and_keda_all_at_once(run):
    config = {**example(), "tpu-serving:gateway": {"enabled": False}}
    message = problems_of(run, config)
    for i, name in enumerate(("epp_flow_control_queue_size", "epp_running_requests")):
        assert (
            f"tpu-serving:workloads[0].autoscaling.metrics[{i}].name: '{name}' is the Inference Gateway's endpoint "
            "picker's metric: the workload must be served through the gateway"
        ) in message
    opted_out = example(gateway=False)
    assert "must be served through the gateway" in problems_of(run, opted_out)
    other = {
        **example(autoscaling=autoscaling(minReplicas=1)),
        "tpu-serving:monitoring": {"adapter": "prometheus-adapter"},
    }
    message = problems_of(run, other)
    assert "'epp_flow_control_queue_size' is not served by the prometheus-adapter adapter" in message


def parsed_example(config: dict[str, Any] | None = None):
    from stacks.config import parse_stack_config
    from workloads.registry import WORKLOAD_TYPES

    cfg = config or load_stack_file(EXAMPLE)
    return parse_stack_config(
        {k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("tpu-serving:")},
        stack=STACK,
        pulumi_project="tpu-serving",
        gcp_project=cfg["gcp:project"],
        region=cfg["gcp:region"],
        workload_types=WORKLOAD_TYPES,
    )


def test_the_time_to_serve_estimate_sees_the_scale_from_zero_wait():
    parsed = parsed_example()
    (plan,) = parsed.workloads
    assert plan.min_replicas == 0 and plan.activation_seconds == keda.POLLING_SECONDS
    assert plan.hpa_name == "keda-hpa-llama70b"
    (found,) = time_to_serve.estimates(parsed)
    # what the first request waits: KEDA's poll, then node provisioning and every warm phase
    assert found.from_zero == keda.POLLING_SECONDS + found.phases["capacity"] + found.warm == plan.from_zero_s
    page = summary.summary(parsed, recorded(EXAMPLE, True))
    body = page.split("\n## Time to serve\n", 1)[1].split("\n## ", 1)[0].splitlines()
    header = next(line for line in body if line.startswith("| workload"))
    row = next(line for line in body if line.startswith("| llama70b"))
    cells = dict(zip(header.strip("|").split(" | "), row.strip("|").split(" | "), strict=True))
    assert cells["from zero"].strip() == time_to_serve.duration(found.from_zero)
    # with replicas at least 1, nothing to show
    (kept,) = time_to_serve.estimates(parsed_example(example(autoscaling=autoscaling(minReplicas=1))))
    assert kept.from_zero is None


def test_a_scale_from_zero_is_not_scaled_away_nor_its_first_request_shed(run):
    """KEDA scales the target to zero once LastActiveTime + cooldownPeriod has passed, or, before any trigger was
    active, creationTimestamp + initialCooldownPeriod (default 0) (kedacore/keda@v2.20.2:
    pkg/scaling/executor/scale_scaledobjects.go scaleToZeroOrIdle; scale_executor.go defaultCooldownPeriod 300,
    defaultInitialCooldownPeriod 0; both fields int32 >= 0 in apis/keda/v1alpha1/scaledobject_types.go and
    config/crd/bases/keda.sh_scaledobjects.yaml). The endpoint picker sheds a request still queued after
    flowControl.defaultRequestTTL, 60 s by default (llm-d/llm-d-router@v0.10.0:
    pkg/epp/flowcontrol/controller/config.go defaultRequestTTL; apix/config/v1alpha1/endpointpickerconfig_types.go
    EndpointPickerConfig.flowControl.defaultRequestTTL, a metav1.Duration). With KEDA's defaults and a start from
    zero of about 7 min, the waking request is shed after 60 s, the queue reads 0, and KEDA scales the starting
    replica away 300 s later; the first deploy's replica (the Deployment starts at 1) is scaled away at KEDA's
    first poll, its TPU node already asked for. Each must cover the estimate's wait from zero plus a poll."""
    rec = run(example(), stack=STACK)
    (plan,) = parsed_example().workloads
    assert plan.from_zero_s is not None and plan.from_zero_s > keda.COOLDOWN_SECONDS  # the case that broke
    budget = plan.from_zero_s + keda.POLLING_SECONDS
    spec = rec.one(SCALED_OBJECT).inputs["spec"]
    assert spec["cooldownPeriod"] >= budget and spec["initialCooldownPeriod"] >= budget
    assert spec["cooldownPeriod"] == spec["initialCooldownPeriod"] == plan.from_zero_budget_s
    router = next(r for r in rec.of_type(RELEASE) if r.inputs["chart"] == versions.LLM_D_ROUTER.chart)
    epp = router.inputs["values"]["router"]["epp"]
    config = json.loads(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])
    ttl = config["flowControl"]["defaultRequestTTL"]
    assert re.fullmatch(r"\d+s", ttl) and int(ttl[:-1]) >= budget
    # a workload that never runs at zero keeps KEDA's and the picker's defaults
    kept = run(example(autoscaling=autoscaling(minReplicas=1)), stack=STACK)
    spec = kept.one(SCALED_OBJECT).inputs["spec"]
    assert spec["cooldownPeriod"] == keda.COOLDOWN_SECONDS and "initialCooldownPeriod" not in spec
    router = next(r for r in kept.of_type(RELEASE) if r.inputs["chart"] == versions.LLM_D_ROUTER.chart)
    epp = router.inputs["values"]["router"]["epp"]
    assert "flowControl" not in json.loads(epp["pluginsCustomConfig"][epp["pluginsConfigFile"]])


def test_a_start_from_zero_beyond_the_load_balancer_timeout_is_a_warning():
    """The chart's GCPBackendPolicy fixes the load balancer's timeout at 300 s in its template, with no value
    (llm-d/llm-d-router@v0.10.0:config/charts/llm-d-router-gateway/templates/gke.yaml `timeoutSec: 300`): a first
    request that waits longer for its replica is cut, so the stack warns that clients must retry."""
    from tests.helm_charts import render_release, unavailable

    router = versions.LLM_D_ROUTER
    if unavailable(router.chart, router.version) is None:
        # the chart rendered with the example's values and parsed (tests/helm_charts.py), never read as text
        rec = recorded(ROOT / "examples" / "vllm-single-host" / f"Pulumi.{STACK}.yaml", False)
        (release,) = [r for r in rec.of_type(RELEASE) if r.inputs["chart"] == router.chart]
        objects = render_release(release)
        policies = [o for o in objects if o["kind"] == "GCPBackendPolicy"]
        assert policies and all(p["spec"]["default"]["timeoutSec"] == gateway.BACKEND_TIMEOUT_S for p in policies)
        defaults = load_large_yaml(
            chart_objects.chart_dir(chart_objects.charts_root(), router.chart, router.version) / "values.yaml"
        )
        assert "timeoutSec" not in json.dumps(defaults)
    parsed = parsed_example()
    (plan,) = parsed.workloads
    assert plan.from_zero_s is not None and plan.from_zero_s > gateway.BACKEND_TIMEOUT_S
    (warning,) = [w for w in parsed.warnings if "scales to zero behind the gateway" in w]
    assert warning.startswith("tpu-serving:workloads llama70b:") and "clients must retry" in warning
    kept = parsed_example(example(autoscaling=autoscaling(minReplicas=1)))
    assert not [w for w in kept.warnings if "scales to zero" in w]
