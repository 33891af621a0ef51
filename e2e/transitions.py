"""Issue 36's transitions on a running local cluster, as the real Pulumi engine and Kubernetes provider apply them
(docs/local.md), in a process of its own that has joined the cluster's network namespace first (as e2e/run_example.py):

    python -m e2e.transitions <transition> examples/<name>/Pulumi.<stack>.yaml     exit 0, or 1 listing every problem

Transitions (TRANSITIONS):
- `fixed-replicas` (issue 36 #1, on a Deployment an HPA scales: gemma-hpa): the HPA writes spec.replicas through
  the scale subresource (its minReplicas above the replicas: no metric needed, kubernetes/kubernetes
  pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler), once while nobody owns the field (not tracked)
  and once after another manager set it (tracked: kube-controller-manager owns it, and an unforced apply conflicts);
  then autoscaling -> fixed replicas (`up` succeeds: the stack forces the field, `pulumi.com/patchForce`), back to
  autoscaling (the HPA takes the field back), and pause -> unpause.
- `lws-subgroup` (issue 36 #3, llama2-70b-disaggregated: a jetstream-pathways workload on two slices):
  disaggregated -> interleaved, in either direction refused in place by the LWS webhook (subGroupPolicy immutable): the engine replaces the
  LeaderWorkerSet (replaceOnChanges), and back.
- `vllm-hosts` (issue 36 #7, vllm-multi-host): the vLLM workload moved between its multi-host pool and a
  single-host pool and back. Its Service is `<name>` on every pool (VllmPlan.service_name; the LeaderWorkerSet's
  headless Services are per group, `<name>-<group>`, subdomainPolicy UniquePerReplica), so the move keeps it: at
  every poll during the `up` it must select a Ready serving pod (ready endpoints recorded), it must be the stack's
  own (not LWS's headless one) and LWS must have made `<name>-0` on the multi-host pool; the timeline printed shows
  which server's pods were Ready when.

Each step records what it saw; a problem names its step.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from e2e import cluster as c
from e2e.run_example import POD_TIMEOUT, UP_TIMEOUT, Run
from tooling.local import local_stack

NS = "tpu-serving"
HPA_MIN = 2
FIXED = 3
# The field manager the HPA controller writes the scale subresource as (kube-controller-manager's client), and the
# Kubernetes provider's server-side apply manager (pulumi/pulumi-kubernetes provider/pkg/provider: fieldManager
# defaults to "pulumi-kubernetes-<random>" per resource).
HPA_MANAGER = "kube-controller-manager"


def replicas_owners(kube: local_stack.Kube, path: str) -> list[str]:
    """The field managers that own spec.replicas of the object at `path` (its managedFields)."""
    obj = kube.get(path)
    return [
        f"{m['manager']}:{m.get('operation')}{':' + m['subresource'] if m.get('subresource') else ''}"
        for m in obj["metadata"].get("managedFields") or []
        if "f:replicas" in (m.get("fieldsV1") or {}).get("f:spec", {})
    ]


def _workload(run: Run) -> dict[str, Any]:
    return run.config()[f"{NS}:workloads"][0]


def _errors(run: Run, err: Exception) -> str:
    """The error lines of a failed `up`: the engine's output (Run.log) first, else the exception's."""
    lines = [line.strip() for line in [*run.log[-400:], *str(err).splitlines()] if "error" in line.lower()]
    return "\n".join(dict.fromkeys(lines))[:3000] or str(err)[-2000:]


def _up(run: Run, step: str, problems: list[str]) -> bool:
    run.write()
    run.log.clear()  # this up's output only (_errors)
    try:
        run.pulumi("up", UP_TIMEOUT)
        return True
    except Exception as err:  # the `up` failing is the finding (a webhook refusing a connection among them: the
        # supervisor marks a controller's pod Ready only once its webhooks serve, as the kubelet's probe does on GKE)
        problems.append(f"{step}: up failed: {_errors(run, err)}")
        return False


def _wait(what: str, probe: Callable[[], Any], problems: list[str], seconds: float = POD_TIMEOUT) -> Any:
    try:
        return c.wait_for(what, seconds, probe)
    except TimeoutError as err:
        problems.append(str(err))
        return None


def _hpa_takes_the_field(kube: local_stack.Kube, path: str, name: str, problems: list[str]) -> bool:
    """Another manager sets spec.replicas and the HPA scales it back: kube-controller-manager owns the field, and an
    unforced apply of it conflicts (a dry run shows the 409)."""
    # 1b. the field owned when the HPA scales (the stack's earlier fixed replicas, an operator's `kubectl scale`):
    # then the HPA's write is tracked and kube-controller-manager takes the field over
    kube.request(
        "PATCH",
        f"{path}?fieldManager=e2e-earlier-owner&force=true",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {"replicas": 1}},
        "application/apply-patch+yaml",
    )
    owned = _wait(
        f"{name}: the HPA scales it back to {HPA_MIN}, owning spec.replicas",
        lambda: (
            (
                kube.get(path)["spec"].get("replicas") == HPA_MIN
                and [o for o in replicas_owners(kube, path) if o.startswith(HPA_MANAGER)]
            )
            or None
        ),
        problems,
    )
    print(f"scaled by the HPA: spec.replicas owned by {replicas_owners(kube, path)}", flush=True)
    if not owned:
        return False
    # what an apply of spec.replicas without force meets now (a dry run, another manager)
    try:
        kube.request(
            "PATCH",
            f"{path}?fieldManager=e2e-unforced&force=false&dryRun=All",
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {"replicas": FIXED}},
            "application/apply-patch+yaml",
        )
        problems.append("an unforced apply of spec.replicas met no conflict: nothing to show")
    except local_stack.KubeError as err:
        print(f"unforced apply of spec.replicas (dry run): {err.status} {str(err)[:300]}", flush=True)
    return True


def fixed_replicas(run: Run, kube: local_stack.Kube) -> list[str]:
    """Issue 36 #1 (module docstring)."""
    problems: list[str] = []
    workload = _workload(run)
    name = workload["name"]
    namespace = workload.get("namespace") or name
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    hpa = f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/{name}"
    auto = copy.deepcopy(workload["autoscaling"])
    auto["minReplicas"] = HPA_MIN
    workload["autoscaling"] = auto

    # 1. autoscaled: the HPA raises the Deployment to its minimum through the scale subresource. Nobody owned
    # spec.replicas (the stack leaves it to the HPA), and the API server does not track an update of an object (here
    # the Scale built from the owners of spec.replicas) that has no managed fields (k8s.io/apimachinery@v0.35.4
    # pkg/util/managedfields/internal/skipnonapplied.go Update; scalehandler.go ToSubresource): no owner after it
    if not _up(run, "autoscaled", problems):
        return problems
    _wait(
        f"{name}: the HPA writes spec.replicas {HPA_MIN}",
        lambda: kube.get(path)["spec"].get("replicas") == HPA_MIN or None,
        problems,
    )
    print(f"autoscaled: spec.replicas {HPA_MIN}, owned by {replicas_owners(kube, path)}", flush=True)

    if not _hpa_takes_the_field(kube, path, name, problems):
        return problems

    # 2. autoscaling -> fixed replicas: the stack's apply forces the field (issue 36 #1)
    del workload["autoscaling"]
    workload["replicas"] = FIXED
    if _up(run, "autoscaling -> fixed replicas", problems):
        spec = kube.get(path)["spec"].get("replicas")
        owners = replicas_owners(kube, path)
        print(f"fixed: spec.replicas {spec}, owned by {owners}; HPA left: {kube.exists(hpa)}", flush=True)
        if spec != FIXED:
            problems.append(f"fixed replicas: spec.replicas {spec}, configured {FIXED}")
        if any(o.startswith(HPA_MANAGER) for o in owners):
            problems.append(f"fixed replicas: kube-controller-manager still owns spec.replicas ({owners})")
        if kube.exists(hpa):
            problems.append("fixed replicas: the HPA is still there after the up")
        _wait(
            f"{name}: {FIXED} Ready replicas",
            lambda: (kube.get(path).get("status") or {}).get("readyReplicas") == FIXED or None,
            problems,
        )

    # 3. back to autoscaling: the field is left to the HPA, which takes it back to its minimum
    workload.pop("replicas", None)
    workload["autoscaling"] = auto
    if _up(run, "fixed replicas -> autoscaling", problems):
        right_after = kube.get(path)["spec"].get("replicas")
        back = _wait(
            f"{name}: the HPA scales it to {HPA_MIN}",
            lambda: kube.get(path)["spec"].get("replicas") == HPA_MIN or None,
            problems,
        )
        owners = replicas_owners(kube, path)
        print(
            f"autoscaled again: spec.replicas {right_after} right after the up, then {HPA_MIN} ({back}), owned by {owners}"
        )

    # 4. pause and unpause with the HPA there
    run.config()[f"{NS}:paused"] = True
    if _up(run, "pause", problems):
        spec = kube.get(path)["spec"].get("replicas")
        print(f"paused: spec.replicas {spec}, owned by {replicas_owners(kube, path)}", flush=True)
        if spec != 0:
            problems.append(f"pause: spec.replicas {spec}")
    run.config()[f"{NS}:paused"] = False
    if _up(run, "unpause", problems):
        _wait(
            f"{name}: unpaused, the HPA scales it to {HPA_MIN}",
            lambda: kube.get(path)["spec"].get("replicas") == HPA_MIN or None,
            problems,
        )
    return problems


def _ready(pod: dict[str, Any]) -> bool:
    return any(
        cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in (pod.get("status") or {}).get("conditions") or []
    )


def _selected(kube: local_stack.Kube, namespace: str, selector: dict[str, str]) -> list[dict[str, Any]]:
    label = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    return kube.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector={label}")


def _serving(kube: local_stack.Kube, namespace: str, service: str) -> list[str]:
    """The Ready pods the Service's selector matches (the selector as the Service has it now)."""
    svc = kube.get(f"/api/v1/namespaces/{namespace}/services/{service}")
    return [p["metadata"]["name"] for p in _selected(kube, namespace, svc["spec"].get("selector") or {}) if _ready(p)]


def _ready_endpoints(kube: local_stack.Kube, namespace: str, service: str) -> int:
    """The Service's ready endpoints, as its EndpointSlices (kube-controller-manager's endpointslice controller) list
    them: what kube-proxy routes a client of the Service to."""
    slices = kube.items(
        f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices?labelSelector=kubernetes.io/service-name={service}"
    )
    return sum(
        1 for s in slices for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") is not False
    )


class Watch:
    """Polls every second, while an `up` runs, each of the workload's Service names (a vLLM workload's is `<name>` on
    every pool: VllmPlan.service_name), recording for each when it exists,
    how many Ready pods its selector matches and how many ready endpoints it has, and which server's pods (the
    LeaderWorkerSet's leaders, the Deployment's pods) are Ready."""

    def __init__(self, kube: local_stack.Kube, namespace: str, services: list[str], selector: dict[str, str]):
        self.kube, self.namespace, self.services, self.selector = kube, namespace, services, selector
        self.polls: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _poll(self) -> dict[str, Any]:
        seen: dict[str, Any] = {"t": time.strftime("%H:%M:%S")}
        for service in self.services:
            if self.kube.exists(f"/api/v1/namespaces/{self.namespace}/services/{service}"):
                seen[service] = (
                    len(_serving(self.kube, self.namespace, service)),
                    _ready_endpoints(self.kube, self.namespace, service),
                )
        ready = [p for p in _selected(self.kube, self.namespace, self.selector) if _ready(p)]
        seen["lws"] = sum(1 for p in ready if "leaderworkerset.sigs.k8s.io/name" in p["metadata"].get("labels", {}))
        seen["deploy"] = len(ready) - seen["lws"]
        return seen

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.polls.append(self._poll())
            except local_stack.KubeError as err:
                self.errors.append(f"{time.strftime('%H:%M:%S')} {err}")
            self._stop.wait(1.0)

    def timeline(self) -> list[str]:
        """Each poll whose state differs from the one before (the first and last always)."""
        out, last = [], None
        for i, poll in enumerate(self.polls):
            state = {k: v for k, v in poll.items() if k != "t"}
            if state != last or i == len(self.polls) - 1:
                out.append(f"{poll['t']} {state}")
            last = state
        return out

    def gaps(self) -> list[str]:
        """Polls where no Service of the workload selected a Ready pod. Ready endpoints are recorded, not required:
        the local cluster's EndpointSlices listed none for any Service, the LeaderWorkerSet's own headless one
        included (the 2026-11-29 runs, docs/local.md)."""
        return [p["t"] for p in self.polls if not any(p.get(s) and p[s][0] for s in self.services)]

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def vllm_hosts(run: Run, kube: local_stack.Kube) -> list[str]:
    """Issue 36 #7 (module docstring): a single-host pool is added, and the workload moved to it and back."""
    problems: list[str] = []
    workload = _workload(run)
    name = workload["name"]
    namespace = workload.get("namespace") or name
    pools = run.config()[f"{NS}:tpuPools"]
    multi = next(p for p in pools if p["name"] == workload["pool"])
    single = {"name": "v6e-single"}
    # the pool exists first (its kwok nodes are made by the cluster, from the stack file at start)
    if single["name"] not in {p["name"] for p in pools}:
        problems.append("the single-host pool must be in the stack file the cluster started from (TRANSITION_POOLS)")
        return problems
    if not _up(run, "multi-host", problems):
        return problems
    # the Service: `<name>` on every pool (workloads/vllm/plan.py VllmPlan.service_name; the LeaderWorkerSet's
    # headless Services are per group, `<name>-<group>`: networkConfig.subdomainPolicy UniquePerReplica)
    service = name
    selector = {"app": name, "role": "leader"}
    _wait(f"{name}: Ready before the move", lambda: _serving(kube, namespace, service) or None, problems)
    _headless(kube, namespace, name, service, "multi-host", problems)
    for step, pool in (("to single-host", single["name"]), ("back to multi-host", multi["name"])):
        workload["pool"] = pool
        with Watch(kube, namespace, [service], selector) as watch:
            ok = _up(run, step, problems)
        print(
            f"{step}: {len(watch.polls)} polls; timeline (Service: Ready selected pods, ready endpoints):", flush=True
        )
        for line in watch.timeline():
            print(f"  {line}", flush=True)
        if watch.errors:
            print(f"{step}: poll errors {watch.errors[:5]}", flush=True)
        gaps = watch.gaps()
        if gaps:
            problems.append(f"{step}: no Service routed to a Ready pod at {len(gaps)} polls, from {gaps[:5]}")
        if ok:
            if not _serving(kube, namespace, service):
                problems.append(f"{step}: the Service {service} selects no Ready pod after the up")
            if pool == multi["name"]:
                _headless(kube, namespace, name, service, step, problems)
    return problems


def _headless(kube: local_stack.Kube, namespace: str, name: str, service: str, step: str, problems: list[str]) -> None:
    """The stack's Service is its own (not headless, no owner), and LWS made the first group's headless Service
    `<name>-0`, owned by the leader pod (sigs.k8s.io/lws@v0.7.0 pkg/controllers/pod_controller.go)."""
    svc = kube.get(f"/api/v1/namespaces/{namespace}/services/{service}")
    if svc["spec"].get("clusterIP") == "None" or svc["metadata"].get("ownerReferences"):
        problems.append(f"{step}: the Service {service} is LWS's headless one, not the stack's")
    group = f"/api/v1/namespaces/{namespace}/services/{name}-0"
    if not _wait(f"{step}: LWS's headless Service {name}-0", lambda: kube.exists(group) or None, problems):
        return
    print(f"{step}: LWS's headless Service {name}-0 owned by {kube.get(group)['metadata'].get('ownerReferences')}")


def lws_subgroup(run: Run, kube: local_stack.Kube) -> list[str]:
    """Issue 36 #3 (module docstring): interleaved -> disaggregated and back, each replacing the LeaderWorkerSet."""
    problems: list[str] = []
    workload = _workload(run)
    first = workload.get("mode", "interleaved")
    if not _up(run, f"mode {first}", problems):
        return problems
    other = "interleaved" if first == "disaggregated" else "disaggregated"
    for mode in (other, first):
        workload["mode"] = mode
        run.write()
        run.log.clear()
        try:
            _, done = run.pulumi("up", UP_TIMEOUT)
        except Exception as err:
            problems.append(f"mode -> {mode}: up failed: {_errors(run, err)}")
            continue
        lws = {
            urn: op for urn, op in done.items() if "$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet::" in urn
        }
        print(f"mode -> {mode}: LeaderWorkerSet operations {lws}", flush=True)
        if not any(op in ("replace", "create-replacement", "delete-replaced") for op in lws.values()):
            problems.append(f"mode -> {mode}: the engine did not replace the LeaderWorkerSet ({lws})")
    return problems


TRANSITIONS: dict[str, Callable[[Run, local_stack.Kube], list[str]]] = {
    "fixed-replicas": fixed_replicas,
    "vllm-hosts": vllm_hosts,
    "lws-subgroup": lws_subgroup,
}


def main(argv: list[str]) -> int:
    transition, path = argv[0], Path(argv[1]).resolve()
    run = Run(path)
    shutil.rmtree(run.local.state, ignore_errors=True)  # a new cluster: no state of an earlier one
    local_stack.enter_cluster_network(run.stack)
    local_stack.prepare(run.stack, source=path, reference=run.reference)
    kube = local_stack.Kube(run.local.kubeconfig)
    started = time.monotonic()
    try:
        problems = TRANSITIONS[transition](run, kube)
    finally:
        try:
            run.config()[f"{NS}:decommission"] = True
            run.write()
            run.pulumi("up", UP_TIMEOUT)
            run.pulumi("destroy", UP_TIMEOUT)
        except Exception as err:  # the cluster is stopped after anyway
            print(f"clean-up: {str(err)[-500:]}", flush=True)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    summary = {"transition": transition, "seconds": round(time.monotonic() - started), "problems": problems}
    print(json.dumps(summary))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
