"""What a piece's one visit reads and where it files what it finds (stacks/config.py visits each piece once).

A piece module has one entry point, `visit(ctx, found)`: it runs its rules (its own, and those between pieces whose
inputs the pieces visited before it resolved), resolves its plan (None while anything has a problem) and returns it.
`ctx` holds the invocation, every key as its model parsed it (`Sections`), what the pieces visited so far resolved
for the others (the region, the profile, the cluster's name, the pools' and the workloads' plans, ...) and their
plans by piece name; `found` files each problem and warning under the slot it is reported in, so the order a user
reads them in does not depend on the order the pieces are visited in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, TypeVar

from stacks.addons import AddonsConfig
from stacks.facts.images import ImageMirror
from stacks.model.config_model import (
    AlertsConfig,
    BucketConfig,
    ClusterConfig,
    CostConfig,
    GatewayConfig,
    MonitoringConfig,
    TpuPoolConfig,
    WorkloadConfig,
)
from stacks.model.local_target import LocalConfig
from stacks.model.profiles import Profile
from stacks.problems import Problem
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.workload_plan import WorkloadPlan
from stacks.serving.workload_type import WorkloadRegistry

T = TypeVar("T")


@dataclass(frozen=True)
class Sections:
    """The stack config's keys parsed by their models, in one pass (None: the key has problems, filed already)."""

    environment: Any  # as given (a piece's rule reports it when it is not a profile name)
    cluster: ClusterConfig | None
    bucket: BucketConfig | None
    pools: list[TpuPoolConfig | None]
    addons: AddonsConfig | None
    monitoring: MonitoringConfig | None
    gateway: GatewayConfig | None
    alerts: AlertsConfig | None
    cost: CostConfig | None
    workloads: list[tuple[int, WorkloadConfig]]
    paused: bool
    decommission: bool
    local: LocalConfig | None = None
    more: Mapping[str, Any] = field(default_factory=dict)
    """What the pieces the fields above do not name parsed (a piece a test or a later change adds), by name."""

    @classmethod
    def of(cls, parsed: Mapping[str, Any]) -> Sections:
        """The sections from what every piece's `parse` returned: each under its field, any other in `more`."""
        named = {f.name for f in fields(cls)} - {"more"}
        return cls(
            **{k: v for k, v in parsed.items() if k in named},
            more={k: v for k, v in parsed.items() if k not in named},
        )


@dataclass(frozen=True)
class Invocation:
    """What comes from outside the `tpu-serving:` keys: the stack, the gcp: settings, how the token is set."""

    stack: str
    pulumi_project: str
    gcp_project: str | None
    region: str | None  # as given (the environment piece checks it)
    extra_keys: tuple[str, ...] = ()
    known_keys: tuple[str, ...] = ()
    hf_token: str | None = None
    refuse_placeholder: bool = False


@dataclass
class Context:
    """The stack config as the pieces visited so far have resolved it; each field below `sections` is written once,
    by the piece named beside it, and read by the pieces visited after it."""

    invocation: Invocation
    raw: Mapping[str, Any]
    sections: Sections
    workload_types: WorkloadRegistry
    from_zero: Callable[[Any], float | None] | None = None
    """A workload plan's time-to-serve wait from zero (stacks/reports/time_to_serve.py, above the pieces)."""
    server_await: Callable[[Any], float] | None = None
    """How long `pulumi up` waits for a workload plan's new server (time_to_serve.server_await)."""
    chip_price: Callable[[WorkloadPlan], float | None] = lambda _: None
    """The list price of a chip-hour of a workload's pool (stacks/reports/cost.py, above the pieces)."""
    region: str | None = None  # environment: gcp:region, when it is a region
    profile: Profile | None = None  # environment: the profile, protection lifted when decommissioning
    protect: bool = False  # environment: the profile's Pulumi protection
    cluster_name: str | None = None  # cluster
    labels: dict[str, str] | None = None  # cluster: the stack's labels, cluster.labels included
    kubernetes_minor: str | None = None  # cluster
    image_mirror: ImageMirror | None = None  # cluster: cluster.images.mirror
    bucket_name: str | None = None  # bucket (None while gcp:project is missing)
    pools: list[PoolPlan] = field(default_factory=list)  # tpuPools: the plans of the pools without problems
    workloads: list[WorkloadPlan] = field(default_factory=list)  # workloads: the plans of those without problems
    proxy_subnet_cidr: str | None = None  # gateway: the proxy-only subnet's range, when the stack creates it
    plans: dict[str, object] = field(default_factory=dict)
    """Each visited piece's plan by its NAME (the orchestrator files what `visit` returns)."""

    def plan(self, piece: str, kind: type[T]) -> T | None:
        """The plan of a piece visited before (None: not resolved, a problem is filed)."""
        found = self.plans.get(piece)
        assert found is None or isinstance(found, kind), (piece, found)
        return found


class Findings:
    """Every problem and warning of one stack config, each filed under a slot; read back in the order of the slots
    (an unknown slot is a KeyError: a piece files only where the orchestrator reports)."""

    def __init__(self, problem_slots: Sequence[str], warning_slots: Sequence[str]):
        self._problems: dict[str, list[Problem]] = {slot: [] for slot in problem_slots}
        self._warnings: dict[str, list[str]] = {slot: [] for slot in warning_slots}

    def problems_at(self, slot: str) -> list[Problem]:
        """The list of the problems reported at `slot` (to append to)."""
        return self._problems[slot]

    def warnings_at(self, slot: str) -> list[str]:
        return self._warnings[slot]

    @property
    def clean(self) -> bool:
        """No problem filed so far: a piece resolves its plan only then."""
        return not any(self._problems.values())

    def problems(self) -> list[Problem]:
        return [p for found in self._problems.values() for p in found]

    def warnings(self) -> list[str]:
        return [w for found in self._warnings.values() for w in found]


class Piece(Protocol):
    """A piece of the stack config (a module of stacks/pieces/, or one a test adds): its name, the key of its plan
    in `Context.plans`, and its one visit. A piece that owns `tpu-serving:` keys also has `KEYS` (they are known keys,
    each reported at the slot of its name) and `parse(raw, workload_types, found) -> {section name: parsed value}`
    (ParsingPiece): the orchestrator's parse pass calls each, before any visit."""

    NAME: str

    def visit(self, ctx: Context, found: Findings) -> object: ...


class ParsingPiece(Piece, Protocol):
    """A piece with keys of its own, which it parses (see Piece)."""

    KEYS: tuple[str, ...]

    def parse(self, raw: Mapping[str, Any], types: WorkloadRegistry, found: Findings) -> dict[str, Any]: ...


def keys_of(piece: Piece) -> tuple[str, ...]:
    """The `tpu-serving:` keys a piece parses (none for a piece without `parse`)."""
    return tuple(getattr(piece, "KEYS", ()))
