"""A regional stack's side of a fleet (tpu-serving:gateway.fleetExport; stacks/fleets/fleet.py, docs/fleet.md): each
gateway-served workload's InferencePool (the endpoint picker chart's) gets the export annotation, and its pods'
KV-cache gauge is exported as the custom metric the fleet's backend policy balances on. GKE's multi-cluster
Inference Gateway is in Preview."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from stacks.fleets import fleet
from stacks.serving.gateway import INFERENCE_API, GatewayBackend


def export(
    prefix: str, backend: GatewayBackend, kv_cache_metric: str, release: pulumi.Resource, opts: pulumi.ResourceOptions
) -> dict[str, str]:
    """Annotate the chart's InferencePool (named after the release) `networking.gke.io/export: "True"` (a
    server-side apply patch of that one annotation, as `kubectl annotate` in GKE's guide) and register the
    AutoscalingMetric of its KV-cache gauge. Returns the workload's commands (the `gateway.routes` output)."""
    after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[release]))
    k8s.apiextensions.CustomResourcePatch(
        f"{prefix}-fleet-export",
        api_version=f"{INFERENCE_API}/v1",
        kind="InferencePool",
        metadata=k8s.meta.v1.ObjectMetaArgs(
            name=backend.name,
            namespace=backend.namespace,
            annotations={fleet.EXPORT_ANNOTATION: fleet.EXPORT_VALUE},
        ),
        opts=after,
    )
    if kv_cache_metric:
        register_manifest(
            f"{prefix}-kv-cache-metric",
            fleet.autoscaling_metric_manifest(
                backend.name, backend.namespace, backend.metric_labels, backend.port, kv_cache_metric
            ),
            opts=after,
        )
    annotation = fleet.EXPORT_ANNOTATION.replace(".", "\\.")
    return {
        "fleetExport": f"InferencePool {backend.namespace}/{backend.name} exported to the fleet's Gateway",
        "exportCheck": (
            f"kubectl get inferencepool {backend.name} -n {backend.namespace} "
            f"-o jsonpath='{{.metadata.annotations.{annotation}}}'"
        ),
    }
