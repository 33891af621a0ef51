"""How long the program's functions are (issue 13: no function in the program longer than about 80 lines).

Pure: reads source files with `ast`. A function's length is its lines from `def` to its last line, docstring and
comments included, decorators not; methods and nested functions count on their own (a nested function's lines
also count in the function around it: the reader reads them there).

    .venv/bin/python -m tooling.function_length [N]   # the program's N longest functions (default 10)
"""

from __future__ import annotations

import argparse
import ast
import sys

from tooling.program import ROOT, program_files

LIMIT = 80


def function_lengths(source: str, prefix: str) -> dict[str, int]:
    """`prefix:Qualified.name` -> lines, for every function and method in `source`."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = ".".join([*scope, child.name])
                lengths[f"{prefix}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, (*scope, child.name))
            elif isinstance(child, ast.ClassDef):
                visit(child, (*scope, child.name))
            else:
                visit(child, scope)

    visit(ast.parse(source), ())
    return lengths


def program_function_lengths() -> dict[str, int]:
    """Every function of the program (`__main__.py`, stacks/, components/, workloads/), keyed `path:name`."""
    lengths: dict[str, int] = {}
    for path in program_files():
        lengths.update(function_lengths(path.read_text(), path.relative_to(ROOT).as_posix()))
    return lengths


def longest(lengths: dict[str, int], count: int) -> list[tuple[str, int]]:
    return sorted(lengths.items(), key=lambda item: (-item[1], item[0]))[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The program's longest functions (issue 13: at most ~80 lines).")
    parser.add_argument("count", nargs="?", type=int, default=10, help="how many to list (default 10)")
    count = parser.parse_args(argv).count
    lengths = program_function_lengths()
    over = sum(1 for n in lengths.values() if n > LIMIT)
    print(f"{len(lengths)} functions, {over} longer than {LIMIT} lines")
    for name, lines in longest(lengths, count):
        print(f"{lines:5d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
