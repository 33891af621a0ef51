"""Every platform piece in the workload types' shape (issue 24): its rules and its plan in `stacks/pieces/<piece>.py`
(the environment profile resolved there, once), and a component that takes `(name, *, plan, deps)`. A resource added
to a piece is added in its component from its plan and deps alone: shown by adding one in this test."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pytest
from pydantic import Field

from components import platform
from components.addons import Addons, AddonsDeps
from components.alerts import Alerts
from components.bucket import Bucket
from components.cluster import Cluster, ClusterDeps
from components.cost import CostAttribution
from components.gateway import GatewayDeps, InferenceGateway
from components.monitoring import Monitoring, MonitoringDeps
from components.namespaces import Namespaces, NamespacesDeps
from components.network import Network
from components.node_identity import NodeAccountDeps, NodeServiceAccount
from components.tpu_pool import TpuPoolDeps, TpuSlicePool
from stacks.model.config_model import ClusterConfig
from stacks.model.profiles import Profile
from stacks.pieces import (
    addons,
    alerts,
    bucket,
    cluster,
    cost,
    gateway,
    monitoring,
    namespaces,
    network,
    node_identity,
    tpu_pools,
)
from stacks.pieces.addons import AddonsPlan
from stacks.pieces.alerts import AlertsPlan
from stacks.pieces.bucket import BucketPlan
from stacks.pieces.cluster import ClusterPlan
from stacks.pieces.cost import CostPlan
from stacks.pieces.gateway import GatewayPlan
from stacks.pieces.monitoring import MonitoringPlan
from stacks.pieces.namespaces import NamespacesPlan
from stacks.pieces.network import NetworkPlan
from stacks.pieces.node_identity import NodeAccountPlan
from stacks.serving.pool_plan import PoolPlan
from stacks.stack_config import StackConfig
from tests.conftest import STACK_FILES, make_config, recorded
from tooling.harness.offline import parse_stack_file

ROOT = Path(__file__).resolve().parent.parent

# piece module, its plan, its component, the component's deps (None: it depends on nothing the stack builds)
PIECES = {
    "network": (network, NetworkPlan, Network, None),
    "cluster": (cluster, ClusterPlan, Cluster, ClusterDeps),
    "bucket": (bucket, BucketPlan, Bucket, None),
    "tpu_pools": (tpu_pools, PoolPlan, TpuSlicePool, TpuPoolDeps),
    "addons": (addons, AddonsPlan, Addons, AddonsDeps),
    "monitoring": (monitoring, MonitoringPlan, Monitoring, MonitoringDeps),
    "gateway": (gateway, GatewayPlan, InferenceGateway, GatewayDeps),
    "namespaces": (namespaces, NamespacesPlan, Namespaces, NamespacesDeps),
    "node_identity": (node_identity, NodeAccountPlan, NodeServiceAccount, NodeAccountDeps),
    "cost": (cost, CostPlan, CostAttribution, None),
    "alerts": (alerts, AlertsPlan, Alerts, None),
}


def test_every_module_of_stacks_pieces_is_a_piece_listed_here():
    """A piece added to stacks/pieces/ is held to the shape below (rules.py holds shared checks, context.py what a
    visit reads and files; the environment piece builds nothing: its profile goes into the other pieces' plans)."""
    shared = {"__init__", "rules", "context", "environment"}
    modules = {p.stem for p in (ROOT / "stacks" / "pieces").glob("*.py")} - shared
    assert modules == set(PIECES)


@pytest.mark.parametrize("piece", list(PIECES))
def test_every_piece_has_a_frozen_plan_and_a_component_that_takes_name_plan_and_deps(piece):
    module, plan_type, component, deps_type = PIECES[piece]
    assert dataclasses.is_dataclass(plan_type) and plan_type.__dataclass_params__.frozen  # type: ignore[attr-defined]
    params = inspect.signature(component.__init__).parameters
    keyword_only = {n: p for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert list(params)[:2] == ["self", "name"]
    assert set(keyword_only) == {"plan", "opts"} | ({"deps"} if deps_type else set()), keyword_only
    # annotations are strings (from __future__ import annotations): the plan and deps types by name, no Any
    assert keyword_only["plan"].annotation == plan_type.__name__
    if deps_type is not None:
        assert keyword_only["deps"].annotation == deps_type.__name__
        assert dataclasses.is_dataclass(deps_type)
    if plan_type is not PoolPlan:  # the pools' plans are made by tpu_pools.plans, with their problems
        assert inspect.signature(module.plan).return_annotation == plan_type.__name__


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_environment_profile_is_resolved_in_the_pieces_plans_alone():
    """No component reads the environment profile (stacks/model/profiles.py): what it decides (protection, flow logs,
    upgrade hold, teardown) is in each piece's plan, resolved once in stacks/pieces/."""
    readers = sorted(
        str(p.relative_to(ROOT))
        for folder in ("components", "workloads")
        for p in (ROOT / folder).rglob("*.py")
        if "stacks.model.profiles" in _imports(p)
    )
    assert readers == []


def _composition_files() -> list[Path]:
    """The code that builds resources from plans: components/ and each workload type's component."""
    return sorted([*(ROOT / "components").rglob("*.py"), *(ROOT / "workloads").glob("*/component.py")])


def _names(node: ast.AST) -> list[str]:
    """The names an expression is built from (`cfg.bucket_plan` -> cfg, bucket_plan)."""
    return [
        n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, ast.Name | ast.Attribute)
    ]


def _is_replace(call: ast.Call) -> bool:
    """`replace(...)` (from dataclasses or copy), `dataclasses.replace(...)`, `copy.replace(...)`."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "replace"
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "replace"
        and isinstance(func.value, ast.Name)
        and func.value.id in ("dataclasses", "copy")
    )


def plan_bypasses(path: Path) -> list[str]:
    """Where the composition reads the environment profile (any `.profile`) or changes a plan after validation
    (a dataclass `replace` of anything named a plan): both would bypass what the piece's plan resolved."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr == "profile":
            found.append(f"{path.name}:{node.lineno}: .profile")
        if isinstance(node, ast.Call) and _is_replace(node) and node.args:
            if any(n == "plan" or n.endswith("_plan") for n in _names(node.args[0])):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node.func)}({ast.unparse(node.args[0])}, ...)")
    return found


def test_the_composition_neither_reads_the_profile_nor_changes_a_plan():
    """Only plans go to components: none reads `.profile` (the stack config carries no profile to read), and none
    replaces a field of a plan (e.g. `dataclasses.replace(cfg.bucket_plan, protect=...)`): a value the composition
    needs is resolved on the piece's plan, once."""
    assert "profile" not in {f.name for f in dataclasses.fields(StackConfig)}
    found = [hit for p in _composition_files() for hit in plan_bypasses(p)]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        'Bucket("bucket", plan=dataclasses.replace(cfg.bucket_plan, protect=cfg.profile.protect))',
        'Bucket("bucket", plan=replace(cfg.bucket_plan, protect=True))',
        "Network('network', plan=copy.replace(plan, flow_logs=False))",
        "protect = cfg.profile.protect",
    ],
)
def test_the_bypass_check_finds_a_profile_read_or_a_plan_replaced(tmp_path, line):
    """The check above is not vacuous: the reviewer's bypass (and its variants) added to a component is found."""
    source = (ROOT / "components" / "platform.py").read_text() + f"\n\ndef _bypass(cfg):\n    {line}\n"
    component = tmp_path / "platform.py"
    component.write_text(source)
    assert plan_bypasses(component)
    assert plan_bypasses(ROOT / "components" / "platform.py") == []


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_namespaces_are_built_as_their_plan_says(path):
    """The namespaces piece's plan is made once, in its visit (stacks/pieces/namespaces.py visit) and the component registers it as
    it is: one Namespace per planned namespace with its Pod Security level, and its NetworkPolicies."""
    cfg, rec = parse_stack_file(path), recorded(path, False)
    plan = cfg.namespaces_plan
    assert cfg.namespaces_plan is plan and dataclasses.is_dataclass(plan)
    built = {r.inputs["metadata"]["name"]: r for r in rec.of_type("kubernetes:core/v1:Namespace")}
    ours = {n: r for n, r in built.items() if r.parent == rec.one("tpu-serving:workloads:Namespaces", "namespaces").urn}
    assert sorted(ours) == plan.names
    for ns, level in plan.levels.items():
        assert ours[ns].inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == level
    policies = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
        for r in rec.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r.name.startswith("namespaces-")
    }
    planned = {(ns, p["metadata"]["name"]) for ns, ps in plan.network_policies.items() for p in ps}
    assert policies == planned and (planned or not plan.names)
    assert set(plan.local_ports) == {w.name for w in cfg.workloads}


# ---- a default resolved once, in the piece's plan ----------------------------------------------------------------


def _config_fields() -> set[str]:
    """Every field name of the platform pieces' config models (stacks/model/config_model.py), nested ones included."""
    from stacks.model import config_model

    models = [m for m in vars(config_model).values() if isinstance(m, type) and issubclass(m, config_model.CamelModel)]
    return {f for m in models for f in m.model_fields} - {"name"}  # `name`: every plan has a resolved one too


def _reads_a_config_value(node: ast.expr, fields: set[str]) -> bool:
    """`config.x`, `cfg.x`, `plan.config.x`, or `n.x` with x a config field (n an entry of a config list): not a
    field of a plan (`plan.x`) or of the component itself (`self.x`)."""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute):
            continue
        root = sub.value
        if isinstance(root, ast.Name) and root.id in ("config", "cfg"):
            return True
        if isinstance(root, ast.Attribute) and root.attr == "config":
            return True
        if sub.attr in fields and not (isinstance(root, ast.Name) and root.id in ("plan", "self", "deps")):
            return True
    return False


def config_defaults(source: str) -> list[str]:
    """Defaults applied to a config value: `<config value> or <default>`, and `<config value> is [not]
    None/False/True` (a tri-state resolved)."""
    fields = _config_fields()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            if _reads_a_config_value(node.values[0], fields):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            constants = all(isinstance(c, ast.Constant) for c in node.comparators)
            if constants and _reads_a_config_value(node.left, fields):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in (ROOT / "components").glob("*.py")))
def test_no_component_applies_a_default_to_a_config_value(module):
    """Every default is resolved once, in the piece's plan(): the component reads plan fields, never
    `config.x or default` (before this, components/network.py named its VPC `config.network or default_name` and
    decided NAT with `config.nat is not False`; components/cluster.py gave each authorized network
    `display_name or cidr_block`)."""
    assert config_defaults((ROOT / "components" / module).read_text()) == []


def test_the_config_default_check_finds_the_shapes_it_refuses():
    found = config_defaults(
        "name = config.network or default\n"
        "nat = config.nat is not False\n"
        "shown = [n.display_name or n.cidr_block for n in plan.config.master_authorized_networks]\n"
        "where = plan.config.location or region\n"
        "ok = plan.location or other\n"
    )
    assert sorted(line.split(":")[0] for line in found) == ["1", "2", "3", "4"], found


# ---- a resource added to a piece: its component alone, from its plan and deps ---------------------------------


# The one change the "A platform resource" row of docs/architecture.md describes, made here end to end: a key on the
# piece's config model (stacks/model/config_model.py), its default in each environment profile (stacks/model/profiles.py), the
# default resolved in the piece's plan() (stacks/pieces/cluster.py), and the resource its component builds from the
# plan (components/cluster.py). The resource: a firewall rule letting Google's health checkers reach the nodes
# (https://cloud.google.com/load-balancing/docs/health-check-concepts#ip-ranges), with firewall rules logging in prod
# only (pulumi-gcp 10.2.0 compute.FirewallLogConfigArgs(metadata): EXCLUDE_ALL_METADATA or INCLUDE_ALL_METADATA;
# a log_config block turns logging on).


class ClusterConfigWithFirewallLogs(ClusterConfig):
    """stacks/model/config_model.py: the new key, cluster.healthCheckFirewallLogs (unset: the profile decides)."""

    health_check_firewall_logs: bool | None = Field(default=None, description="Log the health-check firewall rule.")


@dataclasses.dataclass(frozen=True)
class ProfileWithFirewallLogs(Profile):
    """stacks/model/profiles.py: the new profile default (one value per profile)."""

    health_check_firewall_logs: bool = False


@dataclasses.dataclass(frozen=True)
class ClusterPlanWithFirewallLogs(ClusterPlan):
    """stacks/pieces/cluster.py ClusterPlan: the new field, every default resolved."""

    health_check_firewall_logs: bool


def plan_with_firewall_logs(config: ClusterConfig, *, profile: Profile, **kw) -> ClusterPlan:
    """stacks/pieces/cluster.py plan(): the line the change adds, resolving the key against the profile once."""
    base = THE_CLUSTER_PLAN(config, profile=profile, **kw)
    own = getattr(config, "health_check_firewall_logs", None)
    resolved = getattr(profile, "health_check_firewall_logs", False) if own is None else own
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    return ClusterPlanWithFirewallLogs(**fields, health_check_firewall_logs=resolved)


THE_CLUSTER_PLAN = cluster.plan


class ClusterWithFirewall(Cluster):
    """components/cluster.py: the resource, from the plan and deps alone, parented to the cluster."""

    def __init__(self, name: str, *, plan: ClusterPlan, deps: ClusterDeps, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, plan=plan, deps=deps, opts=opts)
        assert isinstance(plan, ClusterPlanWithFirewallLogs)
        self.health_checks = gcp.compute.Firewall(
            f"{name}-health-checks",
            gcp.compute.FirewallArgs(
                name=f"{plan.name}-health-checks",
                project=plan.project,
                network=deps.network.network,
                source_ranges=["35.191.0.0/16", "130.211.0.0/22"],
                allows=[gcp.compute.FirewallAllowArgs(protocol="tcp")],
                log_config=(
                    gcp.compute.FirewallLogConfigArgs(metadata="INCLUDE_ALL_METADATA")
                    if plan.health_check_firewall_logs
                    else None
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, protect=plan.protect),
        )


def test_a_resource_added_to_a_piece_is_built_from_its_plan_and_deps(run, monkeypatch):
    from stacks.model.profiles import PROFILES

    monkeypatch.setattr(cluster, "ClusterConfig", ClusterConfigWithFirewallLogs)  # the model its `parse` reads
    for env, profile in list(PROFILES.items()):
        fields = dataclasses.asdict(profile)
        monkeypatch.setitem(PROFILES, env, ProfileWithFirewallLogs(**fields, health_check_firewall_logs=env == "prod"))
    monkeypatch.setattr(cluster, "plan", plan_with_firewall_logs)
    monkeypatch.setattr(platform, "Cluster", ClusterWithFirewall)

    def firewall_of(environment: str, **cluster_keys):
        rec = run(make_config(tpu_serving__environment=environment, tpu_serving__cluster=cluster_keys))
        return rec, rec.one("gcp:compute/firewall:Firewall", "cluster-health-checks")

    rec, prod = firewall_of("prod")
    _, dev = firewall_of("dev")
    _, dev_logged = firewall_of("dev", healthCheckFirewallLogs=True)  # the key overrides the profile
    # the profile's default, resolved in the plan: logged in prod, not in dev
    assert prod.inputs.get("logConfig") == {"metadata": "INCLUDE_ALL_METADATA"}
    assert dev.inputs.get("logConfig") is None
    assert dev_logged.inputs.get("logConfig") == {"metadata": "INCLUDE_ALL_METADATA"}
    gke = rec.one("gcp:container/cluster:Cluster", "cluster-gke")
    assert prod.inputs["name"] == f"{gke.inputs['name']}-health-checks"
    assert prod.inputs["project"] == gke.inputs["project"]
    assert prod.parent == rec.one("tpu-serving:cluster:Cluster", "cluster").urn
    # the profile's protection, as the plan resolved it for the cluster itself (prod: protected; dev: not)
    assert prod.protect is gke.protect is True and dev.protect is False
    # on the network the cluster runs in (deps), which the stack creates
    assert rec.one("gcp:compute/network:Network", "network-vpc").urn in prod.dependencies


def test_an_unknown_cluster_key_is_refused_without_the_model_change(run):
    """The key exists only once the model has it: without the change above it is a typo, refused."""
    with pytest.raises(pulumi.RunError, match=r"cluster\.healthCheckFirewallLogs"):
        run(make_config(tpu_serving__cluster={"healthCheckFirewallLogs": True}))


# ---- a TPU generation added to the catalog alone -----------------------------------------------------------------


def test_a_tpu_generation_added_to_the_catalog_alone_is_planned_built_and_priced(run, monkeypatch):
    """One `Generation` entry in stacks/facts/catalog.py GENERATIONS (here a copy of v6e under a new name and node label)
    is accepted in tpuPools, planned, built and priced; no workload type runs on it until a pinned image's record
    (stacks/facts/versions.py IMAGE_RECORDS) says it serves it."""
    from stacks.facts import catalog

    new = dataclasses.replace(catalog.GENERATIONS["v6e"], name="v9x", accelerator="tpu-v9x-slice")
    monkeypatch.setitem(catalog.GENERATIONS, "v9x", new)
    pools = [{"name": "nine", "tpu": "v9x", "topology": "2x4", "zone": "us-east5-b"}]
    rec = run(make_config(tpu_serving__tpuPools=pools, tpu_serving__workloads=[]))
    (node_pool,) = [r for r in rec.of_type("gcp:container/nodePool:NodePool") if r.name.startswith("tpu-nine")]
    assert node_pool.inputs["nodeConfig"]["machineType"] == "ct6e-standard-8t"
    assert rec.outputs["tpuPools"]["nine"]["tpu"] == "v9x"
    priced = rec.outputs["estimatedHourlyCost"]["items"]["TPU pool nine"]
    assert priced["peak"] > 0 and priced["detail"].startswith("v9x 2x4")
    vllm = {"type": "vllm", "name": "v", "pool": "nine", "model": "google/gemma-2b"}
    with pytest.raises(pulumi.RunError, match=r"vllm cannot run on v9x \(pool 'nine'\).*none in this version"):
        run(make_config(tpu_serving__tpuPools=pools, tpu_serving__workloads=[vllm]))
