"""The program `pulumi up` runs never imports the offline tooling nor a test-only dependency (issue 13)."""

import ast
from pathlib import Path

from tooling.import_graph import cycles, importers, module_graph, package_graph, program_sources
from tooling.program import PROGRAM_PACKAGES, program_files

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = program_files()
FORBIDDEN = ("tooling", "tests", "pytest", "kubernetes_validate", "referencing", "jsonschema", "yaml")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_program_never_imports_tooling_or_test_dependencies():
    offenders = {
        f"{path.relative_to(ROOT)}: {module}"
        for path in PROGRAM
        for module in imported_modules(path)
        if module.split(".")[0] in FORBIDDEN
    }
    assert not offenders, sorted(offenders)


def test_tooling_is_a_package_of_its_own():
    assert (ROOT / "tooling" / "__init__.py").exists()
    assert not any((ROOT / "stacks" / f"{name}.py").exists() for name in ("offline", "render", "schemas"))


# ---- imports go one way (issue 13): tooling/import_graph.py reads every import, deferred ones included --------


def test_no_import_cycle_between_the_programs_modules():
    found = cycles(module_graph(program_sources()))
    assert not found, [" -> ".join(cycle) for cycle in found]


def test_no_import_cycle_between_stacks_components_and_workloads():
    modules = module_graph(program_sources())
    found = cycles(package_graph(modules))
    where = [
        f"{a} -> {b}: {importers(modules, a, b)}" for cycle in found for a, b in zip(cycle, cycle[1:], strict=False)
    ]
    assert not found, where


def test_packages_import_only_the_layers_below_them():
    """The README architecture layers, bottom to top: stacks (pure), components, workloads, then __main__ wiring them."""
    layers = [*PROGRAM_PACKAGES, "__main__"]
    modules = module_graph(program_sources())
    upward = {
        f"{a} -> {b}: {importers(modules, a, b)}"
        for a, targets in package_graph(modules).items()
        for b in targets
        if layers.index(b) > layers.index(a)
    }
    assert not upward, sorted(upward)


def test_the_import_graph_sees_every_form_of_import():
    sources = {
        "stacks": ("", True),
        "stacks.naming": ("", False),
        "stacks.config": ("from stacks import naming\nfrom . import catalog\n", False),
        "stacks.catalog": ("def f():\n    from .config import x  # deferred, still an edge\n", False),
        "stacks.workloads": ("from .. import naming\n", True),
        "components.cluster": ("import stacks.naming as n\nfrom stacks.workloads import X\nimport pulumi\n", False),
        "components": ("from components import cluster\n", True),
    }
    graph = module_graph(sources)
    assert graph["stacks.config"] == {"stacks.naming", "stacks.catalog"}
    assert graph["stacks.catalog"] == {"stacks.config"}
    assert graph["stacks.workloads"] == {"stacks.naming"}
    assert graph["components.cluster"] == {"stacks.naming", "stacks.workloads"}  # not pulumi: not the program
    assert graph["components"] == {"components.cluster"}
    assert cycles(graph) == [["stacks.catalog", "stacks.config", "stacks.catalog"]]
    assert package_graph(graph) == {"stacks": set(), "components": {"stacks"}}


def test_cycles_are_reported_once_each_as_a_path():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert cycles({"stacks": {"components"}, "components": {"stacks"}}) == [["components", "stacks", "components"]]
