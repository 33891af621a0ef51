"""The namespaces the stack's workloads live in, created once each (two workloads may share one), each with the
Pod Security Admission labels of the strictest level its pods pass (stacks/pod_security.py).

Namespaces wait for `after` (the system pool): every namespaced object of a workload waits for its namespace,
so none is applied before a node can serve the admission webhooks it goes through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks import naming, pod_security


class Namespaces(pulumi.ComponentResource):
    by_name: dict[str, k8s.core.v1.Namespace]

    def __init__(
        self,
        name: str,
        *,
        levels: Mapping[str, str],
        kubernetes_minor: str,
        provider: k8s.Provider,
        after: Sequence[pulumi.Resource] = (),
        network_policies: Mapping[str, Sequence[dict[str, Any]]] | None = None,
        admission: Callable[[str], Sequence[pulumi.Resource]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`levels`: namespace -> the Pod Security level it enforces (warn and audit are always restricted).
        `network_policies`: namespace -> its ingress NetworkPolicies (stacks/network_policy.py).
        `admission`: namespace -> what else it waits for (the add-ons whose webhooks admit its objects)."""
        super().__init__("tpu-serving:workloads:Namespaces", name, None, opts)
        self.by_name = {
            ns: k8s.core.v1.Namespace(
                f"{name}-{ns}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=ns,
                    labels={**naming.MANAGED_BY_LABELS, **pod_security.namespace_labels(level, kubernetes_minor)},
                ),
                opts=pulumi.ResourceOptions(
                    parent=self, provider=provider, depends_on=[*after, *(admission(ns) if admission else [])]
                ),
            )
            for ns, level in sorted(levels.items())
        }
        for ns, policies in sorted((network_policies or {}).items()):
            for policy in policies:
                meta = policy["metadata"]
                k8s.networking.v1.NetworkPolicy(
                    f"{name}-{ns}-{meta['name']}",
                    metadata=meta,
                    spec=policy["spec"],
                    opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.by_name[ns]]),
                )
        self.register_outputs({"namespaces": dict(sorted(levels.items()))})
