"""Docs tables derived from the program's registries: tooling/generate/docs.py writes them into docs/addons-and-monitoring.md
docs/operations.md and docs/stack-config.md and checks them (`make lint`); tests/test_metrics_adapters.py and tests/test_gke_managed.py
check the pages hold them.

python -m tooling.generate.readme_tables     # print the tables
"""

from __future__ import annotations

import dataclasses

from stacks.facts import gke_managed
from stacks.facts.versions import CHARTS, default_version
from stacks.model import profiles
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring.adapters import AdapterContext
from stacks.reports import time_to_serve
from tooling.harness.offline import ROOT, parse_stack_file
from tooling.review.summary import table

ORIGINS = {
    "server": "model server series",
    "tpu": "TPU device plugin series",
    "gateway": "the gateway's endpoint picker series",
}


def _sample_context(entry: metrics_adapters.MetricsAdapter) -> AdapterContext:
    """Any stack's facts: what a table shows (the pods' Pod Security level) does not depend on them."""
    return AdapterContext(
        project="project",
        cluster="cluster",
        identity_suffix="stack",
        chart=lambda key: CHARTS[key][default_version(key)],
        namespace=entry.namespace,
    )


def metrics_adapters_table() -> str:
    rows = []
    for entry in metrics_adapters.ADAPTERS.values():
        default = " (default)" if entry.name == metrics_adapters.DEFAULT else ""
        serves = ", ".join(ORIGINS[o] for o in sorted(entry.origins))
        rows.append(
            [
                f"`{entry.name}`{default}",
                entry.description,
                ", ".join(f"`{api}`" for api in entry.apis),
                serves + ("" if entry.ratios else "; no used/total ratios"),
                f"`{entry.namespace}`: {entry.build(_sample_context(entry)).namespace_level()}",
                entry.api_port,
            ]
        )
    rows.append([f"`{metrics_adapters.NONE}`", "no adapter: no workload may autoscale", "", "", "", ""])
    header = ["`monitoring.adapter`", "what the stack installs", "metrics APIs", "HPA metrics", "namespace", "port"]
    return "\n".join(table(header, rows))


def gke_managed_table() -> str:
    """stacks/facts/gke_managed.py MANAGED: what GKE installs, from which version, with what (tests/test_gke_managed.py)."""
    rows = [
        [
            row.kind,
            ", ".join(f"`{name}`" for name in row.names),
            row.since or "every version",
            row.when,
            ", ".join(f"[{source}]({gke_managed.SOURCES[source]})" for source in row.sources),
        ]
        for row in gke_managed.MANAGED
    ]
    return "\n".join(table(["kind", "objects", "GKE installs them from", "with", "sources"], rows))


def _profile_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value == profiles.SEVEN_DAYS:
        return "7 days"
    return "0 (nothing left behind)" if value == 0 else f"{value} s"


def profiles_table() -> str:
    """stacks/model/profiles.py PROFILES: every field of the Profile, one column per environment, with its meaning."""
    fields = [f for f in dataclasses.fields(profiles.Profile) if f.name != "name"]
    rows = [
        [f"`{f.name}`", *(_profile_value(getattr(p, f.name)) for p in profiles.PROFILES.values()), f.metadata["doc"]]
        for f in fields
    ]
    return "\n".join(table(["field", *(f"`{name}`" for name in profiles.PROFILES), "meaning"], rows))


def time_to_serve_assumptions_table() -> str:
    """stacks/reports/time_to_serve.py ASSUMPTIONS: every figure of the model no source states, with what it rests on."""
    return "\n".join(table(["assumption", "value", "what it rests on"], time_to_serve.assumption_rows()))


def time_to_serve_cases_table() -> str:
    """The Time to serve rows of examples/time-to-serve, as its summary.md shows them."""
    cfg = parse_stack_file(ROOT / "examples" / "time-to-serve" / "Pulumi.time-to-serve.yaml")
    return "\n".join(time_to_serve.summary_lines(time_to_serve.estimates(cfg))[2:])


if __name__ == "__main__":
    print(metrics_adapters_table())
    print()
    print(gke_managed_table())
    print()
    print(profiles_table())


# The stack the alerts table is written for: an autoscaled vLLM workload served by the gateway, with SLOs, in prod.
_ALERTS_SAMPLE = "examples/vllm-single-host/Pulumi.vllm-single-host.yaml"
_WORKLOAD = "<workload>"


def _alerts_sample():
    from tooling.harness.offline import ROOT, load_stack_file, parse_config

    config = load_stack_file(ROOT / _ALERTS_SAMPLE)
    config["tpu-serving:environment"] = "prod"
    config["tpu-serving:cluster"] = {"minMasterVersion": "1.34.0-gke.1626000"}
    config["tpu-serving:gateway"] = {"enabled": True}
    config["tpu-serving:workloads"][0]["slo"] = {"timeToFirstToken": {"thresholdSeconds": 2}, "availability": 0.99}
    return parse_config(config, "prod").alerts_plan


def alerts_table() -> str:
    """Every alert policy the stack may create, with its threshold, severity and the command to run when it fires
    (written for one workload, `<workload>`, in its own namespace; the cluster's name is `<cluster>`)."""
    from stacks.monitoring import alerts

    plan = _alerts_sample()
    (workload,) = plan.workloads

    def generic(text: str) -> str:
        return (
            text.replace(plan.cluster_name, "<cluster>")
            .replace(workload.name, _WORKLOAD)
            .replace(plan.project, "<project>")
        )

    rows = [[generic(r.title), r.severity, generic(r.threshold), f"`{generic(r.command)}`"] for r in workload.rules]
    rows += [[s.title, s.severity, s.threshold, f"`{generic(s.command)}`"] for s in plan.cluster_rules]
    for window in alerts.BURN_WINDOWS:
        rows.append(
            [
                f"{_WORKLOAD}: <objective>, {window.name} burn",
                window.severity,
                f"error budget burning over {window.rate:g}x over {window.long} and {window.short}",
                "open the SLO in Cloud Monitoring > Services; the dashboard (`pulumi stack output dashboardUrl`)",
            ]
        )
    return "\n".join(table(["alert", "severity", "fires on", "run"], rows)) + "\n"


RELEASE_EXAMPLE = "vllm-canary"


def release_train_cost_table() -> str:
    """docs/operations.md "Release train": the TPU chips and extra cost of each step of the vllm-canary example's
    train, from its plans and the cost report's list prices (stacks/reports/cost.py release_steps)."""
    from stacks.reports import cost
    from stacks.serving import benchmark
    from stacks.serving import release as releases
    from tooling.harness.offline import load_stack_file

    path = ROOT / "examples" / RELEASE_EXAMPLE / f"Pulumi.{RELEASE_EXAMPLE}.yaml"
    cfg = parse_stack_file(path)
    current = next(w for w in cfg.workloads if w.release is not None and not w.release.candidate)
    candidate = next(w for w in cfg.workloads if w.release is not None and w.release.candidate)
    assert candidate.release is not None
    raw = load_stack_file(path)["tpu-serving:workloads"][0]
    steps = list(raw["rollout"]["steps"])
    scenario = benchmark.SCENARIOS[candidate.release.gate.scenario]
    # the candidate's replicas follow its weight unless fixed (stacks/serving/release.py candidate_replicas)
    follows = "replicas" not in raw["rollout"].get("candidate", {}) and "autoscaling" not in raw
    replicas_at = (lambda w: releases.candidate_replicas(w, current.workload.replicas)) if follows else None
    rows = [
        [
            s.step,
            f"{s.weight}%",
            s.current_chips,
            s.candidate_chips,
            "no list price" if s.extra_usd_per_hour is None else f"${s.extra_usd_per_hour:.2f}",
            f"{s.gate_chip_hours:g}",
        ]
        for s in cost.release_steps(current, candidate, steps, scenario.duration_s, replicas_at)
    ]
    head = ["step", "candidate weight", "current chips", "candidate chips", "extra USD/hour", "gate chip-hours (min)"]
    note = (
        f"The `{RELEASE_EXAMPLE}` example ({current.shape.generation.name} {current.shape.topology}, "
        f"{current.pool.config.capacity}; gate scenario `{scenario.name}`, {scenario.duration_s} s of load), at the "
        f"list prices of {cost.PRICE_TABLE_DATE}:"
    )
    return "\n".join([note, "", *table(head, rows)])
