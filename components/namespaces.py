"""The namespaces the stack's workloads live in, created once each (two workloads may share one), each with the
Pod Security Admission labels of the strictest level its pods pass and its ingress NetworkPolicies, as the
namespaces piece plans them (stacks/pieces/namespaces.py).

Namespaces wait for `deps.after` (the system pool): every namespaced object of a workload waits for its namespace,
so none is applied before a node can serve the admission webhooks it goes through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from stacks import naming
from stacks.pieces.namespaces import NamespacesPlan
from stacks.security import pod_security


@dataclass(frozen=True)
class NamespacesDeps:
    """What the namespaces are created in and wait for: the cluster's Kubernetes provider, `after` (the system
    pool), and `admission`: namespace -> the add-ons whose webhooks admit its objects."""

    provider: k8s.Provider
    after: Sequence[pulumi.Resource] = ()
    admission: Callable[[str], Sequence[pulumi.Resource]] | None = None


class Namespaces(pulumi.ComponentResource):
    by_name: dict[str, k8s.core.v1.Namespace]

    def __init__(
        self,
        name: str,
        *,
        plan: NamespacesPlan,
        deps: NamespacesDeps,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:workloads:Namespaces", name, None, opts)
        provider, admission = deps.provider, deps.admission
        self.by_name = {
            ns: k8s.core.v1.Namespace(
                f"{name}-{ns}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=ns,
                    labels={
                        **naming.MANAGED_BY_LABELS,
                        **pod_security.namespace_labels(level, plan.kubernetes_minor),
                    },
                ),
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[*deps.after, *(admission(ns) if admission else [])]
                ),
            )
            for ns, level in sorted(plan.levels.items())
        }
        for ns, policies in sorted(plan.network_policies.items()):
            for policy in policies:
                meta = policy["metadata"]
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-{ns}-{meta['name']}",
                    metadata=meta,
                    spec=policy["spec"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.by_name[ns]]),
                )
        self.register_outputs({"namespaces": dict(sorted(plan.levels.items()))})
