"""The examples a Saxml workload's outputs print for its users: curl against the HTTP server's address (the
component adds its port-forward and that address, the load balancer's once it has one); the request `make smoke`
sends it."""

from __future__ import annotations

import json

from stacks.serving.workload_type import SmokeProbe
from workloads.saxml.plan import HTTP_PORT, SaxmlPlan


def curl_examples(plan: SaxmlPlan, address: str) -> dict[str, str]:
    model = (
        plan.desired_models()[0]
        if plan.workload.models
        else {
            "model": f"{plan.cell}/lm175b",
            "model_path": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test",
            "checkpoint": "None",
            "replicas": 1,
        }
    )

    def curl(method: str, path: str, body: dict) -> str:
        return (
            f"curl -s -X {method} http://{address}/{path} -H 'Content-Type: application/json' -d '{json.dumps(body)}'"
        )

    return {
        "publish": curl("POST", "publish", model),
        "listcell": curl("GET", "listcell", {"model": model["model"]}),
        "generate": curl(
            "POST", "generate", {"model": model["model"], "query": "Q: Who is the mother of Harry Potter? A: "}
        ),
        "unpublish": curl("POST", "unpublish", {"model": model["model"]}),
    }


NO_SMOKE_PROBE = "no model in `models`: the stack publishes none, so there is no model to ask the cell for"


def smoke_probe(plan: SaxmlPlan) -> SmokeProbe | None:
    """sax-http's GET /listcell of the first model the stack publishes (the admin server and the HTTP server both
    answer); None without `models` (NO_SMOKE_PROBE)."""
    if not plan.workload.models:
        return None
    model = plan.desired_models()[0]["model"]
    return SmokeProbe(plan.namespace, plan.http_service, HTTP_PORT, "GET", "listcell", {"model": model}, None)
