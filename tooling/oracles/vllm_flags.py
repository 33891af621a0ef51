"""The flags `vllm serve` accepts at the pinned vLLM, extracted from vLLM's own source into
workloads/vllm/serve_flags.json, which the program checks a workload's `args` against (workloads/vllm/plan.py).

    python -m tooling.oracles.vllm_flags --download        # pip download the pinned vllm wheel into .cache/vllm/, extract
    python -m tooling.oracles.vllm_flags --wheel W.whl      # extract from a wheel at hand
    python -m tooling.oracles.vllm_flags --check [--wheel W.whl]   # exit 1 if the committed file differs (no wheel: skip)

The pinned version is the vllm/vllm-tpu image's tag in the version matrix (stacks/facts/versions.py IMAGE_RECORDS
"vllmTpu"); the PyPI wheel `vllm==<version>` holds the same Python source as the tag. `vllm serve` builds its parser
with make_arg_parser (vllm/entrypoints/cli/serve.py), which adds its own arguments, FrontendArgs' fields (one flag
each, `--<field-with-dashes>`) and AsyncEngineArgs.add_cli_args (EngineArgs.add_cli_args: one add_argument per flag,
spelled in the call, its argparse kwargs from a config dataclass field through get_kwargs). Extracted statically (the
wheel imports torch): every flag spelled in an add_argument call of those functions, and per flag what it takes:
- `boolean`: argparse.BooleanOptionalAction (`--x` and `--no-x`), which get_kwargs gives a field typed bool (unless
  typed `bool | str | None`, an optional value);
- `switch`: store_true (`--x` only);
- `optional`: a bare `--x` or a value (`nargs="?"`);
- `value`: `--x=<value>` (a dataclass-typed field takes JSON, and `--x.key=value`).
The platform can add flags (AsyncEngineArgs.add_cli_args calls current_platform.pre_register_and_update(parser)):
the TPU platform is tpu-inference's TpuPlatform, which does not override it (tpu-inference==0.32.0
tpu_inference/platforms/tpu_platform.py), so it adds none.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from stacks.facts.versions import IMAGE_RECORDS
from tooling.harness.offline import ROOT

DATA = ROOT / "workloads" / "vllm" / "serve_flags.json"
CACHE = ROOT / ".cache" / "vllm"
REPO = "vllm-project/vllm"
# make_arg_parser and FrontendArgs: vllm/entrypoints/launchers/cli_args.py at vLLM 0.32.0 (vllm/entrypoints/cli/serve.py
# imports it from vllm.entrypoints.launchers.cli_args), vllm/entrypoints/openai/cli_args.py up to 0.27.0
CLI_ARGS_PATHS = ("vllm/entrypoints/launchers/cli_args.py", "vllm/entrypoints/openai/cli_args.py")
CLI_ARGS = CLI_ARGS_PATHS[0]
ARG_UTILS = "vllm/engine/arg_utils.py"
CONFIGS = "vllm/config/"  # the config dataclasses whose fields the engine's flags are
READ = (*CLI_ARGS_PATHS, ARG_UTILS)
FUNCTIONS = (
    f"{CLI_ARGS} make_arg_parser",
    f"{CLI_ARGS} FrontendArgs (and BaseFrontendArgs) fields",
    f"{ARG_UTILS} EngineArgs.add_cli_args",
    f"{ARG_UTILS} AsyncEngineArgs.add_cli_args",
)


def pinned_version() -> str:
    """The vLLM version of the pinned vllm/vllm-tpu image: its tag without the v."""
    return IMAGE_RECORDS["vllmTpu"].ref.rsplit(":", 1)[1].removeprefix("v")


class Source:
    """The Python files of a vLLM wheel, and an index of the classes they define."""

    def __init__(self, wheel: Path):
        with zipfile.ZipFile(wheel) as archive:
            self.files = {n: archive.read(n).decode() for n in archive.namelist() if n in READ or n.startswith(CONFIGS)}
        self.classes: dict[str, ast.ClassDef] = {}
        for text in self.files.values():
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, node)

    def tree(self, path: str) -> ast.Module:
        return ast.parse(self.files[path])

    def fields(self, name: str) -> dict[str, str]:
        """A dataclass's fields (its bases' first) with their annotations as written."""
        node = self.classes.get(name)
        if node is None:
            return {}
        out: dict[str, str] = {}
        for base in node.bases:
            out.update(self.fields(ast.unparse(base)))
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if "ClassVar" not in ast.unparse(item.annotation):
                    out[item.target.id] = ast.unparse(item.annotation)
        return out

    def is_dataclass(self, name: str) -> bool:
        node = self.classes.get(name)
        return node is not None and any(
            re.search(r"\b(config|dataclass)\b", ast.unparse(d)) for d in node.decorator_list
        )

    def kind_of_field(self, annotation: str) -> str:
        """What get_kwargs makes of a field typed `annotation` (vllm/engine/arg_utils.py _compute_kwargs)."""
        names = set(re.findall(r"[A-Za-z_][\w.]*", annotation))
        if any(self.is_dataclass(n.rsplit(".", 1)[-1]) for n in names):
            return "value"
        if names & {"bool"}:
            return "optional" if names - {"Optional", "Union", "None"} == {"bool", "str"} else "boolean"
        return "value"


def _function(tree: ast.Module, name: str, within: str | None = None) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    if within:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == within).body
    return next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)


def _kind_of_call(call: ast.Call, source: Source, kwargs_of: dict[str, str]) -> str:
    keywords = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
    action = keywords.get("action", "")
    if action.endswith("BooleanOptionalAction"):
        return "boolean"
    if action in ("'store_true'", "'store_false'", '"store_true"', '"store_false"'):
        return "switch"
    if keywords.get("nargs") in ("'?'", '"?"'):
        return "optional"
    for k in call.keywords:  # **model_kwargs["field"], or **{**cache_kwargs["field"], "default": None}
        if k.arg is not None:
            continue
        for node in ast.walk(k.value):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in kwargs_of:
                field = node.slice.value if isinstance(node.slice, ast.Constant) else None
                if isinstance(field, str):
                    return source.kind_of_field(source.fields(kwargs_of[node.value.id]).get(field, "str"))
    return "value"


def _calls(function: ast.FunctionDef, source: Source) -> dict[str, str]:
    """Every long flag an add_argument call in `function` spells, with what it takes."""
    kwargs_of = {
        n.targets[0].id: ast.unparse(n.value.args[0])
        for n in ast.walk(function)
        if isinstance(n, ast.Assign)
        and isinstance(n.targets[0], ast.Name)
        and isinstance(n.value, ast.Call)
        and getattr(n.value.func, "id", "") == "get_kwargs"
    }
    found: dict[str, str] = {}
    for call in ast.walk(function):
        if not (isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "add_argument"):
            continue
        spelled = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        for flag in spelled:
            if flag.startswith("--"):
                found[flag[2:]] = _kind_of_call(call, source, kwargs_of)
    return found


def extract(wheel: Path) -> dict[str, Any]:
    """The data file's content from a vLLM wheel."""
    source = Source(wheel)
    cli_args = next(path for path in CLI_ARGS_PATHS if path in source.files)
    cli, engine = source.tree(cli_args), source.tree(ARG_UTILS)
    flags = _calls(_function(cli, "make_arg_parser"), source)
    for name, annotation in source.fields("FrontendArgs").items():
        flags[name.replace("_", "-")] = source.kind_of_field(annotation)
    flags["lora-modules"] = "value"  # FrontendArgs._customize_cli_kwargs: its own parser action
    flags.update(_calls(_function(engine, "add_cli_args", "EngineArgs"), source))
    flags.update(_calls(_function(engine, "add_cli_args", "AsyncEngineArgs"), source))
    version = re.search(r"vllm-([^-]+)-", wheel.name)
    return {
        "source": f"{REPO}@v{version.group(1) if version else '?'}",
        "functions": list(FUNCTIONS),
        "extractedFrom": f"PyPI {wheel.name} sha256 {hashlib.sha256(wheel.read_bytes()).hexdigest()}",
        "extractedBy": "python -m tooling.oracles.vllm_flags",
        "version": version.group(1) if version else "",
        "flags": dict(sorted(flags.items())),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def download(version: str) -> Path:
    """The pinned vllm wheel into .cache/vllm/ (pip, PyPI; no dependencies, nothing installed)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = sorted(CACHE.glob(f"vllm-{version}-*.whl"))
    if cached:
        return cached[0]
    pip = [sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps", "--only-binary", ":all:"]
    pip += ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "-d", str(CACHE)]
    subprocess.run(pip, check=True)
    return sorted(CACHE.glob(f"vllm-{version}-*.whl"))[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", type=Path, help="a vllm wheel (default: the pinned one in .cache/vllm/)")
    parser.add_argument("--download", action="store_true", help="pip download the pinned wheel first")
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs")
    args = parser.parse_args(argv)
    version = pinned_version()
    wheel = args.wheel or (download(version) if args.download else next(iter(sorted(CACHE.glob("*.whl"))), None))
    if wheel is None:
        print(
            f"no vllm wheel: run `python -m tooling.oracles.vllm_flags --download` (vllm=={version})", file=sys.stderr
        )
        return 0 if args.check else 2
    text = render(extract(wheel))
    if args.check:
        if DATA.read_text() != text:
            print(
                f"{DATA.relative_to(ROOT)} differs from {wheel.name}: run python -m tooling.oracles.vllm_flags",
                file=sys.stderr,
            )
            return 1
        return 0
    DATA.write_text(text)
    print(f"wrote {DATA.relative_to(ROOT)}: {len(json.loads(text)['flags'])} flags of vllm {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
