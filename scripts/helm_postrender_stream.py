"""The YAML stream the Helm post-renderers read (scripts/helm_postrender_*.py): split line-wise into documents.

Standard library only: Helm runs each post-renderer with the deployer's python3, which finds this module beside it
(Python puts a script's own folder first on sys.path).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def documents(lines: Iterable[str]) -> Iterator[list[str]]:
    """The documents of a YAML stream, each with the separator line that opens it."""
    doc: list[str] = []
    for line in lines:
        if (line.rstrip() == "---" or line.startswith("--- ")) and doc:
            yield doc
            doc = []
        doc.append(line)
    if doc:
        yield doc
