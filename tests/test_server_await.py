"""`pulumi up` waits for every workload type's TPU server on every kind of pool, for as long as the time-to-serve model
says a replica takes from no capacity (issue 36 #7 on autoscaled pools).

A new server (a type swap, a vLLM move between a single-host and a multi-host pool) is created under its own resource
name and the old one deleted at the end of the `up`, after every create and update (pulumi/pulumi
pkg/resource/deploy: deletes of resources no longer in the program run last). The switch is hitless only if the
create returns when the new server serves: a Deployment is awaited by pulumi-kubernetes's rollout check unless
`pulumi.com/skipAwait`, a custom resource by `pulumi.com/waitFor` (pulumi/pulumi-kubernetes@v4.34.2
provider/pkg/metadata/overrides.go ReadyCondition; a LeaderWorkerSet's `Available` is True once every group is ready
and updated, kubernetes-sigs/lws@v0.7.0 pkg/controllers/leaderworkerset_controller.go updateConditions), each for its
`customTimeouts` (the provider's default is 10 minutes: provider/pkg/await/deployment.go DefaultDeploymentTimeoutMins).
On a pool the autoscaler fills from empty the await includes node provisioning, so the timeout is derived from the
time-to-serve model (stacks/reports/time_to_serve.py server_await), not a constant.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stacks.config import parse_stack_config
from stacks.reports import time_to_serve
from tests.conftest import EXAMPLES, recorded
from tooling.generate import transition_matrix
from tooling.harness.offline import parse_stack_file
from workloads.registry import WORKLOAD_TYPES

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
SERVICE = "kubernetes:core/v1:Service"
SKIP_AWAIT, WAIT_FOR = "pulumi.com/skipAwait", "pulumi.com/waitFor"
# What `up` awaits of each type's TPU server. Saxml's model servers are a JobSet and a PathwaysJob a batch job: no
# condition says they serve (jobset@v0.10.1 api/jobset/v1alpha2 JobSetConditionType: Completed, Failed, Suspended,
# StartupPolicyCompleted; a PathwaysJob's status mirrors its JobSet's), so nothing is awaited and a type swap to them
# replaces what served at the end of the `up` (docs/operations.md).
AWAITED = {
    "jetstream": {DEPLOYMENT},
    "jetstream-pathways": {LWS},
    "vllm": {DEPLOYMENT, LWS},
    "saxml": set(),
    "pathways-job": set(),
}
# Every kind of pool: (capacity, autoscaling) - created whole (a reservation; a minimum of the whole pool) or left
# empty to the autoscaler (on-demand, spot, flex-start; a reservation with minNodes 0).
POOL_KINDS = [
    ("reservation", None),
    ("on-demand", None),
    ("spot", None),
    ("flex-start", None),
    ("reservation", "from-zero"),
    ("on-demand", "whole"),
]


def test_every_registered_type_says_what_is_awaited():
    assert set(AWAITED) == set(WORKLOAD_TYPES)


def _example_workloads() -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Type -> (an example's config, its first workload of the type, that workload's pool)."""
    out: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for config in transition_matrix.examples().values():
        for workload in config.get("tpu-serving:workloads", []):
            pool = next(p for p in config["tpu-serving:tpuPools"] if p["name"] == workload["pool"])
            out.setdefault(workload["type"], (config, workload, pool))
    return out


def _raw(config: dict[str, Any], workload: dict[str, Any], pool: dict[str, Any], capacity: str, sizing: str | None):
    pool = {k: v for k, v in copy.deepcopy(pool).items() if k not in ("capacity", "reservation", "autoscaling")}
    if isinstance(capacity, str):
        pool["capacity"] = capacity
    if capacity == "reservation":
        pool["reservation"] = "r"
    raw = {k.removeprefix("tpu-serving:"): v for k, v in copy.deepcopy(config).items() if k.startswith("tpu-serving:")}
    raw["tpuPools"] = [pool]
    # one replica, fixed: the await does not depend on how many, and a fixed pool holds it
    raw["workloads"] = [{**{k: v for k, v in workload.items() if k != "autoscaling"}, "replicas": 1}]
    if workload["type"] in ("saxml", "pathways-job"):
        raw["workloads"] = [workload]
    plans = _parse(raw, config)
    if sizing is not None:
        (shape_plan,) = plans.pools
        hosts = shape_plan.shape.hosts if shape_plan.shape.multi_host else shape_plan.max_nodes_per_node_pool
        pool["autoscaling"] = {"minNodes": 0 if sizing == "from-zero" else hosts, "maxNodes": hosts}
        plans = _parse(raw, config)
    return plans


def _parse(raw: dict[str, Any], config: dict[str, Any]) -> Any:
    where = {"gcp_project": config["gcp:project"], "region": config["gcp:region"]}
    return parse_stack_config(raw, stack="s", pulumi_project="p", workload_types=WORKLOAD_TYPES, **where)


@pytest.mark.parametrize("kind", sorted(AWAITED))
def test_every_type_on_every_pool_kind_awaits_its_server_for_the_modelled_time(kind):
    """Every pool kind: the server is awaited (no skipAwait; an LWS by waitFor), and the wait covers the node
    provisioning the model assumes, the images and the cold start the server's startup probe allows."""
    config, workload, pool = _example_workloads()[kind]
    seen = 0
    for capacity, sizing in POOL_KINDS:
        try:
            cfg = _raw(config, workload, pool, capacity, sizing)
        except Exception as err:  # a pool kind the type's pool cannot be (e.g. a reservation of a capacity list)
            pytest.fail(f"{kind} on {capacity}/{sizing}: {err}")
        (plan,) = cfg.workloads
        estimate = time_to_serve.estimate(plan, time_to_serve.type_images(plan, WORKLOAD_TYPES))
        minutes = plan.server_await_minutes
        assert minutes is not None
        startup = plan.startup
        allowed = (startup.startup_initial_delay_s + (startup.cold_start_s or 0)) if startup else 0
        assert minutes * 60 >= estimate.phases["capacity"] + estimate.phases["image"] + allowed, (capacity, sizing)
        assert minutes * 60 >= estimate.cold, (capacity, sizing)
        assert plan.server_timeouts() == {"create": f"{minutes}m", "update": f"{minutes}m"}
        for manifest in plan.pod_manifests():
            annotations = (manifest.get("metadata") or {}).get("annotations") or {}
            assert SKIP_AWAIT not in annotations, (capacity, sizing, manifest["kind"])
            if manifest["kind"] == "LeaderWorkerSet":
                assert annotations.get(WAIT_FOR) == "condition=Available"
        seen += 1
    assert seen == len(POOL_KINDS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_awaited_server_and_its_service_carry_the_modelled_timeouts(path):
    """The components give what the plan derives: each TPU server a type awaits, and the Service after it (the
    provider awaits a Service until it has a ready endpoint, provider/pkg/await/service.go), carry the plan's
    customTimeouts; nothing is skipped."""
    cfg = parse_stack_file(path)
    rec = recorded(path, False)
    for plan in cfg.workloads:
        wanted = plan.server_timeouts()
        assert wanted
        # the workload's server, or each of its server sets (a disaggregated vLLM workload's prefill and decode)
        names = {plan.name, *(plan.role_name(r) for r in getattr(plan, "roles", ()))}
        servers = [
            r
            for r in rec.resources
            if r.type in AWAITED[plan.workload.type]
            and r.inputs["metadata"]["namespace"] == plan.namespace
            and r.inputs["metadata"]["name"] in names
        ]
        assert bool(servers) == bool(AWAITED[plan.workload.type]), plan.name
        fronted = 0
        for server in servers:
            assert server.custom_timeouts == wanted, server.name
            assert SKIP_AWAIT not in (server.inputs["metadata"].get("annotations") or {}), server.name
            services = [r for r in rec.of_type(SERVICE) if server.urn in r.dependencies]
            assert all(s.custom_timeouts == wanted for s in services), server.name
            fronted += bool(services)
        # one server set is the Service's (a prefill set is reached through the gateway's picker only)
        assert fronted == (1 if servers else 0), plan.name
