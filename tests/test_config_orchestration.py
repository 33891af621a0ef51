"""What stacks/config.py promises as the orchestrator (issue 24): a plan a workload type returns is the plan the
stack builds (nothing replaces it after validation), and a problem is never dropped because another one's message
happens to contain the same words (no de-duplication by message text). Shown with a workload type that exists only
in this test, added beside the real ones (workloads/registry.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pytest

from stacks.config import ConfigError, parse_stack_config
from stacks.model.config_model import WorkloadConfig
from stacks.problems import Problem
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadContext, WorkloadRegistry, WorkloadType, resolver
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
    # "saxModelServer": a pinned image recorded to serve v4 and v5e only (stacks/facts/versions.py IMAGE_RECORDS)
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


# Each piece's own bad value, at the key path its problem names; reported whatever else has problems.
OWN_PROBLEMS = {
    "gateway": ({"enabled": True, "exposure": "external", "sourceRanges": ["not-a-cidr"]}, "gateway.sourceRanges[0]"),
    "gateway proxy subnet": ({"enabled": True, "proxySubnetCidr": "10.129.0.0/28"}, "gateway.proxySubnetCidr"),
    "bucket": ({"location": "mars"}, "bucket.location"),
    "tpuPools": ([pool(topology="9x9")], "tpuPools[0].topology"),
    "addons": ({"lws": {"enabled": "sometimes"}}, "addons.lws.enabled"),
}


@pytest.mark.parametrize("piece", OWN_PROBLEMS)
def test_a_pieces_own_problem_is_reported_with_a_typo_in_the_cluster(piece):
    """Every problem at once, across pieces: a typo under cluster (its section does not parse) does not hide a
    piece's own problem; only what a piece checks against the cluster (the gateway's proxy-only subnet against the
    network, the versions the pools and the gateway need) waits for the cluster to parse."""
    value, path = OWN_PROBLEMS[piece]
    key = piece.split()[0]
    raw = {"environment": "dev", "cluster": {"releaseChanel": "REGULAR"}, key: value}
    with pytest.raises(ConfigError) as err:
        parse_stack_config(
            raw,
            stack="dev",
            pulumi_project="tpu-serving",
            gcp_project="tpu-test-project",
            region="us-east5",
            workload_types=registry.WORKLOAD_TYPES,
        )
    paths = [p.path for p in err.value.problems]
    assert "tpu-serving:cluster.releaseChanel" in paths
    assert f"tpu-serving:{path}" in paths, [str(p) for p in err.value.problems]
