"""Pod Security: the helper's output, the level evaluator against the Pod Security Standards, and every example's
pods and namespace labels.

Source of the levels and their controls: https://kubernetes.io/docs/concepts/security/pod-security-standards/
Namespace labels: https://kubernetes.io/docs/concepts/security/pod-security-admission/
"""

from __future__ import annotations

import pytest

from stacks import addons
from stacks.security import pod_security
from stacks.security.pod_security import (
    BASELINE,
    IMAGE_DEFAULTS,
    PRIVILEGED,
    RESTRICTED,
    ContainerSecurity,
    namespace_labels,
    pod_level,
    pod_specs,
    secure_pod,
)
from stacks.serving import gateway
from tests.conftest import EXAMPLES, recorded
from tooling.harness.k8s_objects import kubernetes_objects

POD = {"containers": [{"name": "app", "image": "example"}]}


def test_restricted_by_default():
    spec = secure_pod(POD)
    assert pod_level(spec) == RESTRICTED
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (c,) = spec["containers"]
    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert c["securityContext"]["runAsNonRoot"] is True and c["securityContext"]["runAsUser"] != 0
    # the read-only root filesystem keeps /tmp writable through an emptyDir
    assert c["volumeMounts"] == [{"name": "writable-0-tmp", "mountPath": "/tmp"}]
    assert spec["volumes"] == [{"name": "writable-0-tmp", "emptyDir": {}}]
    assert POD == {"containers": [{"name": "app", "image": "example"}]}  # the input is not modified


def test_image_defaults_pass_baseline_only():
    spec = secure_pod(POD, IMAGE_DEFAULTS)
    assert pod_level(spec) == BASELINE
    assert pod_security.restricted_violations(spec) == ["app: runAsNonRoot not true"]
    assert "runAsNonRoot" not in spec["securityContext"]
    assert "volumes" not in spec


def test_api_access_is_explicit():
    assert secure_pod(POD, uses_kubernetes_api=True)["automountServiceAccountToken"] is True


def test_per_container_security_must_name_every_container():
    with pytest.raises(ValueError, match="no ContainerSecurity for container"):
        secure_pod({"containers": [{"name": "a"}, {"name": "b"}]}, {"a": IMAGE_DEFAULTS})


@pytest.mark.parametrize(
    "security,level",
    [
        # PSS restricted "Capabilities": NET_BIND_SERVICE may be added; root still fails "Running as Non-root"
        (ContainerSecurity(add_capabilities=("NET_BIND_SERVICE",)), RESTRICTED),
        (ContainerSecurity(non_root=False, add_capabilities=("NET_BIND_SERVICE",)), BASELINE),
        # PSS baseline "Capabilities": SYS_TIME, SYS_PTRACE, NET_ADMIN are not in the allowed list
        (ContainerSecurity(non_root=False, add_capabilities=("SYS_TIME",)), PRIVILEGED),
        (ContainerSecurity(non_root=False, add_capabilities=("NET_ADMIN",)), PRIVILEGED),
        # PSS baseline "Privileged Containers"
        (ContainerSecurity(non_root=False, privileged=True), PRIVILEGED),
    ],
)
def test_levels_follow_the_pod_security_standards(security, level):
    assert pod_level(secure_pod(POD, security)) == level


@pytest.mark.parametrize(
    "change",
    [
        {"hostNetwork": True},  # PSS baseline "Host Namespaces"
        {"hostPID": True},
        {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]},  # PSS baseline "HostPath Volumes"
        {"containers": [{"name": "app", "ports": [{"containerPort": 80, "hostPort": 80}]}]},  # "Host Ports"
    ],
)
def test_host_access_is_privileged(change):
    assert pod_level(secure_pod({**POD, **change})) == PRIVILEGED


def test_restricted_volume_types():
    # PSS restricted "Volume Types": e.g. nfs is not allowed, emptyDir and secret are
    spec = secure_pod({**POD, "volumes": [{"name": "n", "nfs": {"server": "x", "path": "/"}}]})
    assert pod_level(spec) == BASELINE
    assert pod_level(secure_pod({**POD, "volumes": [{"name": "s", "secret": {"secretName": "x"}}]})) == RESTRICTED


def test_pod_specs_found_in_every_kind_of_template():
    lws = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": POD}, "workerTemplate": {"spec": POD}}}}
    jobset = {"spec": {"replicatedJobs": [{"template": {"spec": {"template": {"spec": POD}}}}]}}
    assert len(list(pod_specs(lws))) == 2 and len(list(pod_specs(jobset))) == 1


def test_namespace_labels():
    labels = namespace_labels(BASELINE, "1.34")
    assert labels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.34",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "v1.34",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/audit-version": "v1.34",
    }
    with pytest.raises(ValueError, match="not a Pod Security level"):
        namespace_labels("strict", "1.34")


# ---- every example ---------------------------------------------------------------------------------------

# The level each namespace of each example enforces, and why it is not `restricted` (stacks/security/pod_security.py and
# the ContainerSecurity declarations name the sources).
EXPECTED_LEVELS = {
    "all-in-one": {
        "custom-metrics": RESTRICTED,  # the stackdriver adapter as non-root on an unprivileged --secure-port
        "lws-system": RESTRICTED,
        "jobset-system": RESTRICTED,
    },
    "gemma-hpa": {"gemma": BASELINE, "custom-metrics": RESTRICTED},  # TPU images keep their (root) user
    "gemma-hpa-prometheus": {"gemma": BASELINE, "custom-metrics": RESTRICTED},
    "llama2-70b-disaggregated": {"llama2-70b": PRIVILEGED},  # jax-tpu adds SYS_PTRACE, NET_ADMIN, SYS_TIME
    "llama3-405b-pathways": {"llama3-405b": BASELINE},
    "saxml-175b": {"sax": PRIVILEGED},  # privileged, host-network model servers
    "pathways-job": {"pw": PRIVILEGED, "train": PRIVILEGED},  # the controller's pods use the host network
}


def _objects(path):
    return kubernetes_objects(recorded(path, False))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name + "/" + p.name)
def test_every_pod_is_hardened(path):
    for obj in _objects(path):
        for spec in pod_specs(obj.get("spec", {})):
            where = f"{obj['kind']} {obj['metadata']['name']}"
            assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, where
            assert isinstance(spec["automountServiceAccountToken"], bool), where
            for c in spec["containers"]:
                ctx = c["securityContext"]
                if ctx.get("privileged"):
                    continue
                assert ctx["allowPrivilegeEscalation"] is False and "ALL" in ctx["capabilities"]["drop"], where


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name + "/" + p.name)
def test_namespaces_enforce_the_strictest_level_their_pods_pass(path):
    objects = _objects(path)
    namespaces = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects if o["kind"] == "Namespace"}
    assert namespaces, "every stack creates namespaces"
    for name, labels in namespaces.items():
        assert labels["pod-security.kubernetes.io/warn"] == RESTRICTED, name
        assert labels["pod-security.kubernetes.io/audit"] == RESTRICTED, name
        pods = [s for o in objects if o["metadata"].get("namespace") == name for s in pod_specs(o.get("spec", {}))]
        enforce = labels["pod-security.kubernetes.io/enforce"]
        # no pod the stack renders would be rejected by its namespace ...
        for spec in pods:
            assert pod_security.LEVELS.index(pod_level(spec)) >= pod_security.LEVELS.index(enforce), name
        # ... and the namespace is no looser than its pods need (Helm-installed pods: the chart's declared level)
        chart_levels = [
            a.pod_security
            for a in addons.ADDONS
            if name in {r.namespace for r in a.releases.values()} and a.pod_security
        ]
        # the body-based router's chart pod in the Gateway's namespace (no securityContext: baseline,
        # stacks/pieces/gateway.py GatewayPlan.namespace_level), present with the router's ConfigMaps
        if name == gateway.GATEWAY_NAMESPACE and any(
            o["kind"] == "ConfigMap" and (o["metadata"].get("labels") or {}).get(gateway.BBR_MANAGED_LABEL) == "true"
            for o in objects
            if o["metadata"].get("namespace") == name
        ):
            chart_levels.append("baseline")
        # a PathwaysJob's controller generates host-network pods the stack does not render
        generated = [
            PRIVILEGED for o in objects if o["metadata"].get("namespace") == name and o["kind"] == "PathwaysJob"
        ]
        needed = min([pod_security.strictest_level(pods), *generated], key=pod_security.LEVELS.index)
        assert enforce == needed or (not pods and chart_levels and enforce == chart_levels[0]), name
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    for name, level in EXPECTED_LEVELS.get(stack, {}).items():
        assert namespaces[name]["pod-security.kubernetes.io/enforce"] == level, (stack, name)


def test_expected_levels_name_real_examples():
    stacks = {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in EXAMPLES}
    assert set(EXPECTED_LEVELS) <= stacks


# ---- no privilege a flag removes ------------------------------------------------------------------------------


def _port_numbers(container: dict, named: dict[str, int]) -> list[int]:
    """Every port a container listens on as its spec says: containerPorts, and its probes' ports (a name resolves to
    the container's port of that name)."""
    out = [int(p["containerPort"]) for p in container.get("ports", [])]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        action = container.get(probe, {})
        for kind in ("httpGet", "tcpSocket", "grpc"):
            port = action.get(kind, {}).get("port")
            if port is not None:
                out.append(named[port] if isinstance(port, str) else int(port))
    return out


def privileged_port_problems(where: str, spec: dict) -> list[str]:
    """A container that listens below 1024 or adds NET_BIND_SERVICE: binding a port below 1024 takes
    CAP_NET_BIND_SERVICE (capabilities(7)), which is why Pod Security's restricted level lets a pod add it
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/, "Capabilities"); the servers the stack runs
    itself all take their port from a flag (an adapter built on kubernetes-sigs/custom-metrics-apiserver: --secure-port),
    so none needs it, nor the root user that upstream's port 443 came with."""
    out = []
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        named = {p["name"]: int(p["containerPort"]) for p in c.get("ports", []) if "name" in p}
        low = [p for p in _port_numbers(c, named) if p < 1024]
        if low:
            out.append(f"{where} {c['name']}: listens on {low}")
        if "NET_BIND_SERVICE" in ((c.get("securityContext") or {}).get("capabilities") or {}).get("add", []):
            out.append(f"{where} {c['name']}: adds NET_BIND_SERVICE")
    return out


def test_no_pod_of_the_stack_binds_a_privileged_port():
    """Issue 34 finding 20's class: a namespace runs below restricted only for what its pods cannot do without. Over
    every example's rendered objects and every metrics adapter of the registry (the namespace the stack creates for
    it): no container listens below 1024 or adds NET_BIND_SERVICE, and every adapter's namespace is restricted. The
    old Stackdriver adapter (port 443, NET_BIND_SERVICE, root) fails both."""
    from stacks.monitoring import adapters as metrics_adapters
    from tests.test_metrics_adapters import context

    problems = []
    for path in EXAMPLES:
        for obj in _objects(path):
            for spec in pod_specs(obj.get("spec", {})):
                problems += privileged_port_problems(f"{path.name} {obj['kind']} {obj['metadata']['name']}", spec)
    for entry in metrics_adapters.ADAPTERS.values():
        build = entry.build(context(entry))
        for part in build.parts:
            for spec in pod_specs(part.body if isinstance(part.body, dict) else {}):
                problems += privileged_port_problems(f"adapter {entry.name} {part.key}", spec)
        assert build.namespace_level() == RESTRICTED, entry.name
    assert problems == []
    old = secure_pod(
        {
            "containers": [
                {"name": "a", "ports": [{"containerPort": 443}], "readinessProbe": {"httpGet": {"port": 443}}}
            ]
        },
        ContainerSecurity(non_root=False, read_only_root=False, writable=(), add_capabilities=("NET_BIND_SERVICE",)),
    )
    assert len(privileged_port_problems("old", old)) == 2 and pod_level(old) == BASELINE


def test_a_metrics_adapter_added_to_the_registry_gets_a_restricted_namespace(monkeypatch):
    """The registry's extension point holds a new adapter to the same rule (tests/test_metrics_adapters.py FAKE)."""
    from stacks.monitoring import adapters as metrics_adapters
    from tests.test_metrics_adapters import FAKE, context

    monkeypatch.setitem(metrics_adapters.ADAPTERS, FAKE.name, FAKE)
    build = FAKE.build(context(FAKE))
    assert build.namespace_level() == RESTRICTED
    assert [p for part in build.parts for s in pod_specs(part.body) for p in privileged_port_problems("fake", s)] == []
