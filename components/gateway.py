"""The stack's GKE Inference Gateway: its namespace, the InferencePool CRD at the pinned version, and one Gateway.

The objects are built by stacks/gateway.py; this component registers them in order: the Gateway waits for the
cluster's system pool (GKE installs the Gateway API CRDs and GatewayClasses with the cluster) and for the
proxy-only subnet its regional load balancer takes proxy addresses from.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from stacks import gateway, naming, pod_security
from stacks.versions import INFERENCE_POOL_CRD


class InferenceGateway(pulumi.ComponentResource):
    gateway: k8s.apiextensions.CustomResource
    inference_pool_crd: k8s.yaml.v2.ConfigFile
    """What an InferencePool must depend on."""

    def __init__(
        self,
        name: str,
        *,
        exposure: str,
        route_namespaces: list[str],
        kubernetes_minor: str,
        provider: k8s.Provider,
        after: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`after`: the system pool and the proxy-only subnet (when the stack creates it)."""
        super().__init__("tpu-serving:gateway:InferenceGateway", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider, depends_on=list(after))
        # Holds only the Gateway (no pods): the strictest Pod Security level.
        namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=gateway.GATEWAY_NAMESPACE,
                labels={**naming.MANAGED_BY_LABELS, **pod_security.namespace_labels("restricted", kubernetes_minor)},
            ),
            opts=child,
        )
        # The InferencePool CRD (inference.networking.k8s.io/v1) at the matrix's pinned release, applied
        # server-side from its upstream file (stacks/versions.py CRDS, sha256 recorded for `make crds`).
        self.inference_pool_crd = k8s.yaml.v2.ConfigFile(
            f"{name}-inferencepool-crd", file=INFERENCE_POOL_CRD.url, opts=child
        )
        manifest = gateway.gateway_manifest(exposure, route_namespaces)
        self.gateway = k8s.apiextensions.CustomResource(
            f"{name}-gateway",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace])),
        )
        self.register_outputs(
            {"gateway": gateway.GATEWAY_NAME, "gatewayClassName": manifest["spec"]["gatewayClassName"]}
        )
