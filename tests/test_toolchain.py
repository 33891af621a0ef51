"""`make toolchain` (tooling/local/toolchain.py): the Go modules in toolchain/ require exactly the versions the matrix
pins (stacks/facts/versions.py TOOLCHAIN), the controllers are the charts' own releases, and a run with everything built
starts no go command. Nothing here runs go: `make test` passes on a machine without it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stacks.facts import versions
from stacks.facts.versions import LOCAL_KUBERNETES, LOCAL_PULUMI_CLI, TOOLCHAIN, TOOLCHAIN_UNBUILDABLE, GoTool
from tests.conftest import STACK_FILES
from tooling.harness.offline import load_stack_file
from tooling.local import toolchain

ROOT = Path(__file__).resolve().parent.parent


def _go_mod(tool: GoTool) -> str:
    return (ROOT / "toolchain" / tool.name / "go.mod").read_text()


@pytest.mark.parametrize("tool", TOOLCHAIN, ids=lambda t: t.name)
def test_go_mod_requires_exactly_the_matrix_version(tool: GoTool) -> None:
    text = _go_mod(tool)
    mod = toolchain.parse_go_mod(text)
    assert mod.module == f"tpu-serving/toolchain/{tool.name}"
    assert mod.requires[tool.module] == tool.version
    # a direct requirement (what tools.go imports), not one tidy kept as indirect
    assert re.search(rf"^require {re.escape(tool.module)} {re.escape(tool.version)}$", text, re.M)
    assert (ROOT / "toolchain" / tool.name / "go.sum").is_file()
    assert (ROOT / "toolchain" / tool.name / "tools.go").read_text() == toolchain.render_tools_go(tool)


@pytest.mark.parametrize("tool", TOOLCHAIN, ids=lambda t: t.name)
def test_go_mod_replaces_nothing_by_a_local_folder(tool: GoTool) -> None:
    """The upstream module's local replaces (`=> ../api`, `=> ./staging/src/k8s.io/api`) cannot work outside its
    repository: each became the same module at the tool's sibling release."""
    replaces = toolchain.parse_go_mod(_go_mod(tool)).replaces
    for old, new in replaces.items():
        assert not new.startswith(("./", "../", "/")), (old, new)
    if tool.siblings:  # the copied local replaces: the same module at the sibling release
        assert any(new == f"{old} {tool.siblings}" for old, new in replaces.items())


def test_kubernetes_staging_modules_are_the_release_of_the_control_plane() -> None:
    kubernetes = next(t for t in TOOLCHAIN if t.name == "kubernetes")
    major, minor, patch = LOCAL_KUBERNETES.removeprefix("v").split(".")
    assert kubernetes.version == LOCAL_KUBERNETES
    assert kubernetes.siblings == f"v0.{minor}.{patch}"  # k8s.io/api v0.35.4 is Kubernetes v1.35.4's
    replaces = toolchain.parse_go_mod(_go_mod(kubernetes)).replaces
    assert replaces["k8s.io/api"] == f"k8s.io/api v0.{minor}.{patch}"
    flags = dict(kubernetes.x_flags)
    assert flags["k8s.io/component-base/version.gitVersion"] == LOCAL_KUBERNETES  # /version answers the release
    assert flags["k8s.io/component-base/version.gitMinor"] == minor


def test_the_local_control_plane_runs_the_newest_minor_an_example_pins() -> None:
    minors = {versions.DEFAULT_KUBERNETES_MINOR}
    for path in STACK_FILES:
        cluster = load_stack_file(path).get("tpu-serving:cluster") or {}
        pinned = cluster.get("minMasterVersion")
        if pinned and pinned != "latest":
            minors.add(".".join(str(pinned).split(".")[:2]))
    newest = max(minors, key=lambda m: tuple(int(x) for x in m.split(".")))
    assert ".".join(LOCAL_KUBERNETES.removeprefix("v").split(".")[:2]) == newest


@pytest.mark.parametrize(
    ("tool_name", "chart"),
    [("lws", "lws"), ("jobset", "jobset"), ("keda", "keda"), ("kueue", "kueue")],
)
def test_controllers_are_the_releases_the_charts_install(tool_name: str, chart: str) -> None:
    tool = next(t for t in TOOLCHAIN if t.name == tool_name)
    release = versions.CHARTS[chart][versions.default_version(chart)]
    assert tool.version == f"v{release.version}" == "v" + release.image_tag.removeprefix("v")


def test_prometheus_adapter_is_the_chart_app_version() -> None:
    tool = next(t for t in TOOLCHAIN if t.name == "prometheus-adapter")
    chart = versions.CHARTS["prometheusAdapter"][versions.default_version("prometheusAdapter")]
    assert tool.version == chart.image_tag


def _requirement(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.split("==")[1]
    raise AssertionError(name)


def test_pulumi_cli_is_the_sdk_release_or_newer_of_its_major() -> None:
    sdk = tuple(int(x) for x in _requirement("pulumi").split("."))
    cli = tuple(int(x) for x in LOCAL_PULUMI_CLI.removeprefix("v").split("."))
    assert cli[0] == sdk[0] and cli >= sdk
    pulumi = next(t for t in TOOLCHAIN if t.name == "pulumi")
    assert dict(pulumi.x_flags)["github.com/pulumi/pulumi/sdk/v3/go/common/version.Version"] == LOCAL_PULUMI_CLI


def test_what_cannot_be_built_names_the_pinned_version_and_the_registry_answer() -> None:
    host = next(u for u in TOOLCHAIN_UNBUILDABLE if u.name == "pulumi-language-python")
    assert host.version == f"v{_requirement('pulumi')}"
    assert "403" in host.error and "not available" in host.error
    provider = next(t for t in TOOLCHAIN if t.name == "pulumi-kubernetes")
    assert _requirement("pulumi-kubernetes") in provider.note  # the pin the proxy refused, recorded


def test_every_binary_name_is_unique_and_in_the_matrix_order() -> None:
    names = [name for tool in TOOLCHAIN for name, _ in tool.binaries]
    assert len(names) == len(set(names))
    # what the local cluster and the e2e need first is built first
    assert [t.name for t in TOOLCHAIN][:5] == ["kubernetes", "etcd", "kwok", "pulumi", "pulumi-kubernetes"]


UPSTREAM = """module example.com/upstream

go 1.24.0

toolchain go1.24.9

require (
	k8s.io/api v0.0.0 // indirect
	github.com/x/y v1.2.3
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	github.com/a/b => github.com/c/b v0.1.0 // a fork
)

replace go.example/forbidden => ./FORBIDDEN_DEPENDENCY
"""


def test_parse_go_mod_and_the_copied_replaces() -> None:
    mod = toolchain.parse_go_mod(UPSTREAM)
    assert mod.module == "example.com/upstream" and mod.go == "1.24.0"
    assert mod.requires == {"k8s.io/api": "v0.0.0", "github.com/x/y": "v1.2.3"}
    tool = GoTool("t", "example.com/upstream", "v1.0.0", (("t", "example.com/upstream/cmd/t"),), "x", siblings="v0.9.0")
    assert toolchain.copied_replaces(tool, mod) == {
        "k8s.io/api": "k8s.io/api v0.9.0",
        "github.com/a/b": "github.com/c/b v0.1.0",
    }
    rendered = toolchain.parse_go_mod(toolchain.render_go_mod(tool, mod))
    assert rendered.requires == {"example.com/upstream": "v1.0.0"}
    assert rendered.replaces == {"github.com/a/b": "github.com/c/b v0.1.0", "k8s.io/api": "k8s.io/api v0.9.0"}


def test_a_local_replace_without_a_sibling_release_is_refused() -> None:
    tool = GoTool("t", "example.com/upstream", "v1.0.0", (("t", "example.com/upstream"),), "x")
    with pytest.raises(ValueError, match="name its release"):
        toolchain.copied_replaces(tool, toolchain.parse_go_mod(UPSTREAM))


def test_ldflags_strip_and_stamp_the_version() -> None:
    pulumi = next(t for t in TOOLCHAIN if t.name == "pulumi")
    assert toolchain.ldflags(pulumi).startswith("-s -w ")
    assert f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={LOCAL_PULUMI_CLI}" in toolchain.ldflags(
        pulumi
    )


def _fill(cache: Path, tools: tuple[GoTool, ...] = TOOLCHAIN, skip: str = "") -> None:
    for tool in tools:
        if tool.name == skip:
            continue
        folder = toolchain.cache_dir(tool, cache)
        folder.mkdir(parents=True)
        for name, _ in tool.binaries:
            (folder / name).write_text("#!/bin/sh\n")
            (folder / name).chmod(0o755)
        for path in tool.data:
            toolchain.data_path(tool, path, cache).parent.mkdir(parents=True, exist_ok=True)
            toolchain.data_path(tool, path, cache).write_text("kind: Stage\n")


def test_a_second_run_starts_no_go_command(tmp_path, monkeypatch, capsys) -> None:
    _fill(tmp_path)

    def no_go(*args, **kwargs):
        raise AssertionError("go was run although everything is built")

    monkeypatch.setattr(toolchain, "_go", no_go)
    monkeypatch.setattr(toolchain.subprocess, "Popen", no_go)
    monkeypatch.setattr(toolchain.subprocess, "run", no_go)
    assert toolchain.build_missing([], tmp_path) == 0
    out = capsys.readouterr().out
    assert all(f"{tool.name} {tool.version}: present" in out for tool in TOOLCHAIN)
    for tool in TOOLCHAIN:
        for name, _ in tool.binaries:
            assert (tmp_path / "bin" / name).resolve() == (toolchain.cache_dir(tool, tmp_path) / name).resolve()


def test_only_what_is_missing_is_built(tmp_path, monkeypatch) -> None:
    _fill(tmp_path, skip="keda")
    kwok = next(t for t in TOOLCHAIN if t.name == "kwok")
    toolchain.data_path(kwok, kwok.data[0], tmp_path).unlink()  # a missing data file is missing too
    built: list[str] = []
    monkeypatch.setattr(toolchain, "build", lambda tool, i, n, cache: built.append(tool.name) or True)
    assert toolchain.build_missing([], tmp_path) == 0
    assert built == ["kwok", "keda"]  # in the matrix's order


def test_a_failed_build_is_reported_and_the_others_go_on(tmp_path, monkeypatch) -> None:
    built: list[str] = []
    monkeypatch.setattr(toolchain, "build", lambda tool, i, n, cache: built.append(tool.name) or tool.name != "etcd")
    assert toolchain.build_missing([], tmp_path) == 1
    assert built == [t.name for t in TOOLCHAIN]


def test_the_report_quotes_each_build_record(tmp_path) -> None:
    _fill(tmp_path)
    etcd = next(t for t in TOOLCHAIN if t.name == "etcd")
    (toolchain.cache_dir(etcd, tmp_path) / "BUILD.json").write_text(
        json.dumps({"seconds": 61.2, "packages_compiled": 321})
    )
    table = toolchain.report(tmp_path)
    assert f"| etcd | {etcd.module}@{etcd.version} | etcd | 61 | 321 |" in table
    assert "| pulumi-language-python |" in table and "not buildable" in table


def test_the_sdk_accepts_the_cli_the_toolchain_builds() -> None:
    """The oracle: pulumi==3.272.0's Automation API checks the CLI it drives (pulumi/automation/_cmd.py
    _parse_and_validate_pulumi_version: a CLI of the SDK's major at or above the minimum passes; a newer major or
    an older CLI is refused), the check the e2e's run goes through."""
    from pulumi.automation._cmd import _parse_and_validate_pulumi_version
    from pulumi.automation._minimum_version import _MINIMUM_VERSION
    from pulumi.automation.errors import InvalidVersionError

    _parse_and_validate_pulumi_version(_MINIMUM_VERSION, LOCAL_PULUMI_CLI.removeprefix("v"), False)
    with pytest.raises(InvalidVersionError):  # the check is real: a CLI of the next major is refused
        _parse_and_validate_pulumi_version(_MINIMUM_VERSION, "4.0.0", False)


def test_an_upstream_module_folder_is_downloaded_before_it_is_read(monkeypatch) -> None:
    """On an empty Go module cache `go list -m -json` names no `Dir` (a clean CI run stopped there): the folder is
    asked of `go mod download -json`, which downloads it first."""
    import subprocess as sp

    from tooling.local import toolchain

    calls = []

    def run(argv, **kwargs):
        calls.append(argv)
        return sp.CompletedProcess(argv, 0, stdout='{"Path": "m", "Dir": "/cache/m@v1"}', stderr="")

    monkeypatch.setattr(toolchain, "_go", lambda: "go")
    monkeypatch.setattr(toolchain.subprocess, "run", run)
    tool = next(t for t in toolchain.TOOLCHAIN if t.generate is not None)
    assert str(toolchain._module_dir(tool)) == "/cache/m@v1"
    assert calls == [["go", "mod", "download", "-json", tool.module]]
