"""What a cluster operator looks at, read from the local cluster's API server (tooling/local/local_stack.py Kube), and the
local cluster's life (the toolchain's `make local-cluster`), with a deadline on every wait."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from stacks import naming
from stacks.serving.compute_class import COMPUTE_CLASS_LABEL
from tooling.harness.offline import ROOT
from tooling.local.local_stack import Kube, KubeError, LocalStack
from tooling.review import transition

T = TypeVar("T")

# How the local cluster of a stack is started and stopped: the toolchain's make targets (docs/local.md); override for
# another harness. `{stack}` and `{stack_file}` are filled in.
CLUSTER_UP = os.environ.get(
    "E2E_CLUSTER_UP", "make --no-print-directory local-cluster STACK={stack} STACK_FILE={stack_file}"
)
CLUSTER_DOWN = os.environ.get("E2E_CLUSTER_DOWN", "make --no-print-directory local-cluster-down STACK={stack}")
CLUSTER_TIMEOUT = float(os.environ.get("E2E_CLUSTER_TIMEOUT", "600"))
# The controllers' cache-sync window: controller-runtime's default CacheSyncTimeout is 2 minutes
# (sigs.k8s.io/controller-runtime pkg/config/controller.go: "Defaults to 2 minutes if not set"), after which a
# manager whose informer cannot sync (a kind without its CRD) exits. KEDA's operator is such a manager.
SYNC_WINDOW = float(os.environ.get("E2E_SYNC_WINDOW", "130"))
# klog's error lines (`E0102 15:04:05.000000 ...`) and zap/logr JSON or console error levels.
# klog's error and fatal lines (`E0102 15:04:05.000000 ...`, `F0102 ...`), zap/logr JSON or console error levels, and
# a Go panic's first line.
ERROR_LINE = re.compile(r'^[EF]\d{4} |"level":"(error|dpanic|panic|fatal)"|\t(ERROR|DPANIC|PANIC|FATAL)\t|^panic: ')


def run_process(argv: list[str] | str, timeout: float, shell: bool = False) -> tuple[int, str]:
    """(exit code, output) of a command run in the repository; its whole process group killed past the timeout."""
    proc = subprocess.Popen(
        argv, shell=shell, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise TimeoutError(f"{argv!r} did not finish in {timeout:.0f} s:\n{out[-6000:]}") from None
    return proc.returncode, out


def run_command(command: str, timeout: float) -> str:
    """A shell command in the repository; its output, or an error with it."""
    code, out = run_process(command, timeout, shell=True)
    if code != 0:
        raise RuntimeError(f"{command!r} failed ({code}):\n{out[-3000:]}")
    return out


@contextmanager
def local_cluster(stack: str, stack_file: Path) -> Iterator[None]:
    """The stack's local cluster for the duration, always stopped after."""
    try:
        run_command(CLUSTER_UP.format(stack=stack, stack_file=stack_file), CLUSTER_TIMEOUT)
        yield
    finally:
        run_command(CLUSTER_DOWN.format(stack=stack, stack_file=stack_file), CLUSTER_TIMEOUT)


def _child_pids() -> list[int]:
    """Every process this test process started (children, recursively), from /proc."""
    out, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out.extend(children)
            todo.extend(children)
    return out


def with_deadline(what: str, seconds: float, fn: Callable[[], T]) -> T:
    """fn() in a thread; past the deadline, the processes it started (the Pulumi CLI and its plugins) are killed by
    their ids and the step fails naming itself."""
    before = set(_child_pids())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for pid in set(_child_pids()) - before:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        thread.join(30)
        raise TimeoutError(f"{what}: no result in {seconds:.0f} s (its processes were stopped)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def wait_for(what: str, seconds: float, probe: Callable[[], T | None], every: float = 2.0) -> T:
    """The first truthy probe() within the deadline, else an error naming what was awaited and the last answer."""
    deadline, last = time.monotonic() + seconds, None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not so after {seconds:.0f} s")
        time.sleep(every)


# ---- the stack's footprint in the cluster -------------------------------------------------------------------------

CLUSTER_SCOPED = {
    "namespaces": "/api/v1/namespaces",
    "crds": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "clusterroles": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "clusterrolebindings": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "validatingwebhooks": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "mutatingwebhooks": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "apiservices": "/apis/apiregistration.k8s.io/v1/apiservices",
    "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "computeclasses": "/apis/cloud.google.com/v1/computeclasses",
}


# Helm leaves an object so annotated at uninstall (helm.sh docs "Tell Helm Not To Uninstall a Resource"); the stack
# marks Kueue's templated CRDs so (docs/operations.md: "the chart's CRDs stay"), and they outlive `destroy` by design.
HELM_KEEP = ("helm.sh/resource-policy", "keep")


def kept_on_purpose(kube: Kube, crd: str) -> bool:
    """Whether a CRD left after `destroy` is one the stack keeps on purpose: annotated HELM_KEEP, and not one the
    stack applies itself (stacks/facts/versions.py CRD_KINDS: their keep patches annotate them too, and their
    ConfigGroup must delete them at `destroy`)."""
    from stacks.facts.versions import CRD_KINDS

    if crd in CRD_KINDS:
        return False
    try:
        annotations = kube.get(f"{CLUSTER_SCOPED['crds']}/{crd}")["metadata"].get("annotations") or {}
    except KubeError:
        return False
    return annotations.get(HELM_KEEP[0]) == HELM_KEEP[1]


def crd_api_services(kube: Kube, crds: set[str]) -> set[str]:
    """The APIServices kube-apiserver registers itself for `crds` while they exist: `<version>.<group>` for each
    served version (k8s.io/kubernetes@v1.35.4 pkg/controlplane/controller/crdregistration/crdregistration_controller.go
    handleVersionUpdate: `apiServiceName := groupVersion.Version + "." + groupVersion.Group`, for `version.Served`),
    with no service of their own (served by the API server)."""
    out = set()
    for crd in crds:
        try:
            spec = kube.get(f"{CLUSTER_SCOPED['crds']}/{crd}")["spec"]
        except KubeError:
            continue
        out |= {f"{v['name']}.{spec['group']}" for v in spec.get("versions") or [] if v.get("served")}
    local = {a["metadata"]["name"] for a in kube.items(CLUSTER_SCOPED["apiservices"]) if not a["spec"].get("service")}
    return out & local


# The namespaced kinds a stack or its charts create in namespaces that exist before it (kube-system: the metrics
# adapters' and Kueue's `*-auth-reader` RoleBindings, stacks/monitoring/adapters/stackdriver.py's
# custom-metrics-auth-reader, tooling/data/chart_objects.json).
NAMESPACED = {
    "roles": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "rolebindings": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "serviceaccounts": "/api/v1/namespaces/{ns}/serviceaccounts",
    "services": "/api/v1/namespaces/{ns}/services",
    "configmaps": "/api/v1/namespaces/{ns}/configmaps",
    "secrets": "/api/v1/namespaces/{ns}/secrets",
}


# What kube-controller-manager adds to every namespace a moment after it is made (the root CA publisher's ConfigMap,
# the service account controller's `default`), never the stack: left out, so a snapshot taken while a namespace is new
# compares equal later.
PER_NAMESPACE = {("configmaps", "kube-root-ca.crt"), ("serviceaccounts", "default")}


def snapshot(kube: Kube, namespaces: set[str] | None = None) -> dict[str, set[str]]:
    """Names of every cluster-scoped object of the kinds a stack can leave behind, every Helm release record, and the
    NAMESPACED objects of `namespaces` (default: every namespace now; pass the ones that existed before the stack, as
    its own are checked as namespaces)."""
    out = {kind: {o["metadata"]["name"] for o in kube.items(path)} for kind, path in CLUSTER_SCOPED.items()}
    secrets = kube.items("/api/v1/secrets?labelSelector=owner%3Dhelm")
    out["helm releases"] = {f"{s['metadata']['namespace']}/{s['metadata']['name']}" for s in secrets}
    namespaces = out["namespaces"] if namespaces is None else namespaces
    out["namespaced"] = {
        f"{ns}/{kind}/{o['metadata']['name']}"
        for ns in sorted(namespaces)
        for kind, path in NAMESPACED.items()
        for o in items_or_none(kube, path.format(ns=ns))
        if (kind, o["metadata"]["name"]) not in PER_NAMESPACE
    }
    return out


# ---- pods, nodes and what the stack says about them ----------------------------------------------------------------


def pods(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return [p for p in kube.items(f"/api/v1/namespaces/{namespace}/pods") if not p["metadata"].get("deletionTimestamp")]


def node_pools(kube: Kube) -> dict[str, str]:
    """node name -> the stack pool it belongs to (its `tpu-serving/pool` label, as GKE sets the node pool's labels)."""
    return {
        n["metadata"]["name"]: n["metadata"].get("labels", {}).get(naming.POOL_LABEL, "")
        for n in kube.items("/api/v1/nodes")
    }


def pod_pool(pod: dict[str, Any], classes: dict[str, str] | None = None) -> str | None:
    """The stack pool a pod asks for, if any: its node selector's pool label, or for a pool that is a ComputeClass
    (the pod selects `cloud.google.com/compute-class`), the pool that class is labelled with (`classes`: class name ->
    its `tpu-serving/pool` label, stacks/pieces/tpu_pools.py compute_class_manifest)."""
    selector = pod["spec"].get("nodeSelector") or {}
    if naming.POOL_LABEL in selector:
        return selector[naming.POOL_LABEL]
    return (classes or {}).get(selector.get(COMPUTE_CLASS_LABEL, ""))


def compute_classes(kube: Kube) -> dict[str, str]:
    """ComputeClass name -> the stack pool its label names."""
    try:
        items = kube.items("/apis/cloud.google.com/v1/computeclasses")
    except KubeError:
        return {}
    return {
        c["metadata"]["name"]: (c["metadata"].get("labels") or {})[naming.POOL_LABEL]
        for c in items
        if naming.POOL_LABEL in (c["metadata"].get("labels") or {})
    }


def pending_reason(pod: dict[str, Any]) -> str:
    for condition in pod.get("status", {}).get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition["status"] != "True":
            return f"{condition.get('reason')}: {condition.get('message', '')}"
    return f"phase {pod.get('status', {}).get('phase')}"


@dataclass(frozen=True)
class PodPlacement:
    pod: str
    pool: str | None  # the stack pool it asks for; None: it asks for none (a TPU pod GKE could put anywhere)
    node: str | None
    node_pool: str | None
    why_pending: str | None
    chips: int = 0


# The server kinds whose pods ask for TPU chips, and where the API serves them (their pods counted by
# tooling/review/transition.py pod_groups, as the review counts a pool's chips).
SERVER_KINDS = {
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "LeaderWorkerSet": "/apis/leaderworkerset.x-k8s.io/v1/namespaces/{ns}/leaderworkersets",
    "JobSet": "/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets",
}


def expected_tpu_pods(kube: Kube, namespaces: list[str]) -> dict[str, int]:
    """ "<kind> <namespace>/<name>" -> the TPU pods each server object of the namespaces asks for at its current size
    (transition.pod_groups over its live spec, the groups whose template asks for TPU chips)."""
    out: dict[str, int] = {}
    for ns in namespaces:
        for kind, path in SERVER_KINDS.items():
            for obj in items_or_none(kube, path.format(ns=ns)):
                pods = sum(n for n, tpl in transition.pod_groups(kind, obj["spec"]) if transition.tpu_chips(tpl))
                if pods:
                    out[f"{kind} {ns}/{obj['metadata']['name']}"] = pods
    return out


def items_or_none(kube: Kube, path: str) -> list[dict[str, Any]]:
    """A list of a kind the cluster may not serve (its CRD not installed: no such server in this stack)."""
    try:
        return kube.items(path)
    except KubeError as err:
        if err.status == 404:
            return []
        raise


def placements(kube: Kube, namespaces: list[str]) -> list[PodPlacement]:
    """Every pod of the namespaces asking for TPU chips or for a stack pool, running or Pending (not terminating,
    not finished)."""
    nodes, classes = node_pools(kube), compute_classes(kube)
    out = []
    for ns in namespaces:
        for pod in pods(kube, ns):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            pool, chips = pod_pool(pod, classes), transition.tpu_chips(pod)
            if pool is None and not chips:
                continue
            node = pod["spec"].get("nodeName")
            out.append(
                PodPlacement(
                    f"{ns}/{pod['metadata']['name']}",
                    pool,
                    node,
                    nodes.get(node) if node else None,
                    None if node else pending_reason(pod),
                    chips,
                )
            )
    return out


def pool_chips(kube: Kube) -> dict[str, int]:
    """stack pool -> the TPU chips its mirrored nodes hold (their allocatable google.com/tpu)."""
    out: dict[str, int] = {}
    for n in kube.items("/api/v1/nodes"):
        pool = (n["metadata"].get("labels") or {}).get(naming.POOL_LABEL)
        if pool:
            out[pool] = out.get(pool, 0) + int(
                float((n.get("status") or {}).get("allocatable", {}).get(transition.TPU_RESOURCE) or 0)
            )
    return out


NEAR_LINES = 2


@dataclass(frozen=True)
class Benign:
    """An error line a controller logs on the local cluster that says nothing wrong about the stack: which
    controllers, the message (a regular expression searched in the line), why it is expected, with its upstream
    source, and, for a transient error, the line that shows it resolved (`resolved_by`, searched in the lines after
    it: without one later, the error counts)."""

    controllers: tuple[str, ...]  # their names in controllers.json
    message: str
    why: str
    resolved_by: str | None = None
    # a line that must stand within NEAR_LINES of it (before or after), else it counts: the error's stated cause
    near: str | None = None

    def matches(self, controller: str, line: str) -> bool:
        return controller in self.controllers and re.search(self.message, line) is not None


# cert-controller's rotator, as LWS (v0.13.0), JobSet (v0.14.0) and Kueue (their go.mod) run it for their webhooks
CERT_ROTATING = ("lws-controller", "jobset-controller", "kueue-controller")

# JobSet's manager stopping on the chart's placeholder certificate at its first run (BENIGN_ERRORS, EXPECTED_EXITS).
JOBSET_PLACEHOLDER_CERT = r"problem running manager.*tls: failed to find any PEM data in certificate input"

# Every error line the e2e accepts: one entry per message, never a whole controller or level.
BENIGN_ERRORS: tuple[Benign, ...] = (
    Benign(
        ("stackdriver-adapter-stand-in",),
        r"unable to update list of all metrics: unable to fetch metrics for query .*tpu_serving_local_stand_in"
        r".*connect: connection refused",
        "the stand-in for the Stackdriver adapter serves the metrics APIs and no metric: its Prometheus is a closed "
        "loopback port (tooling/local/local_controllers.py STAND_IN_PROMETHEUS), and prometheus-adapter@v0.12.0 "
        "pkg/custom-provider/provider.go cachingMetricsLister.RunUntil logs every relist it cannot make",
    ),
    Benign(
        CERT_ROTATING,
        r"could not refresh CA and server certs.*Operation cannot be fulfilled on secrets .*the object has been "
        r"modified",
        "at start the rotator's own refresh and its Secret reconciler's both rewrite the chart's placeholder Secret; "
        "the later update conflicts (optimistic concurrency) and is retried "
        "(open-policy-agent/cert-controller@v0.14.0 pkg/rotator/rotator.go refreshCertIfNeeded: logs, returns "
        "false, nil inside wait.ExponentialBackoff); resolved once the rotator has injected its CA",
        resolved_by=r"CA certs are injected to webhooks",
    ),
    Benign(
        CERT_ROTATING,
        r"Error updating webhook with certificate.*Operation cannot be fulfilled on "
        r"(mutating|validating)webhookconfigurations.*the object has been modified",
        "the rotator's CA injection into a webhook configuration another writer changed meanwhile (optimistic "
        "concurrency): logged, returned, and the reconcile requeued (open-policy-agent/cert-controller@v0.13.0 "
        'pkg/rotator/rotator.go ensureCerts: `log.Error(err, "Error updating webhook with certificate")`, '
        "`anyError = err`; ReconcileWH.Reconcile returns it); resolved once the rotator has injected its CA",
        resolved_by=r"CA certs are injected to webhooks",
    ),
    Benign(
        CERT_ROTATING,
        r"secret is not well-formed, cannot update webhook configurations.*(bad CA cert|missing ca\.crt)",
        "the chart creates the webhook Secret as a placeholder, with empty keys (sigs.k8s.io/jobset@v0.10.1 "
        'charts/jobset/templates/webhook/secret.yaml `ca.crt: ""`) or none (LWS); the rotator\'s reconciler reads '
        "it from its cache before the rotator's refreshed Secret arrives there, logs, and injects the CA on the "
        "next event (cert-controller@v0.14.0 pkg/rotator/rotator.go ReconcileWH.Reconcile, buildArtifactsFromSecret)",
        resolved_by=r"CA certs are injected to webhooks",
    ),
    # The real prometheus-adapter (gemma-hpa-prometheus) reads the GMP query frontend the stack runs beside it
    # (stacks/monitoring/adapters/prometheus_adapter.py GMP_FRONTEND_SERVICE): here a kwok pod, with no container and
    # no address the namespace resolves, and its data would be Cloud Monitoring's.
    Benign(
        ("prometheus-adapter",),
        r"unable to update list of all metrics: unable to fetch metrics for query .*"
        r"Get \"http://prometheus\.custom-metrics\.svc:9090/api/v1/series.*(network is unreachable|connection refused)",
        "the adapter's relist of the frontend's series, which nothing answers here (prometheus-adapter@v0.12.0 "
        "pkg/custom-provider/provider.go and pkg/external-provider/periodic_metric_lister.go log every failed relist)",
    ),
    # An aggregated API server's first requests, before its informer has loaded the API server's front-proxy CA
    # (k8s.io/apiserver pkg/server/dynamiccertificates configmap_cafile_content.go, from
    # kube-system/extension-apiserver-authentication): the aggregator's availability checks arrive first.
    Benign(
        ("keda-metrics-apiserver", "prometheus-adapter", "stackdriver-adapter-stand-in"),
        r"Unable to authenticate the request.*x509: certificate signed by unknown authority",
        "requests before the delegated authenticator's client-CA informer has synced (kubernetes@v1.35.4 "
        "staging/src/k8s.io/apiserver/pkg/server/dynamiccertificates/configmap_cafile_content.go); resolved once it has",
        resolved_by=r"Caches are synced",
    ),
    # KEDA's triggers query Managed Prometheus's API in Cloud Monitoring with Workload Identity: here the token
    # request goes to the stand-in credentials' closed loopback port (tooling/local/local_controllers.py
    # STAND_IN_TOKEN_URI), so every query fails there, and only there.
    Benign(
        ("keda-operator",),
        r"(error executing prometheus query|error getting metric for trigger|error getting scale decision).*"
        r"oauth2: cannot fetch token: Post \\\"http://127\.0\.0\.1:9/token\\\": dial tcp 127\.0\.0\.1:9: connect: connection refused",
        "a trigger's query needs a Google token, which the stand-in for Workload Identity cannot give "
        "(kedacore/keda@v2.20.2 pkg/scalers/prometheus_scaler.go ExecutePromQuery, pkg/scaling/scale_handler.go)",
    ),
    Benign(
        ("keda-metrics-apiserver",),
        r"rpc error: code = Unknown desc = error when getting metric values metric:s\d+-prometheus encountered error",
        "the metrics server relays the operator's failing query to the HPA controller (kedacore/keda@v2.20.2 "
        "pkg/metricsservice); the operator logs why, and its lines are checked",
    ),
    Benign(
        ("keda-metrics-apiserver",),
        r"rpc error: code = Unknown desc = error when getting metric values no matching metrics found for "
        r"s\d+-prometheus",
        "the same failing queries, seen from a second trigger's: the HPA asks for each trigger's metric at once, the "
        "first query that fails (no Google token here) clears the ScaledObject's scalers cache, and the other finds "
        "it closed (cache.ErrCacheClosed), which yields no metric and no error, reported as 'no matching metrics "
        "found' (kedacore/keda@v2.20.2 pkg/scaling/scale_handler.go GetScaledObjectMetrics: `if isScalerError { "
        "h.ClearScalersCache(...) }`, `errors.Is(err, cache.ErrCacheClosed)`, `len(matchingMetrics) == 0`); on GKE "
        "the queries answer and no cache is cleared",
        near=r"error when getting metric values metric:s\d+-prometheus encountered error",
    ),
    # JobSet's first run after install: the kubelet mounts the chart's placeholder Secret (empty tls.crt), the
    # rotator's mount check passes on the empty file (cert-controller@v0.14.0 pkg/rotator/rotator.go
    # ensureCertsMounted: os.Stat only), and the webhook server fails on it and stops the manager; the container is
    # restarted and serves once the volume holds the rotator's certificate (upstream shows the same restart:
    # kubernetes-sigs/jobset#357, "RESTARTS 1"). The two informer lines are the manager stopping on it.
    # Exclusive placement (alpha.jobset.sigs.k8s.io/exclusive-topology, the Saxml JobSet's per node pool): the Job
    # controller creates every pod of a Job at once; a follower's before its leader (completion index 0) exists or is
    # scheduled is logged by the mutating webhook and refused by the validating one, and the Job controller retries
    # it. The e2e's placement check shows the followers scheduled afterwards.
    Benign(
        ("jobset-controller",),
        r"finding leader pod for follower.*but got 0\. this is an expected, transient error",
        "JobSet's own design for exclusive placement (sigs.k8s.io/jobset@v0.10.1 pkg/webhooks/pod_mutating_webhook.go "
        'setNodeSelector: `log.Error(err, "finding leader pod for follower")`, \'validation webhook will reject '
        "creation of this follower pod'; pkg/webhooks/pod_admission_webhook.go: 'expected 1 leader pod (%s), but got "
        "%d. this is an expected, transient error'); GKE shows the same lines",
    ),
    Benign(
        ("jobset-controller",),
        JOBSET_PLACEHOLDER_CERT,
        "the install-time restart on the chart's placeholder certificate (kubernetes-sigs/jobset#357); resolved when "
        "a later run serves",
        resolved_by=r"Serving webhook server",
    ),
    Benign(
        ("jobset-controller",),
        r"Unexpected error when reading response body.*\"error\": \"context canceled\"",
        "a list request in flight when that first run's manager stops on the placeholder certificate, its context "
        'cancelled (k8s.io/client-go@v0.34.1 rest/request.go: `logger.Error(err, "Unexpected error when reading '
        'response body")`; seen in a clean-clone make e2e-ci on pathways-job, the same second as `problem running '
        "manager`); resolved when a later run serves",
        resolved_by=r"Serving webhook server",
    ),
    Benign(
        ("jobset-controller",),
        r"failed to get informer from cache.*Timeout: failed waiting for \S+ Informer to sync",
        "logged by controller-runtime's Kind source while that first run's manager stops, its context cancelled "
        "(sigs.k8s.io/controller-runtime@v0.22.1 pkg/internal/source/kind.go Start); resolved when a later run serves",
        resolved_by=r"Serving webhook server",
    ),
    Benign(
        ("kueue-controller",),
        r"Skipping admission check controller setup: Provisioning Requests not supported",
        "Kueue logs at error level that the ProvisioningRequest API (autoscaling.x-k8s.io, served with GKE's cluster "
        "autoscaler) is absent and goes on without that admission check (sigs.k8s.io/kueue@v0.17.1 cmd/kueue/main.go "
        "setupIndexes); the local cluster runs no cluster autoscaler, and the stack configures no ProvisioningRequest "
        "admission check",
    ),
)


def errors_in(log: Path, since: int = 0, controller: str = "") -> list[str]:
    """Error lines of a controller's log after byte `since`, but those BENIGN_ERRORS accepts for it (a transient
    one only when the line resolving it follows)."""
    if not log.exists():
        return [f"{log}: no log"]
    with log.open(errors="replace") as f:
        f.seek(since)
        lines = [line.rstrip() for line in f]
    out = []
    for i, line in enumerate(lines):
        if not ERROR_LINE.search(line):
            continue
        benign = next((b for b in BENIGN_ERRORS if b.matches(controller, line)), None)
        if benign is None:
            out.append(line)
        elif benign.resolved_by and not any(re.search(benign.resolved_by, later) for later in lines[i + 1 :]):
            out.append(f"{line} (not followed by {benign.resolved_by!r})")
        elif benign.near and not any(
            re.search(benign.near, other)
            for other in [*lines[max(0, i - NEAR_LINES) : i], *lines[i + 1 : i + 1 + NEAR_LINES]]
        ):
            out.append(f"{line} (without {benign.near!r} beside it)")
    return out


@dataclass(frozen=True)
class Controller:
    name: str
    pid: int
    log: Path
    started: float
    restarts: int = 0


# The exits a controller makes by design, each restarted as the kubelet would (the supervisor counts restarts in
# controllers.json): a restart is accepted only when its log holds one such line per restart.
EXPECTED_EXITS: tuple[Benign, ...] = (
    Benign(
        ("keda-operator", "lws-controller", "jobset-controller", "kueue-controller"),
        r"Secrets have been updated; exiting so pod can be restarted",
        "the cert rotator exits once it has written the webhook certificates, for the kubelet to restart the pod "
        "with them mounted (open-policy-agent/cert-controller@v0.16.0, KEDA v2.20.2 and Kueue v0.17.1 go.mod; v0.13.0 LWS, v0.14.0 JobSet; pkg/rotator/rotator.go: 'exiting so pod can "
        "be restarted (This behaviour can be changed with the option RestartOnSecretRefresh)')",
    ),
    Benign(
        ("jobset-controller",),
        JOBSET_PLACEHOLDER_CERT,
        "the install-time restart on the chart's placeholder certificate (kubernetes-sigs/jobset#357)",
    ),
)


def unexplained_restarts(ctrl: Controller) -> int:
    """How many of the controller's restarts its log does not explain by an EXPECTED_EXITS line."""
    if ctrl.restarts == 0:
        return 0
    text = ctrl.log.read_text(errors="replace") if ctrl.log.exists() else ""
    explained = sum(1 for line in text.splitlines() if any(e.matches(ctrl.name, line) for e in EXPECTED_EXITS))
    return max(0, ctrl.restarts - explained)


def controllers(local: LocalStack) -> list[Controller]:
    """The controllers the local cluster runs for the stack, as it records them (`controllers.json` beside the
    kubeconfig: name, pid, log; see docs/local.md)."""
    path = local.folder / "controllers.json"
    if not path.exists():
        raise AssertionError(f"the local cluster records no controllers ({path}; make local-cluster writes it)")
    out = []
    for entry in json.loads(path.read_text()):
        pid = int(entry["pid"])
        started = entry.get("started") or Path(f"/proc/{pid}").stat().st_ctime
        out.append(Controller(entry["name"], pid, Path(entry["log"]), float(started), int(entry.get("restarts", 0))))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def get_or_none(kube: Kube, path: str) -> Any:
    try:
        return kube.get(path)
    except KubeError as err:
        if err.status == 404:
            return None
        raise
