"""The alerts piece (tpu-serving:alerts, and each workload's `slo`): Cloud Monitoring alert policies for every
serving workload and the cluster's TPU capacity, the workloads' SLOs with burn-rate alerts, and where the alerts go.
Its rules (channel addresses, objectives a server can be measured on) and its plan, resolved once with the
environment's profile (components/alerts.py builds it). The queries themselves are stacks/monitoring/alerts.py's."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stacks.model.config_model import AlertChannelConfig, AlertsConfig, SloConfig
from stacks.model.profiles import Profile
from stacks.monitoring import alerts
from stacks.monitoring.alerts import PAGE, TICKET, LogSignal, Objective, Rule, pods_of, selector, while_wanted
from stacks.pieces.context import Context, Findings
from stacks.pieces.gateway import GatewayPlan
from stacks.pieces.rules import NS, parse_section
from stacks.problems import Problem
from stacks.serving import gateway
from stacks.serving import release as releases
from stacks.serving.workload_type import WorkloadRegistry, either

if TYPE_CHECKING:
    from stacks.serving.workload_plan import WorkloadPlan

NAME = "alerts"
KEYS = ("alerts",)


def parse(raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]:
    return {"alerts": parse_section(raw, "alerts", AlertsConfig, found.problems_at("alerts"))}


PATH = f"{NS}:alerts"
# Channel addresses: an email address; a Pub/Sub topic path (https://cloud.google.com/pubsub/docs/admin#resource_names);
# a notification channel's resource name (projects/P/notificationChannels/ID,
# https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.notificationChannels).
ADDRESS_RE = {
    "email": re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+"),
    "pubsub": re.compile(r"projects/[a-z][-a-z0-9.:]*[a-z0-9]/topics/[A-Za-z][-A-Za-z0-9_.~+%]{2,254}"),
    "existing": re.compile(r"projects/[a-z][-a-z0-9.:]*[a-z0-9]/notificationChannels/[0-9]+"),
}
ADDRESS_EXAMPLE = {
    "email": ("an email address", "oncall@example.com"),
    "pubsub": ("a Pub/Sub topic path", "projects/my-project/topics/alerts"),
    "existing": ("a notification channel id", "projects/my-project/notificationChannels/1234567890"),
}
# What each objective needs of the server (stacks.serving.workload_plan.ServingSignals).
SLO_SIGNALS = {
    "timeToFirstToken": "time_to_first_token",
    "timePerOutputToken": "time_per_output_token",
    "availability": "requests",
}


def visit(ctx: Context, found: Findings) -> AlertsPlan | None:
    """Its own rules (reported with the key's shape problems: they read no other key), the workloads' objectives
    against what their servers export; its plan, with the profile, the pools' zones, the workloads and those the
    gateway serves."""
    given, sections = ctx.invocation, ctx.sections
    config, monitoring = sections.alerts, sections.monitoring
    if config is not None:
        found.problems_at("alerts").extend(problems(config))
    index = releases.indexes(sections.workloads)
    found.problems_at("alerts.rules").extend(
        slo_problems([(index[w.name], w) for w in ctx.workloads], ctx.workload_types.slo_types)
    )
    gateway_plan = ctx.plan("gateway", GatewayPlan)
    if not found.clean or config is None or monitoring is None or gateway_plan is None or ctx.profile is None:
        return None
    if not (given.gcp_project and ctx.cluster_name):
        return None
    return plan(
        config,
        profile=ctx.profile,
        project=given.gcp_project,
        cluster_name=ctx.cluster_name,
        paused=sections.paused,
        tpu_metrics=monitoring.tpu_metrics,
        tpu_zones=sorted({p.config.zone for p in ctx.pools}),
        workloads=ctx.workloads,
        gateway_workloads=[b.name for b in gateway_plan.backends],
    )


def problems(config: AlertsConfig) -> list[Problem]:
    """Each channel's address as its type writes it."""
    found = []
    for i, channel in enumerate(config.channels):
        if not ADDRESS_RE[channel.type].fullmatch(channel.address):
            what, example = ADDRESS_EXAMPLE[channel.type]
            found.append(
                Problem(
                    f"{PATH}.channels[{i}].address",
                    f"{channel.address!r} is not {what} (type {channel.type}); e.g. {example}",
                )
            )
    return found


def slo_problems(workloads: Sequence[tuple[int, WorkloadPlan]], slo_types: Sequence[str]) -> list[Problem]:
    """An objective on a series the workload's server does not export cannot be measured: named with the types'
    servers that do."""
    found = []
    for i, plan in workloads:
        slo: SloConfig | None = getattr(plan.workload, "slo", None)
        if slo is None:
            continue
        for key, attribute in SLO_SIGNALS.items():
            field = "availability" if key == "availability" else attribute
            if getattr(slo, field) is not None and getattr(plan.signals, attribute) is None:
                found.append(
                    Problem(
                        f"{NS}:workloads[{i}].slo.{key}",
                        f"a {plan.workload.type} workload's server exports no series for it; only "
                        f"{either(slo_types)} workloads can have it",
                    )
                )
    return found


@dataclass(frozen=True)
class WorkloadAlerts:
    """One workload's policies and SLOs."""

    name: str
    rules: tuple[Rule, ...]
    objectives: tuple[Objective, ...]
    burn_command: str = ""
    """What to run when one of its SLOs' burn-rate policies fires (their documentation's command)."""
    burn_note: str = ""
    """What the documentation says first (a rollout candidate's: that it is one, and who rolls it back)."""


BURN_COMMAND = "open the SLO in Cloud Monitoring > Services; check the dashboard (dashboardUrl)"
PROMOTE_COMMAND = "make promote STACK=<stack>"


def burn_action(workload: Any) -> tuple[str, str]:
    """The burn-rate policies' (command, note): a rollout candidate's says it is one and that rolling it back is
    the operator's `make promote` (which rolls back while a fast burn-rate condition holds, tooling/operations/
    promote.py `burning`), nothing automatic; any other set's, where to look."""
    release = getattr(workload, "release", None)
    if release is None or not release.candidate:
        return BURN_COMMAND, ""
    note = (
        f'{workload.name} is the release candidate of {release.route} (its rollout, docs/operations.md "Release '
        'train"). Nothing rolls it back automatically: run `make promote` now. It rolls the candidate back while '
        "a fast burn-rate condition of its SLOs holds, and writes the rollback into the stack file; then review "
        "the diff and `pulumi up`. On a slow burn alone it decides on the gate's benchmark as usual: to roll back "
        "anyway, remove rollout.candidate and set rollout.weight to 0."
    )
    return f"{PROMOTE_COMMAND}  # then: make diff STACK=<stack>; pulumi up", note


@dataclass(frozen=True)
class AlertsPlan:
    """The alerts as the stack builds them: on or off, where they go, and what each policy reads."""

    enabled: bool
    paging: bool
    project: str
    cluster_name: str
    paused: bool
    """Paused: every policy stays, disabled."""
    channels: tuple[AlertChannelConfig, ...]
    workloads: tuple[WorkloadAlerts, ...]
    cluster_rules: tuple[LogSignal, ...]

    def routes(self, severity: str) -> tuple[int, ...]:
        """Indexes of the channels a policy of `severity` notifies: every channel that does not page, and the paging
        ones for a paging alert where paging is on."""
        return tuple(i for i, c in enumerate(self.channels) if not c.page or (severity == PAGE and self.paging))


def plan(
    config: AlertsConfig,
    *,
    profile: Profile,
    project: str,
    cluster_name: str,
    paused: bool,
    tpu_metrics: bool,
    tpu_zones: Sequence[str],
    workloads: Sequence[WorkloadPlan],
    gateway_workloads: Sequence[str],
) -> AlertsPlan:
    enabled = profile.alerts if config.enabled is None else config.enabled
    has_tpu_pools = bool(tpu_zones)
    return AlertsPlan(
        enabled=enabled,
        paging=profile.paging if config.paging is None else config.paging,
        project=project,
        cluster_name=cluster_name,
        paused=paused,
        channels=tuple(config.channels),
        workloads=tuple(
            WorkloadAlerts(
                w.name,
                workload_rules(w, config, cluster_name, tpu_metrics=tpu_metrics and has_tpu_pools)
                + (gateway_rules(w, config, cluster_name) if w.name in gateway_workloads else ()),
                objectives(w, cluster_name),
                *burn_action(w),
            )
            for w in workloads
        )
        if enabled
        else (),
        cluster_rules=cluster_rules(config, project, cluster_name, tpu_zones) if enabled and has_tpu_pools else (),
    )


def _pods(w: WorkloadPlan, cluster: str, **more: str) -> str:
    return selector(cluster=cluster, namespace=w.namespace, pod=pods_of(w.disruption_units()), **more)


def _while_wanted(condition: str, w: WorkloadPlan, cluster: str) -> str:
    """`condition`, an absence of ready pods or endpoints, only while `w`'s controllers ask for replicas
    (stacks.monitoring.alerts.while_wanted): a workload at zero replicas (KEDA's scale to zero) is idle, not down."""
    return while_wanted(condition, w.disruption_units(), cluster=cluster, namespace=w.namespace)


def ready_replicas(w: WorkloadPlan, cluster: str) -> str:
    """The number of the workload's pods whose every serving container (WorkloadPlan.serving_containers) is ready:
    kube-state-metrics' kube_pod_container_status_ready, one series per container labelled `container`
    (kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md), of those containers only, at its lowest per
    pod. A sidecar without a readiness probe is ready while it runs and would count a pod whose server is down."""
    containers = "~" + "|".join(w.serving_containers())
    return f"sum(min by (pod) (kube_pod_container_status_ready{{{_pods(w, cluster, container=containers)}}}))"


def workload_rules(w: WorkloadPlan, config: AlertsConfig, cluster: str, *, tpu_metrics: bool) -> tuple[Rule, ...]:
    """No ready replica, pods Pending (TPU capacity), the autoscaler at its maximum, requests waiting above the HPA's
    target, HBM near full: what every serving workload has (each where it applies)."""
    ns, name = w.namespace, w.name
    # the HPA that scales it: its own, or the one KEDA makes for its ScaledObject (WorkloadPlan.hpa_name)
    hpa = selector(cluster=cluster, namespace=ns, horizontalpodautoscaler=w.hpa_name)
    rules = (
        []
        if not w.serves_requests
        else [
            Rule(
                f"{name}-no-ready-replica",
                f"{name}: no ready replica",
                _while_wanted(f"({ready_replicas(w, cluster)} or vector(0)) < 1", w, cluster),
                alerts.NO_READY_MINUTES,
                PAGE,
                f"no pod with every serving container ready for {alerts.NO_READY_MINUTES} min (sidecars without a "
                "readiness probe not counted) while it asks for replicas",
                f"kubectl -n {ns} get pods -o wide; kubectl -n {ns} describe pods | tail -40",
            ),
        ]
    )
    rules += [
        Rule(
            f"{name}-pods-pending",
            f"{name}: TPU pods pending",
            f"sum(kube_pod_status_phase{{{_pods(w, cluster, phase='Pending')}}}) > 0",
            config.pending_minutes,
            TICKET,
            f"a pod Pending for {config.pending_minutes} min (TPU capacity: stockout, quota or reservation)",
            f"kubectl -n {ns} get events --field-selector reason=FailedScheduling; make preflight STACK=<stack>",
        ),
    ]
    autoscaling = getattr(w.workload, "autoscaling", None)
    if autoscaling is not None:
        rules.append(
            Rule(
                f"{name}-autoscaler-at-max",
                f"{name}: autoscaler at its maximum",
                f"max(kube_horizontalpodautoscaler_status_current_replicas{{{hpa}}}) >= "
                f"max(kube_horizontalpodautoscaler_spec_max_replicas{{{hpa}}})",
                alerts.AT_MAX_MINUTES,
                TICKET,
                f"current replicas at the HPA's maxReplicas for {alerts.AT_MAX_MINUTES} min",
                f"kubectl -n {ns} describe hpa {w.hpa_name}",
            )
        )
        target = queue_target(w)
        if target is not None:
            queue = w.signals.queue
            rules.append(
                Rule(
                    f"{name}-requests-waiting",
                    f"{name}: requests waiting above the autoscaling target",
                    f"sum({queue}{{{_pods(w, cluster)}}}) / "
                    f"max(kube_horizontalpodautoscaler_status_current_replicas{{{hpa}}}) > {target:g}",
                    config.queue_minutes,
                    TICKET,
                    f"{queue} per replica above the HPA target {target:g} for {config.queue_minutes} min",
                    f"kubectl -n {ns} describe hpa {w.hpa_name}; kubectl -n {ns} get pods",
                )
            )
    if tpu_metrics:
        hbm = selector(cluster=cluster, exported_namespace=ns)
        rules.append(
            Rule(
                f"{name}-hbm-near-full",
                f"{name}: TPU HBM near full",
                f"max(sum by (node) (memory_used{{{hbm}}}) / sum by (node) (memory_total{{{hbm}}})) > "
                f"{config.hbm_fraction:g}",
                10,
                TICKET,
                f"a node's HBM above {config.hbm_fraction:.0%} in use for 10 min",
                f"kubectl -n {ns} get pods -o wide; pulumi stack output dashboardUrl  # tile TPU HBM used, by node",
            )
        )
    return tuple(rules)


def queue_target(w: WorkloadPlan) -> float | None:
    """The HPA's per-replica target on the server's queue series, if the workload autoscales on it."""
    autoscaling = getattr(w.workload, "autoscaling", None)
    registry = w.hpa_metrics or {}
    for metric in autoscaling.metrics if autoscaling is not None else ():
        known = registry.get(metric.name)
        if known is not None and w.signals.queue is not None and known.series == w.signals.queue:
            return float(metric.target)
    return None


def gateway_rules(w: WorkloadPlan, config: AlertsConfig, cluster: str) -> tuple[Rule, ...]:
    """Where the Inference Gateway serves the workload, its endpoint picker's view (it runs in the workload's
    namespace): the share of requests that failed on the server side, no ready endpoint in its pool, requests held
    in its flow-control queue (llm-d/llm-d-router@v0.10.0 pkg/epp/metrics/llm_d_router_metrics.go: ready_endpoints
    by pool `name`, flow_control_queue_size). The picker's error_code is never an HTTP status: it is
    `ModelServerError` when the model server answered anything but 200, 4xx included (pkg/epp/handlers/server.go),
    else the canonical code of the picker's own error (pkg/common/error/error.go CanonicalCode);
    stacks.monitoring.alerts.GATEWAY_SERVER_ERRORS are the ones counted."""
    ns, name = w.namespace, w.name
    # a rollout's two sets each have their picker in the one namespace: each set's rules read its own picker's
    # series, by `job`, which Managed Prometheus sets to the name of the PodMonitoring that scraped them
    # (GoogleCloudPlatform/prometheus-engine pkg/operator/apis/monitoring/v1: relabel Replacement <name>, TargetLabel
    # job); the router chart names its PodMonitoring after the release, the set's name (routerlib
    # templates/_gke.yaml `name: {{ .Release.Name }}`)
    own = {"job": name} if w.release is not None else {}
    epp = selector(cluster=cluster, namespace=ns, **own)
    errors = selector(cluster=cluster, namespace=ns, **own, error_code="~" + "|".join(alerts.GATEWAY_SERVER_ERRORS))
    window = f"{alerts.GATEWAY_MINUTES}m"
    status = f"kubectl -n {ns} get inferencepool {name} -o yaml; kubectl -n {ns} logs deploy/{gateway.epp_name(name)}"
    return (
        Rule(
            f"{name}-gateway-errors",
            f"{name}: gateway server-error ratio",
            f"sum(rate(llm_d_epp_request_error_total{{{errors}}}[{window}])) / "
            f"sum(rate(llm_d_epp_request_total{{{epp}}}[{window}])) > {config.gateway_error_ratio:g}",
            alerts.GATEWAY_MINUTES,
            PAGE,
            f"more than {config.gateway_error_ratio:.0%} of the gateway's requests failed over {window} (error_code "
            f"{', '.join(alerts.GATEWAY_SERVER_ERRORS)}; ModelServerError counts the model server's 4xx too)",
            status,
        ),
        Rule(
            f"{name}-gateway-no-endpoint",
            f"{name}: gateway sees no ready endpoint",
            _while_wanted(
                f"(sum(llm_d_epp_ready_endpoints{{{selector(cluster=cluster, namespace=ns, name=name)}}}) or vector(0)) < 1",
                w,
                cluster,
            ),
            alerts.NO_READY_MINUTES,
            TICKET,
            f"the endpoint picker counts no ready pod in its pool for {alerts.NO_READY_MINUTES} min while the "
            "workload asks for replicas",
            status,
        ),
        Rule(
            f"{name}-gateway-queue",
            f"{name}: requests held in the gateway's flow-control queue",
            f"sum(llm_d_epp_flow_control_queue_size{{{epp}}}) > 0",
            config.queue_minutes,
            TICKET,
            f"requests queued at the endpoint picker for {config.queue_minutes} min (the pool is saturated)",
            status,
        ),
    )


def objectives(w: WorkloadPlan, cluster: str) -> tuple[Objective, ...]:
    """The workload's `slo` settings as Cloud Monitoring SLOs: latency as a distribution cut of the server's
    histogram (a request-based SLI over a Managed Prometheus histogram, prometheus.googleapis.com/<name>/histogram:
    https://cloud.google.com/stackdriver/docs/solutions/slo-monitoring/sli-metrics/prometheus), availability as the
    ratio of requests that ended well to those that ended well or failed (counters: .../<name>_total/counter). A
    request the client cancelled (vLLM's finished_reason "abort") counts neither way; a request the server never
    finished (refused before the engine, lost in a crash) is in no counter at all: the SLI does not see it."""
    slo: SloConfig | None = getattr(w.workload, "slo", None)
    if slo is None:
        return ()
    signals, ns, out = w.signals, w.namespace, []
    # a rollout's two server sets share their namespace: each set's SLIs read its own pods' series, by the `app`
    # label its PodMonitoring copies from the pod (its set's name; workloads/vllm/manifests.py pod_monitoring), so
    # the candidate's burn rate is the candidate's alone (the rollback trigger, docs/operations.md "Release train")
    own = {"app": f'"{w.name}"'} if w.release is not None else {}
    for key, objective, series in (
        ("ttft", slo.time_to_first_token, signals.time_to_first_token),
        ("tpot", slo.time_per_output_token, signals.time_per_output_token),
    ):
        if objective is not None and series is not None:
            out.append(
                Objective(
                    f"{w.name}-{key}",
                    f"{w.name}: {key.upper()} within {objective.threshold_seconds:g} s",
                    objective.goal,
                    slo.window_days,
                    alerts.monitoring_filter(f"{series}/histogram", cluster, ns, **own),
                    max_seconds=objective.threshold_seconds,
                )
            )
    if slo.availability is not None and signals.requests is not None:
        counter = f"{signals.requests}_total/counter"
        good = ", ".join(f'"{v}"' for v in signals.good_finishes)
        counted = ", ".join(f'"{v}"' for v in signals.good_finishes + signals.bad_finishes)
        out.append(
            Objective(
                f"{w.name}-availability",
                f"{w.name}: requests that end well",
                slo.availability,
                slo.window_days,
                alerts.monitoring_filter(counter, cluster, ns, **own, **{signals.finish_label: f"one_of({counted})"}),
                good_filter=alerts.monitoring_filter(
                    counter, cluster, ns, **own, **{signals.finish_label: f"one_of({good})"}
                ),
            )
        )
    return tuple(out)


def cluster_rules(config: AlertsConfig, project: str, cluster: str, zones: Sequence[str]) -> tuple[LogSignal, ...]:
    """What the cluster's logs say about its TPU capacity, as log-match policies: failed scale-ups (a stockout: GKE's
    cluster autoscaler visibility events, https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-autoscaler-visibility:
    resultInfo errors scale.up.error.* and noScaleUp decisions); preemptions, host errors and terminations for host
    maintenance of the project's VMs (Compute Engine system events compute.instances.preempted,
    compute.instances.hostError and compute.instances.terminateOnHostMaintenance,
    https://cloud.google.com/compute/docs/instances/spot#detect-preemption and
    https://cloud.google.com/compute/docs/instances/host-maintenance-overview); and host maintenance notices
    (compute.instances.upcomingMaintenance: https://cloud.google.com/tpu/docs/view-maintenance-notifications). The
    VM events are limited to the zones of the stack's TPU pools (the gce_instance resource's `zone` label,
    https://cloud.google.com/monitoring/api/resources#tag_gce_instance), not to the cluster: no audit-log field names
    the GKE cluster, and the rule that truncates a cluster's name into its VMs' names is not documented, so a VM of
    another cluster (or none) in those zones of the project fires them too."""
    visibility = f"projects/{project}/logs/container.googleapis.com%2Fcluster-autoscaler-visibility"
    system_event = f"projects/{project}/logs/cloudaudit.googleapis.com%2Fsystem_event"
    interruptions = " OR ".join(f'"{m}"' for m in alerts.INTERRUPTION_METHODS)
    zone_list = " OR ".join(f'"{z}"' for z in zones)
    vms = f'resource.type="gce_instance" resource.labels.zone=({zone_list})'
    return (
        LogSignal(
            "tpu-stockout",
            f'logName="{visibility}" resource.type="k8s_cluster" resource.labels.cluster_name="{cluster}" '
            '(jsonPayload.resultInfo.results.errorMsg.messageId=~"^scale\\.up\\.error" OR '
            "jsonPayload.noDecisionStatus.noScaleUp:*)",
            "TPU stockout: the cluster autoscaler could not add nodes",
            config.pending_minutes,
            TICKET,
            f"any failed or impossible scale-up log entry (at most one notification per {config.pending_minutes} min)",
            f"gcloud logging read 'logName=\"{visibility}\"' --limit=5 --project={project}; "
            "make preflight STACK=<stack>",
        ),
        LogSignal(
            "node-interruptions",
            f'logName="{system_event}" {vms} protoPayload.methodName=({interruptions})',
            "TPU nodes preempted or interrupted",
            10,
            TICKET,
            "any preemption, host error or termination for host maintenance of a VM in the TPU pools' zones (at most one "
            "notification per 10 min)",
            f"kubectl get nodes -l cloud.google.com/gke-tpu-accelerator; gcloud logging read "
            f"'logName=\"{system_event}\" protoPayload.methodName=({interruptions})' --limit=5 "
            f"--project={project}",
        ),
        LogSignal(
            "upcoming-maintenance",
            f'logName="{system_event}" {vms} protoPayload.methodName="compute.instances.upcomingMaintenance"',
            "Host maintenance notice on a VM in the TPU pools' zones",
            60,
            TICKET,
            "any compute.instances.upcomingMaintenance entry of a VM in the TPU pools' zones: Compute Engine writes one when "
            "maintenance is scheduled (days ahead for scheduled maintenance), when it starts and when it ends "
            "(at most one notification per hour)",
            "kubectl get nodes -L cloud.google.com/gke-nodepool; make maintenance STACK=<stack>",
        ),
    )
