"""Imports go one way (issue 13), held by import-linter's contracts in pyproject.toml `[tool.importlinter]`.

`make lint` runs `lint-imports`; this file runs it too, so `make test` fails on a broken contract, and covers the
two rules the contracts cannot state: a package's `__init__.py` and a module inside it importing each other (the
`acyclic_siblings` contract compares siblings only), and `__main__.py`, which is no package import-linter can
read. import-linter and grimp (the graph it builds) read every import statement, deferred ones inside functions
included.
"""

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

from tooling.harness.program import PROGRAM_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LINT_IMPORTS, "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )


def module_cycles(graph: grimp.ImportGraph, packages: tuple[str, ...]) -> list[tuple[str, ...]]:
    """For each import `a -> b` between the packages' modules that `b` imports back (directly or not), the cycle."""
    modules = {m for m in graph.modules if m.split(".")[0] in packages}
    found = []
    for a in sorted(modules):
        for b in sorted(graph.find_modules_directly_imported_by(a) & modules):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back:
                found.append((a, *back))
    return found


def test_the_import_contracts_are_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_contracts_catch_deferred_imports_that_break_them(tmp_path):
    """A copy of the code with five deferred imports, one against each contract: all five are reported broken."""
    for package in (*PROGRAM_PACKAGES, "tooling", "tests"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("golden", "fixtures", "*.pyc")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    deferred = {
        "stacks/naming.py": "from components import platform",  # upward
        "stacks/problems.py": "import yaml",  # a test-only dependency
        "stacks/facts/images.py": "from stacks.facts import versions",  # versions imports images: a cycle
        # facts and security are independent siblings (stacks-layers); security imports nothing of facts: no cycle
        "stacks/facts/kms.py": "from stacks.security import kubeconfig",
        # harness is tooling's bottom (tooling-layers); rollout imports nothing of tooling: no cycle
        "tooling/harness/program.py": "from tooling.operations import rollout",
    }
    for file, statement in deferred.items():
        with (tmp_path / file).open("a") as out:
            out.write(f"\n\ndef _deferred():\n    {statement}  # noqa\n")
    report = lint_imports(tmp_path).stdout
    assert "Contracts: 0 kept, 5 broken." in report, report
    assert "stacks.naming -> components.platform" in report and "stacks.problems -> yaml" in report, report
    assert ".images -> .versions" in report or ".versions -> .images" in report, report
    assert "stacks.facts.kms -> stacks.security.kubeconfig" in report, report
    assert "tooling.harness.program -> tooling.operations.rollout" in report, report


def test_every_module_of_stacks_and_tooling_is_under_a_layer():
    """A module added loose at the top of stacks/ or tooling/ is under no layer of its package's contract, so
    nothing would hold what it imports: every top-level module and subpackage is named in the contract."""
    contracts = {
        c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    }
    for package in ("stacks", "tooling"):
        named = {n.strip() for layer in contracts[f"{package}-layers"]["layers"] for n in layer.split("|")}
        present = {p.stem for p in (ROOT / package).glob("*.py")} - {"__init__"}
        present |= {p.parent.name for p in (ROOT / package).glob("*/__init__.py")}
        assert present and present == named, (package, sorted(present ^ named))


def test_no_import_cycle_between_the_programs_modules():
    graph = grimp.build_graph(*PROGRAM_PACKAGES, cache_dir=None)
    found = module_cycles(graph, PROGRAM_PACKAGES)
    assert not found, [" -> ".join(cycle) for cycle in found]


def test_cycles_through_a_packages_init_are_found():
    graph = grimp.ImportGraph()
    for module in ("stacks", "stacks.addons", "stacks.addons.kueue", "stacks.naming", "components.x"):
        graph.add_module(module)
    graph.add_import(importer="stacks.addons", imported="stacks.addons.kueue")
    graph.add_import(importer="stacks.addons.kueue", imported="stacks.naming")
    graph.add_import(importer="stacks.naming", imported="stacks.addons")
    graph.add_import(importer="components.x", imported="stacks.naming")
    assert module_cycles(graph, ("stacks",)) == [
        ("stacks.addons", "stacks.addons.kueue", "stacks.naming", "stacks.addons"),
        ("stacks.addons.kueue", "stacks.naming", "stacks.addons", "stacks.addons.kueue"),
        ("stacks.naming", "stacks.addons", "stacks.addons.kueue", "stacks.naming"),
    ]


def test_the_program_entry_point_imports_only_the_programs_packages():
    """`__main__.py` is the top layer: what it imports is the program's, so never tooling/ or a test dependency."""
    imported: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / "__main__.py").read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add("." if node.level else (node.module or "").split(".")[0])
    assert imported <= set(PROGRAM_PACKAGES), sorted(imported - set(PROGRAM_PACKAGES))


def test_tooling_is_a_package_of_its_own():
    assert (ROOT / "tooling" / "__init__.py").exists()
    assert not any((ROOT / "stacks" / f"{name}.py").exists() for name in ("offline", "render", "schemas"))
