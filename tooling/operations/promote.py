"""`make promote STACK=<stack>`: the release gate of each workload with a candidate (stacks/serving/release.py).

It waits for the gate's Job of the current step (stacks/serving/benchmark.py, created by the last `pulumi up`),
reads its inference-perf summary from the stack bucket, reads the candidate's SLO burn rates, decides (`decide`,
pure) and writes the decision into the stack file (`apply`, comments kept): the next `pulumi up` applies it and the
pull request's render diff shows it (docs/operations.md "Release train").

- advance: the candidate's weight goes to the next step (blueGreen: 0 -> 100);
- hold: the result is inconclusive (too few requests finished): `rollout.attempt` goes up by one (the next `up` runs
  a new gate Job writing a new report path), the weight stays;
- rollback: weight 0, the candidate removed (its server set and pool go with the next `up`), `rollout.attempt` up by
  one (a candidate proposed again runs a new Job and report path);
- promote (at weight 100): the candidate's release fields become the workload's (not `replicas`, the canary's
  size), `slot` flips to the candidate's, and its result becomes `accepted`; the next `up` deletes the old set.

Read from the summary (kubernetes-sigs/inference-perf v0.7.0 inference_perf/reportgen/base.py summarize_requests,
summarize, calculate_goodput_metrics) through stacks/serving/benchmark.py MEASURES, the numbers the gate Job prints
for the dashboard: successes.latency.{time_to_first_token,time_per_output_token}.p90 (seconds),
successes.throughput.output_tokens_per_sec, successes.goodput_metrics.goodput_percentage (0-100), successes.count,
failures.count; tested on upstream's recorded reports (tests/fixtures/promote/recorded/ORIGIN.md). The candidate's burn rate: Cloud Monitoring's select_slo_burn_rate over the fast window's lookbacks
(stacks/monitoring/alerts.py BURN_WINDOWS), the condition its fast burn-rate policy alerts on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from stacks.monitoring import alerts
from stacks.serving import benchmark
from stacks.serving import release as releases

# Fewer finished requests than this share of what the scenario sends: the run says nothing (hold and run again).
MIN_REQUEST_SHARE = 0.8
# Without an availability objective, the failures a run may have.
DEFAULT_FAILURE_RATIO = 0.01
# What a full promotion does not copy into the workload: the candidate set's own size.
NOT_PROMOTED = ("replicas",)


@dataclass(frozen=True)
class Result:
    """One gate run, from inference-perf's summary."""

    ttft_p90_s: float | None
    tpot_p90_s: float | None
    output_tokens_per_s: float
    goodput: float | None  # fraction of requests within the SLO thresholds; None: no constraint measured
    requests: int
    failures: int
    source: str


def read_summary(doc: dict[str, Any], source: str) -> Result:
    """The gate's numbers from inference-perf's summary_lifecycle_metrics.json, read as the gate Job's summary line
    reads them (stacks/serving/benchmark.py MEASURES: one definition for the Job, the dashboard and the gate)."""
    line = benchmark.summary_line(doc, {})
    return Result(
        ttft_p90_s=line.get("ttftP90Seconds"),
        tpot_p90_s=line.get("tpotP90Seconds"),
        output_tokens_per_s=line.get("outputTokensPerSecond", 0.0),
        goodput=line.get("goodput"),
        requests=int(line.get("requests", 0)),
        failures=int(line.get("failures", 0)),
        source=source,
    )


@dataclass(frozen=True)
class Decision:
    action: str  # advance | hold | promote | rollback
    weight: int  # the candidate's weight after it
    reason: str


def _regressions(result: Result, accepted: dict[str, Any] | None, tolerance: float) -> list[str]:
    """What is worse than the current release's accepted result by more than `tolerance`."""
    if not accepted:
        return []
    found = []
    for what, mine, theirs in (
        ("ttft p90", result.ttft_p90_s, accepted.get("ttftP90Seconds")),
        ("tpot p90", result.tpot_p90_s, accepted.get("tpotP90Seconds")),
    ):
        if mine is not None and theirs and mine > theirs * (1 + tolerance):
            found.append(f"{what} {mine:.3g} s > accepted {theirs:.3g} s +{tolerance:.0%}")
    theirs = accepted.get("outputTokensPerSecond")
    if theirs and result.output_tokens_per_s < theirs * (1 - tolerance):
        found.append(f"output {result.output_tokens_per_s:.4g} tokens/s < accepted {theirs:.4g} -{tolerance:.0%}")
    return found


def next_weight(strategy: str, steps: list[int], weight: int) -> int:
    """The candidate's next weight: the next step (canary), or all of it (blueGreen)."""
    if strategy == "blueGreen":
        return 100
    return next(s for s in steps if s > weight)


def decide(
    *,
    strategy: str,
    steps: list[int],
    weight: int,
    gate: dict[str, Any],
    accepted: dict[str, Any] | None,
    result: Result | None,
    expected_requests: int,
    burning: list[str],
    failure_ratio: float = DEFAULT_FAILURE_RATIO,
) -> Decision:
    """The gate: roll back when the candidate's burn-rate alerts fire, its run failed, it failed more requests than
    its availability allows, its goodput is below `gate.minGoodput` or it regressed beyond `gate.maxRegression`
    against the accepted result; hold when too few requests finished to tell; else advance (or, at 100, promote)."""
    if burning:
        return Decision("rollback", 0, f"the candidate burns its error budget: {'; '.join(burning)}")
    if result is None:
        return Decision("rollback", 0, "the gate's benchmark failed (no report): the candidate did not serve it")
    total = result.requests + result.failures
    if total and result.failures / total > failure_ratio:
        return Decision("rollback", 0, f"{result.failures} of {total} requests failed (more than {failure_ratio:.2%})")
    if result.requests < MIN_REQUEST_SHARE * expected_requests:
        return Decision(
            "hold",
            weight,
            f"only {result.requests} of {expected_requests} requests finished: inconclusive, run the gate again",
        )
    min_goodput = float(gate.get("minGoodput", 0.9))
    if result.goodput is not None and result.goodput < min_goodput:
        return Decision("rollback", 0, f"goodput {result.goodput:.2f} below the gate's {min_goodput:.2f}")
    worse = _regressions(result, accepted, float(gate.get("maxRegression", 0.1)))
    if worse:
        return Decision("rollback", 0, "; ".join(worse))
    measured = (
        f"ttft p90 {result.ttft_p90_s} s, tpot p90 {result.tpot_p90_s} s, "
        f"{result.output_tokens_per_s:.4g} output tokens/s, goodput {result.goodput}"
    )
    baseline = "" if accepted else " (no accepted result to compare with: the SLOs alone)"
    if weight >= 100:
        return Decision("promote", 0, f"the gate passed at 100%{baseline}: {measured}")
    new = next_weight(strategy, steps, weight)
    return Decision("advance", new, f"the gate passed at {weight}%{baseline}: {measured}")


def apply(workload: Any, decision: Decision, result: Result | None, at: str) -> None:
    """Write `decision` into one workload of the stack file (a ruamel.yaml round-trip mapping, so its comments
    stay): see the module's docstring."""
    rollout = workload["rollout"]
    if decision.action == "promote":
        for key, value in rollout["candidate"].items():
            if key not in NOT_PROMOTED:
                workload[key] = value
        rollout["slot"] = releases.other(rollout.get("slot", "a"))
        if result is not None:
            rollout["accepted"] = {
                "ttftP90Seconds": result.ttft_p90_s,
                "tpotP90Seconds": result.tpot_p90_s,
                "outputTokensPerSecond": round(result.output_tokens_per_s, 3),
                "goodput": result.goodput if result.goodput is not None else 1.0,
                "source": result.source,
            }
    if decision.action in ("promote", "rollback"):
        del rollout["candidate"]
    if decision.action != "hold":
        rollout["weight"] = decision.weight
    if decision.action in ("hold", "rollback"):
        # a new gate Job and report path for the next run: the same candidate and weight again (hold), or a
        # candidate proposed again after a rollback, would otherwise reuse the old Job and read its old report
        rollout["attempt"] = int(rollout.get("attempt", 0)) + 1
    rollout["lastDecision"] = {
        "action": decision.action,
        "weight": decision.weight,
        "reason": decision.reason,
        "at": at,
    }


# ---- I/O: kubectl with the stack's kubeconfig, gcloud, the Monitoring API ------------------------------------


def _run(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ...: {done.stderr.strip() or done.returncode}")
    return done.stdout


def wait_for_job(kubeconfig: str, namespace: str, job: str, timeout_s: int) -> bool:
    """True once the gate's Job completed, False when it failed (kubectl get job -o json: status.conditions)."""
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    deadline = time.monotonic() + timeout_s
    while True:
        status = json.loads(_run("kubectl", "-n", namespace, "get", "job", job, "-o", "json", env=env))["status"]
        kinds = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
        if "Complete" in kinds or "Failed" in kinds:
            return "Complete" in kinds
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {namespace}/{job} still running after {timeout_s} s")
        time.sleep(30)


def _monitoring(path: str, token: str, **query: str) -> dict[str, Any]:
    url = f"https://monitoring.googleapis.com/v3/{path}?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 (a fixed https URL)
        return json.loads(answer.read())


def burning(project: str, service_id: str) -> list[str]:
    """The candidate's SLOs whose burn rate is above the fast window's rate over both its lookbacks."""
    token = _run("gcloud", "auth", "print-access-token").strip()
    fast = alerts.BURN_WINDOWS[0]
    now = datetime.now(UTC)
    found = []
    slos = _monitoring(f"projects/{project}/services/{service_id}/serviceLevelObjectives", token)
    for slo in slos.get("serviceLevelObjectives", []):
        rates = []
        for lookback in (fast.long, fast.short):
            series = _monitoring(
                f"projects/{project}/timeSeries",
                token,
                filter=alerts.burn_rate_filter(slo["name"], lookback),
                **{
                    "interval.startTime": (now - timedelta(minutes=5)).isoformat(),
                    "interval.endTime": now.isoformat(),
                },
            )
            points = [p for s in series.get("timeSeries", []) for p in s.get("points", [])]
            rates.append(float(points[0]["value"]["doubleValue"]) if points else 0.0)
        if min(rates) > fast.rate:
            found.append(f"{slo.get('displayName', slo['name'])} burns {min(rates):.3g}x (> {fast.rate:g}x)")
    return found


def main(argv: list[str] | None = None) -> int:
    """Each candidate's gate, decided and written; a failing command or a missing stack file is one line, exit 1."""
    try:
        return _promote(argv)
    except (RuntimeError, TimeoutError, FileNotFoundError, OSError) as err:
        print(f"make promote: {err}", file=sys.stderr)
        return 1


def _promote(argv: list[str] | None) -> int:
    from tooling.harness.offline import parse_stack_file

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stack")
    parser.add_argument("--kubeconfig", help="default: the stack's `kubeconfig` output")
    parser.add_argument("--timeout", type=int, default=benchmark.WAIT_S + 3600)
    args = parser.parse_args(argv)
    path = Path(f"Pulumi.{args.stack}.yaml")
    cfg = parse_stack_file(path, args.stack)
    candidates = [w for w in cfg.workloads if w.release is not None and w.release.candidate and w.gate_job_name]
    if not candidates:
        print(f"{path}: no workload has a rollout candidate; nothing to promote")
        return 0
    if args.kubeconfig is not None:
        return _decide_all(path, cfg, candidates, args.kubeconfig, args.timeout)
    # the stack's kubeconfig output in a private temporary file, removed afterwards
    out = _run("pulumi", "stack", "output", "kubeconfig", "--show-secrets", "--stack", args.stack)
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig") as handle:  # mode 0600 (mkstemp)
        handle.write(out)
        handle.flush()
        return _decide_all(path, cfg, candidates, handle.name, args.timeout)


def stack_yaml(text: str) -> Any:
    """A ruamel.yaml round-trip loader and dumper that writes a stack file back as it was laid out: its own
    indentation (ruamel.yaml.util.load_yaml_guess_indent: the block sequences' indent and the dash's offset; the
    examples use mappings 2, sequences 4, offset 2, where ruamel's defaults, 2/2/0, would reindent every list), its
    quotes, and long lines unwrapped (width), so `make promote` changes only the rollout's lines."""
    from ruamel.yaml import YAML
    from ruamel.yaml.util import load_yaml_guess_indent

    _, sequence, offset = load_yaml_guess_indent(text)
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    if sequence is not None:
        offset = offset or 0
        yaml.indent(mapping=max(2, sequence - offset) if offset else sequence, sequence=sequence, offset=offset)
    return yaml


def _decide_all(path: Path, cfg: Any, candidates: list[Any], kubeconfig: str, timeout: int) -> int:
    """Each candidate's gate decided, then the stack file written once."""
    text = path.read_text()
    yaml = stack_yaml(text)
    doc = yaml.load(text)
    entries = doc["config"]["tpu-serving:workloads"]
    for plan in candidates:
        r = plan.release
        assert r is not None and plan.gate_job_name is not None
        entry = next(e for e in entries if e["name"] == r.route)
        rollout = entry["rollout"]
        scenario = benchmark.SCENARIOS[r.gate.scenario]
        url = benchmark.summary_url(plan.bucket, r.route, plan.gate_job_name)
        ok = wait_for_job(kubeconfig, plan.namespace, plan.gate_job_name, timeout)
        result = read_summary(json.loads(_run("gcloud", "storage", "cat", url)), url) if ok else None
        slo = getattr(plan.workload, "slo", None)
        decision = decide(
            strategy=r.strategy,
            steps=list(rollout.get("steps", [10, 50, 100])),
            weight=int(rollout.get("weight", 0)),
            gate=dict(rollout.get("gate") or {}),
            accepted=dict(rollout["accepted"]) if rollout.get("accepted") else None,
            result=result,
            expected_requests=int(scenario.rate * scenario.duration_s),
            burning=burning(cfg.gcp_project, f"tpu-serving-{cfg.cluster_plan.name}-{plan.name}"[:128]),
            failure_ratio=1 - slo.availability if slo is not None and slo.availability else DEFAULT_FAILURE_RATIO,
        )
        apply(entry, decision, result, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        print(f"{r.route}: {decision.action} -> weight {decision.weight}: {decision.reason}")
    with path.open("w") as out_file:
        yaml.dump(doc, out_file)
    print(f"wrote {path}: review the render diff (make diff STACK={cfg.stack}), then pulumi up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
