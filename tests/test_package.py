"""The tpu-serving package (tpu_serving/, `make package`): its version is the release's, and its example program
(examples/add-workload/) adds a workload to an existing platform stack's cluster, under the mocks: the workload's
namespace and component as the platform builds them, on the platform's bucket, passing the guardrails."""

from __future__ import annotations

import tomllib

import pytest

from stacks import guardrails as g
from stacks.security import pod_security
from tests.test_guardrails import resources
from tooling.harness.offline import ROOT, run_program
from tooling.harness.requirements import pins
from tpu_serving.version import VERSION

PLATFORM = "organization/tpu-serving/dev"
OUTPUTS = {"dev": {"kubeconfig": "apiVersion: v1\nkind: Config\n", "bucketName": "platform-bucket", "clusterName": "c"}}
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


def added(workload, preview=False):
    config = {
        "gcp:project": "my-tpu-project",
        "add-workload:platformStack": PLATFORM,
        "add-workload:platformStackFile": str(ROOT / "Pulumi.dev.yaml"),
        "add-workload:workload": workload,
    }
    return run_program(
        config, stack="team-b", preview=preview, program=ROOT / "examples/add-workload/__main__.py",
        stack_outputs=OUTPUTS,
    )  # fmt: skip


def test_the_package_pins_what_the_program_imports_as_requirements_txt_does():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = pins()
    assert {d.split("==")[0].lower(): d.split("==")[1] for d in declared} == {
        name: pinned[name] for name in ("pulumi", "pulumi-gcp", "pulumi-kubernetes", "pydantic", "pyyaml")
    }


def test_the_example_installs_the_release():
    assert f"tpu-serving=={VERSION}\n" in (ROOT / "examples/add-workload/requirements.txt").read_text()


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
    assert grants and {r.inputs["bucket"] for r in grants} == {"platform-bucket"}
    # every Kubernetes object goes to the platform's cluster, through the provider made of its kubeconfig output
    [provider] = rec.of_type("pulumi:providers:kubernetes")
    assert all(r.provider.startswith(provider.urn) for r in rec.resources if r.type.startswith("kubernetes:"))
    assert not g.violations(resources(rec), "dev")
    assert rec.outputs["namespace"] == "team-b"


def test_a_workload_the_platform_cannot_run_is_refused_naming_its_key():
    import pulumi

    with pytest.raises(pulumi.RunError, match=r"tpu-serving:workloads\[0\]\.pool"):
        added({**WORKLOAD, "pool": "no-such-pool"})


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

    with pytest.raises(pulumi.RunError, match=rf"tpu-serving:workloads\[0\]\.{key}: 'qwen3-8b' .*platform stack"):
        added({**WORKLOAD, **change})
