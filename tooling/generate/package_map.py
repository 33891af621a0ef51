"""The map of stacks/ and tooling/ for docs/architecture.md, generated from the code: one Mermaid graph per package,
its nodes the layers of its import-linter contract (pyproject.toml `stacks-layers`, `tooling-layers`) top to bottom,
its arrows the imports grimp reads between them (every import statement, deferred ones included), with an arrow that
a longer path already implies left out so the graph stays readable.

    python -m tooling.generate.package_map     # print both graphs
"""

from __future__ import annotations

import tomllib

import grimp

from tooling.harness.offline import ROOT

PACKAGES = ("stacks", "tooling")


def layers(package: str) -> list[list[str]]:
    """The package's contract layers, top first, each a list of its (independent) members."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == f"{package}-layers"]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def member_imports(package: str, graph: grimp.ImportGraph | None = None) -> set[tuple[str, str]]:
    """(importer, imported) between the package's top-level members, from every import inside the package."""
    graph = graph or grimp.build_graph(package, cache_dir=None)
    member = {m: m.split(".")[1] for m in graph.modules if m.count(".") >= 1 and m.split(".")[0] == package}
    found = set()
    for module, name in member.items():
        for imported in graph.find_modules_directly_imported_by(module):
            other = member.get(imported)
            if other and other != name:
                found.add((name, other))
    return found


def reduced(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges no longer path implies (the graph is acyclic: the no-cycles and layers contracts hold)."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)

    def reachable(start: str, skip: tuple[str, str]) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for nxt in succ.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {(a, b) for a, b in edges if b not in reachable(a, (a, b))}


def mermaid(package: str, graph: grimp.ImportGraph | None = None) -> str:
    order = layers(package)
    folders = {p.name for p in (ROOT / package).iterdir() if (p / "__init__.py").exists()}
    lines = ["```mermaid", "flowchart TD"]
    for depth, layer in enumerate(order):
        for name in layer:
            label = f"{name}/" if name in folders else f"{name}.py"
            lines.append(f'    {name}["{label}"]')
        if len(layer) > 1:  # independent siblings: no arrow between them, drawn side by side
            lines.append(f"    %% layer {depth}: {' | '.join(layer)}")
    rank = {name: i for i, layer in enumerate(order) for name in layer}
    edges = reduced(member_imports(package, graph))
    for a, b in sorted(edges, key=lambda e: (rank.get(e[0], -1), rank.get(e[1], -1), e)):
        lines.append(f"    {a} --> {b}")
    lines.append("```")
    return "\n".join(lines)


def stacks_map() -> str:
    return mermaid("stacks")


def tooling_map() -> str:
    return mermaid("tooling")


if __name__ == "__main__":
    for name in PACKAGES:
        print(f"{name}:\n{mermaid(name)}\n")
