"""The program's import graph and its cycles (issue 13: imports go one way, no cycles between modules or packages).

Pure: reads source files with `ast`, imports nothing it measures. Every `import x` and `from x import y` counts,
at module level or inside a function (a deferred import is still a dependency; it only hides the cycle from the
interpreter). An edge goes to the most specific program module named: `from stacks import naming` is an edge to
`stacks.naming` when that is a module (else to `stacks`, the package's `__init__.py`), `from stacks.naming import x`
to `stacks.naming`. The implicit run of parent packages' `__init__.py` on import is not an edge of its own.

    .venv/bin/python -m tooling.import_graph      # cycles between the program's modules and packages
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from tooling.program import ROOT, program_files

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path = ROOT) -> str:
    """`stacks/workloads/common.py` -> `stacks.workloads.common`; a package's `__init__.py` -> the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imports(source: str, module: str, known: Iterable[str], is_package: bool = False) -> set[str]:
    """The program modules (of `known`) that `source`, the text of `module`, imports anywhere in it; relative
    imports resolved against `module`. `from a import b` is an edge to `a.b` when that is a module, else to `a`."""
    modules = set(known)
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(_resolve(alias.name, modules) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}" if base else alias.name
                found.add(submodule if submodule in modules else _resolve(base, modules))
    return {m for m in found if m and m != module}


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest program module that `name` is or lies in (`stacks.naming.x` -> `stacks.naming`)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def module_graph(sources: Mapping[str, tuple[str, bool]]) -> Graph:
    """module -> the program modules it imports, from {module: (source, is_package)}."""
    return {module: imports(source, module, sources, is_package) for module, (source, is_package) in sources.items()}


def package_graph(modules: Graph) -> Graph:
    """Top-level package (`stacks`, `components`, `workloads`, `__main__`) -> the other top-level packages its
    modules import."""
    graph: Graph = {}
    for module, targets in modules.items():
        top = module.split(".")[0]
        graph.setdefault(top, set()).update(t.split(".")[0] for t in targets if t.split(".")[0] != top)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """Each strongly connected component of more than one node (nodes that import each other, directly or not),
    as one concrete cycle through all of its members' shortest loop: [a, b, ..., a]. Sorted, for stable reports."""
    found = []
    for component in _strongly_connected(graph):
        if len(component) > 1:
            found.append(_a_cycle(graph, component))
    return sorted(found)


def _strongly_connected(graph: Graph) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def _a_cycle(graph: Graph, component: set[str]) -> list[str]:
    """The shortest cycle through the component's first member (breadth-first within the component)."""
    start = min(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        next_frontier = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in component:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if child not in previous:
                    previous[child] = node
                    next_frontier.append(child)
        frontier = next_frontier
    return sorted(component)  # unreachable for a strongly connected component


def program_sources() -> dict[str, tuple[str, bool]]:
    """{module: (source, is_package)} for every file of the program."""
    return {module_name(path): (path.read_text(), _is_package(path)) for path in program_files()}


def importers(graph: Graph, source: str, target: str) -> list[str]:
    """The modules of package `source` that import package `target` (to say where a package cycle comes from)."""
    return sorted(
        module
        for module, targets in graph.items()
        if module.split(".")[0] == source and any(t.split(".")[0] == target for t in targets)
    )


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description="Import cycles between the program's modules and packages.").parse_args(argv)
    modules = module_graph(program_sources())
    packages = package_graph(modules)
    print(f"{len(modules)} modules, {sum(map(len, modules.values()))} import edges")
    for kind, graph in (("module", modules), ("package", packages)):
        found = cycles(graph)
        print(f"{kind}-level cycles: {len(found)}")
        for cycle in found:
            print("  " + " -> ".join(cycle))
    for cycle in cycles(packages):
        for a, b in zip(cycle, cycle[1:], strict=False):
            print(f"  {a} -> {b}: {', '.join(importers(modules, a, b))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
