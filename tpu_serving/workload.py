"""One workload added to a cluster another stack runs: the platform stack's outputs (`PlatformOutputs`, from a
StackReference) and its config (what the workload is checked against: its TPU pools, cluster, bucket), then the
workload's namespace (Pod Security labels, default-deny NetworkPolicies) and the workload type's own component, as the
platform program builds them (components/platform.py build_platform): the same plan, the same component.

What the platform stack owns stays there: its node pools, add-ons, metrics adapter and gateway are not waited for
here (they exist already); the workload's Google identity and prefix-scoped grants on the platform's bucket are this
stack's (named after the platform stack, so its Kubernetes service account maps to them as the platform's would).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.namespaces import Namespaces, NamespacesDeps
from components.serving import ServingWorkload, WorkloadDeps
from stacks.config import NS, parse_stack_config
from stacks.problems import ConfigError
from stacks.pulumi_config import raw_config
from stacks.security import bucket_access
from workloads import registry

# The platform stack's outputs a workload reads (components/platform.py build_stack exports them).
KUBECONFIG, BUCKET, CLUSTER = "kubeconfig", "bucketName", "clusterName"


@dataclass(frozen=True)
class PlatformOutputs:
    """What a workload needs of the platform stack that runs its cluster."""

    kubeconfig: pulumi.Input[str]
    bucket: pulumi.Input[str]
    cluster_name: pulumi.Input[str]

    @classmethod
    def of(cls, ref: pulumi.StackReference) -> PlatformOutputs:
        """From the platform stack's outputs (`pulumi.StackReference("<org>/tpu-serving/<stack>")`)."""
        return cls(ref.require_output(KUBECONFIG), ref.require_output(BUCKET), ref.require_output(CLUSTER))


@dataclass
class AddedWorkload:
    namespaces: Namespaces
    workload: ServingWorkload


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _platform_owned(platform_config: Mapping[str, Any], workload: Mapping[str, Any]) -> list[str]:
    """The added workload's name and namespace must be none of the platform stack's own workloads' (a namespace
    defaults to the workload's name): server-side apply would adopt the platform's Namespace and objects, and
    destroying this program's stack would then delete them and the platform's workloads in them."""
    own = platform_config.get(f"{NS}:workloads") or []
    own = json.loads(own) if isinstance(own, str) else own
    names = {w.get("name") for w in own if isinstance(w, Mapping)}
    spaces = {w.get("namespace") or w.get("name") for w in own if isinstance(w, Mapping)} - {"default"}
    name = workload.get("name")
    space = workload.get("namespace") or name
    out = []
    if name in names:
        out.append(
            f"{NS}:workloads[0].name: {name!r} is a workload of the platform stack; allowed: a name none of its "
            f"workloads has ({', '.join(sorted(str(n) for n in names))})"
        )
    if space in spaces:
        out.append(
            f"{NS}:workloads[0].namespace: {space!r} is a namespace the platform stack owns; allowed: a namespace of "
            "this program's own (set `namespace`)"
        )
    return out


def add_workload(
    workload: Mapping[str, Any],
    *,
    platform: PlatformOutputs,
    platform_config: Mapping[str, Any],
    platform_stack: str,
    platform_project: str = "tpu-serving",
) -> AddedWorkload:
    """Add `workload` (one `tpu-serving:workloads` entry, camelCase as in a stack file) to the platform stack's cluster.

    `platform_config`: the platform stack's `config:` map (its Pulumi.<stack>.yaml): the workload is validated
    against it as the platform program would validate it (pools, capacity, namespaces), every problem at once
    (pulumi.RunError via ConfigError). Its own workloads are not this program's: only `workload` is planned here."""
    taken = _platform_owned(platform_config, workload)
    if taken:
        raise pulumi.RunError("\n".join(taken))
    config = {k: _text(v) for k, v in platform_config.items() if not (isinstance(v, dict) and "secure" in v)}
    config[f"{NS}:workloads"] = json.dumps([dict(workload)])
    raw = raw_config(lambda key: config.get(f"{NS}:{key}"))
    try:
        cfg = parse_stack_config(
            raw,
            stack=platform_stack,
            pulumi_project=platform_project,
            gcp_project=config.get("gcp:project"),
            region=config.get("gcp:region"),
            workload_types=registry.WORKLOAD_TYPES,
        )
    except ConfigError as err:  # as the platform program says it (stacks/pulumi_config.py load_stack_config)
        raise pulumi.RunError(str(err)) from None
    [plan] = cfg.workloads
    provider = k8s.Provider("platform-cluster", kubeconfig=platform.kubeconfig, enable_server_side_apply=True)
    namespaces = Namespaces("namespaces", plan=cfg.namespaces_plan, deps=NamespacesDeps(provider=provider))
    bucket = pulumi.Output.from_input(platform.bucket)
    deps = WorkloadDeps(
        project=cfg.gcp_project,
        stack=cfg.stack,
        bucket=bucket,
        # the platform stack's custom role holding storage.buckets.get (components/bucket.py): named after its bucket
        bucket_get_role=bucket.apply(
            lambda b: f"projects/{cfg.gcp_project}/roles/{bucket_access.bucket_get_role_id(b)}"
        ),
        provider=provider,
        namespace=namespaces.by_name.get(plan.namespace),
        node_pools=(),
        addon=lambda key: [],
        adapter=(),
        node_service_account=None,
        cluster_name=pulumi.Output.from_input(platform.cluster_name),
        location=cfg.cluster_location,
        labels=cfg.labels,
        local_ports=cfg.local_ports[plan.name],
        legacy_types=cfg.workload_types.legacy_components,
        # a platform stack on a local cluster (tpu-serving:local, docs/local.md): Google Cloud stood in there too
        cloud=cfg.local is None,
    )
    component = cfg.workload_types[plan.workload.type].component(f"workload-{plan.name}", plan=plan, deps=deps)
    return AddedWorkload(namespaces=namespaces, workload=component)
