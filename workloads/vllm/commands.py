"""The commands a vLLM workload's outputs print for its users: port-forward, curl, a load test, watching its HPA; the request `make smoke` sends it."""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from stacks.serving.workload_type import SmokeProbe
from workloads.vllm.plan import HTTP_PORT, VllmPlan, served_model_name, serving_container


def commands(plan: VllmPlan, local_ports: Mapping[int, int]) -> dict[str, str]:
    ns, svc, port = plan.namespace, plan.service_name, plan.workload.service.port
    local = local_ports.get(port, port)
    model = served_model_name(plan)
    completion = shlex.quote(f'{{"model": "{model}", "prompt": "San Francisco is a", "max_tokens": 64}}')
    chat = shlex.quote(
        f'{{"model": "{model}", "messages": [{{"role": "user", "content": "What is a TPU?"}}], "max_tokens": 128}}'
    )
    header = "-H 'Content-Type: application/json'"
    pod, container = serving_container(plan)
    out = {
        "portForward": f"kubectl -n {ns} port-forward svc/{svc} {local}:{port}",
        "curl": f"curl -s localhost:{local}/v1/completions {header} -d {completion}",
        "curlChat": f"curl -s localhost:{local}/v1/chat/completions {header} -d {chat}",
        # vLLM's own benchmark client (vllm 0.27.0 `vllm bench serve`), inside the serving pod so nothing is
        # installed locally: random prompts at 10 requests/s.
        "loadTest": (
            f"kubectl -n {ns} exec {pod} -c {container} -- vllm bench serve --backend vllm "
            f"--base-url http://localhost:{HTTP_PORT} --model {shlex.quote(model)} --dataset-name random "
            "--random-input-len 512 --random-output-len 128 --num-prompts 1000 --request-rate 10"
        ),
    }
    if plan.autoscaled:
        out["watchHpa"] = f"kubectl -n {ns} get hpa {plan.hpa_name} --watch"
    return out


def smoke_probe(plan: VllmPlan) -> SmokeProbe:
    """One completion from its OpenAI-compatible server, through its Service (the leader's, multi-host): POST
    /v1/completions answers a CompletionResponse whose `choices` holds the text (vllm-project/vllm@v0.27.0
    vllm/entrypoints/openai/completion/api_router.py create_completion, protocol.py CompletionResponse)."""
    body = {"model": served_model_name(plan), "prompt": "San Francisco is a", "max_tokens": 16}
    return SmokeProbe(
        plan.namespace, plan.service_name, plan.workload.service.port, "POST", "v1/completions", body, "choices"
    )
