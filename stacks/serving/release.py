"""Releases as a gated train (a workload's `rollout`): the current release and a candidate run as two server sets,
each a workload plan of its own with its own InferencePool, under the workload's one HTTPRoute whose backend
weights the stack owns. Pure: the config expanded into the two sets, their rules, the weights.

The two sets are the workload's slots: slot `a` is named after the workload (what a workload without a rollout
has, so adding `rollout` to a live workload changes nothing), slot `b` is `<name>-b`. `rollout.slot` says which
one runs the current release; the candidate runs in the other. `make promote` (tooling/operations/promote.py)
walks `rollout.weight` through `rollout.steps`; at a full promotion it writes the candidate's fields into the
workload and flips `rollout.slot`, so the next `pulumi up` finds the candidate's objects already as they must be
(no restart) and deletes the old slot's.

Gateway API (kubernetes-sigs/gateway-api@v1.6.1 config/crd/standard/gateway.networking.k8s.io_httproutes.yaml,
HTTPRoute v1 spec.rules[].backendRefs[].weight): "the proportion of requests forwarded to the referenced backend
... computed as weight/(sum of all weights in this BackendRefs list)"; 0 to 1000000, default 1; a backendRef's
group and kind may name an InferencePool (kubernetes-sigs/gateway-api-inference-extension@v1.6.0: an
InferencePool is an HTTPRoute backend).

Mirroring (`rollout.mirror`) is refused, for the reasons MIRROR_REFUSED gives: GKE's Gateway mirrors, but to a
Service; nothing says it mirrors to an InferencePool:
- GKE implements HTTPRoute RequestMirror on both classes the stack uses: kubernetes-sigs/gateway-api
  conformance/reports/v1.1.0/gke-gateway/standard-1.30.3-rilb-report.yaml (gke-l7-rilb) and
  standard-1.30.3-rxlb-report.yaml (gke-l7-regional-external-managed) list HTTPRouteRequestMirror as supported and
  HTTPRouteRequestMultipleMirrors as not; v1.4.0/gke-gateway/standard-1.34.4-rxlb-report.yaml adds
  HTTPRouteRequestPercentageMirror. Those conformance tests mirror to a Service.
- A mirror's backendRef is "Support: Extended for Kubernetes Service", "Support: Implementation-specific for any
  other resource", and "Mirrored requests must be sent only to a single destination endpoint within this
  BackendRef" (gateway-api@v1.6.1 HTTPRoute CRD, requestMirror.backendRef): an InferencePool's endpoint is the one
  its endpoint picker chooses per request, which a mirror does not consult.
- Neither GKE's GatewayClass capabilities page (https://cloud.google.com/kubernetes-engine/docs/how-to/
  gatewayclass-capabilities) nor the inference extension (gateway-api-inference-extension@v1.6.0: no mirror test in
  conformance/, nothing in site-src/ on mirroring) documents a RequestMirror to an InferencePool.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from stacks.problems import Problem

SLOTS = ("a", "b")
CURRENT = "current"
CANDIDATE = "candidate"
# `<name>-b`: what slot b adds to a workload's name (its objects, identity, InferencePool, alerts)
SLOT_SUFFIX = {"a": "", "b": "-b"}


MIRROR_REFUSED = (
    "true is not supported: GKE's Gateway implements HTTPRoute RequestMirror (gateway-api conformance reports "
    "gke-gateway v1.1.0 rilb/rxlb, v1.4.0 rxlb: HTTPRouteRequestMirror), but a mirror to anything other than a "
    "Service is implementation-specific (gateway-api v1.6.1 HTTPRoute requestMirror.backendRef) and neither GKE "
    "(GatewayClass capabilities) nor the inference extension v1.6.0 documents one to an InferencePool; use a "
    "canary step (rollout.steps, e.g. [1, 10, 50, 100]) instead"
)


def slot_name(name: str, slot: str) -> str:
    """The name of the server set in `slot`: the workload's own in slot a, `<name>-b` in slot b."""
    return f"{name}{SLOT_SUFFIX[slot]}"


def other(slot: str) -> str:
    return "b" if slot == "a" else "a"


@dataclass(frozen=True)
class Release:
    """One server set of a workload under a rollout: which release it runs and its share of the route."""

    route: str
    """The workload's name: its HTTPRoute, and the key of its `rollout` in the stack file."""
    role: str
    """CURRENT or CANDIDATE."""
    slot: str
    weight: int
    """Its share of the route's requests, in percent."""
    strategy: str
    gate: Any  # stacks.model.config_model.GateConfig
    paired: bool = False
    """A candidate runs beside the current release (the route splits between the two sets)."""
    attempt: int = 0
    """The gate's attempt (rollout.attempt): a new gate Job and report path at each one."""
    peak_hosts: int | None = None
    """The candidate's TPU hosts at its largest step (its replicas follow its weight): what the preflight capacity
    check counts (None: its plan's hosts_needed)."""

    @property
    def candidate(self) -> bool:
        return self.role == CANDIDATE


def rollout_of(workload: Any) -> Any | None:
    """The workload's `rollout` (types without one: None)."""
    return getattr(workload, "rollout", None)


def candidate_fields(rollout: Any) -> dict[str, Any]:
    """The candidate's fields that differ from the workload's (by their config field names); {} without one."""
    candidate = getattr(rollout, "candidate", None)
    if candidate is None:
        return {}
    return {k: v for k, v in candidate.model_dump(exclude_none=True).items()}


# The candidate's size follows its weight, as Argo Rollouts sizes a canary under traffic routing
# (argoproj/argo-rollouts utils/replicaset/canary.go: GetCanaryReplicasOrWeight returns the current setWeight unless
# a setCanaryScale step says otherwise, and trafficWeightToReplicas is ceil(weight * spec.replicas / 100), "Rounds up
# if not evenly divisible"): the candidate runs ceil(weight% of the current release's replicas), at least 1 (a
# candidate at weight 0 runs one replica for the gate), unless rollout.candidate.replicas fixes it (then each step
# must fit it); the preflight capacity check counts it at its largest step (PEAK_WEIGHT). An autoscaled workload's
# candidate has its own HPA (the replicas its load needs), not a derived count.
PEAK_WEIGHT = 100


def candidate_replicas(weight: int, current: int) -> int:
    """The candidate's replicas at `weight` percent beside a current release of `current` replicas."""
    return max(1, math.ceil(weight * current / 100))


def scales_with_weight(workload: Any) -> bool:
    """The candidate's replicas are derived from its weight (a fixed-size workload, no rollout.candidate.replicas)."""
    rollout = rollout_of(workload)
    return (
        rollout is not None
        and isinstance(getattr(workload, "replicas", None), int)
        and getattr(workload, "autoscaling", None) is None
        and "replicas" not in candidate_fields(rollout)
    )


def server_sets(workload: Any, weight: int | None = None) -> list[tuple[str, Any]]:
    """(role, config) of each server set the workload runs: itself alone without a rollout; with one, the current
    release in `rollout.slot` and, while a candidate is named, the candidate (the workload with the candidate's
    fields, its replicas following its weight: `candidate_replicas`, at `weight` if given, else rollout.weight) in
    the other slot. Each config is the workload's type's model, named after its slot; neither keeps the `rollout`
    (a set is one release)."""
    rollout = rollout_of(workload)
    if rollout is None:
        return [(CURRENT, workload)]
    current = workload.model_copy(update={"name": slot_name(workload.name, rollout.slot), "rollout": None})
    sets = [(CURRENT, current)]
    fields = candidate_fields(rollout)
    if fields and scales_with_weight(workload):
        fields["replicas"] = candidate_replicas(rollout.weight if weight is None else weight, workload.replicas)
    if fields:
        if "args" in fields:  # dict fields come back as plain dicts; the workload's own are the same kind
            fields["args"] = dict(fields["args"])
        name = slot_name(workload.name, other(rollout.slot))
        sets.append((CANDIDATE, workload.model_copy(update={**fields, "name": name, "rollout": None})))
    return sets


def indexes(workloads: list[tuple[int, Any]]) -> dict[str, int]:
    """Each server set's name (a workload's, and slot b's under a rollout) -> its workload's index in
    tpu-serving:workloads (where a set's plan reports a problem: stacks/pieces/alerts.py slo_problems)."""
    return {c.name: i for i, w in workloads for _, c in server_sets(w)} | {w.name: i for i, w in workloads}


def weights(rollout: Any) -> dict[str, int]:
    """Each role's share of the route: the candidate `rollout.weight`, the current release the rest."""
    return {CURRENT: 100 - rollout.weight, CANDIDATE: rollout.weight}


def release(workload: Any, role: str) -> Release | None:
    """The Release of the workload's set in `role` (None without a rollout)."""
    rollout = rollout_of(workload)
    if rollout is None:
        return None
    slot = rollout.slot if role == CURRENT else other(rollout.slot)
    paired = bool(candidate_fields(rollout))
    weight = weights(rollout)[role] if paired else 100
    return Release(workload.name, role, slot, weight, rollout.strategy, rollout.gate, paired, rollout.attempt)


def latency_slo(workload: Any) -> bool:
    """The workload has a latency objective (slo.timeToFirstToken or timePerOutputToken) a gate can measure at."""
    slo = getattr(workload, "slo", None)
    return slo is not None and (slo.time_to_first_token is not None or slo.time_per_output_token is not None)


def problems(path: str, workload: Any, *, served: bool, name_max: int, scenarios: Any, has_slo: bool) -> list[Problem]:
    """A rollout's own rules: served through the gateway (its weights are an HTTPRoute's), a latency SLO the gate
    measures goodput at, a name that leaves room for slot b's suffix, steps and weight the strategy allows, a known
    gate scenario, no mirroring."""
    rollout = rollout_of(workload)
    if rollout is None:
        return []
    key = f"{path}.rollout"
    found: list[Problem] = []
    if not served:
        found.append(
            Problem(
                key,
                "needs the workload served through the Inference Gateway (tpu-serving:gateway.enabled and the "
                "workload's gateway: true): the releases' weights are its HTTPRoute's",
            )
        )
    if not has_slo:
        found.append(
            Problem(
                key,
                "needs slo.timeToFirstToken or slo.timePerOutputToken: the gate measures the candidate's goodput at "
                "them, and the candidate's burn-rate alerts are the rollback trigger",
            )
        )
    room = name_max - len(SLOT_SUFFIX["b"])
    if len(workload.name) > room:
        found.append(
            Problem(f"{path}.name", f"{workload.name!r} is longer than {room} characters, too long for slot b's '-b'")
        )
    steps = list(rollout.steps)
    if any(not 1 <= s <= 100 for s in steps) or steps != sorted(set(steps)) or steps[-1] != 100:
        found.append(Problem(f"{key}.steps", f"{steps} must increase from 1 to 100 percent and end at 100"))
    has_candidate = bool(candidate_fields(rollout))
    if rollout.strategy == "blueGreen" and rollout.weight not in (0, 100):
        found.append(Problem(f"{key}.weight", f"{rollout.weight} is not 0 or 100 (blueGreen switches whole)"))
    elif rollout.strategy == "canary" and rollout.weight not in (0, *steps):
        found.append(Problem(f"{key}.weight", f"{rollout.weight} is not 0 or one of steps {steps}"))
    if rollout.weight and not has_candidate:
        found.append(Problem(f"{key}.weight", f"{rollout.weight} without a candidate: name rollout.candidate"))
    if getattr(rollout, "candidate", None) is not None and not has_candidate:
        found.append(Problem(f"{key}.candidate", "names no field: give what the release changes (e.g. image)"))
    if rollout.mirror:
        found.append(Problem(f"{key}.mirror", MIRROR_REFUSED))
    found.extend(_size_problems(key, workload, rollout, steps))
    if rollout.gate.scenario not in scenarios:
        found.append(
            Problem(
                f"{key}.gate.scenario",
                f"{rollout.gate.scenario!r} is not a benchmark scenario; allowed: {', '.join(scenarios)}",
            )
        )
    else:
        found.extend(_context_problems(key, workload, rollout, scenarios))
    return found


def _context_problems(key: str, workload: Any, rollout: Any, scenarios: Any) -> list[Problem]:
    """The gate's longest request must fit the server it benchmarks: vLLM answers a request whose prompt plus
    max_tokens exceeds --max-model-len with HTTP 400 ("This model's maximum context length is N tokens. However, you
    requested M output tokens ...", its OpenAI server's input validation), and inference-perf sends each request's
    output length as max_tokens with ignore_eos: those requests fail and the gate rolls the candidate back. Checked
    against the maxModelLen the candidate serves with (its own, else the workload's; unset: the model's own length,
    which the stack does not know)."""
    scenario = scenarios[rollout.gate.scenario]
    fields = candidate_fields(rollout)
    limit = fields.get("max_model_len", getattr(workload, "max_model_len", None))
    if not isinstance(limit, int) or scenario.max_tokens() <= limit:
        return []
    where = "rollout.candidate.maxModelLen" if "max_model_len" in fields else "maxModelLen"
    fitting = [n for n, s in scenarios.items() if s.max_tokens() <= limit]
    return [
        Problem(
            f"{key}.gate.scenario",
            f"{scenario.name!r} sends up to {scenario.input_tokens[2]} prompt + {scenario.output_tokens[2]} output "
            f"tokens = {scenario.max_tokens()}, more than the candidate's {where} {limit}: those requests fail (HTTP "
            f"400) and the gate rolls back; choose a scenario that fits ({', '.join(fitting) or 'none'}) or raise "
            f"{where}",
        )
    ]


def _size_problems(key: str, workload: Any, rollout: Any, steps: list[int]) -> list[Problem]:
    """A fixed candidate size (rollout.candidate.replicas) must carry each step's share of the current release's
    load: ceil(weight% of the current replicas) at every step it reaches."""
    fixed = candidate_fields(rollout).get("replicas")
    current = getattr(workload, "replicas", None)
    if not isinstance(fixed, int) or not isinstance(current, int) or getattr(workload, "autoscaling", None):
        return []
    reached = steps if rollout.strategy == "canary" else [PEAK_WEIGHT]
    return [
        Problem(
            key,
            f"step {step}: at weight {step}% the candidate takes {step}% of the requests the current release's "
            f"{current} replica(s) serve and needs {candidate_replicas(step, current)} replica(s), but "
            f"rollout.candidate.replicas is {fixed}: unset it (the candidate's replicas then follow its weight) or "
            f"raise it to {candidate_replicas(step, current)}",
        )
        for step in reached
        if fixed < candidate_replicas(step, current)
    ]


def capacity_problem(index: int, candidate: Any, pool_users: list[tuple[str, int]], capacity: int) -> Problem:
    """The candidate cannot be created: its pool cannot hold it beside what already runs there."""
    who = ", ".join(f"{name!r} {hosts}" for name, hosts in pool_users)
    return Problem(
        f"tpu-serving:workloads[{index}].rollout.candidate",
        f"pool {candidate.pool.name!r} has {capacity} TPU host(s), but with the candidate {candidate.name!r} at its "
        f"largest step its server sets need {sum(h for _, h in pool_users)} at most ({who}): raise the pool's maximum "
        "(autoscaling.maxNodes or slices), give the candidate fewer replicas (rollout.candidate.replicas) or "
        "another pool (rollout.candidate.pool)",
    )


def route_problems(path: str, sets: list[Any]) -> list[Problem]:
    """The two sets answer one route: the candidate must serve the model name the route matches (the current
    release's), or the requests the route sends it would name a model it does not serve."""
    backends = [b for s in sets if (b := s.gateway_backend()) is not None]
    if len(backends) < 2 or backends[0].model == backends[1].model:
        return []
    return [
        Problem(
            f"{path}.rollout.candidate",
            f"serves the model name {backends[1].model!r}, the current release {backends[0].model!r}: the route "
            "matches one model name (its clients' `model`); keep it with args.served-model-name",
        )
    ]
