"""A regional stack's `fleet` output (tpu-serving:gateway.fleetExport): what a fleet stack reads of it through a
StackReference and checks (stacks/fleets/fleet.py), as plain data from the config."""

from __future__ import annotations

from typing import Any

from stacks.fleets.fleet import SCHEMA_VERSION, network_path
from stacks.serving.pool_sizing import cluster_zones
from stacks.serving.workload_plan import WorkloadPlan
from stacks.stack_config import StackConfig


def regional_output(cfg: StackConfig) -> dict[str, Any]:
    """The `fleet` output of a regional stack whose gateway exports (gateway.fleetExport): everything a fleet
    stack checks and builds on, as plain data from the config (no value the cloud computes)."""
    network = cfg.network_plan
    return {
        "schemaVersion": SCHEMA_VERSION,
        "project": cfg.gcp_project,
        "region": cfg.region,
        "clusterName": cfg.cluster_plan.name,
        "clusterLocation": cfg.cluster_location,
        "clusterId": f"projects/{cfg.gcp_project}/locations/{cfg.cluster_location}/clusters/{cfg.cluster_plan.name}",
        "network": network_path(cfg.gcp_project, network.network_name),
        "networkCreated": cfg.cluster.network.create,
        "minMasterVersion": cfg.cluster.min_master_version or "",
        "releaseChannel": cfg.cluster.release_channel,
        "zones": cluster_zones(cfg.cluster_location),
        "regionalProxySubnet": cfg.gateway.proxy_subnet or "",
        "hpaProfile": cfg.cluster.hpa_profile or "",
        "exports": [_export(w) for w in cfg.gateway_workloads],
    }


def _export(workload: WorkloadPlan) -> dict[str, Any]:
    backend = workload.gateway_backend()
    assert backend is not None  # a gateway workload offers a backend (stacks/pieces/gateway.py served)
    return {
        "pool": backend.name,
        "namespace": backend.namespace,
        "model": str(getattr(workload.workload, "model", backend.model)),  # what is loaded
        "servedName": backend.model,  # the name clients send (vLLM --served-model-name)
        "ports": [backend.port],
        "selector": dict(backend.selector),
        "metricSelector": backend.metric_labels,
        "hostsPerReplica": workload.pool.shape.hosts,
        "kvCacheMetric": backend.kv_cache_metric,
    }
