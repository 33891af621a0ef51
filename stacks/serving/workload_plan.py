"""What every workload type shares: its plan (the workload resolved against its pool), labels, and the pieces
of pod specs that do not depend on the type."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from stacks.facts import catalog
from stacks.facts.images import ImageMirror
from stacks.naming import LABEL_MAX, MANAGED_BY_LABELS, SYSTEM_POOL_SELECTOR, fit, short_hash, stack_service_account
from stacks.problems import Problem
from stacks.security import scan_exceptions
from stacks.security.pod_security import ContainerSecurity, pod_specs, secure_pod
from stacks.serving import benchmark, disruption
from stacks.serving.gateway import GatewayBackend
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.release import Release
from stacks.serving.startup import StartupPath, compile_cache_prefix
from stacks.serving.workload_type import WorkloadContext

TPU_TOLERATION = catalog.TPU_TOLERATION
# Server-side apply with conflicts forced for one object (pulumi/pulumi-kubernetes provider/pkg/await/await.go
# patchForce: the annotation, else the provider's enablePatchForce, else a conflict fails the apply).
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
# A LeaderWorkerSet is ready when every group is: its `Available` condition is True once all `spec.replicas` groups
# are ready and updated (kubernetes-sigs/lws@v0.7.0 api/leaderworkerset/v1/leaderworkerset_types.go
# LeaderWorkerSetAvailable; pkg/controllers/leaderworkerset_controller.go updateConditions), the condition
# `pulumi.com/waitFor` waits for (WorkloadPlan.tpu_metadata).
LWS_AVAILABLE = "condition=Available"
INTERNAL_LB_ANNOTATION = {"networking.gke.io/load-balancer-type": "Internal"}
# LeaderWorkerSet (the lws add-on), which the multi-host serving types run their groups on.
LWS_API = "leaderworkerset.x-k8s.io/v1"
# One multi-host replica on one slice, never two replicas interleaved on two slices (ICI does not cross slices):
# each slice is its own GKE node pool, so its node-pool label is the topology key of exclusive placement.
# - LeaderWorkerSet: the LWS object's annotation, copied to its pods, one group per topology domain
#   (kubernetes-sigs/lws@v0.7.0 api/leaderworkerset/v1/leaderworkerset_types.go ExclusiveKeyAnnotationKey;
#   pkg/controllers/leaderworkerset_controller.go reads lws.Annotations; site/content/en/docs/concepts "Exclusive
#   LWS to Topology Placement"; the same at v0.10.0). With sub-groups, each sub-group gets its own domain
#   (SubGroupExclusiveKeyAnnotationKey).
# - JobSet: the JobSet's or a replicated job template's annotation, one Job per domain (kubernetes-sigs/jobset@v0.10.1
#   api/jobset/v1alpha2/jobset_types.go ExclusiveKey; pkg/controllers/jobset_controller.go reads js.Annotations and
#   rjob.Template.Annotations; the same at v0.12.0).
LWS_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
LWS_SUBGROUP_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
JOBSET_EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"
SLICE_TOPOLOGY_KEY = catalog.NODE_POOL_LABEL

# The share of its host's vCPUs and memory (catalog host_resources) the server of a TPU pod requests. A pod without
# CPU and memory requests is BestEffort: the scheduler counts nothing for it and the kubelet evicts it first under
# node memory pressure (https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/). A quarter leaves room for
# GKE's reservations, its DaemonSets and, on a Pathways leader's host, the leader (LEADER_HOST_SHARE, a half).
TPU_HOST_SHARE = 0.25
# Without the host's figures in the catalog: enough to make the pod Burstable on any TPU VM.
TPU_HOST_FLOOR = (1.0, 4.0)  # vCPUs, GB


def cpu_quantity(value: float) -> str:
    """A CPU quantity: whole cores as an integer, else millicores."""
    return str(int(value)) if float(value).is_integer() else f"{int(value * 1000)}m"


_DECIMAL_SUFFIXES = ("", "k", "M", "G", "T", "P", "E")


def memory_quantity(value: int, suffix: str) -> str:
    """A whole number of decimal-SI units as the API server writes it back: the largest suffix that keeps the number
    whole (k8s.io/apimachinery pkg/api/resource quantity.go CanonicalizeBytes: `100000M` is stored as `100G`). A
    custom resource whose controller re-encodes the pod template (a LeaderWorkerSet) otherwise reads back another
    string, and every `pulumi preview` shows a change (make e2e, llama2-70b-disaggregated)."""
    index = _DECIMAL_SUFFIXES.index(suffix)
    while value and value % 1000 == 0 and index < len(_DECIMAL_SUFFIXES) - 1:
        value, index = value // 1000, index + 1
    return f"{value}{_DECIMAL_SUFFIXES[index]}"


def host_requests(shape: catalog.SliceShape, share: float = TPU_HOST_SHARE) -> dict[str, str]:
    """CPU and memory requests of a TPU pod's server: `share` of its host's, rounded down."""
    cpu, memory = (share * x for x in shape.host_resources) if shape.host_resources else TPU_HOST_FLOOR
    return {"cpu": cpu_quantity(math.floor(cpu)), "memory": memory_quantity(math.floor(memory), "G")}


def tpu_resources(shape: catalog.SliceShape) -> dict[str, Any]:
    """The resources of a TPU pod's server: every chip of its host (google.com/tpu, requested and limited), and
    its share of the host's CPU and memory (host_requests). The chip count as a quantity string, the form a
    resource.Quantity is read back in: a LeaderWorkerSet's webhook re-encodes its pod templates (k8s.io/apimachinery
    pkg/api/resource/quantity.go MarshalJSON writes a string), so a number read back "4" and every `pulumi preview` of
    a multi-host vLLM stack showed a change (make e2e on ironwood)."""
    chips = str(shape.tpu_request)
    return {"requests": {catalog.TPU_RESOURCE: chips, **host_requests(shape)}, "limits": {catalog.TPU_RESOURCE: chips}}


@dataclass(frozen=True)
class ServingSignals:
    """The series of a workload's model server that the stack's alerts and SLOs read (stacks/pieces/alerts.py), each
    a Prometheus name as the server exports it (None: it exports none)."""

    queue: str | None = None
    """Requests waiting, per pod (a gauge)."""
    time_to_first_token: str | None = None
    """Histogram of the time to the first token, in seconds (its base name, without _bucket)."""
    time_per_output_token: str | None = None
    """Histogram of the time per output token, in seconds."""
    requests: str | None = None
    """Counter of finished requests (its name without _total), with `finish_label` saying how each ended."""
    finish_label: str = ""
    good_finishes: tuple[str, ...] = ()
    """Values of `finish_label` of a request that ended well."""
    bad_finishes: tuple[str, ...] = ()
    """Values of `finish_label` of a request that failed on the server's side (the SLI's other requests)."""
    output_tokens: str | None = None
    """Counter of generated tokens (its name without _total)."""


# Optional workload fields added after live stacks first fingerprinted their release (gate_job_name): left out of the
# fingerprint while unset, so an unchanged release keeps its gate Job's name (a new name runs the benchmark again).
LATER_OPTIONAL_FIELDS = frozenset({"disaggregation"})


@dataclass(frozen=True)
class WorkloadPlan:
    """A validated workload and the pool it runs on, with what the stack derived for it."""

    workload: Any  # the workload's config model
    pool: PoolPlan
    namespace: str
    bucket: str
    scrape_interval: str = "15s"
    paused: bool = False  # tpu-serving:paused: the workload runs no replicas
    # naming.stack_identity_suffix: makes the workload's Workload Identity principal unique per stack
    identity_suffix: str = field(default="", kw_only=True)
    image_mirror: ImageMirror | None = field(default=None, kw_only=True)
    """cluster.images.mirror: where pods pull the pinned public images (stacks/facts/images.py); None: as pinned."""
    environment: str = field(default="dev", kw_only=True)  # tpu-serving:environment
    project: str = field(default="", kw_only=True)  # gcp:project
    # tpu-serving:gateway.enabled: with `gateway_backend()`, whether the gateway serves the workload
    gateway_enabled: bool = field(default=False, kw_only=True)
    # The time-to-serve estimate of its wait from zero (WorkloadContext.from_zero): the estimate (stacks/reports/, above
    # the plans) reads the plan itself, so the plan holds the function, not its value (`from_zero_s`).
    from_zero_estimate: Callable[[WorkloadPlan], float | None] | None = field(
        default=None, kw_only=True, compare=False, repr=False
    )
    # The time-to-serve model's wait for a new server (WorkloadContext.server_await), read as `server_await_minutes`.
    server_await_estimate: Callable[[WorkloadPlan], float] | None = field(
        default=None, kw_only=True, compare=False, repr=False
    )
    # Whether its pool keeps TPU hosts free for one more replica while its Deployment or LeaderWorkerSet rolls out,
    # set once every workload's plan is made (stacks/workload_checks.py rollout_room): `rolling_update`.
    rollout_surge: bool = field(default=False, kw_only=True)
    # Its server set in its workload's `rollout` (stacks/serving/release.py): which release it runs and its share of
    # the route; None for a workload without a rollout.
    release: Release | None = field(default=None, kw_only=True)

    @classmethod
    def on(cls, workload: Any, pool: PoolPlan, namespace: str, ctx: WorkloadContext, **extra: Any) -> Self:
        """The plan of `workload` on `pool` in `namespace`, with what every plan takes from the stack (its bucket,
        scrape interval, paused, identity suffix); `extra` are the type's own fields."""
        return cls(
            workload,
            pool,
            namespace,
            ctx.bucket,
            ctx.scrape_interval,
            ctx.paused,
            identity_suffix=ctx.identity_suffix,
            image_mirror=ctx.image_mirror,
            environment=ctx.environment,
            project=ctx.project,
            gateway_enabled=ctx.gateway_enabled,
            from_zero_estimate=ctx.from_zero,
            server_await_estimate=ctx.server_await,
            **extra,
        )

    def served(self, ref: str) -> str:
        """A pinned image (stacks/facts/versions.py IMAGES) as its pods pull it: through the stack's remote repository for
        its registry (stacks/facts/images.py), else as pinned. Every type's default images go through this; an image the
        user sets is used as given."""
        return self.image_mirror.served(ref) if self.image_mirror is not None else ref

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        """Service ports its `portForward` command forwards; a type with such a command overrides this."""
        return ()

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def shape(self) -> catalog.SliceShape:
        return self.pool.shape

    def tpu_placement(self) -> dict[str, Any]:
        """`nodeSelector` and `tolerations` of every TPU pod of the workload: its own pool (PoolPlan.placement), so a
        new workload type gets pool selection, the ComputeClass and its taint by using this."""
        return self.pool.placement()

    @property
    def hosts_needed(self) -> int | None:
        """TPU hosts of its pool the workload takes at most (replicas at their maximum), for the check that the
        workloads sharing a pool fit in it; None when the type does not say."""
        return None

    @property
    def rollout_hosts(self) -> int | None:
        """TPU hosts one more replica holds while its Deployment or LeaderWorkerSet rolls out (a surge replica);
        None when it rolls out nothing on its TPU pool (a JobSet restarts in place, a type that does not say)."""
        return None

    def rolling_update(self) -> dict[str, int]:
        """How its Deployment or LeaderWorkerSet replaces replicas, within what its pool holds: a new replica before an
        old one stops (`maxSurge: 1, maxUnavailable: 0`) where the pool keeps hosts free for it (`rollout_surge`),
        else an old one stops first (`maxSurge: 0, maxUnavailable: 1`). A pool sized to the replicas' maximum has no
        host for a surge pod: it would stay Pending and a rollout with `maxUnavailable: 0` would never progress
        (Kubernetes' defaults, maxSurge 25% rounded up and maxUnavailable 25% rounded down, are 1 and 0 below 4
        replicas: kubernetes-validate's apps/v1 RollingUpdateDeployment), and `pulumi.com/skipAwait` keeps
        `pulumi up` from seeing it."""
        return {"maxSurge": 1, "maxUnavailable": 0} if self.rollout_surge else {"maxSurge": 0, "maxUnavailable": 1}

    def deployment_strategy(self) -> dict[str, Any]:
        """A TPU Deployment's `spec.strategy` (rolling_update)."""
        return {"type": "RollingUpdate", "rollingUpdate": self.rolling_update()}

    def lws_rollout_strategy(self) -> dict[str, Any]:
        """A LeaderWorkerSet's `spec.rolloutStrategy` (rolling_update; kubernetes-sigs/lws@v0.7.0
        leaderworkerset_types.go RolloutStrategy, RollingUpdateConfiguration)."""
        return {"type": "RollingUpdate", "rollingUpdateConfiguration": self.rolling_update()}

    @property
    def autoscaled(self) -> bool:
        """An HPA scales it (its HPA reads the metrics adapter); a type with autoscaling overrides this."""
        return False

    def gateway_backend(self) -> GatewayBackend | None:
        """What the Inference Gateway routes to when the workload is served through it; None (the default) for a
        type the gateway does not serve."""
        return None

    def benchmark_target(self) -> benchmark.Target | None:
        """What the release gate's benchmark calls (its own Service, bypassing the route); None for a type the gate
        cannot benchmark."""
        return None

    @property
    def gate_service_account(self) -> str:
        """The gate Job's own Kubernetes ServiceAccount: the only identity that writes its benchmark prefix."""
        return fit(f"{self.service_account}-gate", LABEL_MAX)

    @property
    def gate_job_name(self) -> str | None:
        """The gate Job of the current release step and attempt: the candidate set of a rollout only (None
        otherwise)."""
        if self.release is None or not self.release.candidate or self.benchmark_target() is None or self.paused:
            return None
        dump = self.workload.model_dump(mode="json")
        kept = {k: v for k, v in dump.items() if not (k in LATER_OPTIONAL_FIELDS and v is None)}
        fields = json.dumps(kept, sort_keys=True)
        return benchmark.job_name(
            self.release.route, fields, self.release.weight, self.release.gate.scenario, self.release.attempt
        )

    @property
    def release_label(self) -> str:
        """Which release this set runs, as the gate's results name it (the `release` label of its summary line,
        log-based metrics and dashboard tiles): a hash of its config less its name, so the same release is the
        same label in either slot and at every step (less its replicas too: a candidate's follow its weight,
        stacks/serving/release.py, and less its rollout, the train's own state); unset fields are left out, so a field
        the config model gains later does not relabel a running release; a type may lead it with what a reader
        recognises (vLLM: its image's tag)."""
        config = self.workload.model_dump(mode="json", exclude={"name", "replicas", "rollout"}, exclude_none=True)
        return short_hash(json.dumps(config, sort_keys=True), 8)

    def gate_manifests(self) -> list[dict[str, Any]]:
        """The gate's ConfigMap and Job (stacks/serving/benchmark.py) for the candidate set, at its workload's
        latency SLO thresholds; none for any other set."""
        name, target = self.gate_job_name, self.benchmark_target()
        if name is None or target is None or self.release is None:
            return []
        slo = getattr(self.workload, "slo", None)
        ttft = slo.time_to_first_token if slo is not None else None
        tpot = slo.time_per_output_token if slo is not None else None
        return benchmark.manifests(
            name=name,
            namespace=self.namespace,
            service_account=self.gate_service_account,
            scenario=benchmark.SCENARIOS[self.release.gate.scenario],
            target=target,
            bucket=self.bucket,
            route=self.release.route,
            ttft_s=ttft.threshold_seconds if ttft is not None else None,
            tpot_s=tpot.threshold_seconds if tpot is not None else None,
            image=self.served(benchmark.default_image()),
            release=self.release_label,
        )

    def replicas(self, fixed: int) -> dict[str, Any]:
        """The `spec.replicas` of what its autoscaler scales (a Deployment or LeaderWorkerSet): none while an
        autoscaler owns it (the HPA controller writes it through the scale subresource, recorded as field manager
        kube-controller-manager, and an apply of another value conflicts with it); `fixed`, or 0 while paused."""
        if self.autoscaled:
            return {}
        return {"replicas": 0 if self.paused else fixed}

    def replicas_annotations(self) -> dict[str, str]:
        """Annotations of what an autoscaler may scale (a Deployment or LeaderWorkerSet of a type with autoscaling).
        Whenever the object sets `spec.replicas` (fixed replicas, or 0 while paused) the apply forces conflicts
        (PATCH_FORCE_ANNOTATION): the object may come from a config that autoscaled it, whose HPA (its own, or the one
        KEDA made) wrote the field through the scale subresource as field manager kube-controller-manager, and
        server-side apply refuses another manager's field unless forced (pulumi/pulumi-kubernetes
        provider/pkg/await/await.go ssaUpdate, patchForce). The HPA's write is tracked only when some manager owned the
        field before it (the Scale carries the owners of spec.replicas, and the API server does not start tracking an
        update of an object without managed fields: k8s.io/apimachinery pkg/util/managedfields scalehandler.go
        ToSubresource, internal/skipnonapplied.go Update), e.g. the stack's own earlier fixed replicas when the HPA
        scaled before the stack's apply dropped them, or an operator's `kubectl scale`; shown on a local cluster by
        e2e/transitions.py fixed-replicas. The program cannot know the previous config, so it forces every time it
        sets the field: on an object nobody else owns there is nothing to force. While that HPA is
        still there (Pulumi deletes it at the end of the same `up`) it may rescale the object; an HPA stands down at 0
        (kubernetes/kubernetes pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler: `scale.Spec.Replicas ==
        0 && minReplicas != 0` is ScalingDisabled), and KEDA's paused ScaledObject holds 0 too. Autoscaled, the
        field is left to the HPA and nothing is forced."""
        if not self.autoscaled:
            return {PATCH_FORCE_ANNOTATION: "true"}
        return {}

    @property
    def keda(self) -> bool:
        """KEDA scales it: the configured adapter scales through ScaledObjects (stacks/monitoring/adapters/keda.py)."""
        from stacks.monitoring import adapters as metrics_adapters

        entry = metrics_adapters.get(getattr(self, "adapter", metrics_adapters.NONE))
        return entry is not None and entry.scaled_objects

    @property
    def hpa_name(self) -> str:
        """The HPA that scales it: its own, or the one KEDA makes for its ScaledObject, `keda-hpa-<name>`
        (kedacore/keda@v2.20.2:controllers/keda/hpa.go getHPAName)."""
        return f"keda-hpa-{self.name}" if self.keda else self.name

    @property
    def served_by_gateway(self) -> GatewayBackend | None:
        """Its gateway backend when tpu-serving:gateway is enabled (stacks.pieces.gateway.served), else None."""
        return self.gateway_backend() if self.gateway_enabled else None

    @property
    def min_replicas(self) -> int:
        """The fewest replicas it runs: 0 while paused or when KEDA may scale it to zero (autoscaling.minReplicas
        0), so the time-to-serve estimate knows the first request may wait for a whole replica to start."""
        auto = getattr(self.workload, "autoscaling", None)
        if self.paused:
            return 0
        return auto.min_replicas if auto is not None else int(getattr(self.workload, "replicas", 1))

    @property
    def activation_seconds(self) -> int:
        """What a request at zero replicas waits before a replica is asked for: KEDA's polling interval (it sees
        the gateway's queue at its next poll and scales 0 -> 1; the replica's own start is `startup`); 0 when
        the workload never runs at zero."""
        from stacks.monitoring.adapters import keda

        at_zero = self.autoscaled and self.keda and self.min_replicas == 0 and not self.paused
        return keda.POLLING_SECONDS if at_zero else 0

    @property
    def from_zero_s(self) -> float | None:
        """What its first request waits at zero replicas, a workload KEDA scales to zero (activation_seconds): the
        time-to-serve estimate's wait from zero (stacks.reports.time_to_serve Estimate.from_zero); None when the
        workload never runs at zero, or when nothing estimates it (a plan made without the stack's context)."""
        if not self.activation_seconds or self.from_zero_estimate is None:
            return None
        return self.from_zero_estimate(self)

    @property
    def from_zero_budget_s(self) -> int | None:
        """How long a scale from zero may take before anything gives up on it (its ScaledObject's cooldowns, the
        endpoint picker's queue TTL): stacks.monitoring.adapters.keda.from_zero_budget of `from_zero_s`; None when
        the workload never runs at zero."""
        from stacks.monitoring.adapters import keda

        return None if self.from_zero_s is None else keda.from_zero_budget(self.from_zero_s)

    @property
    def hpa_metrics(self) -> dict[str, Any] | None:
        """The metrics its HPA may scale on (a stacks.monitoring.metrics registry: the adapter serves rules for it), if any."""
        return None

    @property
    def serves_requests(self) -> bool:
        """It answers requests while it runs (a server, not a batch job that ends): it gets the "no ready replica"
        alert."""
        return True

    @property
    def signals(self) -> ServingSignals:
        """What the alerts and SLOs read of its server's series; a type whose server exports them says so."""
        return ServingSignals()

    def dashboard_panels(self, cluster: str) -> list[tuple[str, str, str]]:
        """Dashboard tiles of its server's own metrics (stacks.monitoring.dashboard.Panel), shown first."""
        return []

    @property
    def chips_per_replica(self) -> int | None:
        """TPU chips one replica holds (the cost per output token divides their price); None when the type does
        not say."""
        return None

    @property
    def chips_at_peak(self) -> int:
        """TPU chips the workload holds at its largest (replicas at their maximum), for the cost estimate."""
        raise NotImplementedError(f"{type(self).__name__} must say how many chips it holds at its largest")

    @property
    def service_account(self) -> str:
        """The workload's Kubernetes ServiceAccount (its Workload Identity), unique per stack."""
        return stack_service_account(self.name, self.identity_suffix)

    def compile_cache_url(self, image: str, slices: int = 1) -> str:
        """gs:// directory of the workload's persistent compile cache for `image` on its slice shape (`slices` of
        them when one replica spans several): stacks.serving.startup.compile_cache_prefix in the stack bucket."""
        shape = f"{self.shape.generation.name}-{self.shape.topology}"
        return (
            f"gs://{self.bucket}/{compile_cache_prefix(self.name, image, f'{slices}x{shape}' if slices > 1 else shape)}"
        )

    @property
    def weights_bytes(self) -> int | None:
        """Bytes of the weights one replica loads (parameters x bytes per parameter, stacks/catalog.weight_bytes), for
        the time-to-serve estimate; None when the type does not say (it loads no model the stack knows)."""
        return None

    @property
    def startup(self) -> StartupPath | None:
        """How one replica starts (stacks/serving/startup.py), read by the time-to-serve estimate; None when the type does
        not say."""
        return None

    def read_paths(self) -> list[tuple[str, str]]:
        """(config key under the workload, gs:// URL) of each directory the workload reads from config: a grant is
        derived from each (stacks.security.bucket_access.read_grant), so none may be the stack bucket's root."""
        return []

    def metadata(self, name: str, labels: dict[str, str], **extra: Any) -> dict[str, Any]:
        return {"name": name, "namespace": self.namespace, "labels": {**labels, **MANAGED_BY_LABELS}, **extra}

    def pod_manifests(self) -> list[dict[str, Any]]:
        """Every manifest of this workload that carries a pod template (for its namespace's Pod Security level)."""
        raise NotImplementedError(f"{type(self).__name__} must list its pod manifests")

    def serving_containers(self) -> tuple[str, ...]:
        """The containers whose readiness says a replica serves, read per pod by the "no ready replica" alert
        (stacks/pieces/alerts.py): every app container (`containers`, not init containers: kube-state-metrics reports
        those as kube_pod_init_container_status_ready) of its controllers' pods that has a readiness probe. A
        container without one counts as ready once it runs ("If a container does not provide a readiness probe, the
        default state is Success", https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-probes),
        so a sidecar (a compile-cache push, a Pathways proxy) says nothing of the server. A type none of whose
        containers has one names every container; a type that knows better overrides this."""
        probed: list[str] = []
        every: list[str] = []
        for manifest in self.pod_manifests():
            if manifest.get("kind") == "Job":  # runs to completion: staging, publishing; never a replica
                continue
            for spec in pod_specs(manifest):
                for container in spec.get("containers", []):
                    every.append(container["name"])
                    if "readinessProbe" in container:
                        probed.append(container["name"])
        return tuple(dict.fromkeys(probed or every))

    def disruption_units(self) -> list[disruption.Unit]:
        """The sets of pods one PodDisruptionBudget each protects (stacks/serving/disruption.py): by default one per
        manifest of `pod_manifests` a controller owns; a type whose pods another controller makes says its own."""
        return [unit for m in self.pod_manifests() if (unit := disruption.unit_of(m)) is not None]

    def disruption_budgets(self) -> list[dict[str, Any]]:
        """Its PodDisruptionBudgets: one per unit, none while paused (no replicas to protect)."""
        if self.paused:
            return []
        return [disruption.budget(u, self.namespace) for u in self.disruption_units()]

    @property
    def server_await_minutes(self) -> int | None:
        """How long `pulumi up` waits for a new TPU server to be ready (its Deployment's rollout, its LeaderWorkerSet's
        Available): the time-to-serve model's wait from no capacity (stacks.reports.time_to_serve.server_await: node
        provisioning, images, and the longer of the modelled start and the cold start its startup probe allows), in
        whole minutes; None for a plan made without the stack's context."""
        if self.server_await_estimate is None:
            return None
        return math.ceil(self.server_await_estimate(self) / 60)

    def server_timeouts(self) -> dict[str, str]:
        """The `customTimeouts` (create and update) of the resources `up` awaits until its TPU server serves; {}
        without an estimate (the provider's default, 10 minutes)."""
        minutes = self.server_await_minutes
        return {"create": f"{minutes}m", "update": f"{minutes}m"} if minutes else {}

    def tpu_metadata(
        self,
        name: str,
        labels: dict[str, str],
        annotations: dict[str, str] | None = None,
        *,
        wait_for: str | None = None,
    ) -> dict[str, Any]:
        """Metadata of a Deployment (or, with `wait_for`, a custom resource) whose pods run on the TPU pool.

        `pulumi up` waits for it on every pool: a Deployment by the provider's own rollout check, a custom resource
        by `wait_for`, the provider's `pulumi.com/waitFor` annotation (`condition=<type>` waits for that status
        condition to be True; without it a custom resource is not awaited: pulumi-kubernetes provider/pkg/metadata
        overrides.go ReadyCondition), for `server_await_minutes` (the component's customTimeouts). So a new server
        (a type swap, a move to another kind of pool) serves before anything that `up` deletes at the end goes, and
        on a pool that starts empty the wait covers the autoscaler's node provisioning; a stockout longer than that
        fails the `up` with the old server still serving, and the next `up` waits again.
        """
        extra = dict(annotations or {})
        if wait_for:
            extra[WAIT_FOR_ANNOTATION] = wait_for
        return self.metadata(name, labels, **({"annotations": extra} if extra else {}))

    def ingress_allows(self) -> list[dict[str, Any]]:
        """NetworkPolicies that open this workload's serving and metrics ports (stacks/security/network_policy.py); the
        namespace denies every other ingress except from its own pods."""
        return []


def cpu_deployment(
    plan: WorkloadPlan,
    name: str,
    labels: dict[str, str],
    replicas: int,
    container: dict[str, Any],
    security: ContainerSecurity,
    skips: tuple[scan_exceptions.Skip, ...] = (),
    service_account: str | None = None,
) -> dict[str, Any]:
    """A Deployment of one hardened container on the CPU system pool, running as the workload's identity (or
    `service_account`).

    `skips`: the checkov findings this Deployment accepts beyond the shared ones, with their reasons."""
    accepted = [*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT, *skips]
    if not security.non_root:
        accepted += scan_exceptions.IMAGE_USER
    pod = {
        "hostNetwork": False,
        "serviceAccountName": service_account or plan.service_account,
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "containers": [container],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": plan.metadata(name, labels, annotations=scan_exceptions.skip_annotations(accepted)),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": secure_pod(pod, security),
            },
        },
    }


# ---- shared rules and commands -------------------------------------------------------------------------


def check_autoscaling(
    path: str,
    auto: Any,
    adapter: str,
    registry: Mapping[str, Any],
    problems: list,
    *,
    environment: str = "dev",
    gateway: bool = False,
) -> None:
    """The HPA rules every autoscaled workload shares: 1 <= minReplicas <= maxReplicas (0 through KEDA, see
    `_check_zero`), an adapter, only metrics that adapter serves from the workload type's `registry`
    (stacks.monitoring.metrics), gateway metrics only for a workload the gateway serves (`gateway`), and targets in each
    metric's unit."""
    from stacks.monitoring import adapters as metrics_adapters

    registry = dict(registry)
    if auto.min_replicas < 0 or (
        auto.min_replicas == 0 and not _zero_ok(path, auto, adapter, registry, environment, problems)
    ):
        problems.append(
            Problem(
                f"{path}.autoscaling.minReplicas",
                f"{auto.min_replicas} is below 1 (0, scale to zero, only with tpu-serving:monitoring.adapter keda)",
            )
        )
    for i, metric in enumerate(auto.metrics):
        if metric.name in registry and registry[metric.name].origin == "gateway" and not gateway:
            problems.append(
                Problem(
                    f"{path}.autoscaling.metrics[{i}].name",
                    f"{metric.name!r} is the Inference Gateway's endpoint picker's metric: the workload must be served "
                    "through the gateway (tpu-serving:gateway.enabled and the workload's gateway: true)",
                )
            )
    if auto.min_replicas > auto.max_replicas:
        problems.append(
            Problem(f"{path}.autoscaling.minReplicas", f"{auto.min_replicas} is above maxReplicas {auto.max_replicas}")
        )
    if metrics_adapters.get(adapter) is None:
        problems.append(
            Problem(
                f"{path}.autoscaling",
                f"needs a metrics adapter: set tpu-serving:monitoring.adapter to {metrics_adapters.one_of()}",
            )
        )
    else:
        for i, metric in enumerate(auto.metrics):
            if not metrics_adapters.adapter_serves(adapter, metric.name, registry):
                problems.append(
                    Problem(
                        f"{path}.autoscaling.metrics[{i}].name",
                        f"{metric.name!r} is not served by the {adapter} adapter; it serves: "
                        f"{', '.join(metrics_adapters.served_metrics(adapter, registry))}",
                    )
                )
    for i, metric in enumerate(auto.metrics):
        if metric.name in registry:
            why = registry[metric.name].unit.target_problem(metric.target)
            if why:
                problems.append(Problem(f"{path}.autoscaling.metrics[{i}].target", why))


# How long the HPA of a multi-host workload waits, after its recommendation drops, before it removes a replica:
# half the longest window autoscaling/v2 allows (MaxStabilizationWindowSeconds = 3600, kubernetes
# pkg/apis/autoscaling/validation/validation.go), six times Kubernetes' default of 300 s (kubernetes
# pkg/apis/autoscaling/v2/defaults.go: scaleDown stabilizationWindowSeconds 300). A multi-host replica holds a whole
# slice that takes GKE minutes to provision again and a cold start of a quarter to half an hour to serve (issue 26's
# model: 17 and 28 min for its multi-host cases): a replica let go in a lull of a few minutes is paid for again by the
# next spike. Half an hour outlasts such a lull and the cold start it would cost;
# a user's `autoscaling.behavior.scaleDown.stabilizationWindowSeconds` wins.
MULTI_HOST_SCALE_DOWN_WINDOW_S = 1800


def hpa_behavior(plan: WorkloadPlan) -> dict[str, Any]:
    """The HPA's `behavior`: the user's `autoscaling.behavior`, and on a multi-host pool a scale-down stabilization
    window of MULTI_HOST_SCALE_DOWN_WINDOW_S where the user sets none (their other scaleDown fields are kept)."""
    auto = plan.workload.autoscaling
    behavior: dict[str, Any] = auto.behavior.model_dump(by_alias=True, exclude_none=True) if auto.behavior else {}
    if plan.shape.multi_host:
        down = behavior.setdefault("scaleDown", {})
        down.setdefault("stabilizationWindowSeconds", MULTI_HOST_SCALE_DOWN_WINDOW_S)
    return behavior


def _zero_ok(path: str, auto: Any, adapter: str, registry: Mapping[str, Any], environment: str, problems: list) -> bool:
    """minReplicas 0 (scale to zero): only through KEDA (an HPA's minReplicas may be 0 only with the alpha
    feature gate HPAScaleToZero: autoscaling/v2 HorizontalPodAutoscalerSpec.minReplicas), only outside prod (the
    first request waits for a whole replica to start), and only with a metric that counts requests while no
    replica runs (HpaMetric.counts_at_zero: the gateway's flow-control queue). KEDA scales 0 -> 1 only when a
    trigger is active, its value above its activation threshold, 0 by default (kedacore/keda@v2.20.2
    pkg/scalers/prometheus_scaler.go GetMetricsAndActivity: `val > s.metadata.ActivationThreshold`); the
    server's own series vanish with its last pod, and the picker's running requests (average per ready endpoint
    x ready endpoints) are 0 without an endpoint, so neither would ever bring it back. Adds the problems and says
    whether 0 is otherwise fine (False: the caller reports `below 1`)."""
    from stacks.monitoring import adapters as metrics_adapters

    entry = metrics_adapters.get(adapter)
    if entry is None or not entry.scaled_objects:
        return False
    key = f"{path}.autoscaling.minReplicas"
    if environment == "prod":
        problems.append(
            Problem(key, "0 (scale to zero) is not allowed in prod: the first request waits for a replica to start")
        )
    if not any(m.name in registry and registry[m.name].counts_at_zero for m in auto.metrics):
        waiting = [n for n, m in registry.items() if m.counts_at_zero]
        problems.append(
            Problem(
                key,
                "0 (scale to zero) needs, in autoscaling.metrics, a metric that counts the requests waiting while no "
                "replica runs (the server's series vanish with its last pod, the gateway's running requests are 0 "
                f"without an endpoint); one of: {', '.join(waiting) or 'none for this workload type'}",
            )
        )
    return True


def autoscaler_manifest(
    plan: WorkloadPlan,
    labels: dict[str, str],
    target: dict[str, str],
    registry: Mapping[str, Any],
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What scales the workload: an HPA reading the adapter (`hpa_manifest`), or, for an adapter that scales
    through KEDA, a ScaledObject (KEDA then makes the HPA), paused at 0 replicas while the stack is paused."""
    from stacks.monitoring import adapters as metrics_adapters
    from stacks.monitoring.adapters import keda

    auto = plan.workload.autoscaling
    adapter: str = getattr(plan, "adapter")  # noqa: B009 (every autoscaled type's plan carries it)
    cluster: str = getattr(plan, "cluster")  # noqa: B009
    if not plan.keda:
        specs = [
            metrics_adapters.hpa_metric(
                adapter, m.name, m.target, plan.namespace, cluster, registry=registry, selector=selector
            )
            for m in auto.metrics
        ]
        return hpa_manifest(plan, labels, target, specs)
    backend = plan.served_by_gateway
    scope = keda.Scope(plan.project, cluster, plan.namespace, selector or {}, backend.name if backend else None)
    spec: dict[str, Any] = {
        "scaleTargetRef": target,
        "pollingInterval": keda.POLLING_SECONDS,
        **keda.cooldowns(plan.from_zero_budget_s),
        "minReplicaCount": auto.min_replicas,
        "maxReplicaCount": auto.max_replicas,
        "triggers": [keda.trigger(registry[m.name], m.target, scope) for m in auto.metrics],
    }
    # KEDA copies advanced.horizontalPodAutoscalerConfig.behavior into the HPA it makes (kedacore/keda@v2.20.2
    # apis/keda/v1alpha1/scaledobject_types.go HorizontalPodAutoscalerConfig): the same behavior as an HPA's,
    # the multi-host scale-down window included (hpa_behavior).
    behavior = hpa_behavior(plan)
    if behavior:
        spec["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": behavior}}
    metadata = plan.metadata(plan.name, labels)
    if plan.paused:
        metadata["annotations"] = {keda.PAUSED_REPLICAS_ANNOTATION: "0"}
    return {"apiVersion": keda.API_VERSION, "kind": "ScaledObject", "metadata": metadata, "spec": spec}


def hpa_manifest(
    plan: WorkloadPlan, labels: dict[str, str], target: dict[str, str], metric_specs: list[dict[str, Any]]
) -> dict[str, Any]:
    """An autoscaling/v2 HPA named after the workload, from its `autoscaling` config and the metric specs."""
    auto = plan.workload.autoscaling
    spec: dict[str, Any] = {
        "scaleTargetRef": target,
        "minReplicas": auto.min_replicas,
        "maxReplicas": auto.max_replicas,
        "metrics": metric_specs,
    }
    behavior = hpa_behavior(plan)
    if behavior:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": plan.metadata(plan.name, labels),
        "spec": spec,
    }


CHECKPOINT_RE = re.compile(r"gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/[^\s\x00-\x1f\x7f]*)?")


def checkpoint_ok(path: str) -> bool:
    return bool(CHECKPOINT_RE.fullmatch(path))


def check_model_inputs(
    path: str,
    workload: Any,
    presets: Mapping[str, Any],
    reserved: Mapping[str, str],
    checkpoint_example: str,
    problems: list,
) -> None:
    """The rules every MaxText workload shares: a known preset, a gs:// checkpoint, no derived argument overridden."""
    if workload.model not in presets:
        problems.append(
            Problem(f"{path}.model", f"{workload.model!r} is not a known preset; allowed: {', '.join(presets)}")
        )
    if not checkpoint_ok(workload.checkpoint):
        problems.append(
            Problem(f"{path}.checkpoint", f"{workload.checkpoint!r} is not a gs:// path, e.g. {checkpoint_example}")
        )
    for key, why in reserved.items():
        if key in workload.maxtext:
            problems.append(Problem(f"{path}.maxtext.{key}", f"derived by the stack: {why}"))
    check_maxtext_overrides(f"{path}.maxtext", workload.maxtext, problems)


# A MaxText argument `key=value` on the server's command line (MaxText's pyconfig reads key=value pairs).
MAXTEXT_KEY_RE = re.compile(r"[a-z][a-z0-9_]{0,99}")
MAXTEXT_VALUE_RE = re.compile(r"[^\s\x00-\x1f\x7f]{1,1024}")


def check_maxtext_overrides(path: str, overrides: Mapping[str, Any], problems: list) -> None:
    """Each override is one `key=value` argument: a snake_case key, a value without whitespace or control
    characters, numbers finite."""
    for key, value in overrides.items():
        if not MAXTEXT_KEY_RE.fullmatch(key):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    "is not a MaxText argument name: snake_case (a-z, 0-9, '_'), at most 100 characters",
                )
            )
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(Problem(f"{path}.{key}", f"{value} is not allowed; numbers must be finite"))
        elif isinstance(value, str) and not MAXTEXT_VALUE_RE.fullmatch(value):
            problems.append(
                Problem(
                    f"{path}.{key}", f"{value!r} is not allowed: 1-1024 characters without spaces or control characters"
                )
            )


def check_ports(path: str, port: int, taken: Mapping[int, str], problems: list) -> None:
    """A configurable port must not be one the workload's pod (or Service) already uses: containers of a pod
    share one network namespace, and a Service's ports are unique (kubernetes pkg/apis/core/validation)."""
    if port in taken:
        problems.append(Problem(path, f"{port} is already the {taken[port]} port; choose another"))
