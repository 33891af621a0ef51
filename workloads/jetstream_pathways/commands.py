"""The commands a JetStream + Pathways workload's outputs print for its users: port-forward and curl; the request `make smoke` sends it."""

from __future__ import annotations

from collections.abc import Mapping

from stacks.serving.workload_type import SmokeProbe
from workloads.jetstream.server import generate_curl, generate_probe
from workloads.jetstream_pathways.plan import PathwaysPlan


def commands(plan: PathwaysPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    port = plan.workload.service.port
    local = local_ports.get(port, port)
    return {
        "portForward": f"kubectl -n {plan.namespace} port-forward svc/{plan.service_name} {local}:{port}",
        "curl": generate_curl(local),
    }


def smoke_probe(plan: PathwaysPlan) -> SmokeProbe:
    """Its leader's JetStream HTTP server, as the single-host type's."""
    return generate_probe(plan.namespace, plan.service_name, plan.workload.service.port)
