"""The guardrails policy pack (policy/) run by the real Pulumi engine (the toolchain's CLI v3.274.1 and Kubernetes
provider): `pulumi preview --policy-pack policy/run-pack`.

- Broken stacks: a small program per rule registers one resource that breaks it; the preview fails naming the
  policy, the resource, the field and what is allowed (a mandatory level), or passes with the warning (advisory, the
  same resource in dev). No cluster: the Kubernetes provider previews against a closed loopback port.
- Examples: every example's local stack (tooling/local/local_stack.py, on its own local cluster as `make e2e` starts
  it) previews with the pack and passes. Slow (a cluster per example): E2E_STACKS=<stack>,... selects some.

The rules on Google Cloud resources (wi-bucket-grants-scoped, prod-protected, the control plane endpoint) are not
run here: no pulumi-resource-gcp plugin is built (stacks/facts/versions.py TOOLCHAIN); tests/test_guardrails.py tests
them over every example's recorded resources.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e import cluster as c
from e2e.policy_preview import UNREACHABLE_KUBECONFIG, preview_program
from e2e.run_example import STACK_FILES
from stacks import guardrails as g
from stacks.facts import versions
from stacks.security import pod_security
from tooling.harness.offline import ROOT
from tooling.review.render import stack_name

ONLY = [s for s in (os.environ.get("E2E_STACKS") or "").split(",") if s]
PREVIEW_TIMEOUT = float(os.environ.get("E2E_POLICY_TIMEOUT", "900"))
LABELS = pod_security.namespace_labels("restricted", "1.35")


def program(build: Callable[[object], None]) -> Callable[[], None]:
    def run() -> None:
        import pulumi_kubernetes as k8s

        provider = k8s.Provider("local", kubeconfig=UNREACHABLE_KUBECONFIG)
        build(provider)

    return run


def opts(provider: object):
    import pulumi

    return pulumi.ResourceOptions(provider=provider)


def public_service(provider: object) -> None:
    import pulumi_kubernetes as k8s

    k8s.core.v1.Service(
        "web",
        metadata={"name": "web", "namespace": "serve"},
        spec={"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": "web"}},
        opts=opts(provider),
    )


def unlabeled_namespace(provider: object) -> None:
    import pulumi_kubernetes as k8s

    k8s.core.v1.Namespace("serve", metadata={"name": "serve"}, opts=opts(provider))


def deployment(provider: object, image: str) -> None:
    """A Deployment in namespace serve whose pod is restricted (pod_security.secure_pod), running `image`."""
    import pulumi_kubernetes as k8s

    pod = pod_security.secure_pod({"containers": [{"name": "server", "image": image}]})
    k8s.apps.v1.Deployment(
        "server",
        metadata={"name": "server", "namespace": "serve"},
        spec={
            "selector": {"matchLabels": {"app": "s"}},
            "template": {"metadata": {"labels": {"app": "s"}}, "spec": pod},
        },
        opts=opts(provider),
    )


def latest_image(provider: object) -> None:

    deployment(provider, "vllm/vllm-tpu:latest")


def gke_crd(provider: object) -> None:
    import pulumi_kubernetes as k8s

    k8s.apiextensions.v1.CustomResourceDefinition(
        "pools",
        metadata={"name": "inferencepools.inference.networking.k8s.io"},
        spec={
            "group": "inference.networking.k8s.io",
            "names": {"kind": "InferencePool", "plural": "inferencepools"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
        opts=opts(provider),
    )


def looser_namespace(provider: object) -> None:
    import pulumi_kubernetes as k8s

    labels = pod_security.namespace_labels("privileged", "1.35")
    k8s.core.v1.Namespace("serve", metadata={"name": "serve", "labels": labels}, opts=opts(provider))
    deployment(provider, versions.IMAGES["vllmTpu"])


def compliant(provider: object) -> None:
    import pulumi_kubernetes as k8s

    k8s.core.v1.Namespace("serve", metadata={"name": "serve", "labels": LABELS}, opts=opts(provider))
    k8s.core.v1.Service(
        "web",
        metadata={"name": "web", "namespace": "serve", "annotations": {g.INTERNAL_LB_ANNOTATIONS[0]: "Internal"}},
        spec={"type": "LoadBalancer", "ports": [{"port": 80}], "selector": {"app": "web"}},
        opts=opts(provider),
    )


# case: (stack, environment config, program, passes, policy named, words the output holds)
CASES = {
    "public-service-prod": ("prod", "prod", public_service, False, "[mandatory]  no-public-endpoint",
                            ["Service serve/web", "spec.type LoadBalancer", "load-balancer-type: Internal"]),
    "public-service-dev-warns": ("dev", "dev", public_service, True, "[advisory]  no-public-endpoint",
                                 ["Service serve/web", "spec.type LoadBalancer"]),
    "environment-from-the-stack-name": ("team-prod", "", public_service, False, "[mandatory]  no-public-endpoint",
                                        ["Service serve/web"]),
    "namespace-without-pod-security": ("staging", "staging", unlabeled_namespace, False,
                                       "[mandatory]  pod-security-levels",
                                       ["Namespace serve", "enforce=None", "privileged, baseline, restricted"]),
    "namespace-looser-than-its-pods": ("dev", "dev", looser_namespace, False, "[mandatory]  pod-security-levels-stack",
                                       ["enforce=privileged", "allowed: restricted"]),
    "image-latest": ("prod", "prod", latest_image, False, "[mandatory]  images-pinned",
                     ["Deployment serve/server", "spec.template.spec.containers[0].image", "tag latest"]),
    "gke-managed-crd": ("dev", "dev", gke_crd, False, "[mandatory]  no-gke-managed-objects",
                        ["CustomResourceDefinition inferencepools.inference.networking.k8s.io", "managed by GKE"]),
    "compliant": ("prod", "prod", compliant, True, None, []),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_real_engine_runs_each_rule_of_the_pack(case, tmp_path):
    stack, env, build, passes, policy, words = CASES[case]
    config = {"tpu-serving:environment": env} if env else {}
    passed, out = preview_program(tmp_path, stack, program(build), config)
    print(out[-6000:])
    assert passed == passes, out[-4000:]
    assert "tpu-serving-guardrails" in out  # the pack ran (Policy Packs run / Policies:)
    if policy is None:
        assert "Policies:" not in out or "[mandatory]" not in out, out[-4000:]
        return
    assert policy in out, out[-4000:]
    for word in words:
        assert word in out, (word, out[-4000:])


@pytest.mark.parametrize("path", [p for p in STACK_FILES if not ONLY or stack_name(p) in ONLY], ids=stack_name)
def test_every_example_previews_with_the_pack_on_its_local_cluster(path: Path):
    stack = stack_name(path)
    with c.local_cluster(stack, path):
        code, out = c.run_process([sys.executable, "-m", "e2e.policy_preview", str(path)], PREVIEW_TIMEOUT)
    print(out[-20000:])
    assert code == 0 and "POLICY PREVIEW PASSED" in out, out[-6000:]
    assert "[mandatory]" not in out and "[advisory]" not in out, out[-6000:]


PACKAGE_STACKS = [p for p in STACK_FILES if stack_name(p) in (ONLY or ["gemma-fallback"])]


@pytest.fixture(scope="module")
def package_python() -> Path:
    """The built wheel (`make package`) installed alone in a clean virtualenv (`make package-env`): its Python. Made
    before any cluster starts (pip reaches the package index; a cluster's network namespace has loopback only)."""
    env = ROOT / "build" / "e2e-package-env"
    if os.environ.get("E2E_PACKAGE_ENV_READY") == "1" and (env / "bin" / "python").exists():
        return env / "bin" / "python"  # made by `make package-env PACKAGE_ENV=build/e2e-package-env` already
    c.run_command(f"make --no-print-directory package-env PACKAGE_ENV={env}", PREVIEW_TIMEOUT)
    return env / "bin" / "python"


@pytest.mark.parametrize("path", PACKAGE_STACKS, ids=stack_name)
def test_the_package_example_adds_a_workload_to_a_platform_on_its_local_cluster(path: Path, package_python: Path):
    # examples/add-workload/ run by the clean virtualenv holding the built wheel, against the platform's local stack
    stack = stack_name(path)
    with c.local_cluster(stack, path):
        argv = [sys.executable, "-m", "e2e.package_run", str(path), str(package_python)]
        code, out = c.run_process(argv, 2 * PREVIEW_TIMEOUT)
    print(out[-20000:])
    problems = [line.removeprefix("PROBLEM: ") for line in out.splitlines() if line.startswith("PROBLEM: ")]
    assert code == 0 and not problems, "\n".join(problems) or out[-6000:]
