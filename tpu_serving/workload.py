"""One workload added to a cluster another stack runs: the platform stack's outputs (`PlatformOutputs`, from a
StackReference) and its config (what the workload is checked against: its TPU pools, cluster, bucket), then the
workload's namespace (Pod Security labels, default-deny NetworkPolicies) and the workload type's own component, as the
platform program builds them (components/platform.py build_platform): the same plan, the same component.

What the platform stack owns stays there: its node pools, add-ons, metrics adapter and gateway are not waited for
here (they exist already); the workload's Google identity and prefix-scoped grants on the platform's bucket are this
stack's (named after the platform stack, so its Kubernetes service account maps to them as the platform's would).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.namespaces import Namespaces, NamespacesDeps
from components.serving import ServingWorkload, WorkloadDeps
from stacks.config import NS, parse_stack_config
from stacks.pieces.rules import check_name
from stacks.problems import ConfigError, Problem
from stacks.pulumi_config import raw_config
from stacks.security import bucket_access
from stacks.workload_checks import WORKLOAD_NAME_MAX
from workloads import registry

# The platform stack's outputs a workload reads (components/platform.py build_stack exports them).
KUBECONFIG, BUCKET, CLUSTER = "kubeconfig", "bucketName", "clusterName"


@dataclass(frozen=True)
class PlatformOutputs:
    """What a workload needs of the platform stack that runs its cluster."""

    kubeconfig: pulumi.Input[str]
    """The platform stack's `kubeconfig` output: every Kubernetes object goes to its cluster through it."""
    bucket: pulumi.Input[str]
    """Its `bucketName` output: the workload's prefix-scoped grants are on this bucket."""
    cluster_name: pulumi.Input[str]
    """Its `clusterName` output."""

    @classmethod
    def of(cls, ref: pulumi.StackReference) -> PlatformOutputs:
        """From the platform stack's outputs (`pulumi.StackReference("<org>/tpu-serving/<stack>")`)."""
        return cls(ref.require_output(KUBECONFIG), ref.require_output(BUCKET), ref.require_output(CLUSTER))


@dataclass(frozen=True, kw_only=True)
class WorkloadArgs:
    """The workload to add: one `tpu-serving:workloads` entry, typed. Each field is checked when the object is made
    (every problem at once, a pulumi.RunError naming the field, its value and what is allowed); the type's own keys
    (`settings`) are checked by the type's schema when `add_workload` plans it, as the platform program checks them."""

    type: str
    """The workload type: one of the registered types (`tpu_serving.WORKLOAD_TYPES`: vllm, jetstream, saxml, ...)."""
    name: str
    """The workload's name (an RFC 1123 label): its Kubernetes objects and Google identity are named after it. None of
    the platform stack's own workloads may have it."""
    pool: str
    """The platform stack's `tpuPools` entry it runs on: topology, slices and chips come from it."""
    namespace: str | None = None
    """The Kubernetes namespace this program creates for it (an RFC 1123 label); default: `name`. None of the platform
    stack's own namespaces."""
    settings: Mapping[str, Any] = field(default_factory=dict)
    """The type's own keys, camelCase as a stack file writes them (docs/configuration.md, the type's section), e.g.
    vllm: `{"model": "Qwen/Qwen3-8B", "maxModelLen": 4096}`."""

    def __post_init__(self) -> None:
        problems = _args_problems(
            "WorkloadArgs",
            [
                ("type", self.type, registry.WORKLOAD_TYPES, "a registered workload type"),
                ("pool", self.pool, _NON_EMPTY, "the name of a tpuPools entry of the platform stack"),
                ("namespace", self.namespace, _LABEL, "an RFC 1123 label, or None (the workload's name)"),
            ],
        )
        # the platform's own rule for a workload's name (stacks/workload_checks.py: its objects and Google identity
        # are named after it), the same function
        found: list[Problem] = []
        if isinstance(self.name, str):
            check_name("WorkloadArgs.name", self.name, WORKLOAD_NAME_MAX, "workload name", found)
        else:
            found.append(Problem("WorkloadArgs.name", f"{self.name!r} is not a string; allowed: a workload name"))
        after_type = 1 if problems and problems[0].startswith("WorkloadArgs.type") else 0
        problems[after_type:after_type] = [str(p) for p in found]
        if not isinstance(self.settings, Mapping):
            problems.append(f"WorkloadArgs.settings: {self.settings!r} is not a mapping; allowed: the type's keys")
        else:
            for key in sorted(set(self.settings) & set(TYPED_KEYS)):
                problems.append(
                    f"WorkloadArgs.settings[{key!r}]: {self.settings[key]!r} repeats a field of WorkloadArgs; "
                    f"allowed: set WorkloadArgs.{key} instead"
                )
        if problems:
            raise pulumi.RunError("\n".join(problems))

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> WorkloadArgs:
        """From a `tpu-serving:workloads` entry as a stack file writes it (camelCase)."""
        # the values as the entry has them: __post_init__ checks each
        typed: dict[str, Any] = {k: entry.get(k) for k in TYPED_KEYS}
        return cls(**typed, settings={k: v for k, v in entry.items() if k not in TYPED_KEYS})

    def entry(self) -> dict[str, Any]:
        """The `tpu-serving:workloads` entry the platform program would read."""
        typed = {"type": self.type, "name": self.name, "pool": self.pool, "namespace": self.namespace}
        return {**{k: v for k, v in typed.items() if v is not None}, **self.settings}


TYPED_KEYS = ("type", "name", "pool", "namespace")


@dataclass(frozen=True, kw_only=True)
class PlatformArgs:
    """The platform stack whose cluster the workload joins."""

    stack: str
    """Its fully qualified name, `<organization>/<project>/<stack>` (what `pulumi.StackReference` takes)."""
    config: Mapping[str, Any]
    """Its `config:` map (the `config` of its Pulumi.<stack>.yaml): the workload is checked against it (its TPU pools,
    cluster, bucket, environment) as the platform program checks its own."""
    outputs: PlatformOutputs | None = None
    """Its outputs; default: read through `pulumi.StackReference(stack)` when the workload is added."""

    def __post_init__(self) -> None:
        problems = _args_problems(
            "PlatformArgs", [("stack", self.stack, _QUALIFIED, "<organization>/<project>/<stack>")]
        )
        if not isinstance(self.config, Mapping):
            problems.append(
                f"PlatformArgs.config: {type(self.config).__name__} is not a mapping; allowed: the `config:` map "
                "of the platform's stack file"
            )
        if problems:
            raise pulumi.RunError("\n".join(problems))

    @property
    def project(self) -> str:
        return self.stack.split("/")[1]

    @property
    def stack_name(self) -> str:
        return self.stack.split("/")[2]


_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_NON_EMPTY = re.compile(r"\S.*", re.DOTALL)
_QUALIFIED = re.compile(r"[^/\s]+/[^/\s]+/[^/\s]+")


def _args_problems(cls: str, fields: list[tuple[str, Any, Any, str]]) -> list[str]:
    """`<cls>.<field>: <value> ...; allowed: <what>` for each field whose value is not allowed (None allowed only
    where the field has a default of None: namespace)."""
    out = []
    for name, value, allowed, what in fields:
        if value is None and name == "namespace":
            continue
        if isinstance(allowed, re.Pattern):
            ok = isinstance(value, str) and allowed.fullmatch(value) is not None
        else:
            ok = isinstance(value, str) and value in allowed
            what = f"{what} ({', '.join(sorted(allowed))})"
        if not ok:
            out.append(f"{cls}.{name}: {value!r} is not allowed; allowed: {what}")
    return out


@dataclass
class AddedWorkload:
    namespaces: Namespaces
    workload: ServingWorkload


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _own_workloads(platform_config: Mapping[str, Any]) -> list[Any]:
    """The platform stack's own `tpu-serving:workloads` entries."""
    own = platform_config.get(f"{NS}:workloads") or []
    own = json.loads(own) if isinstance(own, str) else own
    return list(own) if isinstance(own, list) else []


def _platform_owned(platform_config: Mapping[str, Any], workload: Mapping[str, Any]) -> list[str]:
    """The added workload's name and namespace must be none of the platform stack's own workloads' (a namespace
    defaults to the workload's name): server-side apply would adopt the platform's Namespace and objects, and
    destroying this program's stack would then delete them and the platform's workloads in them."""
    own = _own_workloads(platform_config)
    names = {w.get("name") for w in own if isinstance(w, Mapping)}
    spaces = {w.get("namespace") or w.get("name") for w in own if isinstance(w, Mapping)} - {"default"}
    name = workload.get("name")
    space = workload.get("namespace") or name
    out = []
    if name in names:
        out.append(
            f"WorkloadArgs.name: {name!r} is a workload of the platform stack; allowed: a name none of its "
            f"workloads has ({', '.join(sorted(str(n) for n in names))})"
        )
    if space in spaces:
        out.append(
            f"WorkloadArgs.namespace: {space!r} is a namespace the platform stack owns; allowed: a namespace of "
            "this program's own (set `namespace`)"
        )
    return out


def _unknown_pool(platform_config: Mapping[str, Any], pool: str) -> list[str]:
    pools = platform_config.get(f"{NS}:tpuPools") or []
    pools = json.loads(pools) if isinstance(pools, str) else pools
    names = [p.get("name") for p in pools if isinstance(p, Mapping)] if isinstance(pools, list) else []
    if pool in names:
        return []
    return [
        f"WorkloadArgs.pool: {pool!r} is not a tpuPools entry of the platform stack; allowed: "
        f"{', '.join(str(n) for n in names) or 'none (the platform has no TPU pools)'}"
    ]


def _as_args(problem: Problem, index: int) -> str:
    """A problem of the added workload (`tpu-serving:workloads[<index>]...`) at the input that set it: a typed field
    (`WorkloadArgs.pool`) or a type's key (`WorkloadArgs.settings['maxModelLen']`); any other at its stack key (the
    platform's config)."""
    prefix = f"{NS}:workloads[{index}]"
    if problem.path != prefix and not problem.path.startswith(prefix + "."):
        return f"{problem} (the platform stack's config)"
    rest = problem.path[len(prefix) + 1 :]
    head = re.split(r"[.\[]", rest, maxsplit=1)[0]
    if not head:
        return f"WorkloadArgs: {problem.message}"
    where = f"WorkloadArgs.{rest}" if head in TYPED_KEYS else f"WorkloadArgs.settings[{head!r}]{rest[len(head) :]}"
    return str(Problem(where, problem.message))


def _check_bucket(output: Any, configured: str, stack: str) -> None:
    """A platform whose bucketName output is not the bucket its config names: warned where the user looks (the
    grants stay on the configured bucket, their conditions naming the same one: never raised inside an apply, where
    it would surface after resources are registered, as an unretrieved future)."""
    if isinstance(output, str) and output != configured:
        pulumi.log.warn(
            f"PlatformArgs.config: names the bucket {configured!r} but the platform stack {stack}'s bucketName output "
            f"is {output!r}: the workload's grants are on {configured!r}; allowed: the config of the stack file that "
            "stack runs with"
        )


def add_workload(workload: WorkloadArgs, *, platform: PlatformArgs) -> AddedWorkload:
    """Add `workload` to the cluster of the `platform` stack.

    The workload is validated against the platform stack's config as the platform program would validate it (pools,
    capacity counting the platform's own workloads, namespaces), every problem at once (a pulumi.RunError naming each
    key). The platform's own workloads are not this program's: only `workload` and its namespace are planned here."""
    platform_config = platform.config
    entry = workload.entry()
    problems = _platform_owned(platform_config, entry)
    config = {k: _text(v) for k, v in platform_config.items() if not (isinstance(v, dict) and "secure" in v)}
    # parsed with the platform's own workloads (they hold their pools' nodes: the capacity check counts them, as the
    # platform program would with this workload added), the added one last (the platform's keep their local ports)
    config[f"{NS}:workloads"] = json.dumps([*_own_workloads(platform_config), entry])
    raw = raw_config(lambda key: config.get(f"{NS}:{key}"))
    try:
        cfg = parse_stack_config(
            raw,
            stack=platform.stack_name,
            pulumi_project=platform.project,
            gcp_project=config.get("gcp:project"),
            region=config.get("gcp:region"),
            workload_types=registry.WORKLOAD_TYPES,
        )
    except ConfigError as err:  # what the platform program finds, named as this program's inputs name it
        found = [_as_args(p, len(_own_workloads(platform_config))) for p in err.problems]
        # a shape problem of the settings stops the platform's parse before its rules: the pool is checked here too
        if not any(line.startswith("WorkloadArgs.pool:") for line in found):
            problems.extend(_unknown_pool(platform_config, workload.pool))
        problems.extend(found)
    if problems:  # every problem at once, before anything is registered (the StackReference too)
        raise pulumi.RunError("\n".join(problems))
    outputs = platform.outputs or PlatformOutputs.of(pulumi.StackReference(platform.stack))
    # only the added workload is this program's: its plan, and its namespace's
    [plan] = [w for w in cfg.workloads if w.name == entry["name"]]
    ns_plan = cfg.namespaces_plan
    ns_plan = dataclasses.replace(
        ns_plan,
        levels={k: v for k, v in ns_plan.levels.items() if k == plan.namespace},
        network_policies={k: v for k, v in ns_plan.network_policies.items() if k == plan.namespace},
    )
    provider = k8s.Provider("platform-cluster", kubeconfig=outputs.kubeconfig, enable_server_side_apply=True)
    namespaces = Namespaces("namespaces", plan=ns_plan, deps=NamespacesDeps(provider=provider))
    # the grants' bucket and their conditions' bucket are one value, the plan's (the bucket the platform's config
    # names): no mismatch between them is possible; an output naming another bucket is warned about, never raised
    pulumi.Output.from_input(outputs.bucket).apply(lambda b: _check_bucket(b, plan.bucket, platform.stack))
    deps = WorkloadDeps(
        project=cfg.gcp_project,
        stack=cfg.stack,
        bucket=pulumi.Output.from_input(plan.bucket),
        # the platform stack's custom role holding storage.buckets.get (components/bucket.py): named after its bucket
        bucket_get_role=pulumi.Output.from_input(
            f"projects/{cfg.gcp_project}/roles/{bucket_access.bucket_get_role_id(plan.bucket)}"
        ),
        provider=provider,
        namespace=namespaces.by_name.get(plan.namespace),
        node_pools=(),
        addon=lambda key: [],
        adapter=(),
        node_service_account=None,
        cluster_name=pulumi.Output.from_input(outputs.cluster_name),
        location=cfg.cluster_location,
        labels=cfg.labels,
        local_ports=cfg.local_ports[plan.name],
        legacy_types=cfg.workload_types.legacy_components,
        # a platform stack on a local cluster (tpu-serving:local, docs/local.md): Google Cloud stood in there too
        cloud=cfg.local is None,
    )
    component = cfg.workload_types[plan.workload.type].component(f"workload-{plan.name}", plan=plan, deps=deps)
    return AddedWorkload(namespaces=namespaces, workload=component)
