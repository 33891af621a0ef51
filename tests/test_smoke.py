"""`make smoke` (scripts/smoke.py) against recorded kubectl output, through a stand-in kubectl on PATH that answers
from tests/fixtures/kubectl/<scenario>/ and serves recorded answers for `port-forward` (fake_kubectl.py).

The recorded JSON follows the documented shapes:
- Pod status.conditions[type=Ready] and Deployment status.conditions[type=Available]: Kubernetes API reference,
  core/v1 PodCondition and apps/v1 DeploymentCondition (https://kubernetes.io/docs/reference/kubernetes-api/);
- HPA autoscaling/v2 status.conditions AbleToScale / ScalingActive (ValidMetricFound, FailedGetExternalMetric) /
  ScalingLimited: https://access.redhat.com/documentation/ja-jp/openshift_container_platform/4.5/html/nodes/nodes-pods-autoscaling-status-about_nodes-pods-autoscaling
  (the `kubectl describe hpa` conditions), kubernetes/api autoscaling/v2 HorizontalPodAutoscalerStatus;
- External metrics: GET /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=... returns an
  ExternalMetricValueList {items: [{metricName, metricLabels, timestamp, value}]} (kubernetes/metrics
  pkg/apis/external_metrics/v1beta1/types.go; kubernetes/community design-proposals external-metrics-api.md);
  Pods metrics: GET /apis/custom.metrics.k8s.io/v1beta2/namespaces/<ns>/pods/*/<metric> returns a MetricValueList
  {items: [{describedObject, metric: {name, selector}, timestamp, value}]} (kubernetes/metrics
  pkg/apis/custom_metrics/v1beta2/types.go);
- PodMonitoring status.endpointStatuses[] {name, activeTargets, unhealthyTargets, lastUpdateTime,
  collectorsFraction}: GoogleCloudPlatform/prometheus-engine@v0.17.2:charts/operator/crds/monitoring.googleapis.com_podmonitorings.yaml;
- JetStream POST /generate answers {"response": ...}: ai-on-gke tutorials-and-examples/inference-servers/jetstream/
  maxtext/single-host-inference/README.md.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from tests.conftest import recorded
from tooling.harness.offline import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import smoke  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "kubectl"
GEMMA = ROOT / "examples" / "gemma-hpa" / "Pulumi.gemma-hpa.yaml"


@pytest.fixture(scope="module")
def expected():
    return smoke.expected(GEMMA, recorded(GEMMA, True))  # the session's recording (tests/conftest.py)


@pytest.fixture
def fake_kubectl(tmp_path, monkeypatch):
    def use(scenario: str) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        script = bin_dir / "kubectl"
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIXTURES / "fake_kubectl.py"}" "$@"\n')
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_KUBECTL_DIR", str(FIXTURES / scenario))

    return use


def test_expectations_come_from_the_stack(expected):
    assert [p.name for p in expected.workloads] == ["gemma"]
    assert [h["metadata"]["name"] for h in expected.hpas] == ["gemma"]
    assert sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in expected.pod_monitorings) == [
        "gemma/gemma-jetstream",
        "kube-system/tpu-device-plugin",
    ]
    # the metrics adapter's namespace and every add-on release's namespace
    assert expected.addon_namespaces == ["custom-metrics", "jobset-system", "lws-system"]
    # the stackdriver adapter's names: a Pods metric and an External one with the HPA's selector
    assert smoke.metric_paths(expected.hpas[0]) == [
        (
            "prometheus.googleapis.com|jetstream_prefill_backlog_size|gauge",
            "/apis/custom.metrics.k8s.io/v1beta2/namespaces/gemma/pods/*/prometheus.googleapis.com%7Cjetstream_prefill_backlog_size%7Cgauge",
        ),
        (
            "prometheus.googleapis.com|memory_used|gauge",
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/gemma/prometheus.googleapis.com%7Cmemory_used%7Cgauge"
            "?labelSelector=metric.labels.exported_namespace%3Dgemma%2Cresource.labels.cluster%3Dtpu-serving-gemma-hpa",
        ),
    ]


def test_a_healthy_stack_passes_every_check(expected, fake_kubectl, capsys, tmp_path):
    fake_kubectl("healthy")
    results = smoke.smoke(expected, smoke.Kubectl(str(tmp_path / "kubeconfig")), request_timeout=10, forward_wait=10)
    assert [r for r in results if not r.ok] == []
    assert {r.check for r in results} == {"pods", "serve", "metrics", "targets", "addons"}
    serve = next(r for r in results if r.check == "serve")
    assert serve.target == "gemma/gemma-svc POST /generate" and serve.detail.startswith("HTTP 200")


def test_a_broken_stack_fails_each_check_with_the_command_to_investigate(expected, fake_kubectl, capsys):
    fake_kubectl("broken")
    assert smoke.main(["--kubeconfig", "/dev/null", "--request-timeout", "10", str(GEMMA)]) == 1
    out = capsys.readouterr().out
    assert "smoke test of stack gemma-hpa: " in out and "| check | what | result | detail |" in out
    # table cells escape the "|" of metric names (Markdown); read them back unescaped
    rows = {
        line.split(" | ")[0].lstrip("| ") + " " + line.split(" | ")[1].replace("\\|", "|"): line.replace("\\|", "|")
        for line in out.splitlines()
        if line.startswith("| ") and " | " in line
    }
    assert "| metrics | gemma: prometheus.googleapis.com\\|memory_used\\|gauge | FAIL |" in out
    assert "FAIL | not Ready: gemma-7d9f8b6c4-x2kqv" in rows["pods gemma"]
    assert "FAIL | HTTP 503" in rows["serve gemma/gemma-svc POST /generate"]
    assert (
        "FAIL | served, but no value"
        in rows["metrics gemma: prometheus.googleapis.com|jetstream_prefill_backlog_size|gauge"]
    )
    assert (
        "FAIL | kubectl get --raw" in rows["metrics gemma: prometheus.googleapis.com|memory_used|gauge"]
        and "NotFound" in rows["metrics gemma: prometheus.googleapis.com|memory_used|gauge"]
    )
    assert "FAIL | ScalingActive=False (FailedGetExternalMetric" in rows["metrics gemma: HPA"]
    assert "FAIL | no target status" in rows["targets gemma/gemma-jetstream"]
    assert "FAIL | 4 active, 1 unhealthy" in rows["targets kube-system/tpu-device-plugin"]
    assert "FAIL | not Available: jobset-controller-manager" in rows["addons jobset-system"]
    assert "| ok |" in rows["addons lws-system"]
    investigate = out.split("To investigate:", 1)[1]
    assert "`kubectl -n gemma describe hpa gemma`" in investigate
    assert "`kubectl -n jobset-system get deployments; kubectl -n jobset-system describe deployments`" in investigate
    assert "patch operatorconfig config" in investigate  # how to turn target status reporting on


def test_a_paused_stack_expects_no_pods_and_skips_serving(expected, fake_kubectl, tmp_path):
    fake_kubectl("healthy")
    paused = smoke.Expected(**{**expected.__dict__, "paused": True})
    results = smoke.smoke(paused, smoke.Kubectl(None), request_timeout=10, forward_wait=10)
    assert {r.check for r in results} == {"pods", "targets", "addons"}
    assert next(r for r in results if r.check == "pods").detail == "paused; 1 running"  # still running: a failure
    assert not next(r for r in results if r.check == "pods").ok


def test_without_kubectl_it_says_so_and_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # no kubectl anywhere
    assert shutil.which("kubectl") is None
    assert smoke.main(["--kubeconfig", "/dev/null", str(GEMMA)]) == 2
    assert "could not run" in capsys.readouterr().err


# ---- time to serve: measured phases of a rollout beside the model's --------------------------------------------
# tests/fixtures/kubectl/time-to-serve/ records `kubectl get nodes|pods|events -o json` of the examples/time-to-serve
# stack in the shapes of the Kubernetes API reference (https://kubernetes.io/docs/reference/kubernetes-api/): Pod
# core/v1 metadata.creationTimestamp, spec.nodeName, status.conditions[] {type PodScheduled|Ready, status,
# lastTransitionTime} and status.containerStatuses[].state.running.startedAt; Node core/v1
# metadata.creationTimestamp; Event core/v1 {involvedObject, reason, firstTimestamp, lastTimestamp, eventTime}, the
# kubelet's reason "Pulled" (kubernetes/kubernetes pkg/kubelet/events/event.go PulledImage) with its message
# (pkg/kubelet/images/image_manager.go), and an event recorded through events.k8s.io/v1 (eventTime only).
TIME_TO_SERVE = ROOT / "examples" / "time-to-serve" / "Pulumi.time-to-serve.yaml"
TTS_FIXTURES = FIXTURES / "time-to-serve"


def _recorded_json(path: str) -> dict:
    import json

    return json.loads((TTS_FIXTURES / path).read_text())


def test_measured_phases_come_from_pod_node_and_event_timestamps():
    from tooling.operations import rollout

    nodes = _recorded_json("nodes.json")
    warm = rollout.slowest(_recorded_json("llama8b/pods.json"), nodes, _recorded_json("llama8b/events.json"))
    # created 10:00:00, scheduled :02, the init image Pulled 10:01:08, the compile-cache-pull init container ran
    # 10:01:08-10:01:20 (status.initContainerStatuses[].state.terminated), the server's image "already present"
    # 10:01:20, started 10:01:22, Ready 10:05:00; its node was up before. The init container's run is its own phase,
    # never the image's.
    assert warm is not None and warm.pod == "llama8b-6c9f7d5b8-q4w2z" and not warm.new_node
    assert warm.phases == {
        "capacity": 2,
        "image": 66,
        "init (compile cache)": 12,
        "container start": 2,
        "to Ready": 218,
        "total": 300,
    }
    # a new slice: four nodes created after the pods; the last worker (Ready 11:23:30) is the one the replica waits
    # for; the gateway's endpoint picker pod (no TPU selector) is not measured
    cold = rollout.slowest(_recorded_json("llama70b/pods.json"), nodes, _recorded_json("llama70b/events.json"))
    assert cold is not None and cold.pod == "llama70b-0-3" and cold.new_node
    assert cold.phases == {
        "capacity": 493,
        "image": 70,
        "init (compile cache)": 0,
        "container start": 10,
        "to Ready": 837,
        "total": 1410,
    }
    assert rollout.slowest(_recorded_json("llama3-405b/pods.json"), nodes, {"items": []}) is None


def test_smoke_prints_the_measured_phases_beside_the_estimate(fake_kubectl):
    from stacks.reports import time_to_serve
    from tooling.harness.offline import parse_stack_file

    fake_kubectl("time-to-serve")
    want = smoke.expected(TIME_TO_SERVE, recorded(TIME_TO_SERVE, True))
    report = smoke.time_to_serve_report(want, smoke.Kubectl(None))
    rows = {line.split(" | ")[0].lstrip("| "): line for line in report.splitlines() if line.startswith("| llama")}
    assert report.startswith("Time to serve, measured / modelled")
    model = {e.workload: e for e in time_to_serve.estimates(parse_stack_file(TIME_TO_SERVE))}
    d = time_to_serve.duration
    warm = model["llama8b"]
    assert rows["llama8b"] == (
        f"| llama8b | llama8b-6c9f7d5b8-q4w2z | 2s / {d(time_to_serve.assumed('schedule'))} | 1m 06s / "
        f"{d(warm.phases['image'])} | 12s / {d(warm.compile_copy)} | 2s / 0s | 3m 38s / "
        f"{d(sum(warm.phases[p] for p in ('start', 'weights', 'compile', 'readiness')) - warm.compile_copy)} | "
        f"5m 00s / {d(warm.warm)} |"
    )
    cold = model["llama70b"]
    assert rows["llama70b"].startswith("| llama70b | llama70b-0-3 (new node) | 8m 13s / ")
    assert rows["llama70b"].endswith(f"| 23m 30s / {d(cold.cold)} |")  # from no capacity: the model's cold total
    assert rows["llama3-405b"].startswith("| llama3-405b | no TPU pod Ready |")


def test_smoke_says_when_it_cannot_measure(expected, fake_kubectl):
    fake_kubectl("healthy")  # no nodes recorded
    assert smoke.time_to_serve_report(expected, smoke.Kubectl(None)).startswith("Time to serve not measured: kubectl")


# A project's alert policies as `gcloud alpha monitoring policies list --format=json` prints them: the Cloud
# Monitoring AlertPolicy resource (name, displayName, enabled, ...;
# https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies).
def _listed(names: list[str], enabled: bool) -> list[dict]:
    return [
        {"name": f"projects/p/alertPolicies/{i}", "displayName": n, "enabled": enabled, "combiner": "AND"}
        for i, n in enumerate(names)
    ]


def test_the_alert_policies_exist_and_are_enabled(run):
    from tests.test_alerts import vllm_config

    want = smoke.expected(GEMMA, run(vllm_config("staging"), stack="staging", preview=True))
    assert want.policies and all(p.startswith("tpu-serving tpu-serving-staging: ") for p in want.policies)
    assert all(r.ok for r in smoke.check_policies(want, _listed(want.policies, True)))
    missing = smoke.check_policies(want, _listed(want.policies[1:], True))
    assert [r.target for r in missing if not r.ok] == [want.policies[0]]
    assert "gcloud alpha monitoring policies list" in missing[0].investigate
    disabled = smoke.check_policies(want, _listed(want.policies, False))
    assert not any(r.ok for r in disabled) and disabled[0].detail == "disabled, expected enabled"
    # a paused stack's policies are disabled on purpose
    want.paused = True
    assert all(r.ok for r in smoke.check_policies(want, _listed(want.policies, False)))


def test_a_stack_without_alerts_asks_nothing_of_cloud_monitoring(expected):
    assert expected.policies == []  # gemma-hpa is a dev stack: alerts off


# ---- every workload type is probed, or says why not (WorkloadType.smoke_probe / no_smoke_probe) -----------------


class _Forwards:
    """A kubectl whose port-forwards are recorded, not run (smoke.ask is replaced alongside)."""

    def __init__(self):
        self.forwarded: list[tuple[str, str, int]] = []

    def get(self, *args):
        return {"items": []}

    def port_forward(self, namespace, service, local, remote, wait):
        from contextlib import nullcontext

        self.forwarded.append((namespace, service, remote))
        return nullcontext()


def _plans_by_type() -> dict[str, list]:
    from tooling.harness.offline import parse_stack_file

    plans: dict[str, list] = {}
    for example in ("all-in-one/Pulumi.all-in-one.yaml", "time-to-serve/Pulumi.time-to-serve.yaml"):
        for plan in parse_stack_file(ROOT / "examples" / example).workloads:
            plans.setdefault(plan.workload.type, []).append(plan)
    return plans


def _serve_rows(plans, monkeypatch) -> tuple[list, _Forwards]:
    def ask(probe, local, timeout):  # the answer each probe expects
        return 200, json.dumps({probe.expect_key or "answer": "ok"}).encode()

    monkeypatch.setattr(smoke, "ask", ask)
    want = smoke.Expected(stack="s", paused=False, workloads=plans, hpas=[], pod_monitorings=[], addon_namespaces=[])
    kubectl = _Forwards()
    results = [r for r in smoke.smoke(want, kubectl, policies=lambda project: []) if r.check == "serve"]
    return results, kubectl


def test_smoke_probes_every_registered_type_or_says_why_not(monkeypatch):
    """Each workload type's plan gets the request its own package declares (workloads/<type>/commands.py), or a row
    saying why it gets none: no type is skipped silently (vLLM and pathways-job once were, by a table keyed by name)."""
    from dataclasses import replace

    from workloads import registry

    plans = _plans_by_type()
    assert set(plans) == set(registry.WORKLOAD_TYPES), "an example with every registered type"
    saxml_bare = next(p for p in plans["saxml"] if p.workload.models)
    plans["saxml"].append(replace(saxml_bare, workload=saxml_bare.workload.model_copy(update={"models": None})))
    for name, of_type in plans.items():
        kind = registry.WORKLOAD_TYPES[name]
        results, kubectl = _serve_rows(of_type, monkeypatch)
        assert len(results) == len(of_type), name  # one serve row per workload
        for plan, result in zip(of_type, results, strict=True):
            probe = kind.smoke_probe(plan)
            if probe is None:
                assert kind.no_smoke_probe and result.detail == f"not asked: {kind.no_smoke_probe}", name
                assert result.ok and result.target == plan.name
            else:
                assert (plan.namespace, probe.service, probe.remote_port) in kubectl.forwarded, name
                assert result.target == f"{plan.namespace}/{probe.service} {probe.method} /{probe.path}"
                assert result.ok, result
    vllm = registry.WORKLOAD_TYPES["vllm"].smoke_probe(plans["vllm"][0])
    assert vllm is not None and (vllm.method, vllm.path, vllm.expect_key) == ("POST", "v1/completions", "choices")
    assert vllm.body["model"] == "gs://my-tpu-project-models/Llama-3.1-8B-Instruct" and vllm.remote_port == 8000
    assert registry.WORKLOAD_TYPES["pathways-job"].smoke_probe(plans["pathways-job"][0]) is None


def test_a_type_added_to_the_registry_is_probed_as_it_declares_or_reported(monkeypatch):
    from dataclasses import replace

    from stacks.serving.workload_type import SmokeProbe, WorkloadRegistry
    from tests.test_workload_registry import ECHO, EchoPlan, EchoWorkload
    from workloads import registry

    plan = _plans_by_type()["vllm"][0]
    known = tuple(registry.WORKLOAD_TYPES.values())
    echo = EchoPlan(EchoWorkload(type="echo", name="echo", pool=plan.pool.name), plan.pool, "echo", "b")
    probe = SmokeProbe("echo", "echo-svc", 7000, "GET", "ping", None, None)
    for kind, row in [
        (replace(ECHO, smoke_probe=lambda p: probe), "echo/echo-svc GET /ping"),
        (replace(ECHO, no_smoke_probe="it echoes nothing over HTTP"), "not asked: it echoes nothing over HTTP"),
        (ECHO, "type 'echo' sends no request and says not why"),
    ]:
        monkeypatch.setattr(registry, "WORKLOAD_TYPES", WorkloadRegistry(*known, kind))
        (result,) = _serve_rows([echo], monkeypatch)[0]
        assert row in (result.target, result.detail)
        assert result.ok == (kind is not ECHO)
