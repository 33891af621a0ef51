"""One example through the e2e's steps on its running local cluster, in a process of its own that has joined the
cluster's network namespace (tooling/local/local_stack.py enter_cluster_network) before any thread starts:

    python -m e2e.run_example examples/<name>/Pulumi.<stack>.yaml     exit 0, or 1 listing every problem found
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from e2e import cluster as c
from tooling.harness.offline import ROOT, load_stack_file, read_stack_yaml
from tooling.local import local_stack
from tooling.review.fleet_render import is_fleet
from tooling.review.render import stack_name

STACK_FILES = [
    path
    for path in [ROOT / "Pulumi.dev.yaml", *sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))]
    if not is_fleet(load_stack_file(path))
]
ONLY = [s for s in (os.environ.get("E2E_STACKS") or "").split(",") if s]
# Each step's deadline: far above what a step takes here (an `up` 12 to 60 s, a preview 10 to 20 s, kwok's pods ready
# at once) and short enough that a stuck step fails naming itself well inside the example's own deadline
# (test_examples.py EXAMPLE_TIMEOUT), which prints the last step started (Run.pulumi) if it is reached first.
UP_TIMEOUT = 600.0
PREVIEW_TIMEOUT = 300.0
POD_TIMEOUT = 300.0
REPLACING_OPS = {"replace", "create-replacement", "delete-replaced"}


def selected() -> list[Path]:
    return [p for p in STACK_FILES if not ONLY or stack_name(p) in ONLY]


class Run:
    """One example's local stack: its config as the stack file has it, changed step by step."""

    def __init__(self, path: Path):
        self.path, self.stack = path, stack_name(path)
        self.local = local_stack.LocalStack(self.stack)
        self.reference = local_stack.reference_dir()
        self.file = read_stack_yaml(path)
        self.outputs: dict[str, Any] = {}
        self.registered: set[str] = set()  # the URNs of the first up
        self.log: list[str] = []

    def config(self) -> dict[str, Any]:
        return self.file["config"]

    def write(self) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump(self.file, f)
        local_stack.write_project(self.local, Path(f.name), [self.reference])

    def pulumi(self, command: str, timeout: float, **kwargs: Any) -> Any:
        events: list[Any] = []
        started = time.monotonic()
        print(f"{self.stack}: pulumi {command} started (deadline {timeout:.0f} s)", flush=True)
        result = c.with_deadline(
            f"{self.stack}: pulumi {command}",
            timeout,
            lambda: local_stack.run(self.local, command, on_output=self.log.append, on_event=events.append, **kwargs),
        )
        print(f"{self.stack}: pulumi {command} done in {time.monotonic() - started:.0f} s", flush=True)
        if command == "up":
            self.outputs = {k: v.value for k, v in result.outputs.items()}
        return result, ops(events)

    def local_config(self, config: dict[str, Any]) -> dict[str, Any]:
        """`config` with the local target the stack's local config file has (written by local_stack.write_project:
        the kubeconfig and every chart source, the vendored charts and the Go module proxy's among them)."""
        written = yaml.safe_load(self.local.config_file.read_text())["config"]["tpu-serving:local"]
        return {**config, "tpu-serving:local": written}


def ops(events: list[Any]) -> dict[str, str]:
    """urn -> the engine's operation, from the engine events of a preview or an update."""
    out = {}
    for event in events:
        pre = getattr(event, "resource_pre_event", None)
        if pre is not None:
            out[pre.metadata.urn] = str(getattr(pre.metadata.op, "value", pre.metadata.op))
    return out


def workloads(run: Run) -> dict[str, dict[str, Any]]:
    return run.outputs.get("workloads") or {}


# Workload types whose pods a controller creates that the local cluster does not run (no toolchain build of it, so
# no local process stands in for its Deployment: tooling/local/local_controllers.py EVERY_CONTROLLER): the e2e names
# why they have no pods instead of waiting for them.
NOT_RUN_HERE: dict[str, str] = {
    "pathways-job": "its PathwaysJob becomes a JobSet only through the PathwaysJob controller (google/pathways-job, "
    "stacks/addons/pathways_job.py), which the Go module proxy does not serve (stacks/facts/versions.py "
    "TOOLCHAIN_UNBUILDABLE: 403 for github.com/google/pathways-job@v0.1.4): kwok runs its pod, nothing reconciles, "
    "no pod is created",
}


def serving_namespaces(run: Run) -> list[str]:
    """The namespaces of the workloads whose pods the local cluster creates (not NOT_RUN_HERE's)."""
    return sorted({w["namespace"] for w in workloads(run).values() if w.get("type") not in NOT_RUN_HERE})


def not_run_here(run: Run) -> list[str]:
    """A named reason for each workload whose pods the local cluster cannot create (NOT_RUN_HERE)."""
    return [
        f"{name}: no pods, {NOT_RUN_HERE[w['type']]}"
        for name, w in sorted(workloads(run).items())
        if w.get("type") in NOT_RUN_HERE
    ]


# ---- the checks ------------------------------------------------------------------------------------------------------


def sync_window_ends(run: Run) -> float:
    """When (time.time()) the last controller's cache-sync window ends: the clock starts at the controllers' start
    (controllers.json `started`), so every step before it runs inside the window instead of after it."""
    running = c.controllers(run.local)
    assert running, "the local cluster runs no controller for the stack"
    return max(ctrl.started for ctrl in running) + c.SYNC_WINDOW


def check_controllers(run: Run) -> list[str]:
    """Every controller the stack installs still runs once its cache-sync window has passed, and logged no error.
    Waits only for what is left of the window (sync_window_ends)."""
    wait = sync_window_ends(run) - time.time()
    if wait > 0:
        print(f"{run.stack}: waiting {wait:.0f} s for the controllers' cache-sync window", flush=True)
        time.sleep(wait)
    problems = []
    for ctrl in c.controllers(run.local):
        if not c.alive(ctrl.pid):
            problems.append(f"{ctrl.name} (pid {ctrl.pid}) exited within its cache-sync window; log {ctrl.log}")
        if unexplained := c.unexplained_restarts(ctrl):
            problems.append(
                f"{ctrl.name} restarted {ctrl.restarts} times, {unexplained} not by design (e2e/cluster.py "
                f"EXPECTED_EXITS); log {ctrl.log}"
            )
        problems += [f"{ctrl.name} logged: {line[:300]}" for line in c.errors_in(ctrl.log, controller=ctrl.name)[:5]]
    return problems


def check_placement(run: Run, kube: local_stack.Kube) -> tuple[list[str], list[str]]:
    """Every serving pod (every pod asking for TPU chips, as many as the stack's server objects ask for at their
    current size) on a node of its own pool, or Pending for a reason named here: its pool is full (the stack asks
    more chips of it than its mirrored nodes hold, and the scheduler says `Insufficient google.com/tpu`). Anything
    else is a problem: a TPU pod asking for no pool, a pod on another pool's node, a Pending pod on a pool with room,
    a server whose pods never appear."""
    problems, pending = [], []
    if not serving_namespaces(run):
        return [], not_run_here(run)

    def settled() -> list[c.PodPlacement] | None:
        expected = sum(c.expected_tpu_pods(kube, serving_namespaces(run)).values())
        found = c.placements(kube, serving_namespaces(run))
        done = len([p for p in found if p.chips]) == expected and expected > 0
        return found if done and all(p.node or "Unschedulable" in (p.why_pending or "") for p in found) else None

    try:
        found = c.wait_for(f"{run.stack}: serving pods scheduled or unschedulable", POD_TIMEOUT, settled)
    except TimeoutError as err:
        expected = c.expected_tpu_pods(kube, serving_namespaces(run))
        found = c.placements(kube, serving_namespaces(run))
        return [
            f"{err}: the servers ask for {expected} TPU pods, found {len([p for p in found if p.chips])}: "
            f"{[(p.pod, p.node or p.why_pending) for p in found]}"
        ], []
    pending += not_run_here(run)
    held = c.pool_chips(kube)
    asked: dict[str, int] = {}
    for p in found:
        asked[str(p.pool)] = asked.get(str(p.pool), 0) + p.chips
    for p in found:
        if p.pool is None:
            problems.append(f"{p.pod} asks for {p.chips} TPU chips and no stack pool (node selector tpu-serving/pool)")
        elif p.node is not None:
            if p.node_pool != p.pool:
                problems.append(f"{p.pod} asks for pool {p.pool} but runs on {p.node} of pool {p.node_pool!r}")
        elif "Insufficient google.com/tpu" in (p.why_pending or "") and asked[p.pool] > held.get(p.pool, 0):
            pending.append(
                f"{p.pod}: Pending, pool {p.pool} is full: its pods ask for {asked[p.pool]} chips, its nodes hold "
                f"{held.get(p.pool, 0)}: {p.why_pending}"
            )
        else:
            problems.append(
                f"{p.pod}: Pending on pool {p.pool} ({held.get(p.pool, 0)} chips, {asked[p.pool]} asked): "
                f"{p.why_pending}"
            )
    return problems, pending


def alert_hpa_names(run: Run, workload: str) -> set[str] | None:
    """The HPA names the stack's alert policies read for a workload (stacks/pieces/alerts.py), from the plan; None
    when the stack has no alert policies for it."""
    from stacks.config import parse_stack_config
    from workloads.registry import WORKLOAD_TYPES

    raw = {k.split(":", 1)[1]: v for k, v in run.config().items() if k.startswith("tpu-serving:")}
    cfg = parse_stack_config(
        raw,
        stack=run.stack,
        pulumi_project="tpu-serving",
        gcp_project=run.config().get("gcp:project"),
        region=run.config().get("gcp:region"),
        workload_types=WORKLOAD_TYPES,
    )
    names: set[str] | None = None
    for alerts in cfg.alerts_plan.workloads:
        if alerts.name == workload:
            names = names or set()
            for rule in alerts.rules:
                names.update(re.findall(r'horizontalpodautoscaler="([^"]+)"', rule.query))
    return names


SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"

# KEDA's condition when every trigger's query fails (kedacore/keda@v2.20.2 pkg/scaling/executor
# scale_scaledobjects.go: reason "TriggerError", "Triggers defined in ScaledObject are not working correctly"): here
# every query needs a Google token (Managed Prometheus's API, Workload Identity), which the local stand-in cannot give.
TRIGGER_ERROR = "TriggerError"
TOKEN_FAILURE = "oauth2: cannot fetch token"


def only_google_fails(run: Run, namespace: str, name: str) -> bool:
    """Whether the KEDA operator's errors for this ScaledObject are all, and only, its triggers' queries failing on
    the stand-in token endpoint (e2e/cluster.py BENIGN_ERRORS accepts no other)."""
    operator = next((x for x in c.controllers(run.local) if x.name == "keda-operator"), None)
    if operator is None or c.errors_in(operator.log, controller=operator.name):
        return False
    mine = (f'"namespace": "{namespace}", "name": "{name}"', f'"scaledObject.Name": "{name}"')
    text = operator.log.read_text(errors="replace")
    return any(TOKEN_FAILURE in line and any(m in line for m in mine) for line in text.splitlines())


def check_scaled_objects(run: Run, kube: local_stack.Kube) -> tuple[list[str], list[str]]:
    """Every ScaledObject the stack registered exists and is Ready with its HPA, under the name the alerts read; or,
    here, not Ready only because its triggers cannot reach Managed Prometheus without Google credentials (named),
    its HPA made all the same."""
    problems: list[str] = []
    named: list[str] = []
    # as many as the stack registered (its first up's ScaledObject resources)
    expected = sum(1 for urn in run.registered if resource_key(urn)[0] == SCALED_OBJECT)
    names = set(workloads(run))
    found = 0
    # each namespace once (workloads may share one: a canary's two)
    for ns in sorted({w["namespace"] for w in workloads(run).values()}):
        # none where the cluster serves no ScaledObject (no KEDA in this stack: the count below says whether the
        # stack registered one)
        scaled = c.items_or_none(kube, f"/apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects")
        found += len(scaled)
        for so in scaled:
            problems += _check_scaled_object(run, kube, ns, so["metadata"]["name"], names, named)
    if found != expected:
        problems.append(f"the stack registered {expected} ScaledObjects, its workloads' namespaces hold {found}")
    return problems, named


def _check_scaled_object(
    run: Run, kube: local_stack.Kube, ns: str, so_name: str, workload_names: set[str], named: list[str]
) -> list[str]:
    path = f"/apis/keda.sh/v1alpha1/namespaces/{ns}/scaledobjects/{so_name}"

    def settled() -> dict[str, Any] | None:
        obj = kube.get(path)
        ready = {x["type"]: x for x in obj.get("status", {}).get("conditions") or []}.get("Ready", {})
        if ready.get("status") == "True":
            return obj
        if ready.get("reason") == TRIGGER_ERROR and obj["status"].get("hpaName"):
            return obj
        return None

    try:
        obj = c.wait_for(f"ScaledObject {ns}/{so_name} Ready", POD_TIMEOUT, settled)
    except TimeoutError:
        obj = kube.get(path)
        return [f"ScaledObject {ns}/{so_name} not Ready: {obj.get('status', {}).get('conditions')}"]
    problems = []
    ready = {x["type"]: x for x in obj["status"].get("conditions") or []}["Ready"]
    hpa = obj["status"].get("hpaName")
    if ready["status"] != "True":
        if only_google_fails(run, ns, so_name):
            named.append(
                f"ScaledObject {ns}/{so_name}: Ready False ({ready['reason']}: {ready.get('message')}): its "
                "triggers query Managed Prometheus with Workload Identity, which the local cluster cannot "
                f"give a token; KEDA made its HPA {hpa!r}"
            )
        else:
            problems.append(f"ScaledObject {ns}/{so_name} not Ready: {obj['status'].get('conditions')}")
    if not hpa or c.get_or_none(kube, f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{hpa}") is None:
        problems.append(f"ScaledObject {ns}/{so_name}: its HPA {hpa!r} does not exist")
    if so_name in workload_names:
        read = alert_hpa_names(run, so_name)
        if read is not None and read != {hpa}:
            problems.append(f"alerts of {so_name} read HPA {sorted(read)}, KEDA made {hpa!r}")
    return problems


def check_pdbs(run: Run, kube: local_stack.Kube) -> list[str]:
    """Every PodDisruptionBudget of the stack counts the pods it protects (status.expectedPods = its pods, > 0)."""
    problems = []
    for ns in serving_namespaces(run):
        for pdb in kube.items(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"):
            selector = pdb["spec"].get("selector", {}).get("matchLabels", {})
            mine = [p for p in c.pods(kube, ns) if selector.items() <= (p["metadata"].get("labels") or {}).items()]

            def counted(ns: str = ns, name: str = pdb["metadata"]["name"], n: int = len(mine)) -> bool:
                got = kube.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}").get("status", {})
                return n > 0 and got.get("expectedPods") == n

            try:
                c.wait_for(f"PDB {ns}/{pdb['metadata']['name']} counts its pods", 120, counted)
            except TimeoutError:
                status = kube.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{pdb['metadata']['name']}")
                problems.append(
                    f"PDB {ns}/{pdb['metadata']['name']}: expectedPods {status.get('status', {}).get('expectedPods')}, "
                    f"pods matching its selector {len(mine)}"
                )
    return problems


def reviewed(run: Run, old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """The review's verdict on a config change (e2e/review.py, in its own process)."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "old.json", Path(tmp) / "new.json"
        a.write_text(json.dumps(run.local_config(old)))
        b.write_text(json.dumps(run.local_config(new)))
        out = subprocess.run(
            [sys.executable, "-m", "e2e.review", str(a), str(b), run.stack],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    if out.returncode != 0:
        raise RuntimeError(f"the review of the change failed (exit {out.returncode}): {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def resource_key(urn: str) -> tuple[str, str]:
    """(type, name) of a URN: the engine's URN carries every ancestor's type (`Parent$Child$type`), the offline
    run's (tooling/harness/offline.py, which the review reads) its parent's only, so they are compared by these."""
    qualified, name = urn.split("::")[-2:]
    return qualified.rsplit("$", 1)[-1], name


def check_change(run: Run, change: str, mutate, *, in_place: bool = False) -> list[str]:
    """Apply a config change: what the review marks replaced is replaced by the engine, nothing else is; an in-place
    change (`in_place`) updates something and replaces nothing. A change the review names a capacity problem (its new
    servers do not fit beside the old ones on their pool: the `up` would wait out its timeouts with the new pods
    Pending, as on GKE) is a problem of the program, reported and not applied."""
    old = copy.deepcopy(run.config())
    mutate(run.config())
    verdict = reviewed(run, old, run.config())
    if verdict.get("capacity"):
        run.file["config"] = old
        return [
            f"{change}: the review names a capacity problem, so the up would hang: {line}"
            for line in verdict["capacity"]
        ]
    run.write()
    _, done = run.pulumi("up", UP_TIMEOUT)
    by_key = {resource_key(urn): op for urn, op in done.items()}
    replaced = {resource_key(urn) for urn in verdict["replaced"]}
    problems = []
    if in_place and (replaced or not verdict["updated"]):
        problems.append(
            f"{change}: an in-place change, but the review replaces {sorted(replaced)} and updates "
            f"{len(verdict['updated'])} objects"
        )
    if in_place and not any(op == "update" for op in by_key.values()):
        problems.append(f"{change}: an in-place change, but the engine updated nothing: {sorted(set(by_key.values()))}")
    for key in sorted(replaced):
        if by_key.get(key) not in REPLACING_OPS:
            problems.append(f"{change}: the review replaces {key[0]} {key[1]}, the engine did {by_key.get(key)!r}")
    for key, op in sorted(by_key.items()):
        if op in REPLACING_OPS and key not in replaced:
            problems.append(f"{change}: the engine replaced {key[0]} {key[1]}, which the review calls in place")
    return problems


def first_workload(run: Run) -> dict[str, Any] | None:
    return next(iter(run.config().get("tpu-serving:workloads") or []), None)


# ---- the test --------------------------------------------------------------------------------------------------------


def check_example(path: Path) -> list[str]:
    """Every step on the stack's running local cluster; the problems found (an `up` or `preview` that fails stops
    the run there)."""
    run = Run(path)
    # the cluster is new (test_examples.py starts one per example): a state left by an earlier run describes objects
    # of a cluster that is gone, and its pending operations would block the first `up`
    shutil.rmtree(run.local.state, ignore_errors=True)
    local_stack.enter_cluster_network(run.stack)
    local_stack.prepare(run.stack, source=path, reference=run.reference)
    kube = local_stack.Kube(run.local.kubeconfig)
    before = c.snapshot(kube)
    try:
        _, created = run.pulumi("up", UP_TIMEOUT)
    except Exception as err:
        return [f"up: {err}\n" + "\n".join(run.log[-60:])]
    run.registered = set(created)
    try:
        run.pulumi("preview", PREVIEW_TIMEOUT, expect_no_changes=True)
    except Exception as err:
        return [f"a second preview shows changes: {err}\n" + "\n".join(run.log[-60:])]

    problems: list[str] = []
    try:
        later_steps(run, kube, before, problems)
    except Exception as err:  # a failed step stops the run; what was found before it is kept
        text = str(err)
        lines = text.splitlines()
        errors = [
            line.strip()
            for i, line in enumerate(lines)
            if ("error" in line.lower() and "warning:" not in line)
            or any("error occurred" in before for before in lines[max(0, i - 2) : i])
        ]
        problems.append(f"{type(err).__name__}: " + ("\n".join(dict.fromkeys(errors))[:4000] or text[-3000:]))
    return problems


def changes_and_pause(run: Run, kube: local_stack.Kube, problems: list[str]) -> None:
    """An in-place change, a replacing one, then pause and unpause, appending to `problems` as it goes."""
    # an in-place change (every PodMonitoring's interval) and a replacing one (a workload's namespace)
    interval = run.config().get("tpu-serving:monitoring", {}).get("scrapeInterval", "15s")
    problems += check_change(
        run,
        "monitoring.scrapeInterval",
        lambda cfg: cfg.setdefault("tpu-serving:monitoring", {}).update(
            scrapeInterval="30s" if interval != "30s" else "20s"
        ),
        in_place=True,
    )
    workload = first_workload(run)
    if workload is not None:
        moved = f"{workload['name']}-moved"[:63]
        problems += check_change(run, "a workload's namespace", lambda cfg: workload.update(namespace=moved))

    # pause: workloads at zero; unpause: back, placed as before
    run.config()["tpu-serving:paused"] = True
    run.write()
    run.pulumi("up", UP_TIMEOUT)
    try:
        c.wait_for(
            f"{run.stack}: no serving pod while paused",
            POD_TIMEOUT,
            lambda: not c.placements(kube, serving_namespaces(run)),
        )
    except TimeoutError as err:
        problems.append(f"pause: {err}")
    run.config()["tpu-serving:paused"] = False
    run.write()
    run.pulumi("up", UP_TIMEOUT)
    problems += [f"after unpause: {p}" for p in check_placement(run, kube)[0]]


def later_steps(run: Run, kube: local_stack.Kube, before: dict[str, set[str]], problems: list[str]) -> None:
    """Everything after a clean `up` and second preview, appending to `problems` as it goes."""
    placement, pending = check_placement(run, kube)
    scaling, named = check_scaled_objects(run, kube)
    problems += placement + scaling + check_pdbs(run, kube)
    for line in [*pending, *named]:
        print(f"{run.stack}: {line}", flush=True)
    # the controllers' cache-sync window runs from their start: the transitions, pause and decommission below run
    # inside it; the controllers are checked after it (check_controllers waits only for what is left of it) and
    # before destroy, also when one of those steps fails
    try:
        changes_and_pause(run, kube, problems)
        # once the controllers have acted on what the stack applied (defaults, webhooks, autoscalers), the stack read
        # back from the cluster still matches the program: what a later `pulumi preview --refresh` on GKE would show
        try:
            run.pulumi("preview", PREVIEW_TIMEOUT, expect_no_changes=True, refresh=True)
        except Exception as err:
            changed = [line for line in str(err).splitlines() if line.strip().startswith(("~", "+", "-", "+-", "-+"))]
            problems.append(
                "a preview with refresh, after the controllers acted, shows changes:\n"
                + "\n".join(changed[:40] or str(err).splitlines()[-40:])
            )
        # destroy, as the documented procedure does it (staging and prod lift protection with decommission first)
        run.config()["tpu-serving:decommission"] = True
        run.write()
        run.pulumi("up", UP_TIMEOUT)
    finally:
        problems += check_controllers(run)
    run.pulumi("destroy", UP_TIMEOUT)
    kept: set[str] = (
        set()
    )  # CRDs the stack keeps on purpose (helm.sh/resource-policy: keep, docs/operations.md: Kueue's)

    def without_kept(after: dict[str, set[str]]) -> dict[str, set[str]]:
        """`after` less the CRDs kept on purpose and the APIServices the API server serves them under."""
        return {
            **after,
            "crds": after["crds"] - kept,
            "apiservices": after["apiservices"] - c.crd_api_services(kube, kept),
        }

    def as_before() -> bool:
        after = c.snapshot(kube, before["namespaces"])
        kept.clear()
        kept.update(name for name in after["crds"] - before["crds"] if c.kept_on_purpose(kube, name))
        return without_kept(after) == before

    try:
        c.wait_for(f"{run.stack}: the cluster as before the stack", 300, as_before)
    except TimeoutError:
        after = without_kept(c.snapshot(kube, before["namespaces"]))
        left = {kind: sorted(after[kind] - before[kind]) for kind in before if after[kind] - before[kind]}
        problems.append(f"destroy left: {left}")
    if kept:
        print(f"{run.stack}: destroy keeps CRDs on purpose (helm.sh/resource-policy: keep): {sorted(kept)}", flush=True)


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve()
    started = time.monotonic()
    problems = check_example(path)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    # beside the cluster's logs, for a reader while a long `make e2e` goes on (pytest prints at the end)
    summary = [f"{stack_name(path)}: {len(problems)} problem(s) in {time.monotonic() - started:.0f} s", *problems]
    (local_stack.LOCAL / stack_name(path)).mkdir(parents=True, exist_ok=True)
    (local_stack.LOCAL / stack_name(path) / "e2e-result.txt").write_text("\n".join(summary) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
