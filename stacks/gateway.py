"""The stack's GKE Inference Gateway, as plain data: which GatewayClass an exposure means, the one Gateway, and the
commands that reach it. The component (components/gateway.py) only registers what these functions return.

How a request flows (README "Inference Gateway"): client -> the regional Application Load Balancer GKE builds for
the Gateway (its Envoy proxies run in the VPC's proxy-only subnet) -> HTTPRoute of the workload -> the workload's
InferencePool -> the endpoint picker (ext-proc, port 9002) picks one serving pod by queue depth and KV-cache use ->
the pod's HTTP port on a TPU host.
"""

from __future__ import annotations

from typing import Any

from stacks import naming

# GatewayClass per exposure. Both are regional Application Load Balancers whose proxies live in a proxy-only subnet
# (REGIONAL_MANAGED_PROXY) of the cluster's VPC and region:
# - gke-l7-rilb: regional internal Application Load Balancer (GKE "GatewayClass capabilities",
#   https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities);
# - gke-l7-regional-external-managed: regional external Application Load Balancer, reachable from the internet
#   (https://llm-d.ai/docs/resources/gateway/gke "Regional External Application Load Balancer";
#   llm-d/llm-d-router@v0.10.0:config/manifests/gateway/gke/gateway.yaml).
GATEWAY_CLASSES: dict[str, str] = {
    "internal": "gke-l7-rilb",
    "external": "gke-l7-regional-external-managed",
}

GATEWAY_NAME = "inference-gateway"
GATEWAY_NAMESPACE = "inference-gateway"
LISTENER_NAME = "http"
LISTENER_PORT = 80


def route_namespace_selector(route_namespaces: list[str]) -> dict[str, Any]:
    """Which namespaces may attach HTTPRoutes to the Gateway: exactly the gateway-served workloads' namespaces
    (none: the Gateway's own, which holds no routes), never every namespace of the cluster."""
    if not route_namespaces:
        return {"from": "Same"}
    return {
        "from": "Selector",
        # kubernetes.io/metadata.name is set on every namespace by the API server (Kubernetes >= 1.22)
        "selector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(set(route_namespaces))}
            ]
        },
    }


def gateway_manifest(exposure: str, route_namespaces: list[str]) -> dict[str, Any]:
    """The one Gateway of the stack: an HTTP listener on port 80 of a regional load balancer."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "labels": dict(naming.MANAGED_BY_LABELS)},
        "spec": {
            "gatewayClassName": GATEWAY_CLASSES[exposure],
            "listeners": [
                {
                    "name": LISTENER_NAME,
                    "port": LISTENER_PORT,
                    "protocol": "HTTP",
                    "allowedRoutes": {"namespaces": route_namespace_selector(route_namespaces)},
                }
            ],
        },
    }


def address_command() -> str:
    """Prints the Gateway's IP once GKE has programmed the load balancer (status.addresses, Gateway API v1)."""
    return f"kubectl get gateway {GATEWAY_NAME} -n {GATEWAY_NAMESPACE} -o jsonpath='{{.status.addresses[0].value}}'"


def gateway_summary(exposure: str, route_namespaces: list[str]) -> dict[str, Any]:
    """The `gateway` stack output: class, where it is reachable from, and how to get its address."""
    return {
        "name": GATEWAY_NAME,
        "namespace": GATEWAY_NAMESPACE,
        "gatewayClassName": GATEWAY_CLASSES[exposure],
        "exposure": exposure,
        "reachableFrom": "the cluster's VPC (and networks connected to it)"
        if exposure == "internal"
        else "the internet, limited by the stack's Cloud Armor policy",
        "routeNamespaces": sorted(set(route_namespaces)),
        "addressCommand": address_command(),
    }
