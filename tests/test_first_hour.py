"""What a new user meets in the first hour (issue 23): warnings in plain sight, a stack made from an example that is
what its name says, a placeholder project that cannot be deployed, mistakes refused with file, line and source."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from stacks import pulumi_config
from stacks.config import ConfigError
from stacks.facts import catalog
from stacks.pieces.environment import PLACEHOLDER_PROJECT
from stacks.pieces.rules import ZONE_RE
from tests.conftest import make_config, pool
from tooling.harness.offline import ROOT, StackFileError, load_stack_file, parse_stack_file, read_stack_yaml
from tooling.operations import example
from tooling.review import render
from tooling.scans import fuzz

OPEN_CONTROL_PLANE = (
    "config:\n  gcp:project: tpu-test-project\n  gcp:region: us-east5\n  tpu-serving:environment: {env}\n"
    "  tpu-serving:cluster:\n    controlPlaneEndpoint: {endpoint}\n"
)


def stack_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text)
    return path


def parse(raw_config: dict, *, stack: str = "dev"):
    """The config as `load_stack_config()` validates it (tooling.scans.fuzz.parse), without the Pulumi runtime."""
    return fuzz.parse(raw_config, stack)


# ---- 1. warnings printed at the end of the render; --strict fails on them --------------------------------


def test_render_prints_every_warning_at_the_end(tmp_path, capsys):
    path = stack_file(tmp_path, "open", OPEN_CONTROL_PLANE.format(env="dev", endpoint="ip"))
    assert render.main([str(path), "--out", str(tmp_path / "build")]) == 0
    out = capsys.readouterr().out.splitlines()
    rendered = next(i for i, line in enumerate(out) if "resources ->" in line)
    warnings = [line for line in out[rendered:] if line.startswith("  warning: ")]
    assert any("controlPlaneEndpoint=ip with no masterAuthorizedNetworks" in w for w in warnings), out
    assert out[-1].startswith("  warning: "), "the warnings come last, where they are read"


def test_strict_fails_on_any_warning_and_strict_for_only_on_those_environments(tmp_path, capsys):
    dev = stack_file(tmp_path, "open", OPEN_CONTROL_PLANE.format(env="dev", endpoint="ip"))
    out = str(tmp_path / "build")
    assert render.main([str(dev), "--out", out, "--strict"]) == 1
    assert "--strict: a warning fails the render" in capsys.readouterr().err
    assert render.main([str(dev), "--out", out, "--strict-for", "staging,prod"]) == 0
    # staging with an open node pool (privateNodes: false) warns; --strict-for staging fails it
    staging = stack_file(
        tmp_path,
        "stg",
        "config:\n  gcp:project: tpu-test-project\n  gcp:region: us-east5\n  tpu-serving:environment: staging\n"
        "  tpu-serving:cluster:\n    privateNodes: false\n",
    )
    assert render.main([str(staging), str(dev), "--out", out, "--strict-for", "staging,prod"]) == 1
    err = capsys.readouterr().err
    assert "stg: error: --strict" in err and "open: error" not in err


def test_a_stack_without_warnings_passes_strict(tmp_path, capsys):
    path = stack_file(tmp_path, "clean", OPEN_CONTROL_PLANE.format(env="prod", endpoint="dns"))
    assert render.main([str(path), "--out", str(tmp_path / "build"), "--strict"]) == 0
    assert "clean: no warnings" in capsys.readouterr().out


# ---- 3. placeholder project; make example follows the stack's name ----------------------------------------


def test_every_example_ships_the_one_placeholder_project():
    """The placeholder is defined once (stacks/pieces/environment.py PLACEHOLDER_PROJECT) and is what the examples carry."""
    files = [*sorted((ROOT / "examples").glob("*/Pulumi.*.yaml")), ROOT / "Pulumi.dev.yaml"]
    assert {load_stack_file(p)["gcp:project"] for p in files} == {PLACEHOLDER_PROJECT}


def test_placeholder_project_is_a_warning_offline_and_refused_for_real(run, monkeypatch):
    cfg = parse(make_config(gcp__project=PLACEHOLDER_PROJECT))
    assert any(w.startswith("gcp:project: 'my-tpu-project' is the examples' placeholder") for w in cfg.warnings)
    # the program refuses it when the Pulumi engine runs it (not under mocks), before registering anything
    monkeypatch.setattr(pulumi_config, "under_mocks", lambda: False)
    with pytest.raises(pulumi.RunError, match="examples' placeholder"):
        run(make_config(gcp__project=PLACEHOLDER_PROJECT))


def test_under_mocks_is_what_the_offline_run_sets(run, monkeypatch):
    seen = []
    real = pulumi_config.under_mocks
    monkeypatch.setattr(pulumi_config, "under_mocks", lambda: seen.append(real()) or real())
    run(make_config())
    assert seen == [True]


@pytest.mark.parametrize(
    ("stack", "asked", "expected"),
    [("prod", None, "prod"), ("staging", None, "staging"), ("prod-eu", None, "prod"), ("llama", None, "dev")],
)
def test_make_example_sets_the_environment_from_the_stack_name(monkeypatch, tmp_path, capsys, stack, asked, expected):
    monkeypatch.setattr(example, "ROOT", tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    code = example.main(["vllm-single-host", stack, "--project", "acme-ml-serving"])
    assert code == 0, capsys.readouterr()
    written = tmp_path / f"Pulumi.{stack}.yaml"
    values = load_stack_file(written)
    assert values["tpu-serving:environment"] == expected
    assert values["gcp:project"] == "acme-ml-serving"
    assert written.read_text().startswith("# yaml-language-server: $schema=./schema/")
    assert "# single-host: one ct6e-standard-8t node" in written.read_text(), "the example's comments stay"
    out = capsys.readouterr().out
    assert f"environment: {expected}" in out


def test_make_example_says_the_placeholder_stays_and_prod_gets_protection(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(example, "ROOT", tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert example.main(["vllm-single-host", "prod"]) == 0
    out = capsys.readouterr().out
    assert "environment: prod (from the stack's name); the example's is dev" in out
    assert "deletion protection on" in out
    assert "warning: gcp:project: 'my-tpu-project' is the examples' placeholder" in out
    cfg = parse_stack_file(tmp_path / "Pulumi.prod.yaml")
    assert (
        cfg.environment == "prod"
        and cfg.cluster_plan.protect
        and cfg.bucket_plan.protect
        and not cfg.bucket_force_destroy
    )


def test_make_example_reports_what_the_new_environment_refuses(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(example, "ROOT", tmp_path)
    examples = tmp_path / "examples" / "x"
    examples.mkdir(parents=True)
    (examples / "Pulumi.x.yaml").write_text(OPEN_CONTROL_PLANE.format(env="dev", endpoint="ip"))
    assert example.main(["x", "prod"]) == 1
    assert "controlPlaneEndpoint: 'ip' is allowed only in dev" in capsys.readouterr().err


# ---- 4. zones per generation, duplicate keys, environment against names -----------------------------------


@pytest.mark.parametrize("generation", list(catalog.GENERATIONS.values()), ids=lambda g: g.name)
def test_every_generation_lists_its_zones_with_a_source(generation):
    assert generation.zones and generation.zones_source.startswith("https://cloud.google.com/tpu/docs/")
    assert all(ZONE_RE.fullmatch(z) for z in generation.zones)


# https://cloud.google.com/tpu/docs/regions-zones, North America: v6e in us-east5-b, v5e in us-west4-a (and not
# in any us-east5 zone), TPU7x in us-central1-c
@pytest.mark.parametrize(
    ("tpu", "topology", "region", "zone", "listed"),
    [
        ("v6e", "4x4", "us-east5", "us-east5-b", True),
        ("v5e", "2x4", "us-west4", "us-west4-a", True),
        ("tpu7x", "2x2x1", "us-central1", "us-central1-c", True),
        ("v5e", "2x4", "us-east5", "us-east5-c", False),
        ("v6e", "4x4", "us-west4", "us-west4-b", False),
    ],
)
def test_a_zone_the_source_does_not_list_is_a_warning_naming_it(tpu, topology, region, zone, listed):
    raw = make_config(
        gcp__region=region,
        tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.2201000"},
        tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology, zone=zone)],
    )
    warnings = [w for w in parse(raw).warnings if ".zone:" in w]
    if listed:
        assert warnings == []
    else:
        assert (
            warnings == [f"tpu-serving:tpuPools[0].zone: {catalog.zone_warning(tpu, zone)}"]
            and catalog.ZONES_SOURCE in warnings[0]
        )


def test_a_zone_outside_the_region_stays_an_error():
    with pytest.raises(ConfigError, match=r"tpuPools\[0\]\.zone: 'us-west4-a' is not a zone of gcp:region"):
        parse(make_config(tpu_serving__tpuPools=[pool(zone="us-west4-a")]))


def test_duplicate_key_in_a_stack_file_is_refused_with_its_line(tmp_path):
    """The Pulumi CLI reads stack files with gopkg.in/yaml.v3 (pulumi/pulumi@v3.259.0
    sdk/go/common/encoding/marshal.go), which refuses equal keys: "mapping key already defined"
    (go-yaml/yaml@v3.0.1 decode.go, uniqueKeys on by default). PyYAML would keep the last one."""
    path = stack_file(
        tmp_path,
        "dup",
        "config:\n  gcp:project: tpu-test-project\n  tpu-serving:environment: prod\n  gcp:region: us-east5\n"
        "  tpu-serving:environment: dev\n",
    )
    with pytest.raises(StackFileError) as err:
        load_stack_file(path)
    assert str(err.value).startswith(f"{path}:5:3: the key 'tpu-serving:environment' is already defined at line 3")
    nested = stack_file(
        tmp_path, "nested", "config:\n  tpu-serving:cluster:\n    name: a\n    location: us-east5\n    name: b\n"
    )
    with pytest.raises(StackFileError, match=r":5:5: the key 'name' is already defined at line 3"):
        read_stack_yaml(nested)


@pytest.mark.parametrize(
    ("stack", "project", "environment", "named"),
    [
        ("prod", "tpu-test-project", "dev", "prod"),
        ("serving-production", "tpu-test-project", "staging", "prod"),
        ("llama", "acme-prod-ml", "dev", "prod"),
        ("stg", "tpu-test-project", "dev", "staging"),
    ],
)
def test_an_environment_below_what_the_names_say_is_refused(stack, project, environment, named):
    raw = make_config(gcp__project=project, tpu_serving__environment=environment)
    with pytest.raises(ConfigError) as err:
        parse(raw, stack=stack)
    assert re.search(
        rf"tpu-serving:environment: '{environment}' with (stack|gcp:project) '[^']+', which is named like {named}:"
        rf".*set tpu-serving:environment: {named}",
        str(err.value),
    ), str(err.value)


@pytest.mark.parametrize(
    ("stack", "project", "environment"),
    [("prod", "tpu-test-project", "prod"), ("staging", "acme-prod", "staging"), ("product-demo", "x-project", "dev")],
)
def test_names_that_agree_with_the_environment_pass(stack, project, environment):
    assert parse(make_config(gcp__project=project, tpu_serving__environment=environment), stack=stack)


# ---- 5. the highest minMasterVersion at once; YAML errors with file, line, column and a hint ---------------


def test_capacity_list_names_the_highest_gke_minimum_at_once():
    """v6e needs 1.31.2-gke.1115000 (catalog), a capacity list 1.33.3-gke.1136000 (compute_class.MIN_GKE_VERSION):
    the message names the capacity list's, not v6e's and then, once that is set, the next."""
    raw = make_config(tpu_serving__tpuPools=[pool(capacity=["spot", "on-demand"])])
    with pytest.raises(ConfigError) as err:
        parse(raw)
    assert "set it to 1.33.3-gke.1136000 or later (the minimum GKE version for a capacity list" in str(err.value)
    raw["tpu-serving:cluster"] = {"minMasterVersion": "1.31.2-gke.1115000"}  # v6e's: what the old message said
    with pytest.raises(ConfigError, match=r"'1.31.2-gke.1115000' is below 1.33.3-gke.1136000"):
        parse(raw)
    raw["tpu-serving:cluster"] = {"minMasterVersion": "1.33.3-gke.1136000"}
    assert parse(raw)


def test_the_highest_minimum_over_every_pool_is_named():
    raw = make_config(
        gcp__region="us-central1",
        tpu_serving__cluster={"minMasterVersion": "1.32.0"},
        tpu_serving__tpuPools=[
            pool(name="a", zone="us-central1-b", capacity=["spot", "on-demand"]),
            pool(name="b", tpu="tpu7x", topology="2x2x1", zone="us-central1-c"),
        ],
    )
    with pytest.raises(ConfigError) as err:
        parse(raw)
    problems = [line for line in str(err.value).splitlines() if "minMasterVersion" in line]
    assert (
        len(problems) == 1
        and "is below 1.34.0-gke.2201000, the minimum GKE version for tpu7x (pool 'b')" in (problems[0])
    )


@pytest.mark.parametrize(
    ("text", "where", "hint"),
    [
        ("config:\n  gcp:project: a\n   gcp:region: x\n", ":3:14:", "indented too far"),
        ("config:\n\tgcp:project: a\n", ":2:1:", "indent with spaces"),
        ("config:\n  gcp:project: 'a\n  gcp:region: x\n", ":4:1:", "a quote is opened and not closed"),
    ],
)
def test_yaml_syntax_error_names_file_line_column_and_a_hint(tmp_path, capsys, text, where, hint):
    path = stack_file(tmp_path, "broken", text)
    with pytest.raises(StackFileError) as err:
        load_stack_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}{where} not valid YAML: ") and hint in message.split("  hint: ")[1], message
    assert render.main([str(path), "--out", str(tmp_path / "build")]) == 1
    assert f"broken: error: {path}{where}" in capsys.readouterr().err


# ---- 2. the Python version, checked before the virtualenv; a virtualenv of another Python rebuilt ----------


def test_requires_python_is_declared_once_and_the_tools_agree():
    text = (ROOT / "pyproject.toml").read_text()
    ((major, minor),) = re.findall(r'^requires-python = ">=(\d+)\.(\d+)"$', text, re.M)
    assert f'target-version = "py{major}{minor}"' in text and f'python_version = "{major}.{minor}"' in text


def checkout_needing(tmp_path: Path, version: str) -> Path:
    """The files `make venv` reads, with pyproject.toml asking for `version`."""
    copy = tmp_path / "checkout"
    (copy / "scripts").mkdir(parents=True)
    for rel in ("Makefile", "requirements.txt", "scripts/check_python.py"):
        (copy / rel).write_text((ROOT / rel).read_text())
    pyproject = (ROOT / "pyproject.toml").read_text()
    (copy / "pyproject.toml").write_text(
        re.sub(r'requires-python = ">=[\d.]+"', f'requires-python = ">={version}"', pyproject)
    )
    return copy


def check_python(copy: Path, venv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "scripts/check_python.py", venv], cwd=copy, capture_output=True, text=True, check=False
    )


def test_make_venv_refuses_an_old_python_before_creating_anything(tmp_path):
    copy = checkout_needing(tmp_path, "3.99")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    done = subprocess.run(
        ["make", "venv", f"PYTHON={sys.executable}", "VENV=v"], cwd=copy, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    have = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (
        f"tpu-serving needs Python 3.99 or newer (pyproject.toml requires-python); {sys.executable} is Python {have}"
        in done.stderr
    )
    assert "make venv PYTHON=python3.99" in done.stderr
    assert not (copy / "v").exists(), "nothing is created or installed with a Python that is too old"


def fake_venv(path: Path, version: str) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text(f"home = /usr/bin\nversion = {version}\n")
    (path / "bin" / "python").symlink_to(sys.executable)
    (path / ".installed").write_text("")
    return path


def test_a_virtualenv_of_another_python_is_rebuilt(tmp_path):
    copy = checkout_needing(tmp_path, "3.11")
    fake_venv(copy / "old", "3.10.12")
    done = check_python(copy, "old")
    assert done.returncode == 0 and "rebuilding old: it is made by Python 3.10" in done.stdout
    assert not (copy / "old").exists(), "removed, so that make creates it again with this Python"
    same = fake_venv(copy / "same", f"{sys.version_info[0]}.{sys.version_info[1]}.0")
    assert check_python(copy, "same").returncode == 0 and (same / ".installed").exists()
    broken = fake_venv(copy / "broken", f"{sys.version_info[0]}.{sys.version_info[1]}.0")
    (broken / "bin" / "python").unlink()  # its interpreter is gone
    assert "rebuilding broken: it is not a working virtualenv" in check_python(copy, "broken").stdout


def test_a_symlinked_virtualenv_of_another_python_is_left_alone(tmp_path):
    copy = checkout_needing(tmp_path, "3.11")
    target = fake_venv(tmp_path / "elsewhere", "3.10.12")
    (copy / "linked").symlink_to(target)
    done = check_python(copy, "linked")
    assert done.returncode == 1 and "linked is a symlink, so it is left alone" in done.stderr
    assert (target / ".installed").exists()


# ---- 6. LICENSE and CONTRIBUTING ----------------------------------------------------------------------------


def test_license_is_the_apache_2_0_text():
    """The text of https://www.apache.org/licenses/LICENSE-2.0.txt, unchanged (its sha256 is the well-known one)."""
    digest = hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest()
    assert digest == "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4"
    assert 'license = "Apache-2.0"' in (ROOT / "pyproject.toml").read_text()


def test_contributing_says_the_checks_how_to_add_a_workload_type_and_how_goldens_change():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for heading in ("## The checks to run", "## How to add a workload type", "## How goldens change"):
        assert heading in text
    targets = set(re.findall(r"^([a-z-]+):", (ROOT / "Makefile").read_text(), re.M))
    named = set(re.findall(r"`make ([a-z-]+)`|^make ([a-z-]+)", text, re.M))
    assert {t for pair in named for t in pair if t} <= targets
    assert "workloads/registry.py" in text and "goldens:" in text


def test_a_malformed_environment_is_reported_once_not_crashing_the_name_check():
    with pytest.raises(ConfigError) as err:
        parse(make_config(tpu_serving__environment=["prod"]), stack="prod")
    assert "tpu-serving:environment: " in str(err.value) and "named like" not in str(err.value)


def test_an_enabled_gateway_is_one_of_the_minimums_and_only_the_highest_is_named():
    """The gateway's InferencePool CRD comes with GKE 1.34.0-gke.1626000 (stacks/facts/gke_managed.py), tpu7x needs
    1.34.0-gke.2201000 (catalog, S7): one problem, naming the higher; with only a v6e capacity list (1.33.3), the
    gateway's is the higher and its own message names it."""
    gateway = {"enabled": True}
    raw = make_config(
        gcp__region="us-central1",
        tpu_serving__gateway=gateway,
        tpu_serving__tpuPools=[pool(name="b", tpu="tpu7x", topology="2x2x1", zone="us-central1-c")],
    )
    with pytest.raises(ConfigError) as err:
        parse(raw)
    (problem,) = [str(p) for p in err.value.problems if "minMasterVersion" in p.path]
    assert (
        "required with pool 'b': set it to 1.34.0-gke.2201000 or later (the minimum GKE version for tpu7x)" in problem
    )
    raw = make_config(tpu_serving__gateway=gateway, tpu_serving__tpuPools=[pool(capacity=["spot", "on-demand"])])
    with pytest.raises(ConfigError) as err:
        parse(raw)
    (problem,) = [str(p) for p in err.value.problems if "minMasterVersion" in p.path]
    assert "with gateway.enabled: set it to 1.34.0-gke.1626000 or later" in problem
