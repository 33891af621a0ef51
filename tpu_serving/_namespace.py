"""The top-level packages the tpu-serving wheel installs beside `tpu_serving` (stacks, components, workloads: the
program's layers, kept at the top level so this repository's layout and imports stay as they are) are this
package's only when Python finds them where it installed them. A user's own module of one of those names earlier on
sys.path (a `stacks/` or `stacks.py` beside their program), one imported already, or another distribution's files
written over ours, would be imported by tpu_serving in place of its own and fail far from the cause: refused here,
before anything else is imported, naming the module found, where, and what to do.

Standard library only: it runs first, before any of the packages it checks is imported."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import sys
from importlib import metadata
from pathlib import Path

OWN = ("stacks", "components", "workloads")
DISTRIBUTION = "tpu-serving"


def _found(name: str) -> Path | None:
    """Where `import <name>` would load it from now: the module imported already, else what the import system finds
    first on sys.path (nothing is imported); None when nothing is found."""
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) if module is not None else None
    if module is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
    return Path(origin).resolve() if origin and origin not in ("namespace", "built-in", "frozen") else None


def _recorded(root: Path) -> dict[str, str] | None:
    """The installed files of the tpu-serving distribution that holds `root` (its RECORD: path -> sha256), or None
    when tpu_serving is not an installed distribution here (a checkout)."""
    try:
        files = metadata.files(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None
    recorded = {
        str(Path(f.locate()).resolve()): f.hash.value for f in files if f.hash is not None and f.hash.mode == "sha256"
    }
    return recorded if str(root / "tpu_serving" / "__init__.py") in recorded else None


def _digest(path: Path) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()


def problems(root: Path) -> list[str]:
    """Each of OWN that is not tpu-serving's own `root/<name>/__init__.py` (and, installed, not the file its RECORD
    lists)."""
    recorded = _recorded(root)
    out = []
    for name in OWN:
        expected = root / name / "__init__.py"
        found = _found(name)
        if found != expected:
            out.append(f"the module {name!r} is {found or 'not found'}, not tpu-serving's own {expected}")
        elif recorded is not None and recorded.get(str(expected)) != _digest(expected):
            out.append(f"{expected} is not the file tpu-serving {metadata.version(DISTRIBUTION)} installed")
    return out


def check(root: Path) -> None:
    found = problems(root)
    if found:
        raise ImportError(
            "tpu_serving cannot load its own packages: "
            + "; ".join(found)
            + f". The tpu-serving package installs the top-level packages {', '.join(OWN)} beside tpu_serving: "
            "rename your module of that name (or take its folder off sys.path before importing tpu_serving), or "
            "install tpu-serving in a virtualenv without another distribution of those names (docs/package.md)"
        )
