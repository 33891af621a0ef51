"""The commands a single-host JetStream workload's outputs print for its users: port-forward, curl, a load test,
watching its HPA; the request `make smoke` sends it."""

from __future__ import annotations

from collections.abc import Mapping

from stacks.serving.workload_type import SmokeProbe
from workloads.jetstream.plan import GRPC_PORT, JetStreamPlan
from workloads.jetstream.server import generate_curl, generate_load, generate_probe


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


def smoke_probe(plan: JetStreamPlan) -> SmokeProbe:
    return generate_probe(plan.namespace, plan.service_name, plan.workload.service.port)
