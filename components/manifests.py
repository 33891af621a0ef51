"""Register a Kubernetes manifest built as data by `stacks/` as its typed pulumi-kubernetes resource.

Typed resources keep the provider's per-kind behaviour (await logic, the type token `kubernetes:<group>/<version>:
<Kind>` a preview shows); a kind not in the table is a custom resource (its CRD's group and version).
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

KINDS: dict[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("apiregistration.k8s.io/v1", "APIService"): k8s.apiregistration.v1.APIService,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def register_manifest(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """`manifest` (camelCase: apiVersion, kind, metadata and the kind's top-level fields) as a resource `name`."""
    fields = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    cls = KINDS.get((manifest["apiVersion"], manifest["kind"]))
    if cls is None:
        return k8s.apiextensions.CustomResource(
            name, api_version=manifest["apiVersion"], kind=manifest["kind"], opts=opts, **fields
        )
    # the typed constructors take the top-level fields in snake_case (roleRef -> role_ref)
    return cls(name, opts=opts, **{_snake(k): v for k, v in fields.items()})
