"""The workload-type registry (workloads/registry.py): every entry is complete, and a type added there alone (its
own config, plan and component) is parsed, checked, planned, built, costed, summarised and in the JSON Schema, with
no other file touched."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.serving import ServingWorkload, WorkloadDeps
from stacks.config_model import WorkloadConfig
from stacks.pod_security import secure_pod
from stacks.pool_plan import PoolPlan
from stacks.problems import Problem
from stacks.workload_plan import WorkloadPlan
from stacks.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType, resolver
from tests.conftest import make_config
from workloads import registry


@pytest.mark.parametrize("name", list(registry.WORKLOAD_TYPES))
def test_every_entry_is_complete(name):
    kind = registry.WORKLOAD_TYPES[name]
    assert kind.name == name
    assert kind.config.model_fields["type"].annotation == Literal[name]  # type: ignore[valid-type]
    assert callable(kind.resolve) and callable(kind.component)
    assert kind.tpu_images, "which pinned images run on its TPUs decides which generations it serves"


def test_the_registry_refuses_a_type_listed_twice():
    with pytest.raises(ValueError, match="named twice"):
        WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), registry.WORKLOAD_TYPES["vllm"])


# ---- a type that exists only in this test --------------------------------------------------------------


class EchoWorkload(WorkloadConfig):
    type: Literal["echo"]
    replicas: int = 1


@dataclass(frozen=True)
class EchoPlan(WorkloadPlan):
    workload: EchoWorkload

    @property
    def hosts_needed(self) -> int:
        return self.workload.replicas

    @property
    def chips_at_peak(self) -> int:
        return self.workload.replicas * self.shape.tpu_request

    def deployment(self) -> dict[str, Any]:
        labels = {"app": self.name}
        container = {"name": "echo", "image": "registry.example.com/echo:1.0"}
        pod = {"containers": [container], **self.tpu_placement()}
        spec = {"replicas": self.workload.replicas, "selector": {"matchLabels": labels}}
        spec["template"] = {"metadata": {"labels": labels}, "spec": secure_pod(pod)}
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self.metadata(self.name, labels),
            "spec": spec,
        }

    def pod_manifests(self) -> list[dict[str, Any]]:
        return [self.deployment()]


def check_echo(
    path: str,
    workload: EchoWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> EchoPlan | None:
    if workload.replicas > 2:
        problems.append(Problem(f"{path}.replicas", f"{workload.replicas} is more than an echo needs"))
    if pool is None or problems:
        return None
    return EchoPlan.on(workload, pool, namespace, ctx)


class Echo(ServingWorkload):
    def __init__(self, name: str, *, plan: EchoPlan, deps: WorkloadDeps):
        super().__init__("tpu-serving:workloads:Echo", name, plan=plan, deps=deps)
        self.service_name = None
        self.commands = {}
        manifest = plan.deployment()
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=self.k8s_opts(*deps.node_pools),
        )
        self.register_outputs({"namespace": self.namespace})


ECHO = WorkloadType(
    config=EchoWorkload,
    resolve=resolver(check_echo),
    component=Echo,
    tpu_images=("vllmTpu",),
)


@pytest.fixture
def echo_registered(monkeypatch):
    from tooling import json_schema

    with_echo = WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), ECHO)
    monkeypatch.setattr(registry, "WORKLOAD_TYPES", with_echo)
    monkeypatch.setattr(json_schema, "WORKLOAD_TYPES", with_echo)


ECHO_CONFIG = {"type": "echo", "name": "echo", "pool": "v5e-2x4", "replicas": 2}


def test_a_type_in_the_registry_alone_is_planned_built_costed_and_summarised(run, echo_registered):
    rec = run(make_config(tpu_serving__workloads=[ECHO_CONFIG]))
    deployment = rec.one("kubernetes:apps/v1:Deployment", "workload-echo-deployment")
    assert deployment.inputs["spec"]["replicas"] == 2
    assert deployment.inputs["metadata"]["namespace"] == "echo"
    # its namespace, at the Pod Security level its pods pass, exists before it
    namespace = next(r for r in rec.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "echo")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert namespace.urn in deployment.dependencies
    assert rec.outputs["workloads"]["echo"]["type"] == "echo"
    assert rec.outputs["estimatedHourlyCost"]["workloads"]["echo"] > 0


def test_a_type_in_the_registry_alone_is_validated(run, echo_registered):
    with pytest.raises(pulumi.RunError, match=r"workloads\[0\]\.replicas: 3 is more than an echo needs"):
        run(make_config(tpu_serving__workloads=[{**ECHO_CONFIG, "replicas": 3}]))
    with pytest.raises(pulumi.RunError, match=r"workloads\[0\]\.type: 'nope' is not a workload type; allowed: .*echo"):
        run(make_config(tpu_serving__workloads=[{**ECHO_CONFIG, "type": "nope"}]))


def test_a_type_in_the_registry_alone_is_in_the_json_schema(echo_registered):
    from tooling.json_schema import regional_key, stack_config_schema

    schema = stack_config_schema()
    assert "EchoWorkload" in schema["$defs"]
    items = regional_key(schema, "tpu-serving:workloads")["items"]
    assert {"$ref": "#/$defs/EchoWorkload"} in items.get("oneOf", items.get("anyOf", []))
