"""The commands a single-host JetStream workload's outputs print for its users: port-forward, curl, a load test,
watching its HPA."""

from __future__ import annotations

from collections.abc import Mapping

from workloads.jetstream.plan import GRPC_PORT, JetStreamPlan
from workloads.jetstream.server import generate_curl, generate_load


def commands(plan: JetStreamPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    ns, svc, port = plan.namespace, plan.service_name, plan.workload.service.port
    http, grpc = local_ports.get(port, port), local_ports.get(GRPC_PORT, GRPC_PORT)
    out = {
        "portForward": f"kubectl -n {ns} port-forward svc/{svc} {http}:{port} {grpc}:{GRPC_PORT}",
        "curl": generate_curl(http),
        # concurrent /generate requests through the port-forward: enough to move the HPA, runs as given
        "loadTest": generate_load(http),
    }
    if plan.autoscaled:
        out["watchHpa"] = f"kubectl -n {ns} get hpa {plan.hpa_name} --watch"
    return out
