"""What vLLM's server exports and the stack reads of it: the series an HPA may scale on, the labels they carry, the
signals the alerts and SLOs read (its KV-cache gauge among them, the one a fleet's spill-over balances on) and its
dashboard tiles. Shared code reaches them through the plan (VllmPlan.hpa_metrics, .signals, .dashboard_panels)."""

from __future__ import annotations

from stacks.monitoring.metrics import (
    FRACTION,
    GATEWAY_HPA_METRICS,
    GMP_TARGET_LABELS,
    HPA_METRICS,
    REQUESTS,
    SERVER_TARGET_LABELS,
    HpaMetric,
    Unit,
)
from stacks.serving.workload_plan import ServingSignals

# vLLM's series carry model_name and engine (vllm 0.32.0 vllm/v1/metrics/loggers.py labelnames), histograms `le` on
# their _bucket series; the vLLM PodMonitoring copies the pod's `app` label.
LABELS = GMP_TARGET_LABELS | set(SERVER_TARGET_LABELS) | {"model_name", "engine", "app"}
SERIES_LABELS: dict[str, frozenset[str]] = {
    **{
        name: frozenset(LABELS)
        for name in (
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc",
        )
    },
    **{
        f"{name}_bucket": frozenset(LABELS | {"le"})
        for name in ("vllm:time_to_first_token_seconds", "vllm:request_time_per_output_token_seconds")
    },
    **{
        f"{name}_total": frozenset(LABELS | labels)
        for name, labels in (("vllm:request_success", {"finished_reason"}), ("vllm:generation_tokens", set()))
    },
}

# vLLM's server metrics an HPA can scale on (vllm 0.27.0 vllm/v1/metrics/loggers.py: the scheduler gauges, and
# vllm:kv_cache_usage_perc, "KV-cache usage. 1 means 100 percent usage"). prometheus-adapter serves them without the
# colon. A vLLM workload may also scale on the TPU metrics (stacks.monitoring.metrics.HPA_METRICS).
_VLLM_SOURCE = "vllm-project/vllm@v0.32.0:vllm/v1/metrics/loggers.py"
RUNNING = Unit("requests", "requests in the running batch per replica")
VLLM_HPA_METRICS: dict[str, HpaMetric] = {
    m.name: m
    for m in (
        HpaMetric(
            "vllm:num_requests_waiting",
            "vllm:num_requests_waiting",
            REQUESTS,
            "server",
            _VLLM_SOURCE,
            adapter_name="vllm_num_requests_waiting",
            labels=SERIES_LABELS["vllm:num_requests_waiting"],
        ),
        HpaMetric(
            "vllm:num_requests_running",
            "vllm:num_requests_running",
            RUNNING,
            "server",
            _VLLM_SOURCE,
            adapter_name="vllm_num_requests_running",
            labels=SERIES_LABELS["vllm:num_requests_running"],
        ),
        HpaMetric(
            "vllm:kv_cache_usage_perc",
            "vllm:kv_cache_usage_perc",
            FRACTION,
            "server",
            _VLLM_SOURCE,
            adapter_name="vllm_kv_cache_usage_perc",
            labels=SERIES_LABELS["vllm:kv_cache_usage_perc"],
        ),
    )
}
# Everything a vLLM workload's HPA may name.
VLLM_METRICS: dict[str, HpaMetric] = {
    **VLLM_HPA_METRICS,
    **GATEWAY_HPA_METRICS,
    **{name: m for name, m in HPA_METRICS.items() if m.origin == "tpu"},
}

# What the alerts and SLOs read (vllm 0.27.0 vllm/v1/metrics/loggers.py): the scheduler's waiting gauge, the TTFT and
# TPOT histograms, vllm:request_success (a counter per finished_reason: stop, length, abort, error; FinishReason in
# vllm/v1/engine/__init__.py) and vllm:generation_tokens (generated tokens). Counters are exported with _total.
VLLM_SIGNALS = ServingSignals(
    queue="vllm:num_requests_waiting",
    time_to_first_token="vllm:time_to_first_token_seconds",
    time_per_output_token="vllm:request_time_per_output_token_seconds",
    requests="vllm:request_success",
    finish_label="finished_reason",
    good_finishes=("stop", "length"),
    bad_finishes=("error",),  # not "abort": the client cancelled the request
    output_tokens="vllm:generation_tokens",
)
# The KV-cache utilisation gauge a fleet's spill-over balances on (stacks/fleets/fleet.py F1: vLLM v0.10.2 and later name it
# vllm:kv_cache_usage_perc, "KV-cache usage. 1 means 100 percent usage").
KV_CACHE_METRIC = VLLM_HPA_METRICS["vllm:kv_cache_usage_perc"].series


def vllm_panels(cluster: str) -> list[tuple[str, str, str]]:
    """vLLM server tiles (series of the pinned image, stacks.facts.versions IMAGE_RECORDS["vllmTpu"]), by namespace and
    pod; latencies as the 90th percentile over 5 minutes; the KV-cache fraction drawn as a percentage."""
    c = f'cluster="{cluster}"'

    def p90(histogram: str) -> str:
        return f"histogram_quantile(0.9, sum by (namespace, le) (rate({histogram}_bucket{{{c}}}[5m])))"

    return [
        ("vLLM running requests", f"sum by (namespace, pod) (vllm:num_requests_running{{{c}}})", "requests"),
        ("vLLM waiting requests", f"sum by (namespace, pod) (vllm:num_requests_waiting{{{c}}})", "requests"),
        ("vLLM KV-cache usage", f"avg by (namespace, pod) (vllm:kv_cache_usage_perc{{{c}}}) * 100", "% of KV cache"),
        ("vLLM time to first token (p90)", p90("vllm:time_to_first_token_seconds"), "seconds"),
        ("vLLM time per output token (p90)", p90("vllm:request_time_per_output_token_seconds"), "seconds"),
    ]
