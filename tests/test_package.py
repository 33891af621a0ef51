"""The tpu-serving package (tpu_serving/, `make package`): its version is the release's, and its example program
(examples/add-workload/) adds a workload to an existing platform stack's cluster, under the mocks: the workload's
namespace and component as the platform builds them, on the platform's bucket, passing the guardrails."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import os
import subprocess
import sys
import tomllib
import types

import pytest

from stacks import guardrails as g
from stacks.security import pod_security
from tests.test_guardrails import resources
from tooling.harness.offline import ROOT, load_stack_file, run_program
from tooling.harness.requirements import pins
from tpu_serving.version import VERSION
from tpu_serving.workload import TYPED_KEYS, PlatformArgs, PlatformOutputs, WorkloadArgs
from workloads.registry import WORKLOAD_TYPES

PLATFORM = "organization/tpu-serving/dev"
# the platform stack's outputs: its bucket is the one its stack file (Pulumi.dev.yaml) names, by default
# naming.default_bucket_name(gcp project, pulumi project, stack)
PLATFORM_BUCKET = "my-tpu-project-tpu-serving-dev"
OUTPUTS = {"dev": {"kubeconfig": "apiVersion: v1\nkind: Config\n", "bucketName": PLATFORM_BUCKET, "clusterName": "c"}}
WORKLOAD = {
    "type": "vllm",
    "name": "qwen3-8b-b",
    "namespace": "team-b",
    "pool": "v5e-2x4",
    "model": "Qwen/Qwen3-8B",
    "gated": False,
    "maxModelLen": 4096,
    "replicas": 1,
}


def example_config(workload: dict) -> dict:
    """The example's config for a `tpu-serving:workloads` entry: its typed keys, the type's own under settings."""
    typed = {k: workload[k] for k in TYPED_KEYS if k in workload}
    settings = {k: v for k, v in workload.items() if k not in TYPED_KEYS}
    return {**{f"add-workload:{k}": v for k, v in typed.items()}, "add-workload:settings": json.dumps(settings)}


def added(workload, preview=False, outputs=OUTPUTS):
    config = {
        "gcp:project": "my-tpu-project",
        "add-workload:platformStack": PLATFORM,
        "add-workload:platformStackFile": str(ROOT / "Pulumi.dev.yaml"),
        **example_config(workload),
    }
    return run_program(
        config, stack="team-b", preview=preview, program=ROOT / "examples/add-workload/__main__.py",
        stack_outputs=outputs,
    )  # fmt: skip


def test_the_package_pins_what_the_program_imports_as_requirements_txt_does():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = pins()
    assert {d.split("==")[0].lower(): d.split("==")[1] for d in declared} == {
        name: pinned[name] for name in ("pulumi", "pulumi-gcp", "pulumi-kubernetes", "pydantic", "pyyaml")
    }


def test_our_artifacts_are_installed_by_path_never_by_name():
    """`tpu-serving` is on no public index: a requirement by name (even with --find-links) is looked up on the index
    too (https://pip.pypa.io/en/stable/cli/pip_install/#finding-packages: "There is no priority in the locations that
    are searched. Rather they are all checked, and the best match ... is selected"), so a package of that name there
    could be installed. Every requirements file a user installs names only index packages; every install command of
    the docs and the Makefile installs the wheel by its path."""
    import re

    for req in (ROOT / "examples/add-workload/requirements.txt", ROOT / "policy/requirements.txt"):
        assert "tpu-serving" not in pins(req) and "tpu_serving" not in pins(req), req
    texts = {p: p.read_text() for p in (ROOT / "Makefile", ROOT / "docs/policy.md", ROOT / "docs/package.md")}
    for path, text in texts.items():
        assert "--find-links" not in text, path
        # the pack's and the example's requirements (the Makefile's own `-r requirements.txt` is the checkout's venv)
        for line in re.findall(r"pip install[^\n]*-r \S*(?:pack|add-workload)?/?requirements\.txt", text):
            if path.name == "Makefile" and not re.search(r"(pack|add-workload)/requirements", line):
                continue
            assert re.search(r"dist/tpu_serving-\S+-py3-none-any\.whl", line), (path, line)


@pytest.mark.parametrize("preview", [False, True], ids=["up", "preview"])
def test_the_example_adds_a_workload_to_the_platforms_cluster(preview):
    rec = added(WORKLOAD, preview)
    ns = rec.one("kubernetes:core/v1:Namespace")
    assert ns.inputs["metadata"]["name"] == "team-b"
    assert ns.inputs["metadata"]["labels"][f"{pod_security.LABEL_PREFIX}enforce"] in pod_security.LEVELS
    assert rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")  # default-deny with the namespace
    assert [d.inputs["metadata"]["namespace"] for d in rec.of_type("kubernetes:apps/v1:Deployment")] == ["team-b"]
    grants = [
        r
        for r in rec.of_type(g.BUCKET_IAM_MEMBER)
        if r.inputs.get("role") in g.OBJECT_ROLES and r.inputs.get("condition")
    ]
    assert grants and {r.inputs["bucket"] for r in grants} == {PLATFORM_BUCKET}
    # limited to a prefix of that bucket, the one they are on (the guardrail reads the same)
    assert all(g.prefix_of(r.inputs["condition"]["expression"], PLATFORM_BUCKET) for r in grants)
    # every Kubernetes object goes to the platform's cluster, through the provider made of its kubeconfig output
    [provider] = rec.of_type("pulumi:providers:kubernetes")
    assert all(r.provider.startswith(provider.urn) for r in rec.resources if r.type.startswith("kubernetes:"))
    assert not g.violations(resources(rec), "dev")
    assert rec.outputs["namespace"] == "team-b"


def test_a_workload_the_platform_cannot_run_is_refused_naming_its_key():
    import pulumi

    with pytest.raises(pulumi.RunError, match=r"^WorkloadArgs\.pool: "):
        added({**WORKLOAD, "pool": "no-such-pool"})


def test_every_problem_is_named_by_the_input_that_set_it_at_once_before_anything_is_registered(monkeypatch):
    """A pool the platform has not and a type's key out of range: both at once, named WorkloadArgs.pool and
    WorkloadArgs.settings['maxModelLen'] (not the stack key path the user never wrote), and the platform's outputs
    (a StackReference) are not read first."""
    import pulumi

    import tpu_serving.workload as tw

    read: list[str] = []
    monkeypatch.setattr(tw.PlatformOutputs, "of", classmethod(lambda cls, ref: read.append(ref) or None))
    with pytest.raises(pulumi.RunError) as err:
        added({**WORKLOAD, "pool": "nope", "maxModelLen": -1}, outputs=None)
    lines = str(err.value).splitlines()
    assert any(line.startswith("WorkloadArgs.pool: ") and "'nope'" in line for line in lines), lines
    assert any(line.startswith("WorkloadArgs.settings['maxModelLen']") for line in lines), lines
    assert not any("tpu-serving:workloads[" in line for line in lines), lines
    assert read == []


def test_the_capacity_check_counts_the_platforms_own_workloads_as_the_platform_does():
    """Pulumi.dev.yaml's pool v5e-2x4 has 2 hosts (maxNodes 2) and its qwen3-8b holds 1: a workload of 2 replicas on it
    does not fit. The platform program refuses that stack file with it added; add_workload refuses it the same way
    (before, it parsed the added workload alone, and 2 of 2 hosts fit)."""
    import copy

    import pulumi

    chat2 = {**WORKLOAD, "name": "chat2", "replicas": 2}
    platform = copy.deepcopy(load_stack_file(ROOT / "Pulumi.dev.yaml"))
    platform["tpu-serving:workloads"] = [*platform["tpu-serving:workloads"], chat2]
    with pytest.raises(pulumi.RunError) as by_platform:
        run_program(platform, stack="dev")
    with pytest.raises(pulumi.RunError) as by_package:
        added(chat2)
    problem = "pool 'v5e-2x4' has 2 TPU host(s), but its workloads need 3 at most (workloads[0] 'qwen3-8b' 1, workloads[1] 'chat2' 2)"
    assert f"tpu-serving:workloads[1].pool: {problem}" in str(by_platform.value)
    assert str(by_package.value).startswith(f"WorkloadArgs.pool: {problem}")
    added({**chat2, "replicas": 1})  # 1 + 1 of 2 fits


@pytest.mark.parametrize(
    ("change", "key"),
    [({"name": "qwen3-8b", "namespace": "team-b"}, "name"), ({"namespace": "qwen3-8b"}, "namespace")],
    ids=["platform-workload-name", "platform-namespace"],
)
def test_a_workload_on_the_platforms_names_is_refused(change, key):
    """The platform stack (Pulumi.dev.yaml) serves qwen3-8b in its namespace qwen3-8b: an added workload taking that
    name or namespace would have server-side apply adopt the platform's objects, and this program's destroy delete
    them: refused, naming the key and what is allowed."""
    import pulumi

    with pytest.raises(pulumi.RunError, match=rf"WorkloadArgs\.{key}: 'qwen3-8b' .*platform stack"):
        added({**WORKLOAD, **change})


# ---- typed inputs (tpu_serving.WorkloadArgs, PlatformArgs, PlatformOutputs) -------------------------------------


@pytest.mark.parametrize("cls", [WorkloadArgs, PlatformArgs, PlatformOutputs], ids=lambda c: c.__name__)
def test_every_field_of_a_typed_input_has_a_type_and_a_docstring(cls):
    # as pulumi-eks documents each input (pulumi/pulumi-eks@fb445f21 sdk/python/pulumi_eks/_inputs.py: a docstring per
    # input property): the field's annotation, then its docstring right below it
    body = next(
        n for n in ast.parse(inspect.getsource(inspect.getmodule(cls))).body if getattr(n, "name", "") == cls.__name__
    )
    documented = {
        field.target.id
        for field, doc in zip(body.body, body.body[1:], strict=False)
        if isinstance(field, ast.AnnAssign)
        and isinstance(doc, ast.Expr)
        and isinstance(doc.value, ast.Constant)
        and isinstance(doc.value.value, str)
    }
    assert documented == {f.name for f in dataclasses.fields(cls)}


def test_bad_typed_inputs_are_refused_at_once_naming_field_value_and_allowed():
    import pulumi

    with pytest.raises(pulumi.RunError) as err:
        WorkloadArgs(type="tgi", name="Chat_2", pool="", namespace="team b", settings={"name": "x"})
    lines = str(err.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "WorkloadArgs.type", "WorkloadArgs.name", "WorkloadArgs.pool", "WorkloadArgs.namespace",
        "WorkloadArgs.settings['name']",
    ]  # fmt: skip
    assert "'tgi' is not allowed; allowed: a registered workload type (" in lines[0] and "vllm" in lines[0]
    # the platform's own workload-name rule (stacks/pieces/rules.py check_name, at most WORKLOAD_NAME_MAX)
    assert "'Chat_2' is not a valid workload name" in lines[1] and "starting with a letter" in lines[1]
    with pytest.raises(pulumi.RunError, match=r"WorkloadArgs\.name: '9lives' is not a valid workload name"):
        WorkloadArgs(type="vllm", name="9lives", pool="p")
    with pytest.raises(pulumi.RunError, match=r"at most 40 characters"):
        WorkloadArgs(type="vllm", name="a" * 41, pool="p")
    assert "set WorkloadArgs.name instead" in lines[4]
    with pytest.raises(pulumi.RunError, match=r"PlatformArgs\.stack: 'dev' is not allowed; allowed: <organization>"):
        PlatformArgs(stack="dev", config={})


def test_a_workload_type_registered_after_import_is_allowed():
    # rule over every registry entry, including one a test adds: the allowed types are the registry's when checked
    assert set(WORKLOAD_TYPES) >= {"vllm", "jetstream", "saxml"}
    for name in WORKLOAD_TYPES:
        assert WorkloadArgs(type=name, name="w", pool="p").type == name


def test_an_entry_and_its_typed_input_are_the_same_workload():
    args = WorkloadArgs.from_entry(WORKLOAD)
    assert args.namespace == "team-b" and args.settings["model"] == "Qwen/Qwen3-8B"
    assert args.entry() == WORKLOAD


MYPY_CONFIG = """
[mypy]
python_version = 3.11
ignore_missing_imports = true
# the package's API is what is checked here (mypy over the program's own packages is `make lint`)
[mypy-stacks.*,components.*,workloads.*,pulumi.*,pulumi_kubernetes.*,pulumi_gcp.*]
follow_imports = skip
"""


def test_mypy_type_checks_a_user_program_against_the_typed_inputs(tmp_path):
    from mypy import api

    (tmp_path / "mypy.ini").write_text(MYPY_CONFIG)
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "import tpu_serving\n"
        "tpu_serving.WorkloadArgs(type='vllm', name='x', pool=3)\n"
        "tpu_serving.PlatformArgs(stack='o/p/s', config={}, kubeconfig='')\n"
    )
    args = ["--config-file", str(tmp_path / "mypy.ini"), "--no-incremental", "--cache-dir", str(tmp_path / "cache")]
    out, _, code = api.run([*args, str(ROOT / "examples/add-workload/__main__.py")])
    assert code == 0, out
    out, _, code = api.run([*args, str(wrong)])
    assert code == 1
    assert 'Argument "pool" to "WorkloadArgs" has incompatible type "int"; expected "str"' in out, out
    assert 'Unexpected keyword argument "kubeconfig" for "PlatformArgs"' in out, out


def test_the_package_carries_its_types():
    # PEP 561 (https://peps.python.org/pep-0561/): an installed package is type-checked only with a py.typed marker
    assert (ROOT / "tpu_serving/py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["tpu_serving"]


def test_the_grants_and_their_conditions_name_one_bucket_whatever_the_bucket_output():
    """The grants' bucket and their conditions' bucket are one value (the bucket the platform's config names): no
    mismatch between them is possible. An output naming another bucket is warned about, never raised inside an apply
    after resources are registered (that surfaced as "Future exception was never retrieved")."""
    other = {"dev": {**OUTPUTS["dev"], "bucketName": "another-bucket"}}
    rec = added(WORKLOAD, outputs=other)
    grants = [r for r in rec.of_type(g.BUCKET_IAM_MEMBER) if r.inputs.get("condition")]
    assert grants and {r.inputs["bucket"] for r in grants} == {PLATFORM_BUCKET}
    assert all(g.prefix_of(r.inputs["condition"]["expression"], r.inputs["bucket"]) for r in grants)


# ---- the package's namespace (tpu_serving/_namespace.py) ---------------------------------------------------------


def user_program(tmp_path, shadow: str) -> list[str]:
    """A user's program folder with a module of its own named like one of the package's (`shadow`: a path in it),
    whose main.py imports tpu_serving; the argv that runs it (Python puts main.py's folder first on sys.path)."""
    (tmp_path / shadow).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / shadow).write_text("MINE = True\n")
    (tmp_path / "main.py").write_text("import tpu_serving\nprint('imported', tpu_serving.__file__)\n")
    return [sys.executable, str(tmp_path / "main.py")]


@pytest.mark.parametrize("shadow", ["stacks/__init__.py", "components.py", "workloads/__init__.py"])
def test_a_users_module_named_like_the_packages_is_refused_at_import_naming_it(tmp_path, shadow):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the package after the program's folder, as site-packages is
    done = subprocess.run(user_program(tmp_path, shadow), capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1 and "imported" not in done.stdout
    name = shadow.split("/")[0].removesuffix(".py")
    found = (tmp_path / shadow).resolve()
    assert f"ImportError: tpu_serving cannot load its own packages: the module {name!r} is {found}" in done.stderr
    assert f"not tpu-serving's own {ROOT / name / '__init__.py'}" in done.stderr
    assert "rename your module of that name" in done.stderr


def test_a_module_imported_already_or_a_file_not_the_wheels_is_refused(monkeypatch):
    from tpu_serving import _namespace

    assert _namespace.problems(ROOT) == []
    monkeypatch.setitem(sys.modules, "workloads", types.SimpleNamespace(__file__="/elsewhere/workloads.py"))
    assert _namespace.problems(ROOT) == [
        f"the module 'workloads' is /elsewhere/workloads.py, not tpu-serving's own {ROOT / 'workloads/__init__.py'}"
    ]
    monkeypatch.undo()
    # installed: each file must be the one the wheel's RECORD lists (another distribution may write over it)
    recorded = {str(ROOT / n / "__init__.py"): _namespace._digest(ROOT / n / "__init__.py") for n in _namespace.OWN}
    monkeypatch.setattr(_namespace, "_recorded", lambda root: {**recorded, str(ROOT / "stacks/__init__.py"): "x"})
    monkeypatch.setattr(_namespace.metadata, "version", lambda name: VERSION)
    assert _namespace.problems(ROOT) == [
        f"{ROOT / 'stacks/__init__.py'} is not the file tpu-serving {VERSION} installed"
    ]
