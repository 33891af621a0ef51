"""Docs tables derived from the program's registries: tooling/docs.py writes them into docs/addons-and-monitoring.md
docs/operations.md and docs/stack-config.md and checks them (`make lint`); tests/test_metrics_adapters.py and tests/test_gke_managed.py
check the pages hold them.

python -m tooling.readme_tables     # print the tables
"""

from __future__ import annotations

import dataclasses

from stacks import gke_managed, metrics_adapters, profiles
from stacks.metrics_adapters import AdapterContext
from stacks.versions import CHARTS, default_version
from tooling.summary import table

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
    """stacks/gke_managed.py MANAGED: what GKE installs, from which version, with what (tests/test_gke_managed.py)."""
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
    """stacks/profiles.py PROFILES: every field of the Profile, one column per environment, with its meaning."""
    fields = [f for f in dataclasses.fields(profiles.Profile) if f.name != "name"]
    rows = [
        [f"`{f.name}`", *(_profile_value(getattr(p, f.name)) for p in profiles.PROFILES.values()), f.metadata["doc"]]
        for f in fields
    ]
    return "\n".join(table(["field", *(f"`{name}`" for name in profiles.PROFILES), "meaning"], rows))


if __name__ == "__main__":
    print(metrics_adapters_table())
    print()
    print(gke_managed_table())
    print()
    print(profiles_table())
