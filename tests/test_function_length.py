"""No function in the program longer than 80 lines (issue 13): `def` to last line, docstring and comments included,
decorators not; methods and nested functions count on their own too.

ruff limits statements (PLR0915), branches (PLR0912) and complexity (C901), see pyproject.toml, but counts no lines:
a manifest builder that returns one 100-line dict literal is one statement. This is the check ruff has no rule for.
"""

import ast

from tooling.harness.program import ROOT, program_files

LIMIT = 80


def long_functions(source: str, prefix: str) -> dict[str, int]:
    """`prefix:line name` -> lines, for every function or method of `source` longer than LIMIT."""
    return {
        f"{prefix}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LIMIT
    }


def test_no_program_function_is_longer_than_the_limit():
    too_long = {}
    for path in program_files():
        too_long.update(long_functions(path.read_text(), path.relative_to(ROOT).as_posix()))
    assert not too_long, f"functions over {LIMIT} lines (split them): {too_long}"


def test_a_long_function_is_found_whatever_it_holds():
    """One of 81 lines that is a single statement (a dict literal), a method of 81 statements; 80 lines pass."""
    entries = "".join(f"        'k{i}': x,\n" for i in range(LIMIT - 2))
    statements = "        pass\n" * (LIMIT - 1)
    source = f"@decorator\ndef f(x):\n    return {{\n{entries}    }}\n\n\nclass C:\n    def m(self):\n{statements}"
    assert long_functions(source, "x.py") == {"x.py:2 f": 81}
    source += "        pass\n"
    assert long_functions(source, "x.py") == {"x.py:2 f": 81, "x.py:86 m": 81}
