"""Register a Kubernetes manifest built as data by `stacks/` as its typed pulumi-kubernetes resource.

Typed resources keep the provider's per-kind behaviour (await logic, the type token `kubernetes:<group>/<version>:
<Kind>` a preview shows); a kind not in the table is a custom resource (its CRD's group and version).
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from stacks.facts import immutable_fields

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


def snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def register_manifest(name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """`manifest` (camelCase: apiVersion, kind, metadata and the kind's top-level fields) as a resource `name`."""
    fields = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    cls = KINDS.get((manifest["apiVersion"], manifest["kind"]))
    if cls is None:
        return custom_resource(name, manifest["apiVersion"], manifest["kind"], opts, **fields)
    # the typed constructors take the top-level fields in snake_case (roleRef -> role_ref)
    return cls(name, opts=opts, **{snake(k): v for k, v in fields.items()})


def custom_resource(
    name: str, api_version: str, kind: str, opts: pulumi.ResourceOptions, **fields: Any
) -> k8s.apiextensions.CustomResource:
    """Every custom resource the stack registers: replaced, never updated, when a field its API refuses to change
    changes (stacks/facts/immutable_fields.py, derived from the CRDs' transition rules and the webhooks' immutable fields),
    on top of any `replaceOnChanges` of `opts`."""
    immutable = immutable_fields.replace_on_changes(api_version, kind)
    if immutable:
        own = list(opts.replace_on_changes or [])
        # deleted first: a replacement the engine makes for replaceOnChanges is created before the old object is
        # deleted unless deleteBeforeReplace (the provider asks for it only for its own forceNew fields,
        # pulumi/pulumi-kubernetes provider/pkg/provider/provider.go Diff), and the same name's create meets the old
        # object: a server-side apply field conflict (the LWS subGroupPolicy change on a local cluster,
        # e2e/transitions.py lws-subgroup)
        opts = pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(
                replace_on_changes=[p for p in immutable if p not in own], delete_before_replace=True
            ),
        )
    return k8s.apiextensions.CustomResource(name, api_version=api_version, kind=kind, opts=opts, **fields)
