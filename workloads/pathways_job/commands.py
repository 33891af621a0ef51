"""The commands a PathwaysJob's outputs print for its users: its status, its pods, the head's and the workers'
logs; for an interactive job, the port-forward to the proxy and how a JAX client connects through it; why `make smoke` sends it no request."""

from __future__ import annotations

from collections.abc import Mapping

from workloads.pathways_job.plan import (
    HEAD_JOB,
    JOBSET_NAME_LABEL,
    MAIN_CONTAINER,
    PROXY_CONTAINER,
    PROXY_PORT,
    REPLICATED_JOB_LABEL,
    WORKER_JOB,
    PathwaysJobPlan,
)


def commands(plan: PathwaysJobPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    """How to follow the job: its status, its pods, the head's and the workers' logs; interactive: how to connect."""
    ns, name = plan.namespace, plan.name
    head = f"{JOBSET_NAME_LABEL}={name},{REPLICATED_JOB_LABEL}={HEAD_JOB}"
    workers = plan.shape.hosts * plan.pool.slices
    out = {
        "status": f"kubectl -n {ns} get pathwaysjob {name} --watch",
        "pods": f"kubectl -n {ns} get pods -l {JOBSET_NAME_LABEL}={name} -o wide --watch",
        "headLogs": f"kubectl -n {ns} logs -f -l {head} -c {PROXY_CONTAINER if plan.interactive else MAIN_CONTAINER}",
        "workerLogs": (
            f"kubectl -n {ns} logs -f -l {JOBSET_NAME_LABEL}={name},{REPLICATED_JOB_LABEL}={WORKER_JOB} "
            f"--prefix --max-log-requests={workers}"
        ),
    }
    if plan.interactive:
        local = local_ports.get(PROXY_PORT, PROXY_PORT)
        out["portForward"] = (
            f"kubectl -n {ns} port-forward $(kubectl -n {ns} get pods -l {head} -o name) {local}:{PROXY_PORT}"
        )
        out["connect"] = (
            f"JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://localhost:{local} python -c "
            "'import pathwaysutils, jax; pathwaysutils.initialize(); print(jax.devices())'"
        )
    return out


# A batch job runs to its end and an interactive one serves JAX clients over gRPC through its proxy: no HTTP request
# shows it serves; its pods (Running, or Succeeded once finished) are what `make smoke` checks.
NO_SMOKE_PROBE = "a Pathways job answers no HTTP request (a batch job ends; an interactive one serves JAX over gRPC)"
