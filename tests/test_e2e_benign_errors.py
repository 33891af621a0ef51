"""The e2e's controller-log check (e2e/cluster.py errors_in): an error line counts unless BENIGN_ERRORS names its
message for that controller, each entry with why and where upstream; a transient one only when the line that
resolves it follows. Pure: reads a log file, no cluster."""

from __future__ import annotations

from pathlib import Path

from e2e import cluster as c


def test_every_benign_message_names_its_controllers_and_an_upstream_source() -> None:
    for benign in c.BENIGN_ERRORS:
        assert benign.controllers and benign.message and benign.why
        assert "@" in benign.why or "#" in benign.why, benign.why


def test_only_the_listed_message_of_the_listed_controller_is_accepted_and_a_transient_one_once_resolved(
    tmp_path: Path,
) -> None:
    log = tmp_path / "jobset.log"
    crash = "2026-11-29T09:15:43Z\tERROR\tsetup\tproblem running manager\t" + (
        '{"error": "tls: failed to find any PEM data in certificate input"}'
    )
    other = '2026-11-29T09:15:44Z\tERROR\tsetup\tunable to create controller\t{"error": "no matches for kind"}'
    log.write_text(f"{crash}\n{other}\n")
    # unresolved: no later run serves
    found = c.errors_in(log, controller="jobset-controller")
    assert len(found) == 2 and "not followed by" in found[0] and found[1] == other
    log.write_text(f"{crash}\n2026-11-29T09:15:57Z\tINFO\tcontroller-runtime.webhook\tServing webhook server\n")
    assert c.errors_in(log, controller="jobset-controller") == []
    # the same line from another controller counts
    assert c.errors_in(log, controller="lws-controller") == [crash]


def test_kueue_without_the_provisioning_request_api_is_benign_only_for_kueue(tmp_path: Path) -> None:
    """The line Kueue logged in make e2e on pathways-job (sigs.k8s.io/kueue@v0.17.1 cmd/kueue/main.go setupIndexes)."""
    line = (
        '{"level":"error","ts":"2026-11-29T12:33:14.505582092Z","logger":"setup","caller":"kueue/main.go:408",'
        '"msg":"Skipping admission check controller setup: Provisioning Requests not supported (Possible cause: '
        'missing or unsupported cluster-autoscaler)","error":"no matches for kind \\"ProvisioningRequest\\""}'
    )
    log = tmp_path / "kueue.log"
    log.write_text(line + "\n")
    assert c.errors_in(log, controller="kueue-controller") == []
    assert c.errors_in(log, controller="lws-controller") == [line]


def test_a_second_triggers_closed_cache_is_benign_only_for_kedas_metrics_server(tmp_path: Path) -> None:
    """The line KEDA's metrics server logged in make e2e on vllm-single-host-keda (two triggers, the first query's
    failure cleared the scalers cache: kedacore/keda@v2.20.2 pkg/scaling/scale_handler.go GetScaledObjectMetrics)."""
    line = 'E1129 14:26:54.917924   12728 status.go:71] "Unhandled Error" err="apiserver received an error that is not an metav1.Status: &status.Error{s:(*status.Status)(0xfec913d1260)}: rpc error: code = Unknown desc = error when getting metric values no matching metrics found for s0-prometheus" logger="UnhandledError"'
    log = tmp_path / "keda.log"
    log.write_text(line + "\n")
    assert c.errors_in(log, controller="keda-metrics-apiserver") == []
    assert c.errors_in(log, controller="keda-operator") == [line]
    log.write_text(line.replace("no matching metrics found", "no scaler found") + "\n")
    assert len(c.errors_in(log, controller="keda-metrics-apiserver")) == 1


def test_a_follower_before_its_leader_is_benign_only_for_jobset(tmp_path: Path) -> None:
    """The line JobSet logged in make e2e on all-in-one (Saxml's exclusive placement: sigs.k8s.io/jobset@v0.10.1
    pkg/webhooks/pod_mutating_webhook.go setNodeSelector)."""
    line = '2026-11-29T14:36:23Z\tERROR\tadmission\tfinding leader pod for follower\t{"webhookGroup": "", "webhookKind": "Pod", "Pod": {"name":"","namespace":"sax"}, "namespace": "sax", "name": "", "resource": {"group":"","version":"v1","resource":"pods"}, "user": "tpu-serving-local-admin", "requestID": "d95dd903-0726-45df-902e-ed3034971704", "error": "expected 1 leader pod (sax-model-server-sax-model-server-0-0), but got 0. this is an expected, transient error"}'
    log = tmp_path / "jobset.log"
    log.write_text(line + "\n")
    assert c.errors_in(log, controller="jobset-controller") == []
    assert c.errors_in(log, controller="lws-controller") == [line]
