"""Disruption-safe serving: the PodDisruptionBudget of every serving workload, and the termination settings of its
pods (a preStop delay and a grace period), so a node drain, an upgrade or a rollout drops no request in flight.

Budgets (one per set of pods a controller owns; `units`):
- A Deployment: `maxUnavailable: 1`. The disruption controller reads a Deployment's scale itself, so this holds with
  any replica count, an HPA's included (https://kubernetes.io/docs/tasks/run-application/configure-pdb/, "Think about
  how your application reacts to disruptions" and "Arbitrary workloads and arbitrary selectors").
- A LeaderWorkerSet: one budget over every pod of the set (label `leaderworkerset.sigs.k8s.io/name`), `maxUnavailable:
  1`. Its pods are all owned by StatefulSets (the leaders by the set's leader StatefulSet, each group's workers by a
  StatefulSet per leader: kubernetes-sigs/lws@v0.7.0 and @v0.10.0 pkg/controllers/leaderworkerset_controller.go and
  pod_controller.go, setControllerReferenceWithStatefulSet), whose scale the disruption controller reads, so
  `maxUnavailable` works with a changing replica count. A group restarts whole when any of its pods goes
  (RecreateGroupOnPodRestart, the stack's policy): one pod evicted makes the group's other pods unhealthy, which
  uses up the budget, so no pod of another group is evicted until the group is back. A multi-host replica is
  thereby one unit. A budget per group is impossible (the group count changes), and one over the leaders alone
  would let a drain take the workers of several groups at once.
- A JobSet (and the JobSet a PathwaysJob becomes): its pods are owned by Jobs, which have no scale subresource, so
  only an integer `minAvailable` is allowed (the Kubernetes page above: "only an integer value can be used with
  .spec.minAvailable"); the stack sets every pod of the set but one, which again makes one slice the unit.
- `unhealthyPodEvictionPolicy: AlwaysAllow` (policy/v1, GA in Kubernetes 1.31): a pod that is not Ready (starting,
  or the rest of a group already going down) never holds a drain.
- A paused stack runs no replicas: no budget. A single replica gets `maxUnavailable: 1` too, deliberately: a budget
  that allowed no eviction of it would hold every drain of its node until GKE gives up waiting (GKE's node upgrade
  documentation, https://cloud.google.com/kubernetes-engine/docs/concepts/node-pool-upgrade-strategies, gives an
  hour; the API's UpgradeSettings says only "Disruption stays within the limits of PodDisruptionBudget"), and would
  block the cluster autoscaler's scale-down for good. One replica cannot survive a drain of its node; two can.

Termination (`drained`): every container of a serving pod sleeps `PRESTOP_SECONDS` before it gets SIGTERM, and the pod
has `GRACE_SECONDS`:
- The endpoint picker drops a pod from its datastore on the pod's update event once it has a deletionTimestamp
  (llm-d/llm-d-router@v0.10.0 pkg/epp/controller/pod_reconciler.go updateDatastore, pkg/epp/util/pod/pod.go
  IsPodReady: false when DeletionTimestamp is set) and refreshes metrics every 50 ms (pkg/epp/server/options.go
  RefreshMetricsInterval default): within a second.
- The server keeps answering its health checks during the preStop sleep (nothing has signalled it yet), so no
  health check fails and none is what stops traffic: traffic stops because the terminating pod's endpoint is
  removed. The picker drops it (above); for the load balancer, a terminating pod leaves the Service's ready
  endpoints and GKE's NEG controller detaches it from the network endpoint group
  (https://cloud.google.com/kubernetes-engine/docs/concepts/container-native-load-balancing, "Pod readiness" and
  termination). How long the detach takes to reach the load balancer is documented nowhere: ROUTING_SECONDS is a
  margin for it, one the size of a default health check's failure detection (the Compute Engine defaults
  `unhealthyThreshold` 2, `checkIntervalSec` 5 s, `timeoutSec` 5 s,
  https://cloud.google.com/compute/docs/reference/rest/v1/healthChecks: 15 s), so a backend would be out even if
  it had stopped answering; the llm-d-router chart's HealthCheckPolicy is faster (2 s, 2 s; llm-d/llm-d-router@v0.10.0
  config/charts/llm-d-router-gateway/templates/gke.yaml).
- vLLM does not drain on SIGTERM: its handler cancels the HTTP server task at once, "prevents the uvicorn signal
  handler to exit early" (vllm-project/vllm vllm/entrypoints/launcher.py serve_http signal_handler), so requests in
  flight are cut. The drain therefore happens in the preStop sleep, after routing has stopped: it lasts as long as
  the longest request the gateway lets run, its backend timeout of 300 s (the chart's GCPBackendPolicy timeoutSec,
  same gke.yaml). JetStream's engine and the Saxml servers are handled the same way.
- After SIGTERM, SHUTDOWN_SECONDS for the server to exit and release its TPU before the kubelet kills it.
The sleep handler (`lifecycle.preStop.sleep.seconds`, PodLifecycleSleepAction: alpha in Kubernetes 1.29, beta and on
by default from 1.30, stable in 1.34, KEP-3960 https://www.kubernetes.dev/resources/keps/3960/) runs in the kubelet,
so it needs no shell or `sleep` binary in the image (https://kubernetes.io/blog/2025/05/14/
kubernetes-v1-33-updates-to-container-lifecycle). The grace stays under the cluster autoscaler's
600 s limit on a scale-down's graceful termination (kubernetes/autoscaler cluster-autoscaler/FAQ.md,
--max-graceful-termination-sec).

A probe that kills (liveness, startup) carries its own, short grace: PROBE_KILL_GRACE_SECONDS. The kubelet runs the
preStop hook on every kill, a probe's too, within the grace of that kill: the pod's unless the probe sets its own
(kubernetes/kubernetes pkg/kubelet/kuberuntime/kuberuntime_container.go setTerminationGracePeriod: reasonLivenessProbe
and reasonStartupProbe take the probe's terminationGracePeriodSeconds; killContainer runs executePreStopHook within
it, then stops the container with what is left, at least minimumGracePeriodInSeconds = 2). Without it a hung server
sat out the whole drain (PRESTOP_SECONDS) before its restart, though it drains nothing: a probe kill is not a
routed-away pod, and on a LeaderWorkerSet the restart then recreates the group (RecreateGroupOnPodRestart), so the
slice stayed down that much longer. Probe-level terminationGracePeriodSeconds (ProbeTerminationGracePeriod, beta and
on by default from Kubernetes 1.25, GA and locked on from 1.28: kubernetes pkg/features/kube_features.go;
https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/
#probe-level-terminationgraceperiodseconds) is refused on a readiness probe (pkg/apis/core/validation
validateReadinessProbe: "must not be set for readinessProbes"), which kills nothing. With it the sleep is cut at
PROBE_KILL_GRACE_SECONDS and the server gets SIGTERM with the kubelet's 2 s. The group's recreation itself deletes the
leader pod with its pod grace (kubernetes-sigs/lws@v0.7.0 pkg/controllers/pod_controller.go handleRestartPolicy: a
foreground Delete without GracePeriodSeconds): that drain a probe cannot shorten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stacks.naming import MANAGED_BY_LABELS

PDB_API = "policy/v1"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"  # lws@v0.7.0 api/leaderworkerset/v1 SetNameLabelKey
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"  # jobset@v0.10.1 api/jobset/v1alpha2 JobSetNameKey

# The margin for the load balancer's NEG detach: a default health check's failure detection (module docstring).
LB_CHECK_INTERVAL_SECONDS = 5
LB_CHECK_TIMEOUT_SECONDS = 5
LB_UNHEALTHY_THRESHOLD = 2
EPP_REMOVAL_SECONDS = 1  # the picker's watch event, then a 50 ms metrics refresh
ROUTING_SECONDS = max(
    LB_CHECK_INTERVAL_SECONDS * LB_UNHEALTHY_THRESHOLD + LB_CHECK_TIMEOUT_SECONDS, EPP_REMOVAL_SECONDS
)
REQUEST_SECONDS = 300  # the gateway's backend timeout (llm-d-router chart GCPBackendPolicy timeoutSec)
PRESTOP_SECONDS = ROUTING_SECONDS + REQUEST_SECONDS
SHUTDOWN_SECONDS = 30
GRACE_SECONDS = PRESTOP_SECONDS + SHUTDOWN_SECONDS
# A liveness or startup probe's own grace (module docstring): a failed server has nothing to drain; the time a
# server gets to exit after SIGTERM on a drain, no more.
PROBE_KILL_GRACE_SECONDS = SHUTDOWN_SECONDS
KILLING_PROBES = ("livenessProbe", "startupProbe")  # a failure restarts the container; readiness only routes away
AUTOSCALER_GRACE_LIMIT_SECONDS = 600  # cluster-autoscaler --max-graceful-termination-sec default


def drained(pod_spec: dict[str, Any]) -> dict[str, Any]:
    """`pod_spec` with the grace period and, on every container, the preStop sleep, each liveness and startup probe
    with its own short grace (module docstring)."""
    containers = [
        {
            **c,
            **{
                probe: {**c[probe], "terminationGracePeriodSeconds": PROBE_KILL_GRACE_SECONDS}
                for probe in KILLING_PROBES
                if probe in c
            },
            "lifecycle": {**c.get("lifecycle", {}), "preStop": {"sleep": {"seconds": PRESTOP_SECONDS}}},
        }
        for c in pod_spec["containers"]
    ]
    return {**pod_spec, "containers": containers, "terminationGracePeriodSeconds": GRACE_SECONDS}


@dataclass(frozen=True)
class Unit:
    """A set of pods one controller object owns, which one budget covers."""

    kind: str  # the owning object's kind
    name: str  # its name (the budget's too)
    selector: Mapping[str, str]
    labels: Mapping[str, str]
    """The budget's own labels (its object's)."""
    pods: int | None = None
    """Its fixed number of pods when its pods' controllers have no scale (JobSet), else None (maxUnavailable)."""

    @property
    def spec(self) -> dict[str, Any]:
        limit: dict[str, Any] = {"maxUnavailable": 1} if self.pods is None else {"minAvailable": max(self.pods - 1, 0)}
        return {
            **limit,
            "selector": {"matchLabels": dict(self.selector)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        }


def _jobset_pods(spec: Mapping[str, Any]) -> int:
    return sum(
        int(job.get("replicas", 1)) * int(job["template"]["spec"].get("parallelism", 1))
        for job in spec["replicatedJobs"]
    )


def unit_of(manifest: Mapping[str, Any]) -> Unit | None:
    """The unit of a manifest with a pod template: a Deployment, LeaderWorkerSet or JobSet; None for a Job (it runs
    to completion and serves nothing). Another kind has no rule here: ValueError, so a new kind says what it is."""
    kind, meta, spec = manifest["kind"], manifest["metadata"], manifest["spec"]
    name, labels = meta["name"], {k: v for k, v in meta.get("labels", {}).items() if k not in MANAGED_BY_LABELS}
    if kind == "Deployment":
        return Unit(kind, name, spec["selector"]["matchLabels"], labels)
    if kind == "LeaderWorkerSet":
        return Unit(kind, name, {LWS_NAME_LABEL: name}, labels)
    if kind == "JobSet":
        return Unit(kind, name, {JOBSET_NAME_LABEL: name}, labels, _jobset_pods(spec))
    if kind == "Job":
        return None
    raise ValueError(f"no disruption rule for a {kind} ({name}): say which pods one budget covers")


def budget(unit: Unit, namespace: str) -> dict[str, Any]:
    """The PodDisruptionBudget of `unit`, named after its object."""
    return {
        "apiVersion": PDB_API,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": unit.name, "namespace": namespace, "labels": {**unit.labels, **MANAGED_BY_LABELS}},
        "spec": unit.spec,
    }
