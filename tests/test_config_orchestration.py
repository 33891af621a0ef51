"""What stacks/config.py promises as the orchestrator (issue 24): a plan a workload type returns is the plan the
stack builds (nothing replaces it after validation), and a problem is never dropped because another one's message
happens to contain the same words (no de-duplication by message text). Shown with a workload type that exists only
in this test, added beside the real ones (workloads/registry.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest

from stacks.config import ConfigError, parse_stack_config
from stacks.config_model import WorkloadConfig
from stacks.pool_plan import PoolPlan
from stacks.problems import Problem
from stacks.workload_plan import WorkloadPlan
from stacks.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType, resolver
from tests.conftest import pool
from workloads import registry


class PortsWorkload(WorkloadConfig):
    type: Literal["ports"]
    claim: str = ""  # a problem to report, worded as the test wants


@dataclass(frozen=True)
class PortsPlan(WorkloadPlan):
    workload: PortsWorkload

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (8000,)

    def pod_manifests(self) -> list[dict[str, Any]]:
        return []


RETURNED: list[PortsPlan] = []


def check_ports(
    path: str,
    workload: PortsWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> PortsPlan | None:
    if workload.claim:
        problems.append(Problem(f"{path}.claim", workload.claim))
    if pool is None or problems:
        return None
    plan = PortsPlan.on(workload, pool, namespace, ctx)
    RETURNED.append(plan)
    return plan


def registry_with(**extra: Any) -> WorkloadRegistry:
    # "saxModelServer": a pinned image recorded to serve v4 and v5e only (stacks/versions.py IMAGE_RECORDS)
    kind = WorkloadType(
        config=PortsWorkload, resolve=resolver(check_ports), component=object, tpu_images=("saxModelServer",), **extra
    )
    return WorkloadRegistry(*registry.WORKLOAD_TYPES.values(), kind)


def parse(workloads: list[dict[str, Any]], pools: list[dict[str, Any]], types: WorkloadRegistry):
    return parse_stack_config(
        {"environment": "dev", "tpuPools": pools, "workloads": workloads},
        stack="dev",
        pulumi_project="tpu-serving",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=types,
    )


V5E = pool(name="e", tpu="v5e", topology="2x4")


def test_the_plans_a_type_returns_are_the_plans_the_stack_builds():
    """Two workloads forwarding the same port get local ports of their own, and still the stack holds the very
    plans their type returned (the local ports are StackConfig's, handed to the components, not written into a
    copy of each validated plan)."""
    RETURNED.clear()
    cfg = parse(
        [{"type": "ports", "name": "a", "pool": "e"}, {"type": "ports", "name": "b", "pool": "e"}],
        [V5E],
        registry_with(),
    )
    assert len(RETURNED) == 2
    assert all(kept is returned for kept, returned in zip(cfg.workloads, RETURNED, strict=True))
    ports = {w.name: getattr(cfg, "local_ports", {}).get(w.name) for w in cfg.workloads}
    assert ports == {"a": {8000: 8000}, "b": {8000: 8001}}


def test_a_problem_is_not_dropped_because_another_one_reads_alike():
    """A workload's own problem that happens to say "TPU generation" does not hide the shared check's problem that
    the pool's generation (v6e) is one its type's pinned images do not serve."""
    with pytest.raises(ConfigError) as err:
        parse(
            [{"type": "ports", "name": "a", "pool": "p", "claim": "this TPU generation is not what the test wants"}],
            [pool()],
            registry_with(),
        )
    assert [str(p) for p in err.value.problems] == [
        "tpu-serving:workloads[0].pool: ports cannot run on v6e (pool 'p'): its pinned images do not support v6e; "
        "workload types that do: jetstream-pathways, pathways-job, vllm",
        "tpu-serving:workloads[0].claim: this TPU generation is not what the test wants",
    ]
