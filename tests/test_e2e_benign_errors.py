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
    # the sibling trigger's failing query, which cleared the cache, beside it (the same HPA cycle)
    sibling = line.replace("no matching metrics found for s0-prometheus", "metric:s1-prometheus encountered error")
    log = tmp_path / "keda.log"
    log.write_text(f"{sibling}\n{line}\n")
    assert c.errors_in(log, controller="keda-metrics-apiserver") == []
    assert c.errors_in(log, controller="keda-operator") == [sibling, line]
    # alone (an HPA asking for a metric no trigger serves: nothing failed, nothing cleared the cache) it counts
    log.write_text(line + "\n")
    assert len(c.errors_in(log, controller="keda-metrics-apiserver")) == 1
    log.write_text(f"{sibling}\n" + line.replace("no matching metrics found", "no scaler found") + "\n")
    assert len(c.errors_in(log, controller="keda-metrics-apiserver")) == 1


def test_a_follower_before_its_leader_is_benign_only_for_jobset(tmp_path: Path) -> None:
    """The line JobSet logged in make e2e on all-in-one (Saxml's exclusive placement: sigs.k8s.io/jobset@v0.10.1
    pkg/webhooks/pod_mutating_webhook.go setNodeSelector)."""
    line = '2026-11-29T14:36:23Z\tERROR\tadmission\tfinding leader pod for follower\t{"webhookGroup": "", "webhookKind": "Pod", "Pod": {"name":"","namespace":"sax"}, "namespace": "sax", "name": "", "resource": {"group":"","version":"v1","resource":"pods"}, "user": "tpu-serving-local-admin", "requestID": "d95dd903-0726-45df-902e-ed3034971704", "error": "expected 1 leader pod (sax-model-server-sax-model-server-0-0), but got 0. this is an expected, transient error"}'
    log = tmp_path / "jobset.log"
    log.write_text(line + "\n")
    assert c.errors_in(log, controller="jobset-controller") == []
    assert c.errors_in(log, controller="lws-controller") == [line]
    # two leader pods is a real defect (pod_admission_webhook.go's same message with another count)
    two = line.replace("but got 0.", "but got 2.")
    log.write_text(two + "\n")
    assert c.errors_in(log, controller="jobset-controller") == [two]


def test_klog_fatal_lines_and_go_panics_count() -> None:
    """prometheus-adapter exits through klog.Fatalf on a rules file it cannot load (sigs.k8s.io/prometheus-adapter@
    v0.12.0 cmd/adapter/adapter.go: "unable to load metrics discovery config"); a Go panic prints `panic: ` first."""
    assert c.ERROR_LINE.search("F1129 14:26:54.917924   12728 adapter.go:340] unable to load metrics discovery config")
    assert c.ERROR_LINE.search("panic: runtime error: invalid memory address or nil pointer dereference")
    assert not c.ERROR_LINE.search("I1129 14:26:54.917924   12728 adapter.go:340] serving")


def test_a_restart_counts_unless_its_log_says_it_exits_by_design(tmp_path: Path) -> None:
    """The supervisor restarts an exited controller and counts it (controllers.json `restarts`); KEDA's operator exits
    once its cert rotator has written the webhook certificates (seen in make e2e, vllm-single-host-keda)."""
    log = tmp_path / "keda-operator.log"
    exit_line = (
        "2026-11-29T14:30:08Z\tINFO\tcert-rotation\tSecrets have been updated; exiting so pod can be restarted "
        "(This behaviour can be changed with the option RestartOnSecretRefresh)"
    )
    log.write_text(exit_line + "\n")
    ctrl = c.Controller("keda-operator", 1, log, 0.0, restarts=1)
    assert c.unexplained_restarts(ctrl) == 0
    assert c.unexplained_restarts(c.Controller("keda-operator", 1, log, 0.0, restarts=2)) == 1
    log.write_text("2026-11-29T14:30:08Z\tINFO\tsetup\tstarting manager\n")
    assert c.unexplained_restarts(ctrl) == 1
    assert c.unexplained_restarts(c.Controller("keda-operator", 1, log, 0.0)) == 0


def test_a_conflicting_ca_injection_is_benign_once_the_ca_is_injected(tmp_path: Path) -> None:
    """The line LWS logged in make e2e on pathways-job (open-policy-agent/cert-controller@v0.13.0 ensureCerts)."""
    line = '2026-11-29T15:09:10Z\tERROR\tcert-rotation\tError updating webhook with certificate\t{"name": "lws-mutating-webhook-configuration", "gvk": "admissionregistration.k8s.io/v1, Kind=MutatingWebhookConfiguration", "error": "Operation cannot be fulfilled on mutatingwebhookconfigurations.admissionregistration.k8s.io \\"lws-mutating-webhook-configuration\\": the object has been modified; please apply your changes to the latest version and try again"}'
    log = tmp_path / "lws.log"
    log.write_text(line + "\n")
    assert len(c.errors_in(log, controller="lws-controller")) == 1  # not (yet) resolved
    log.write_text(line + "\n2026-11-29T15:09:15Z\tINFO\tcert-rotation\tCA certs are injected to webhooks\n")
    assert c.errors_in(log, controller="lws-controller") == []
    assert len(c.errors_in(log, controller="keda-operator")) == 1


def test_a_request_cancelled_with_jobsets_first_manager_is_benign_once_a_later_run_serves(tmp_path: Path) -> None:
    """The line JobSet logged in a clean-clone make e2e-ci on pathways-job (k8s.io/client-go@v0.34.1 rest/request.go)."""
    line = (
        "2026-11-29T17:03:30Z\tERROR\tcontroller-runtime.cache\tUnexpected error when reading response body\t"
        '{"error": "context canceled"}'
    )
    log = tmp_path / "jobset.log"
    log.write_text(line + "\n")
    assert len(c.errors_in(log, controller="jobset-controller")) == 1  # no later run serves
    log.write_text(line + "\n2026-11-29T17:03:45Z\tINFO\tcontroller-runtime.webhook\tServing webhook server\n")
    assert c.errors_in(log, controller="jobset-controller") == []
    assert len(c.errors_in(log, controller="lws-controller")) == 1
    other = line.replace("context canceled", "unexpected EOF")
    log.write_text(other + "\n2026-11-29T17:03:45Z\tINFO\tcontroller-runtime.webhook\tServing webhook server\n")
    assert len(c.errors_in(log, controller="jobset-controller")) == 1
