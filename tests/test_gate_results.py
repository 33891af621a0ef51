"""Issue 37 item 4: the gate's benchmark results land in the bucket AND on the dashboard. The gate Job prints one
JSON summary line after inference-perf (stacks/serving/benchmark.py SUMMARY_SCRIPT); GKE's logging agent sends a
JSON object serialized on a single stdout line as the LogEntry's jsonPayload
(https://cloud.google.com/logging/docs/structured-logging "Use the Logging agent"); log-based metrics extract its numbers and labels
(logging v2 LogMetric: google-api-python-client 2.202.0 logging.v2.json, google-beta v7.45.0
services/logging/resource_logging_metric.go; both checked strictly by tests/test_api_schemas.py and
tests/test_provider_schema.py over every shipped stack), and the dashboard's gate tiles chart them per workload,
release and scenario (stacks/serving/benchmark_metrics.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from stacks.serving import benchmark, benchmark_metrics
from tests.conftest import recorded
from tooling.harness.k8s_objects import kubernetes_objects

ROOT = Path(__file__).resolve().parents[1]
CANARY = ROOT / "examples/vllm-canary/Pulumi.vllm-canary.yaml"
PLAIN = ROOT / "examples/all-in-one/Pulumi.all-in-one.yaml"
RECORDED = sorted((ROOT / "tests/fixtures/promote/recorded").glob("*.json"))
METRIC = "gcp:logging/metric:Metric"
DASHBOARD = "gcp:monitoring/dashboard:Dashboard"


def gate_container(path: Path = CANARY) -> dict[str, Any]:
    objs = kubernetes_objects(recorded(path, True))
    (job,) = [o for o in objs if o["kind"] == "Job" and o["metadata"]["labels"].get("role") == "benchmark"]
    return job["spec"]["template"]["spec"]["containers"][0]


def run_gate(tmp_path: Path, report: Path | None, exit_code: int = 0) -> subprocess.CompletedProcess[str]:
    """The Job's container command as rendered, with a stand-in `inference-perf` on PATH (exits `exit_code`) and
    the summary report it would have written at `report` (None: it wrote none)."""
    fake = tmp_path / "bin" / "inference-perf"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(f"#!/bin/sh\nexit {exit_code}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    command = list(gate_container()["command"])
    assert command[4] == f"{benchmark.LOCAL_REPORTS}/{benchmark.SUMMARY_REPORT}"
    command[4] = str(report or tmp_path / "missing.json")
    command[0] = sys.executable
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=60)


@pytest.mark.parametrize("report", RECORDED, ids=lambda p: p.stem)
def test_the_gate_job_prints_one_summary_line_of_the_recorded_report(tmp_path, report):
    """On each recorded upstream report: exactly one stdout line, a JSON object, the same as summary_line (what
    `make promote` reads through the same MEASURES), labelled with the workload, release and scenario."""
    done = run_gate(tmp_path, report)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    printed = json.loads(line)
    doc = json.loads(report.read_text())
    labels = {k: printed[k] for k in benchmark.LABELS}
    assert labels["workload"] == "chat" and labels["scenario"] == "chat"
    assert re.fullmatch(r"v0\.32\.0-[0-9a-f]{8}", labels["release"])
    assert printed == benchmark.summary_line(doc, labels)
    assert printed["ttftP90Seconds"] == doc["successes"]["latency"]["time_to_first_token"]["p90"]
    assert printed["outputTokensPerSecond"] == doc["successes"]["throughput"]["output_tokens_per_sec"]


# The structured-logging page's "Special JSON fields in log entries": the agent moves these out of jsonPayload.
SPECIAL_FIELDS = {
    "severity",
    "message",
    "log",
    "httpRequest",
    "time",
    "timestamp",
    "timestampSeconds",
    "timestampNanos",
    "logging.googleapis.com/insertId",
    "logging.googleapis.com/labels",
    "logging.googleapis.com/operation",
    "logging.googleapis.com/sourceLocation",
    "logging.googleapis.com/spanId",
    "logging.googleapis.com/trace",
    "logging.googleapis.com/trace_sampled",
}


def test_no_key_of_the_summary_line_is_a_special_field_the_agent_moves_out_of_json_payload():
    """https://cloud.google.com/logging/docs/structured-logging "Special JSON fields in log entries"."""
    keys = {"event", *benchmark.LABELS, *(m.key for m in benchmark.MEASURES)}
    assert not keys & SPECIAL_FIELDS


def test_goodput_is_printed_as_a_fraction_when_the_report_has_it(tmp_path):
    doc = json.loads(RECORDED[0].read_text())
    doc["successes"]["goodput_metrics"] = {"goodput_percentage": 97.5, "request_goodput": 0.9, "token_goodput": 9.0}
    report = tmp_path / "with-goodput.json"
    report.write_text(json.dumps(doc))
    printed = json.loads(run_gate(tmp_path, report).stdout)
    assert printed["goodput"] == pytest.approx(0.975)


def test_the_gate_job_keeps_inference_perfs_failure(tmp_path):
    """A failed run fails the Job (`make promote` reads a failed Job as a rollback), with or without a report."""
    assert run_gate(tmp_path, RECORDED[0], exit_code=3).returncode == 3
    done = run_gate(tmp_path, None)
    assert done.returncode != 0 and "no summary report" in done.stderr


def test_the_log_based_metrics_extract_what_the_job_prints(tmp_path):
    """Each registered log-based metric: its filter selects the summary line's entries of this cluster, its value
    extractor names a number the line carries, its label extractors the line's labels; one metric per charted
    measure."""
    rec = recorded(CANARY, False)
    metrics = [r.inputs for r in rec.of_type(METRIC)]
    assert len(metrics) == len(benchmark_metrics.charted()) == 4
    printed = json.loads(run_gate(tmp_path, RECORDED[0]).stdout)
    cluster = next(iter(rec.of_type("gcp:container/cluster:Cluster"))).inputs["name"]
    keys = {m.key for m in benchmark.MEASURES}
    for m in metrics:
        assert f'jsonPayload.event="{printed["event"]}"' in m["filter"]
        assert (
            f'resource.labels.cluster_name="{cluster}"' in m["filter"]
            and 'resource.type="k8s_container"' in m["filter"]
        )
        (field,) = re.fullmatch(r"EXTRACT\(jsonPayload\.(\w+)\)", m["valueExtractor"]).groups()  # type: ignore[union-attr]
        assert field in keys and (field in printed or field == "goodput")  # goodput: only with SLO constraints
        assert m["labelExtractors"] == {k: f"EXTRACT(jsonPayload.{k})" for k in benchmark.LABELS}
        assert {k: printed[k] for k in m["labelExtractors"]}  # every label is in the line
        descriptor = m["metricDescriptor"]
        assert (descriptor["metricKind"], descriptor["valueType"]) == ("DELTA", "DISTRIBUTION")
        assert [label["key"] for label in descriptor["labels"]] == list(benchmark.LABELS)
        assert m["name"].startswith(f"tpu-serving/{cluster}/gate/")


def test_the_dashboard_charts_each_metric_per_workload_release_and_scenario():
    """The gate tiles query exactly the registered metrics (logging.googleapis.com/user/<name>), grouped by the
    three labels; each series aligned with ALIGN_SUM and reduced with REDUCE_MEAN, the aligner and reducer the
    monitoring v1 discovery document says are valid for DELTA distribution metrics (Aggregation enumDescriptions:
    ALIGN_SUM "valid for GAUGE and DELTA metrics with numeric and distribution values"; REDUCE_MEAN "valid for DELTA
    and GAUGE metrics with numeric or distribution values"; ALIGN_MEAN is for "numeric values" only)."""
    rec = recorded(CANARY, False)
    names = {r.inputs["name"] for r in rec.of_type(METRIC)}
    board = json.loads(rec.one(DASHBOARD).inputs["dashboardJson"])
    queries = [
        ds["timeSeriesQuery"]["timeSeriesFilter"]
        for t in board["mosaicLayout"]["tiles"]
        for ds in t["widget"].get("xyChart", {}).get("dataSets", [])
        if "timeSeriesFilter" in ds["timeSeriesQuery"]
    ]
    charted = {re.search(r'metric.type="logging.googleapis.com/user/([^"]+)"', q["filter"]).group(1) for q in queries}  # type: ignore[union-attr]
    assert charted == names and len(queries) == len(names)
    for q in queries:
        assert q["aggregation"]["groupByFields"] == [f"metric.label.{k}" for k in benchmark.LABELS]
        assert (q["aggregation"]["perSeriesAligner"], q["aggregation"]["crossSeriesReducer"]) == (
            "ALIGN_SUM",
            "REDUCE_MEAN",
        )
    # the dashboard waits for the metrics it charts
    (dash,) = [r for r in rec.resources if r.type == DASHBOARD]
    metric_urns = {r.urn for r in rec.resources if r.type == METRIC}
    assert metric_urns <= set(dash.dependencies)


def test_a_stack_without_a_release_train_has_no_gate_metrics_nor_tiles():
    rec = recorded(PLAIN, False)
    assert list(rec.of_type(METRIC)) == []
    assert "logging.googleapis.com/user/" not in rec.one(DASHBOARD).inputs["dashboardJson"]
