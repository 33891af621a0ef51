"""After `pulumi up`: check with kubectl that the stack really serves, and report every check in one table.

    make smoke STACK=dev
    .venv/bin/python scripts/smoke.py dev [--kubeconfig PATH] [--request-timeout SECONDS]

What is expected comes from the stack's config, run through the program offline (the objects `pulumi up`
applied); what is found comes from the live cluster:
- pods      every workload's pods are Ready (pods of finished Jobs: Succeeded), at least one per workload;
- serve     each serving workload answers one real request through `kubectl port-forward` on its own local port;
- metrics   every metric of every HPA is served by the custom or external metrics API, and the HPA can scale;
- targets   every PodMonitoring reports live scrape targets, none unhealthy;
- addons    every add-on controller and metrics adapter Deployment is Available;
- alerts    every Cloud Monitoring alert policy the stack registers exists and is enabled (disabled while paused),
            read with `gcloud alpha monitoring policies list` (only for a stack with alerts on).
A paused stack expects no workload pods and skips the serving and HPA checks. A fleet stack (docs/fleet.md) is
checked from its last `up`'s `fleet` output: in its config cluster each routed pool's GCPInferencePoolImport exists
and the Gateway is Programmed; in every region's cluster the pool carries the export annotation.

Then, per workload, the measured time to serve of its slowest TPU pod (from pod, node and event timestamps,
tooling/operations/rollout.py) beside the model's estimate (stacks/reports/time_to_serve.py), as `measured / modelled`: a deploy
calibrates the model's assumptions with it (docs/time-to-serve.md).

The kubeconfig is the stack's `kubeconfig` output (`pulumi stack output kubeconfig --show-secrets`, written to a
private temporary file) unless --kubeconfig names one. Each failure prints the command to investigate.
Exit status: 0 all passed, 1 a check failed, 2 kubectl (or pulumi) could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stacks import addons  # noqa: E402
from stacks.fleets import fleet  # noqa: E402
from stacks.reports import time_to_serve  # noqa: E402
from stacks.serving.workload_type import SmokeProbe  # noqa: E402
from tooling.harness.k8s_objects import kubernetes_objects, plain  # noqa: E402
from tooling.harness.offline import Recording, load_stack_file, parse_stack_file, run_stack_file  # noqa: E402
from tooling.operations import rollout  # noqa: E402
from tooling.review.fleet_render import is_fleet  # noqa: E402
from workloads import registry  # noqa: E402


class KubectlError(RuntimeError):
    pass


@dataclass(frozen=True)
class Result:
    check: str
    target: str
    ok: bool
    detail: str
    investigate: str = ""


# One real request to a serving workload through a port-forward (to a free local port, so the smoke test never
# clashes with a port-forward the user already runs): each workload type says its own (WorkloadType.smoke_probe).
Probe = SmokeProbe


class Kubectl:
    """kubectl with one kubeconfig; `get` returns parsed JSON."""

    def __init__(self, kubeconfig: str | None, binary: str = "kubectl"):
        self.env = {**os.environ, **({"KUBECONFIG": kubeconfig} if kubeconfig else {})}
        self.binary = binary

    def get(self, *args: str) -> Any:
        result = subprocess.run(
            [self.binary, *args], capture_output=True, text=True, env=self.env, timeout=120, check=False
        )
        if result.returncode != 0:
            raise KubectlError(f"kubectl {' '.join(args)}: {result.stderr.strip() or result.returncode}")
        return json.loads(result.stdout or "{}")

    @contextmanager
    def port_forward(self, namespace: str, service: str, local: int, remote: int, wait: float) -> Iterator[None]:
        process = subprocess.Popen(
            [self.binary, "-n", namespace, "port-forward", f"svc/{service}", f"{local}:{remote}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        try:
            deadline = time.monotonic() + wait
            while True:
                if process.poll() is not None:
                    raise KubectlError(f"port-forward svc/{service} exited: {process.stderr.read().strip()}")
                try:
                    socket.create_connection(("127.0.0.1", local), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise KubectlError(
                            f"port-forward svc/{service} not listening on {local} after {wait}s"
                        ) from None
                    time.sleep(0.2)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


# ---- what the stack should have ----------------------------------------------------------------------------


@dataclass
class Expected:
    stack: str
    paused: bool
    workloads: list[Any]  # WorkloadPlans
    hpas: list[dict[str, Any]]
    pod_monitorings: list[dict[str, Any]]
    addon_namespaces: list[str]
    estimates: dict[str, time_to_serve.Estimate] = field(default_factory=dict)
    """By workload: the modelled time to serve, printed beside the measured one."""
    project: str = ""
    policies: list[str] = field(default_factory=list)
    """Display names of the alert policies the stack registers (tpu-serving:alerts)."""


def expected(stack_file: Path, recording: Recording | None = None) -> Expected:
    """What the stack applies: its config, and its objects from an offline preview run (or `recording`)."""
    cfg = parse_stack_file(stack_file)
    recording = recording or run_stack_file(stack_file, preview=True)
    objects = kubernetes_objects(recording)
    workload_namespaces = {plan.namespace for plan in cfg.workloads}
    namespaces = {o["metadata"].get("namespace") for o in objects if o["kind"] == "Deployment"} - workload_namespaces
    namespaces |= {
        plain(r.inputs).get("namespace") for r in recording.resources if r.type.startswith("kubernetes:helm.sh/")
    }
    # every add-on's controller namespace, including those its upstream manifest creates (no Helm release)
    namespaces |= {entry.release(settings).namespace for entry, settings in addons.enabled(cfg.addons)}
    return Expected(
        stack=cfg.stack,
        paused=cfg.paused,
        workloads=list(cfg.workloads),
        hpas=[o for o in objects if o["kind"] == "HorizontalPodAutoscaler"],
        pod_monitorings=[o for o in objects if o["kind"] == "PodMonitoring"],
        addon_namespaces=sorted(n for n in namespaces if n),
        estimates={e.workload: e for e in time_to_serve.estimates(cfg)},
        project=cfg.gcp_project,
        policies=[plain(r.inputs)["displayName"] for r in recording.of_type("gcp:monitoring/alertPolicy:AlertPolicy")],
    )


# ---- the checks (each pure over kubectl JSON, so recorded output tests them) ---------------------------------


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == kind), {})


def check_pods(plan: Any, pods: dict[str, Any], paused: bool) -> Result:
    """Pod status.conditions[type=Ready] (Kubernetes API, core/v1 PodCondition); Jobs' pods end Succeeded."""
    investigate = f"kubectl -n {plan.namespace} get pods -o wide; kubectl -n {plan.namespace} describe pods"
    items = pods.get("items", [])
    if paused:
        running = [p["metadata"]["name"] for p in items if p.get("status", {}).get("phase") == "Running"]
        return Result("pods", plan.name, not running, f"paused; {len(running)} running", investigate)
    finished = [p for p in items if p.get("status", {}).get("phase") == "Succeeded"]
    serving = [p for p in items if p not in finished]
    not_ready = [p["metadata"]["name"] for p in serving if _condition(p, "Ready").get("status") != "True"]
    if not serving:
        return Result("pods", plan.name, False, f"no pods in namespace {plan.namespace}", investigate)
    if not_ready:
        return Result("pods", plan.name, False, f"not Ready: {', '.join(sorted(not_ready))}", investigate)
    return Result(
        "pods", plan.name, True, f"{len(serving)} Ready" + (f", {len(finished)} completed" if finished else "")
    )


def check_deployments(namespace: str, deployments: dict[str, Any]) -> Result:
    """Deployment status.conditions[type=Available] (Kubernetes API, apps/v1 DeploymentCondition)."""
    investigate = f"kubectl -n {namespace} get deployments; kubectl -n {namespace} describe deployments"
    items = deployments.get("items", [])
    down = [d["metadata"]["name"] for d in items if _condition(d, "Available").get("status") != "True"]
    if not items:
        return Result("addons", namespace, False, "no Deployments", investigate)
    if down:
        return Result("addons", namespace, False, f"not Available: {', '.join(sorted(down))}", investigate)
    return Result(
        "addons", namespace, True, f"{len(items)} Available: {', '.join(sorted(d['metadata']['name'] for d in items))}"
    )


def metric_paths(hpa: dict[str, Any]) -> list[tuple[str, str]]:
    """(metric, raw API path) for each metric of an autoscaling/v2 HPA spec. External metrics:
    /apis/external.metrics.k8s.io/v1beta1/namespaces/<ns>/<metric>?labelSelector=<selector>; Pods metrics:
    /apis/custom.metrics.k8s.io/v1beta2/namespaces/<ns>/pods/*/<metric> (kubernetes/community design-proposals
    instrumentation/external-metrics-api.md and custom-metrics-api.md; kubernetes/metrics types)."""
    ns = hpa["metadata"]["namespace"]
    out = []
    for metric in hpa["spec"].get("metrics", []):
        kind = metric["type"]
        if kind == "External":
            spec = metric["external"]["metric"]
            labels = (spec.get("selector") or {}).get("matchLabels") or {}
            query = (
                "?" + urllib.parse.urlencode({"labelSelector": ",".join(f"{k}={v}" for k, v in sorted(labels.items()))})
                if labels
                else ""
            )
            out.append(
                (
                    spec["name"],
                    f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{ns}/{urllib.parse.quote(spec['name'], safe='')}{query}",
                )
            )
        elif kind == "Pods":
            name = metric["pods"]["metric"]["name"]
            out.append(
                (
                    name,
                    f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{ns}/pods/*/{urllib.parse.quote(name, safe='')}",
                )
            )
    return out


def check_metric(hpa: dict[str, Any], metric: str, values: dict[str, Any] | None, error: str = "") -> Result:
    """A served metric is a value list (ExternalMetricValueList / MetricValueList) with at least one item."""
    ns, name = hpa["metadata"]["namespace"], hpa["metadata"]["name"]
    investigate = f"kubectl -n {ns} describe hpa {name}"
    items = (values or {}).get("items") or []
    if error or not items:
        return Result("metrics", f"{name}: {metric}", False, error or "served, but no value", investigate)
    return Result("metrics", f"{name}: {metric}", True, f"{len(items)} value(s)")


def check_hpa(hpa: dict[str, Any], live: dict[str, Any]) -> Result:
    """HPA status.conditions[type=ScalingActive] is True when the controller could compute a scale from the metrics
    (autoscaling/v2 HorizontalPodAutoscalerCondition)."""
    ns, name = hpa["metadata"]["namespace"], hpa["metadata"]["name"]
    active = _condition(live, "ScalingActive")
    ok = active.get("status") == "True"
    detail = f"ScalingActive={active.get('status', 'missing')}" + (
        f" ({active.get('reason')}: {active.get('message', '')})" if not ok else ""
    )
    return Result("metrics", f"{name}: HPA", ok, detail, f"kubectl -n {ns} describe hpa {name}")


def check_targets(pod_monitoring: dict[str, Any], live: dict[str, Any]) -> Result:
    """PodMonitoring status.endpointStatuses[].activeTargets / unhealthyTargets (GoogleCloudPlatform/prometheus-engine
    @v0.17.2:charts/operator/crds/monitoring.googleapis.com_podmonitorings.yaml). The status is reported only with
    OperatorConfig features.targetStatus.enabled (manifests/setup.yaml of the same release)."""
    ns, name = pod_monitoring["metadata"]["namespace"], pod_monitoring["metadata"]["name"]
    investigate = f"kubectl -n {ns} describe podmonitoring {name}"
    statuses = live.get("status", {}).get("endpointStatuses")
    if not statuses:
        return Result(
            "targets",
            f"{ns}/{name}",
            False,
            "no target status (is target status reporting on?)",
            "kubectl -n gmp-public patch operatorconfig config --type=merge "
            '-p \'{"features":{"targetStatus":{"enabled":true}}}\'; ' + investigate,
        )
    active = sum(int(s.get("activeTargets") or 0) for s in statuses)
    unhealthy = sum(int(s.get("unhealthyTargets") or 0) for s in statuses)
    ok = active > 0 and unhealthy == 0
    return Result("targets", f"{ns}/{name}", ok, f"{active} active, {unhealthy} unhealthy", "" if ok else investigate)


def check_policies(want: Expected, listed: list[dict[str, Any]]) -> list[Result]:
    """Each alert policy of the stack, by display name, in the project's list (Cloud Monitoring AlertPolicy:
    displayName, enabled; https://cloud.google.com/monitoring/api/ref_v3/rest/v3/projects.alertPolicies), enabled
    unless the stack is paused (then disabled on purpose)."""
    found = {p.get("displayName"): p for p in listed}
    look = f"gcloud alpha monitoring policies list --project={want.project} --format='table(displayName,enabled)'"
    results = []
    for name in want.policies:
        policy = found.get(name)
        if policy is None:
            results.append(Result("alerts", name, False, "no such alert policy in the project", look))
            continue
        enabled = bool(policy.get("enabled", False))
        ok = enabled != want.paused
        state = "enabled" if enabled else "disabled"
        detail = state if ok else f"{state}, expected {'disabled (paused)' if want.paused else 'enabled'}"
        results.append(Result("alerts", name, ok, detail, "" if ok else f"pulumi up --stack {want.stack}"))
    return results


def gcloud_policies(project: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["gcloud", "alpha", "monitoring", "policies", "list", f"--project={project}", "--format=json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise KubectlError(f"gcloud alpha monitoring policies list: {result.stderr.strip()}")
    return json.loads(result.stdout or "[]")


def check_answer(probe: Probe, status: int, body: bytes, error: str = "") -> Result:
    target = f"{probe.namespace}/{probe.service} {probe.method} /{probe.path}"
    investigate = (
        f"kubectl -n {probe.namespace} describe svc {probe.service}; "
        f"kubectl -n {probe.namespace} logs -l app --all-containers --tail=50"
    )
    if error:
        return Result("serve", target, False, error, investigate)
    if not 200 <= status < 300 or not body:
        return Result("serve", target, False, f"HTTP {status}, {len(body)} bytes", investigate)
    if probe.expect_key:
        try:
            answer = json.loads(body)
        except ValueError:
            return Result("serve", target, False, f"HTTP {status}, not JSON: {body[:80]!r}", investigate)
        if not isinstance(answer, dict) or probe.expect_key not in answer:
            return Result("serve", target, False, f"HTTP {status}, no {probe.expect_key!r} in the answer", investigate)
    return Result("serve", target, True, f"HTTP {status}, {len(body)} bytes")


# ---- how each workload type answers one request ------------------------------------------------------------


def probe_of(plan: Any) -> Probe | Result:
    """The request that shows `plan` serves, from its type's registry entry (workloads/<type>/commands.py
    smoke_probe), or the result saying why it is sent none (WorkloadType.no_smoke_probe): never skipped silently."""
    kind = registry.WORKLOAD_TYPES[plan.workload.type]
    probe = kind.smoke_probe(plan)
    if probe is not None:
        return probe
    if not kind.no_smoke_probe:
        return Result("serve", plan.name, False, f"type {kind.name!r} sends no request and says not why")
    return Result("serve", plan.name, True, f"not asked: {kind.no_smoke_probe}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ask(probe: Probe, local_port: int, timeout: float) -> tuple[int, bytes]:
    data = json.dumps(probe.body).encode() if probe.body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{local_port}/{probe.path}",
        data=data,
        method=probe.method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (localhost)
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


# ---- run ---------------------------------------------------------------------------------------------------


def smoke(
    want: Expected,
    kubectl: Kubectl,
    request_timeout: float = 300.0,
    forward_wait: float = 30.0,
    policies: Callable[[str], list[dict[str, Any]]] = gcloud_policies,
) -> list[Result]:
    results: list[Result] = check_policies(want, policies(want.project)) if want.policies else []
    for plan in want.workloads:
        results.append(check_pods(plan, kubectl.get("-n", plan.namespace, "get", "pods", "-o", "json"), want.paused))
    if not want.paused:
        for plan in want.workloads:
            probe = probe_of(plan)
            if isinstance(probe, Result):
                results.append(probe)
                continue
            local = free_port()
            try:
                with kubectl.port_forward(probe.namespace, probe.service, local, probe.remote_port, forward_wait):
                    status, body = ask(probe, local, request_timeout)
                results.append(check_answer(probe, status, body))
            except (KubectlError, OSError) as err:
                results.append(check_answer(probe, 0, b"", str(err)))
        for hpa in want.hpas:
            ns, name = hpa["metadata"]["namespace"], hpa["metadata"]["name"]
            for metric, path in metric_paths(hpa):
                try:
                    results.append(check_metric(hpa, metric, kubectl.get("get", "--raw", path)))
                except KubectlError as err:
                    results.append(check_metric(hpa, metric, None, str(err)))
            results.append(check_hpa(hpa, kubectl.get("-n", ns, "get", "hpa", name, "-o", "json")))
    for pm in want.pod_monitorings:
        ns, name = pm["metadata"]["namespace"], pm["metadata"]["name"]
        results.append(check_targets(pm, kubectl.get("-n", ns, "get", "podmonitoring", name, "-o", "json")))
    for namespace in want.addon_namespaces:
        results.append(check_deployments(namespace, kubectl.get("-n", namespace, "get", "deployments", "-o", "json")))
    return results


def time_to_serve_report(want: Expected, kubectl: Kubectl) -> str:
    """The measured phases of each workload's slowest TPU pod beside the model's (tooling/operations/rollout.py); what kubectl
    could not read is said, never a failure: the serving checks above decide the exit status."""
    try:
        nodes = kubectl.get("get", "nodes", "-o", "json")
        rows = []
        for plan in want.workloads:
            pods = kubectl.get("-n", plan.namespace, "get", "pods", "-o", "json")
            events = kubectl.get("-n", plan.namespace, "get", "events", "-o", "json")
            rows.append((plan.name, rollout.slowest(pods, nodes, events), want.estimates.get(plan.name)))
    except KubectlError as err:
        return f"Time to serve not measured: {err}"
    return "Time to serve, measured / modelled (slowest TPU pod of each workload):\n\n" + rollout.report(rows)


def table(results: list[Result]) -> str:
    lines = ["| check | what | result | detail |", "|---|---|---|---|"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")  # metric names such as prometheus.googleapis.com|<name>|gauge

    lines += [f"| {r.check} | {cell(r.target)} | {'ok' if r.ok else 'FAIL'} | {cell(r.detail)} |" for r in results]
    failures = [r for r in results if not r.ok]
    if failures:
        lines += ["", "To investigate:"] + [
            f"- {r.check} {r.target}: `{r.investigate}`" for r in failures if r.investigate
        ]
    return "\n".join(lines)


def stack_output(name: str, stack: str, *flags: str) -> str:
    """`pulumi stack output <name> <flags> --stack <stack>`: what the stack's last `up` exported."""
    result = subprocess.run(
        ["pulumi", "stack", "output", name, *flags, "--stack", stack],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise KubectlError(f"pulumi stack output {name} --stack {stack}: {result.stderr.strip()}")
    return result.stdout


@contextmanager
def stack_kubeconfig(stack: str) -> Iterator[str]:
    """The stack's kubeconfig output (a secret) in a file only this user can read, removed afterwards."""
    text = stack_output("kubeconfig", stack, "--show-secrets")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kubeconfig"
        path.touch(mode=0o600)
        path.write_text(text)
        yield str(path)


# ---- a fleet stack (docs/fleet.md) ----------------------------------------------------------------------------

IMPORTS = fleet.IMPORT_RESOURCE
EXPORT_ANNOTATION, EXPORT_VALUE = fleet.EXPORT_ANNOTATION, fleet.EXPORT_VALUE


def fleet_smoke(routing: dict[str, Any], kubectl: Kubectl) -> list[Result]:
    """A fleet stack, in its config cluster: every routed pool's GCPInferencePoolImport exists (the regional exports
    arrived) and the Gateway is Programmed (Gateway API v1 GatewayConditionType; GKE built the load balancer)."""
    results = []
    for route in sorted(routing["routes"]):
        namespace, pool = route.split("/", 1)
        fix = f"kubectl -n {namespace} get {IMPORTS} {pool} -o yaml; gcloud container fleet ingress describe"
        try:
            found = kubectl.get("-n", namespace, "get", IMPORTS, pool, "-o", "json")
            results.append(Result("import", route, bool(found.get("metadata")), "imported from the fleet", fix))
        except KubectlError as err:
            results.append(Result("import", route, False, str(err), fix))
    ns, name = routing["namespace"], routing["gateway"]
    fix = f"kubectl -n {ns} describe gateway {name}"
    try:
        programmed = _condition(kubectl.get("-n", ns, "get", "gateway", name, "-o", "json"), "Programmed")
        ok = programmed.get("status") == "True"
        detail = "Programmed" if ok else f"not Programmed: {programmed.get('reason', 'no condition yet')}"
        results.append(Result("gateway", f"{ns}/{name}", ok, detail, fix))
    except KubectlError as err:
        results.append(Result("gateway", f"{ns}/{name}", False, str(err), fix))
    return results


def region_exports(routing: dict[str, Any]) -> list[Result]:
    """In every exporting region's cluster (its stack's `kubeconfig` output), each routed pool's InferencePool
    carries the export annotation (F1). GKE documents no status of a GCPInferencePoolImport that lists the
    clusters it merged, so the import is checked for existence in the config cluster and each region here."""
    results = []
    for route, routed in sorted(routing["routes"].items()):
        namespace, pool = route.split("/", 1)
        for region, where in sorted(routed["regions"].items()):
            target = f"{region} {route}"
            fix = f"pulumi up --stack {where['stack']}; kubectl -n {namespace} get inferencepool {pool} -o yaml"
            try:
                with stack_kubeconfig(where["stack"]) as kubeconfig:
                    found = Kubectl(kubeconfig).get("-n", namespace, "get", "inferencepool", pool, "-o", "json")
                value = found.get("metadata", {}).get("annotations", {}).get(EXPORT_ANNOTATION)
                ok = value == EXPORT_VALUE
                detail = "exported" if ok else f"{EXPORT_ANNOTATION} is {value!r}, not {EXPORT_VALUE!r}"
                results.append(Result("export", target, ok, detail, fix))
            except KubectlError as err:
                results.append(Result("export", target, False, str(err), fix))
    return results


def fleet_main(path: Path, kubeconfig: str | None) -> int:
    """Smoke-test a fleet stack: what it routes is its last `up`'s `fleet` output (`pulumi stack output fleet
    --json`); the config cluster's kubeconfig is --kubeconfig or the config cluster's stack's `kubeconfig` output,
    each region's its stack's."""
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    try:
        routing = json.loads(stack_output("fleet", stack, "--json"))
    except (KubectlError, FileNotFoundError, json.JSONDecodeError) as err:
        print(f"smoke test of fleet stack {stack} could not run: {err}", file=sys.stderr)
        return 2
    return report(
        f"fleet stack {stack}",
        lambda k: fleet_smoke(routing, k) + region_exports(routing),
        kubeconfig,
        routing["configCluster"],
    )


def report(
    what: str,
    check: Callable[[Kubectl], list[Result]],
    kubeconfig: str | None,
    stack: str,
    after: Callable[[Kubectl], str] | None = None,
) -> int:
    """Run `check` with --kubeconfig or `stack`'s kubeconfig output; print the table, then what `after` reports
    (never a failure: the measured time to serve); the exit status."""
    try:
        if kubeconfig:
            results = check(Kubectl(kubeconfig))
            extra = after(Kubectl(kubeconfig)) if after else ""
        else:
            with stack_kubeconfig(stack) as from_stack:
                results = check(Kubectl(from_stack))
                extra = after(Kubectl(from_stack)) if after else ""
    except (KubectlError, FileNotFoundError, subprocess.TimeoutExpired) as err:
        print(f"smoke test of {what} could not run: {err}", file=sys.stderr)
        return 2
    failed = sum(not r.ok for r in results)
    print(f"smoke test of {what}: {len(results) - failed} passed, {failed} failed\n")
    print(table(results))
    if extra:
        print(f"\n{extra}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name (Pulumi.<stack>.yaml) or a stack file")
    parser.add_argument("--kubeconfig", help="use this kubeconfig instead of the stack's kubeconfig output")
    parser.add_argument("--request-timeout", type=float, default=300.0, help="seconds for each serving request")
    args = parser.parse_args(argv)
    path = Path(args.stack) if args.stack.endswith((".yaml", ".yml")) else ROOT / f"Pulumi.{args.stack}.yaml"
    if is_fleet(load_stack_file(path)):
        return fleet_main(path, args.kubeconfig)
    want = expected(path)
    return report(
        f"stack {want.stack}",
        lambda k: smoke(want, k, args.request_timeout),
        args.kubeconfig,
        want.stack,
        after=lambda k: time_to_serve_report(want, k),
    )


if __name__ == "__main__":
    sys.exit(main())
