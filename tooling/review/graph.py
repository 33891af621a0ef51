"""The render's Mermaid graphs, readable in a diff and small enough for GitHub to draw.

- `graph.mmd`: one node per top-level component (what `summary.md` and the pull-request comment embed), in four
  layers (network and cluster, pools and identities, platform services, workloads) and only the edges that no
  longer path implies (the transitive reduction);
- `graph-full.mmd`: every resource, components as subgraphs (the expanded view).

Node ids are derived from the resource's kind and name (`NodePool_tpu_v6e_4x4_s0`), never hashes, so a diff of
two renders names what changed. Edges: `-->` a dependency (the dependent waits for it); `-.->|provider|` a
Kubernetes object to the provider built from the cluster; `-.->|uses|` a resource whose inputs name the stack
bucket without depending on it (a pod reading `gs://<bucket>/...`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

from tooling.harness.offline import Recording, Registration

# Mermaid's defaults, which GitHub's renderer keeps: a diagram of more than maxTextSize characters or maxEdges
# edges is not drawn (https://mermaid.js.org/config/schema-docs/config-properties-maxtextsize.html: 50000,
# https://mermaid.js.org/config/schema-docs/config-properties-maxedges.html: 500).
MERMAID_MAX_TEXT = 50000
MERMAID_MAX_EDGES = 500

DEPENDS, PROVIDER, USES = "depends", "provider", "uses"
_ARROW = {DEPENDS: "-->", PROVIDER: "-.->|provider|", USES: "-.->|uses|"}


def short_type(type_: str) -> str:
    """gcp:container/nodePool:NodePool -> container.NodePool; kubernetes:helm.sh/v3:Release -> helm.sh.Release."""
    package_module, _, kind = type_.rpartition(":")
    module = package_module.split(":", 1)[-1].split("/")[0]
    return f"{module}.{kind}"


def kind(type_: str) -> str:
    """The last part of a type token; `Provider` for a provider (pulumi:providers:kubernetes)."""
    return "Provider" if type_.startswith("pulumi:providers:") else type_.rsplit(":", 1)[-1]


def _ident(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")


def node_ids(recording: Recording) -> dict[str, str]:
    """URN -> `<Kind>_<name>`, with the module prepended where two kinds of the same name would collide."""
    first = {r.urn: _ident(f"{kind(r.type)}_{r.name}") for r in recording.resources}
    clashes = {i for i, n in Counter(first.values()).items() if n > 1}
    ids = {}
    for reg in recording.resources:
        ids[reg.urn] = first[reg.urn] if first[reg.urn] not in clashes else _ident(f"{short_type(reg.type)}_{reg.name}")
    return ids


@dataclass(frozen=True)
class Edge:
    source: str  # URN
    target: str
    kind: str


def _bucket_names(recording: Recording) -> dict[str, str]:
    return {
        str(r.inputs["name"]): r.urn
        for r in recording.resources
        if r.type == "gcp:storage/bucket:Bucket" and isinstance(r.inputs.get("name"), str)
    }


def edges(recording: Recording) -> list[Edge]:
    known = {r.urn for r in recording.resources}
    found: dict[tuple[str, str], str] = {}
    for reg in recording.resources:
        for dep in set(reg.dependencies):
            if dep in known and dep != reg.parent:
                found[(dep, reg.urn)] = DEPENDS
        provider = reg.provider.rpartition("::")[0] if reg.provider else ""
        if provider in known:
            found.setdefault((provider, reg.urn), PROVIDER)
    buckets = _bucket_names(recording)
    for reg in recording.resources:
        if not reg.custom or not buckets:
            continue
        text = json.dumps(reg.inputs, default=str)
        for name, urn in buckets.items():
            if urn != reg.urn and re.search(rf'(gs://|"){re.escape(name)}(/|")', text):
                found.setdefault((urn, reg.urn), USES)
    return [Edge(a, b, kind) for (a, b), kind in sorted(found.items())]


def _label(reg: Registration) -> str:
    return f"{reg.name}<br/><small>{short_type(reg.type)}</small>"


def full_graph(recording: Recording) -> str:
    """Every resource; components as nested subgraphs."""
    ids = node_ids(recording)
    children: dict[str, list[Registration]] = {}
    for reg in recording.resources:
        children.setdefault(reg.parent, []).append(reg)
    lines = ["flowchart LR"]

    def emit(parent: str, depth: int) -> None:
        pad = "  " * depth
        for reg in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
            if reg.custom:
                lines.append(f'{pad}{ids[reg.urn]}["{_label(reg)}"]')
            else:
                lines.append(f'{pad}subgraph {ids[reg.urn]}["{reg.name} ({kind(reg.type)})"]')
                emit(reg.urn, depth + 1)
                lines.append(f"{pad}end")

    for root in sorted(p for p in children if p not in ids):
        emit(root, 1)
    drawn = sorted((ids[e.source], _ARROW[e.kind], ids[e.target]) for e in edges(recording))
    lines.extend(f"  {a} {arrow} {b}" for a, arrow, b in drawn)
    return "\n".join(lines) + "\n"


def top_level(recording: Recording) -> dict[str, Registration]:
    """URN -> the top-level resource (a child of the stack) it belongs to."""
    by_urn = {r.urn: r for r in recording.resources}
    out = {}
    for reg in recording.resources:
        top = reg
        while top.parent in by_urn:
            top = by_urn[top.parent]
        out[reg.urn] = top
    return out


# The component graph's layers, drawn top to bottom in this order: what a component is decides its layer (the
# module of its type token, `tpu-serving:<module>:<Kind>`); a workload is any component of the `workloads` module
# but the namespaces it runs in, so a workload type added to workloads/registry.py lands in the last layer.
LAYERS: tuple[tuple[str, str], ...] = (
    ("layer_foundation", "network, cluster and storage"),
    ("layer_capacity", "pools and identities"),
    ("layer_platform", "platform services"),
    ("layer_workloads", "workloads"),
)
_LAYER_OF_MODULE = {
    "network": 0,
    "cluster": 0,
    "storage": 0,
    "images": 0,  # the image repositories the nodes read (components/images.py)
    "tpu": 1,
    "identity": 1,
    "addons": 2,
    "monitoring": 2,
    "gateway": 2,
}


def layer(reg: Registration) -> int:
    """The index in LAYERS of a top-level component (or resource): a Google Cloud resource of its own belongs to
    the foundation, any other unknown one to the platform services."""
    package, _, rest = reg.type.partition(":")
    module, _, kind_ = rest.partition(":")
    if package == "tpu-serving" and module == "workloads":
        return 2 if kind_ == "Namespaces" else 3
    if package == "tpu-serving":
        return _LAYER_OF_MODULE.get(module, 2)
    return 0 if package == "gcp" else 2


def transitive_reduction(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges left when every edge implied by a longer path is removed (cluster -> workload goes when cluster ->
    namespaces -> workload exists). Edges are dropped one at a time, in sorted order, each only when its target is
    still reachable without it: the result reaches exactly what `pairs` reaches, also on a graph with a cycle."""
    kept = set(pairs)
    for a, b in sorted(pairs):
        kept.discard((a, b))
        if not _reaches(kept, a, b):
            kept.add((a, b))
    return kept


def _reaches(pairs: set[tuple[str, str]], source: str, target: str) -> bool:
    out: dict[str, list[str]] = {}
    for a, b in pairs:
        out.setdefault(a, []).append(b)
    seen, todo = {source}, [source]
    while todo:
        for nxt in out.get(todo.pop(), []):
            if nxt == target:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def component_pairs(recording: Recording) -> dict[tuple[str, str], str]:
    """(source id, target id) -> edge kind between top-level components: every resource edge, aggregated; a
    dependency wins over a provider or bucket-use edge between the same two."""
    ids = node_ids(recording)
    tops = top_level(recording)
    pairs: dict[tuple[str, str], str] = {}
    for edge in edges(recording):
        a, b = ids[tops[edge.source].urn], ids[tops[edge.target].urn]
        if a != b and pairs.get((a, b)) != DEPENDS:
            pairs[(a, b)] = DEPENDS if edge.kind == DEPENDS else pairs.get((a, b), edge.kind)
    return pairs


def component_graph(recording: Recording) -> str:
    """One node per top-level component (and top-level resource), in one subgraph per layer (LAYERS, top to
    bottom); only the edges no longer path implies (transitive_reduction). graph-full.mmd keeps every edge."""
    ids = node_ids(recording)
    tops = {t.urn: t for t in top_level(recording).values()}
    members = Counter(top_level(recording)[r.urn].urn for r in recording.resources if r.custom)
    lines = ["flowchart TB"]
    for index, (layer_id, title) in enumerate(LAYERS):
        in_layer = sorted((t for t in tops.values() if layer(t) == index), key=lambda r: (r.type, r.name))
        if not in_layer:
            continue
        lines.append(f'  subgraph {layer_id}["{title}"]')
        for reg in in_layer:
            n = members[reg.urn]
            size = "" if reg.custom else f" · {n} resource{'s' if n != 1 else ''}"
            lines.append(f'    {ids[reg.urn]}["{reg.name}<br/><small>{kind(reg.type)}{size}</small>"]')
        lines.append("  end")
    pairs = component_pairs(recording)
    kept = transitive_reduction(set(pairs))
    lines.extend(f"  {a} {_ARROW[pairs[(a, b)]]} {b}" for a, b in sorted(kept))
    return "\n".join(lines) + "\n"


def edge_count(mermaid: str) -> int:
    return sum(1 for line in mermaid.splitlines() if re.match(r"\s*\w+ (-->|-\.->)", line))


def fits_github(mermaid: str) -> bool:
    return len(mermaid) <= MERMAID_MAX_TEXT and edge_count(mermaid) <= MERMAID_MAX_EDGES
