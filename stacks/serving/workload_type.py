"""What a workload type is to the rest of the stack: one registry entry (`workloads/registry.py`) that config
parsing, the checks every workload shares, the composition, the cost estimate and the JSON Schema loop over.

The entries themselves live with their types (`workloads/<type>/__init__.py`); this module only says their shape,
so `stacks/` never imports `workloads/` (the registry is handed to `stacks.config.parse_stack_config`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, get_args

from stacks.facts.images import ImageMirror
from stacks.model.config_model import WorkloadConfig
from stacks.problems import Problem
from stacks.serving.pool_plan import PoolPlan

P = TypeVar("P")


@dataclass(frozen=True)
class WorkloadContext:
    """What a workload's check and plan may need from the rest of the stack config."""

    adapter: str
    min_master_version: str | None
    scrape_interval: str
    bucket: str = ""  # the stack bucket's name ("" while the bucket config itself has problems)
    paused: bool = False
    cluster_name: str = ""
    identity_suffix: str = ""  # naming.stack_identity_suffix: the workload's identity is unique per stack
    lws_enabled: bool = True
    hf_token: bool = False
    environment: str = "dev"
    image_mirror: ImageMirror | None = None  # cluster.images.mirror: the stack's remote repositories
    project: str = ""  # gcp:project (KEDA's triggers query its Managed Prometheus API)
    gateway_enabled: bool = False  # tpu-serving:gateway.enabled
    # A plan's time-to-serve wait from zero (stacks.reports.time_to_serve.from_zero with the stack's registry), handed
    # down by the orchestrator (stacks/config.py), which sits above the estimate: the plans read it through it
    # (WorkloadPlan.from_zero_s); None: nothing estimates it.
    from_zero: Callable[[Any], float | None] | None = None
    # How long `pulumi up` waits for a plan's new server (stacks.reports.time_to_serve.server_await), handed down the
    # same way (WorkloadPlan.server_await_minutes); None: nothing estimates it.
    server_await: Callable[[Any], float] | None = None


@dataclass(frozen=True)
class SmokeProbe:
    """One real request that shows a workload serves (`make smoke`, scripts/smoke.py): sent through
    `kubectl port-forward svc/<service>` to a free local port."""

    namespace: str
    service: str
    remote_port: int
    method: str
    path: str  # without its leading "/"
    body: dict[str, Any] | None
    expect_key: str | None  # a key the JSON answer must have; None: any 2xx answer with a body


@dataclass(frozen=True)
class Resolved(Generic[P]):
    """A workload checked against its pool: either its plan or its problems (warnings either way)."""

    plan: P | None
    problems: tuple[Problem, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, plan: P | None, problems: Iterable[Problem], warnings: Iterable[str]) -> Resolved[P]:
        """The plan only when nothing is wrong: a plan is never used next to a problem."""
        found = tuple(problems)
        return cls(None if found else plan, found, tuple(warnings))


# (key path of the workload, its parsed config, its pool (None: the pool is missing or has problems of its own),
#  its namespace, the stack's context) -> its plan or its problems
Resolve = Callable[[str, Any, PoolPlan | None, str, WorkloadContext], Resolved[Any]]
# The same, written as a check that appends to (problems, warnings) and returns the plan it built, if any.
Check = Callable[[str, Any, PoolPlan | None, str, WorkloadContext, list[Problem], list[str]], Any]


def resolver(check: Check) -> Resolve:
    """A type's Resolve from its check: the plan it built only when it found no problem."""

    def resolve(path: str, workload: Any, pool: PoolPlan | None, namespace: str, ctx: WorkloadContext) -> Resolved:
        problems: list[Problem] = []
        warnings: list[str] = []
        plan = check(path, workload, pool, namespace, ctx, problems, warnings)
        return Resolved.of(plan, problems, warnings)

    return resolve


@dataclass(frozen=True)
class WorkloadType:
    """Everything the stack knows about one workload type."""

    config: type[WorkloadConfig]
    """Its config schema: a pydantic model whose `type` is `Literal["<the type's name>"]`."""
    resolve: Resolve
    """Its own rules, then its plan: the manifests, grants and commands it becomes."""
    component: Callable[..., Any]
    """Its Pulumi component, called as (resource name, *, plan, deps: components.serving.WorkloadDeps)."""
    addon: str | None = None
    """The add-on its custom resources need (a key under tpu-serving:addons), if any."""
    exclusive_pool: bool = False
    """Its pods run on the host network as their node's identity: its TPU pool serves it alone."""
    tpu_images: tuple[str, ...] = ()
    """The pinned images (stacks/facts/versions.py keys) its TPU pods run by default: the generations it serves are those
    every one of them is recorded to serve."""
    checks_generation: bool = False
    """Its own rules check the pool's TPU generation against the images it runs (versions.image_gaps, at its own
    key paths); the shared check against `tpu_images` is for the types that do not."""
    no_compute_class: str | None = None
    """Why it cannot run on a pool whose capacity is a list (ComputeClass), if it cannot."""
    added_node_pools: Callable[[Any], tuple[str, ...]] = field(default=lambda workload: ())
    """Names of the node pools it adds next to its TPU pool (checked against every other node pool)."""
    gateway_served: bool = False
    """Its plans offer the Inference Gateway a backend (WorkloadPlan.gateway_backend) unless a workload opts out: the
    messages that say which types the gateway serves name the types that declare it (WorkloadRegistry.gateway_types)."""
    slo_series: bool = False
    """Its server exports every series the SLOs read (WorkloadPlan.signals: time to first token, time per output
    token, finished requests; stacks/pieces/alerts.py SLO_SIGNALS): the SLO refusal names the types that declare it
    (WorkloadRegistry.slo_types)."""
    smoke_probe: Callable[[Any], SmokeProbe | None] = field(default=lambda plan: None)
    """The request `make smoke` sends one of its plans to show it serves (its `commands.py`); None: it sends none,
    for the reason `no_smoke_probe` gives."""
    no_smoke_probe: str = ""
    """Why `make smoke` sends a plan of it no request when `smoke_probe` returns None (a batch job, nothing
    published to ask for); the smoke test reports it beside the workload."""
    legacy_component: str | None = None
    """The component type token it had when each type had its own (until issue 36), if it had one: every workload's
    component is aliased to every such token (components.serving.ServingWorkload), so a stack created then keeps its
    resources. Fixed history: a type added later never had one."""

    @property
    def name(self) -> str:
        """The value of `type:` in a workloads entry, as its config model says (written once, there)."""
        (name,) = get_args(self.config.model_fields["type"].annotation)
        return name


def either(names: Sequence[str]) -> str:
    """Type names in a message: `vllm`, `vllm or relay`, `a, b or c` (`no` when there is none)."""
    if not names:
        return "no"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


class WorkloadRegistry(Mapping[str, WorkloadType]):
    """The workload types a program knows, by `type:` value, in the order they are listed."""

    def __init__(self, *types: WorkloadType):
        self._types = {t.name: t for t in types}
        if len(self._types) != len(types):
            raise ValueError(f"workload types named twice: {[t.name for t in types]}")

    def __getitem__(self, name: str) -> WorkloadType:
        return self._types[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    @property
    def gateway_types(self) -> tuple[str, ...]:
        """The types the Inference Gateway serves (WorkloadType.gateway_served), in registry order."""
        return tuple(t.name for t in self._types.values() if t.gateway_served)

    @property
    def rollout_types(self) -> tuple[str, ...]:
        """The types a workload of which may have a `rollout` (their config model has the key), in registry order:
        a release train's two server sets are InferencePools behind the gateway's HTTPRoute, so each is a
        gateway type too (a test holds every registry entry to it)."""
        return tuple(t.name for t in self._types.values() if "rollout" in t.config.model_fields)

    @property
    def slo_types(self) -> tuple[str, ...]:
        """The types whose server exports the SLOs' series (WorkloadType.slo_series), in registry order."""
        return tuple(t.name for t in self._types.values() if t.slo_series)

    @property
    def legacy_components(self) -> tuple[str, ...]:
        """The component type tokens its types once had (WorkloadType.legacy_component), in registry order."""
        return tuple(t.legacy_component for t in self._types.values() if t.legacy_component)
