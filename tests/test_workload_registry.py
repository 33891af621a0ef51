"""The workload-type registry (workloads/registry.py): every entry is complete, and a type added there alone (its
own config, plan and component) is parsed, checked, planned, built, costed, summarised and in the JSON Schema, with
no other file touched."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.serving import ServingWorkload, WorkloadDeps
from stacks.model.config_model import WorkloadConfig
from stacks.monitoring.metrics import HPA_METRICS, REQUESTS, HpaMetric
from stacks.problems import Problem
from stacks.security.pod_security import secure_pod
from stacks.serving.gateway import GatewayBackend
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType, resolver
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
    from tooling.generate import json_schema

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
    from tooling.generate.json_schema import regional_key, stack_config_schema

    schema = stack_config_schema()
    assert "EchoWorkload" in schema["$defs"]
    items = regional_key(schema, "tpu-serving:workloads")["items"]
    assert {"$ref": "#/$defs/EchoWorkload"} in items.get("oneOf", items.get("anyOf", []))


# ---- a type the gateway serves, a fleet exports and the metrics adapter scales, known only to its entry ---------


class RelayWorkload(WorkloadConfig):
    type: Literal["relay"]
    replicas: int = 1


RELAY_QUEUE = HpaMetric(
    "relay_queue", "relay_requests_waiting", REQUESTS, "server", "this test", labels=frozenset({"app", "namespace"})
)


@dataclass(frozen=True)
class RelayPlan(EchoPlan):
    """A server of another kind (sglang, to the router) with its own KV-cache gauge and queue metric, always
    autoscaled: every fact shared code needs comes from this plan, none from a table in stacks/."""

    workload: RelayWorkload  # type: ignore[assignment]

    def gateway_backend(self) -> GatewayBackend | None:
        return GatewayBackend(
            self.name,
            self.namespace,
            {"app": self.name},
            9000,
            "relay-model",
            model_server_type="sglang",
            kv_cache_metric="relay:kv_cache_fraction",
        )

    @property
    def autoscaled(self) -> bool:
        return True

    @property
    def hpa_metrics(self) -> dict[str, HpaMetric]:
        return {RELAY_QUEUE.name: RELAY_QUEUE, **{n: m for n, m in HPA_METRICS.items() if m.origin == "tpu"}}


def check_relay(path, workload, pool, namespace, ctx, problems, warnings) -> RelayPlan | None:
    return None if pool is None else RelayPlan.on(workload, pool, namespace, ctx)


RELAY = WorkloadType(config=RelayWorkload, resolve=resolver(check_relay), component=Echo, tpu_images=("vllmTpu",))


def test_a_type_added_to_the_registry_alone_flows_through_gateway_fleet_and_metrics(monkeypatch):
    """The router's model-server type, the KV-cache gauge a fleet balances on and the server metrics the adapter
    serves all come from the type's own plan: a type no file in stacks/ names is routed as its kind of server,
    exported with its gauge and scaled on its metric (stacks/serving/gateway.py router_values, stacks/reports/fleet_output.py,
    stacks/pieces/monitoring.py + prometheus_adapter.server_rules)."""
    from stacks.monitoring.adapters import prometheus_adapter
    from stacks.reports.fleet_output import regional_output
    from stacks.serving import gateway
    from tooling.harness.offline import ROOT, load_stack_file, parse_config

    monkeypatch.setattr(registry, "WORKLOAD_TYPES", WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), RELAY))
    config = load_stack_file(ROOT / "examples" / "fleet" / "Pulumi.fleet-us-east5.yaml")
    config["tpu-serving:workloads"] = [{"type": "relay", "name": "relay", "pool": "v6e-2x2"}]
    config["tpu-serving:monitoring"] = {"adapter": "prometheus-adapter"}
    cfg = parse_config(config, "fleet-us-east5")

    (backend,) = cfg.gateway_plan.backends
    router = gateway.router_values(backend, {"tpu-serving/role": "system"})["router"]
    assert router["modelServers"]["type"] == "sglang" and router["modelServers"]["targetPorts"] == [{"number": 9000}]
    assert cfg.gateway_plan.fleet_metrics == {"relay": "relay:kv_cache_fraction"}
    (export,) = regional_output(cfg)["exports"]
    assert export["kvCacheMetric"] == "relay:kv_cache_fraction"

    assert cfg.monitoring_plan.server_metrics == ((RELAY_QUEUE, ("relay",)),)
    (rule,) = prometheus_adapter.server_rules("c", cfg.monitoring_plan.server_metrics)
    assert rule["name"]["as"] == "relay_queue" and "relay_requests_waiting" in rule["seriesQuery"]
    assert 'namespace=~"relay"' in rule["seriesQuery"] or "relay" in rule["seriesQuery"]


# ---- a type's name is dispatched on in its own package only ----------------------------------------------------

PROGRAM = [
    *(registry_root := Path(registry.__file__).resolve().parents[1]).glob("stacks/**/*.py"),
    *registry_root.glob("components/**/*.py"),
    *registry_root.glob("workloads/**/*.py"),
    *registry_root.glob("scripts/**/*.py"),  # make smoke once dispatched on type names (scripts/smoke.py PROBES)
    registry_root / "__main__.py",
]
# Files that write a type's name as user config, not to dispatch on it: what each writes, and why it is not dispatch.
CONFIG_DATA = {
    "scripts/package_smoke.py": {"vllm"},  # the workloads entry the installed wheel is smoke-tested with
}


def _type_name_uses(path: Path, names: set[str]) -> set[str]:
    """The type names written as a string literal in `path`, outside the `Literal[...]` that declares a type."""
    tree = ast.parse(path.read_text())
    declared = {
        id(c)
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal"
        for c in ast.walk(node.slice)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in declared
    }


def test_a_workload_type_name_is_written_in_at_most_two_program_files_and_none_shared():
    """Issue 33: a workload type's name is dispatched on in at most two program files (stacks/, components/,
    workloads/, scripts/, __main__.py), and never in shared code: a new type touches its package and its registry line."""
    names = set(registry.WORKLOAD_TYPES)
    found = {
        rel: used
        for path in PROGRAM
        if (used := _type_name_uses(path, names) - CONFIG_DATA.get(rel := str(path.relative_to(registry_root)), set()))
    }
    assert len(found) <= 2, found
    assert not [p for p in found if not p.startswith("workloads/")], found


# ---- which types have a capability comes from the registry, so shared messages stay true -------------------------


def _example_plans() -> dict[str, list[Any]]:
    from tooling.harness.offline import ROOT, parse_stack_file

    plans: dict[str, list[Any]] = {}
    for example in ("all-in-one/Pulumi.all-in-one.yaml", "time-to-serve/Pulumi.time-to-serve.yaml"):
        for plan in parse_stack_file(ROOT / "examples" / example).workloads:
            plans.setdefault(plan.workload.type, []).append(plan)
    return plans


def test_every_type_declares_the_capabilities_its_plans_have():
    """WorkloadType.gateway_served and slo_series, which the shared messages name types by, say what the type's
    plans do (a plan of every registered type from the examples)."""
    from stacks.pieces.alerts import SLO_SIGNALS

    plans = _example_plans()
    assert set(plans) == set(registry.WORKLOAD_TYPES)
    for name, kind in registry.WORKLOAD_TYPES.items():
        assert kind.gateway_served == any(p.gateway_backend() is not None for p in plans[name]), name
        slo = [all(getattr(p.signals, a) is not None for a in SLO_SIGNALS.values()) for p in plans[name]]
        assert kind.slo_series == any(slo), name
    assert registry.WORKLOAD_TYPES.gateway_types == ("vllm",) == registry.WORKLOAD_TYPES.slo_types


def test_a_type_that_gains_a_capability_is_named_where_the_messages_list_types(monkeypatch):
    """The gateway's "routes nothing" warning, the SLO refusal and the fleet's "exports nothing" name the types the
    registry says have the capability: a type added with it is named too."""
    from stacks.pieces import alerts
    from tooling.harness.offline import parse_config

    relay = WorkloadType(
        config=RelayWorkload,
        resolve=resolver(check_relay),
        component=Echo,
        tpu_images=("vllmTpu",),
        gateway_served=True,
        slo_series=True,
    )
    monkeypatch.setattr(registry, "WORKLOAD_TYPES", WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), relay))
    assert registry.WORKLOAD_TYPES.gateway_types == ("vllm", "relay")
    cfg = parse_config(
        make_config(
            tpu_serving__gateway={"enabled": True},
            tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.1626000"},
            tpu_serving__workloads=[],
        ),
        "dev",
    )
    assert any("(only vllm or relay workloads are, unless they opt out)" in w for w in cfg.warnings), cfg.warnings

    # an SLO on a type whose server exports none of its series: refused, naming the types that have them
    from types import SimpleNamespace

    from stacks.model.config_model import SloConfig
    from stacks.serving.workload_plan import ServingSignals

    echo = SimpleNamespace(
        workload=SimpleNamespace(type="echo", slo=SloConfig(availability=0.99)), signals=ServingSignals()
    )
    (problem,) = alerts.slo_problems([(0, echo)], registry.WORKLOAD_TYPES.slo_types)
    assert problem.path == "tpu-serving:workloads[0].slo.availability"
    assert (
        problem.message == "a echo workload's server exports no series for it; only vllm or relay workloads can have it"
    )


# ---- which types can roll out (issue 37, rollout) ----------------------------------------------------------------


def test_a_type_rolls_out_only_if_the_gateway_serves_it():
    """A release train's two server sets are InferencePools behind the gateway's HTTPRoute and the gate benchmarks
    the candidate's server (stacks/serving/release.py): every registry entry whose config has `rollout` is a gateway
    type whose plans offer the gate a target."""
    plans = _example_plans()
    for name in registry.WORKLOAD_TYPES.rollout_types:
        assert name in registry.WORKLOAD_TYPES.gateway_types, name
        assert all(p.benchmark_target() is not None for p in plans[name] if p.gateway_backend()), name
    assert registry.WORKLOAD_TYPES.rollout_types == ("vllm",)


def test_a_rollout_on_a_type_that_cannot_roll_out_is_refused_naming_the_types_that_can():
    """Every registered type without `rollout` (one workload of each, from the example stacks): one problem at
    its `rollout` key naming the types that can, not pydantic's 'unknown key'."""
    from tooling.harness.offline import ROOT, load_stack_file, parse_config

    cfg = load_stack_file(ROOT / "examples/all-in-one/Pulumi.all-in-one.yaml")
    entries = cfg["tpu-serving:workloads"]
    others = [i for i, e in enumerate(entries) if e["type"] not in registry.WORKLOAD_TYPES.rollout_types]
    assert {entries[i]["type"] for i in others} == set(registry.WORKLOAD_TYPES) - {"vllm"}
    for i in others:
        entries[i]["rollout"] = {"strategy": "canary"}
    with pytest.raises(Exception) as err:
        parse_config(cfg, "all-in-one")
    found = [str(p) for p in err.value.problems]  # type: ignore[attr-defined]
    for i in others:
        mine = [p for p in found if p.startswith(f"tpu-serving:workloads[{i}].rollout")]
        assert len(mine) == 1, found
        assert f"a {entries[i]['type']} workload cannot roll out" in mine[0] and "allowed on vllm workloads" in mine[0]
    assert not any("unknown key" in p for p in found), found


def test_a_rollout_beside_a_type_that_is_not_a_name_is_one_problem_not_a_crash():
    """A workload whose `type` is not a string (the config fuzzer's mutant: [1, 'x']) with a `rollout`: the type's
    own problem, not a TypeError from looking an unhashable value up in the registry."""
    from stacks.config import ConfigError
    from tooling.harness.offline import ROOT, load_stack_file, parse_config

    cfg = load_stack_file(ROOT / "examples/vllm-canary/Pulumi.vllm-canary.yaml")
    entry = next(e for e in cfg["tpu-serving:workloads"] if "rollout" in e)
    entry["type"] = [1, "x"]
    with pytest.raises(ConfigError) as err:
        parse_config(cfg, "vllm-canary")
    found = [str(p) for p in err.value.problems]
    assert any(".type" in p for p in found), found


class RollingRelayWorkload(RelayWorkload):
    """A relay type that rolls out (its config has `rollout`, as vLLM's)."""

    type: Literal["rolling-relay"]  # type: ignore[assignment]
    rollout: dict[str, Any] | None = None


def test_a_type_added_with_rollout_is_named_where_a_rollout_is_refused(monkeypatch):
    """The refusal's list of types comes from the registry: a type a test adds with `rollout` (and the gateway) is
    named beside vllm, and still refused on the types without it."""
    from tooling.harness.offline import ROOT, load_stack_file, parse_config

    rolling = WorkloadType(
        config=RollingRelayWorkload,
        resolve=resolver(check_relay),
        component=Echo,
        tpu_images=("vllmTpu",),
        gateway_served=True,
    )
    monkeypatch.setattr(registry, "WORKLOAD_TYPES", WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), rolling))
    assert registry.WORKLOAD_TYPES.rollout_types == ("vllm", "rolling-relay")
    cfg = load_stack_file(ROOT / "examples/all-in-one/Pulumi.all-in-one.yaml")
    i = next(i for i, e in enumerate(cfg["tpu-serving:workloads"]) if e["type"] == "saxml")
    cfg["tpu-serving:workloads"][i]["rollout"] = {}
    with pytest.raises(Exception) as err:
        parse_config(cfg, "all-in-one")
    found = [str(p) for p in err.value.problems if p.path == f"tpu-serving:workloads[{i}].rollout"]  # type: ignore[attr-defined]
    assert len(found) == 1 and "allowed on vllm or rolling-relay workloads" in found[0], found
