"""stacks/config.py as an orchestrator (issue 33 item 5): every key parsed by its model in one pass, then each piece
visited once, in the order of what it reads, its rules and its plan in that one visit; the orchestrator calls nothing
of a piece but its `visit`. The order problems are reported in does not follow the order of the visits: each key's
shape problems in key order, then the rules between keys (as before the pieces were visited once)."""

from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Any

import pytest

from stacks import config, workload_checks
from stacks.config import PIECES, ConfigError, parse_stack_config
from stacks.pieces.context import Context, Findings
from stacks.problems import Problem
from tests.conftest import STACK_FILES
from tooling.harness.offline import ROOT, parse_stack_file
from workloads.registry import WORKLOAD_TYPES


@pytest.fixture
def visits(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each piece's `visit` is entered (each one instrumented where the orchestrator finds it)."""
    counted: dict[str, int] = {}
    for piece in PIECES:
        original = piece.visit

        def counting(ctx: Context, found: Findings, _name: str = piece.NAME, _visit: Any = original) -> object:
            counted[_name] = counted.get(_name, 0) + 1
            return _visit(ctx, found)

        monkeypatch.setattr(piece, "visit", counting)
    return counted


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_piece_is_visited_once_for_every_example(path: Path, visits: dict[str, int]):
    parse_stack_file(path)
    assert visits == {piece.NAME: 1 for piece in PIECES}


BASE: dict[str, Any] = {
    "environment": "dev",
    "tpuPools": [{"name": "p", "tpu": "v6e", "topology": "2x4", "zone": "us-east5-b"}],
    "workloads": [{"type": "vllm", "name": "qwen", "pool": "p", "model": "Qwen/Qwen3-8B", "gated": False}],
}
# Each a config with problems in one or more keys: every piece is still visited once, whatever does not parse.
BAD: dict[str, dict[str, Any]] = {
    "no environment": {k: v for k, v in BASE.items() if k != "environment"},
    "cluster typo": {**BASE, "cluster": {"releaseChanel": "REGULAR"}},
    "pools not a list": {**BASE, "tpuPools": "p"},
    "unknown workload type": {**BASE, "workloads": [{"type": "tgi", "name": "x", "pool": "p"}]},
    "many": {
        "environment": "qa",
        "cluster": {"minMasterVersion": "one", "labels": {"Bad": "x"}},
        "bucket": {"location": "mars"},
        "tpuPools": [{"name": "p", "tpu": "v6e", "topology": "9x9", "zone": "us-east5-b"}],
        "addons": {"lws": {"enabled": "sometimes"}},
        "gateway": {"enabled": True, "exposure": "external", "sourceRanges": ["not-a-cidr"]},
        "alerts": {"channels": [{"type": "email", "address": "nobody"}]},
        "workloads": [{"type": "vllm", "name": "Q", "pool": "none", "model": "Qwen/Qwen3-8B"}],
        "paused": "yes",
    },
}


REFUSE = {"refuse_placeholder": True}


def _parse(raw: dict[str, Any], **given: Any):
    settings = {"stack": "dev", "pulumi_project": "tpu-serving", "gcp_project": "tpu-test-project"}
    return parse_stack_config(
        copy.deepcopy(raw), **{**settings, "region": "us-east5", **given}, workload_types=WORKLOAD_TYPES
    )


@pytest.mark.parametrize("case", BAD)
def test_each_piece_is_visited_once_whatever_has_problems(case: str, visits: dict[str, int]):
    with pytest.raises(ConfigError):
        _parse(BAD[case])
    assert visits == {piece.NAME: 1 for piece in PIECES}


def test_problems_are_reported_by_key_then_by_rule_whatever_the_order_of_the_visits():
    """What comes from outside the keys first; shape problems (and the rules that read one key alone: the add-ons',
    the alert channels') in key order; then the rules between keys: the stack's names and project, the gateway's
    own, the cluster's, the bucket's, the pools' (and minMasterVersion against them), the workloads'. The gateway is
    visited after the workloads and the cluster after the environment, yet reported in this order."""
    with pytest.raises(ConfigError) as err:
        _parse(BAD["many"], gcp_project="my-tpu-project", region="us-east99", extra_keys=("cluser",), **REFUSE)
    # as the passes over the pieces reported them (c83554d, before each piece was visited once)
    assert [p.path for p in err.value.problems] == [
        "tpu-serving:cluser",
        "gcp:region",
        "tpu-serving:environment",
        "tpu-serving:addons.lws.enabled",
        "tpu-serving:alerts.channels[0].address",
        "tpu-serving:paused",
        "gcp:project",
        "tpu-serving:gateway.sourceRanges[0]",
        "tpu-serving:cluster.minMasterVersion",
        "tpu-serving:cluster.labels.Bad",
        "tpu-serving:bucket.location",
        "tpu-serving:tpuPools[0].zone",
        "tpu-serving:tpuPools[0].topology",
        "tpu-serving:cluster.minMasterVersion",
        "tpu-serving:workloads[0].name",
        "tpu-serving:workloads[0].namespace",
        "tpu-serving:workloads[0].pool",
    ]


def test_a_piece_added_to_the_sequence_is_visited_once_after_those_it_reads(monkeypatch: pytest.MonkeyPatch):
    """The sequence of pieces is the extension point: one added (here, by a test) is visited once, in its place,
    with what the pieces before it resolved, and what it files is reported with the rest."""
    seen: list[list[str]] = []

    class Quota:
        NAME = "quota"

        @staticmethod
        def visit(ctx: Context, found: Findings) -> object:
            seen.append([w.name for w in ctx.workloads])
            found.problems_at("workloads.rules").append(Problem("tpu-serving:workloads[0]", "over the test's quota"))
            return None

    monkeypatch.setattr(config, "PIECES", (*PIECES, Quota))
    with pytest.raises(ConfigError) as err:
        _parse(BASE)
    assert seen == [["qwen"]]
    assert [str(p) for p in err.value.problems] == ["tpu-serving:workloads[0]: over the test's quota"]
    monkeypatch.setattr(config, "PIECES", PIECES)
    assert _parse(BASE).workloads[0].name == "qwen"


def test_every_piece_module_is_in_the_sequence_once():
    """Each module of stacks/pieces/ but the shared ones (rules, context) is a piece with a NAME and a visit, and
    the orchestrator visits it; so are the workloads (stacks/workload_checks.py)."""
    modules = {p.stem for p in (ROOT / "stacks" / "pieces").glob("*.py")} - {"__init__", "rules", "context"}
    listed = [piece.__name__.rsplit(".", 1)[-1] for piece in PIECES if isinstance(piece, type(config))]
    assert sorted(listed) == sorted([*modules, "workload_checks"])
    assert len({piece.NAME for piece in PIECES}) == len(PIECES)
    assert workload_checks in PIECES


def piece_calls(source: str) -> list[str]:
    """`<module>.<function>(...)` calls into a piece module (imported as `*_piece`, `tpu_pools`, `workload_checks`)."""
    aliases = {"tpu_pools", "workload_checks"}
    return [
        ast.unparse(node.func)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id.endswith("_piece") or node.func.value.id in aliases)
    ]


def test_the_orchestrator_calls_nothing_of_a_piece_but_its_visit():
    """stacks/config.py reaches a piece through its visit alone (by the sequence): no call of a piece's function
    (its problems, its plan, its name, ...), which would enter it a second time."""
    assert piece_calls((ROOT / "stacks" / "config.py").read_text()) == []
    assert piece_calls("cluster_piece.problems(cluster)\nworkload_checks.check(x)\n") == [
        "cluster_piece.problems",
        "workload_checks.check",
    ]


# A cluster with problems in its own keys and in its network's (cluster.network, the network piece's), interleaved:
# the network's rules run in the network's visit (after the gateway's), yet are reported where they always were.
CLUSTER_AND_NETWORK = {
    **BASE,
    "environment": "staging",
    "cluster": {
        "name": "Bad_Name",
        "masterAuthorizedNetworks": [{"cidrBlock": "nope"}],
        "controlPlaneEndpoint": "ip",
        "labels": {"Bad": "x"},
        "systemPool": {"minNodes": 3, "maxNodes": 1},
        "network": {"create": False, "flowLogs": True, "podsRangeName": "Pods_1", "servicesRangeName": "Pods_1"},
    },
    "gateway": {"enabled": True, "proxySubnetCidr": "10.0.0.0/27"},
}


def test_the_network_rules_run_in_its_visit_and_are_reported_among_the_clusters(monkeypatch: pytest.MonkeyPatch):
    with pytest.raises(ConfigError) as err:
        _parse(CLUSTER_AND_NETWORK)
    # as the cluster's visit reported them when it ran the network's rules (main at 93f59d5)
    assert [p.path.removeprefix("tpu-serving:") for p in err.value.problems] == [
        "gateway.proxySubnetCidr",
        "cluster.name",
        "cluster.masterAuthorizedNetworks[0].cidrBlock",
        "cluster.network.podsRangeName",
        "cluster.network.servicesRangeName",
        "cluster.network.servicesRangeName",
        "cluster.network.network",
        "cluster.network.subnetwork",
        "cluster.network.nat",
        "cluster.controlPlaneEndpoint",
        "cluster.network.flowLogs",
        "cluster.labels.Bad",
        "cluster.systemPool.minNodes",
        "cluster.systemPool.maxNodes",
        "gateway.proxySubnet",
        "cluster.minMasterVersion",
    ]
    # without the network piece, none of its rules runs: the cluster's visit no longer runs them
    from stacks.pieces import network

    monkeypatch.setattr(config, "PIECES", tuple(p for p in PIECES if p is not network))
    with pytest.raises(ConfigError) as err:
        _parse(CLUSTER_AND_NETWORK)
    assert not [p for p in err.value.problems if p.path.startswith("tpu-serving:cluster.network.")]


# ---- each piece parses its own keys -----------------------------------------------------------------------------


def test_every_key_is_parsed_by_the_piece_that_owns_it():
    """Each known key but the secret one is a piece's (its KEYS), one piece's only, and the orchestrator names no
    model: it loops over the pieces' `parse`."""
    from stacks.pieces.context import keys_of

    owned = [k for piece in PIECES for k in keys_of(piece)]
    assert sorted(owned) == sorted(k for k in config.KNOWN_KEYS if k not in config.SECRET_KEYS)
    assert len(owned) == len(set(owned))
    assert config.known_keys() == config.KNOWN_KEYS
    source = (ROOT / "stacks" / "config.py").read_text()
    assert "Config," not in source and "parse_each" not in source and "parse_by_type" not in source


def test_a_piece_with_a_key_of_its_own_is_parsed_and_visited(monkeypatch: pytest.MonkeyPatch):
    """A piece added to the sequence alone, with its own `tpu-serving:quota` key: the key is known (not a typo),
    parsed by the piece's model once, its shape problems reported with the other keys', and the piece's visit reads
    what it parsed."""
    from pydantic import BaseModel, ConfigDict

    from stacks.pieces.rules import parse_section

    class QuotaConfig(BaseModel):
        model_config = ConfigDict(extra="forbid")
        chips: int = 0

    seen: list[Any] = []

    class Quota:
        NAME = "quota"
        KEYS = ("quota",)

        @staticmethod
        def parse(raw: dict[str, Any], types: Any, found: Findings) -> dict[str, Any]:
            return {"quota": parse_section(raw, "quota", QuotaConfig, found.problems_at("quota"))}

        @staticmethod
        def visit(ctx: Context, found: Findings) -> object:
            quota = ctx.sections.more["quota"]
            seen.append(quota)
            if quota is not None and quota.chips < 8:
                found.problems_at("workloads.rules").append(Problem("tpu-serving:quota.chips", "below the pool's 8"))
            return quota

    monkeypatch.setattr(config, "PIECES", (*PIECES, Quota))
    assert config.known_keys()[-1] == "quota"
    assert _parse({**BASE, "quota": {"chips": 16}}).workloads[0].name == "qwen"
    assert seen == [QuotaConfig(chips=16)]
    with pytest.raises(ConfigError) as err:
        _parse({**BASE, "quota": {"chips": "many"}, "paused": "yes"})
    assert [p.path for p in err.value.problems] == ["tpu-serving:paused", "tpu-serving:quota.chips"]
    with pytest.raises(ConfigError) as err:
        _parse({**BASE, "quota": {"chips": 4}})
    assert [str(p) for p in err.value.problems] == ["tpu-serving:quota.chips: below the pool's 8"]
    # without the piece, the key is a typo
    monkeypatch.setattr(config, "PIECES", PIECES)
    with pytest.raises(ConfigError, match="tpu-serving:quota"):
        _parse({**BASE, "quota": {"chips": 16}}, extra_keys=("quota",))
