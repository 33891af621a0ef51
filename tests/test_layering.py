"""The program `pulumi up` runs never imports the offline tooling nor a test-only dependency (issue 13)."""

import ast
from pathlib import Path

from tooling.program import program_files

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
