"""The release gate's benchmark: a pinned load generator (inference-perf, stacks/facts/versions.py IMAGES
"inferencePerf") run as a Kubernetes Job against the candidate's server set, with its scenarios as data and its
report written to the stack bucket under benchmarks/<workload>/<job>/, where `make promote` reads it
(tooling/operations/promote.py). Pure: the scenarios, the tool's config and the Job's manifests.

inference-perf's config (kubernetes-sigs/inference-perf v0.7.0, PyPI inference-perf 0.7.0:
inference_perf/config/config.py Config and its sections; tests/data/inference_perf_config_schema.json records its
JSON Schema, which the tests validate every rendered config against): `api` {type completion|chat, streaming},
`data` {type random, input_distribution, output_distribution, use_chat_template}, `load` {type constant, stages [{rate, duration}]},
`server` {type (the type's own), model_name, base_url, ignore_eos}, `report.goodput.constraints` {ttft, tpot} (seconds),
`storage.google_cloud_storage` {bucket_name, path} (inference_perf/client/filestorage/gcs.py uploads each report
as <path>/<name>.json; the summary is `summary_lifecycle_metrics`, inference_perf/reportgen/base.py). Streaming is
on: TTFT and TPOT are measured only for streamed responses (APIConfig.streaming's description).

Its results land in the bucket (above) and on the stack's dashboard: after the run the Job prints one JSON line,
its summary (`summary_line`: SUMMARY_EVENT, the labels LABELS and each of MEASURES read from the summary report),
which GKE's logging agent sends to Cloud Logging as the jsonPayload of the container's LogEntry (a JSON object
serialized on a single line to stdout or stderr, https://cloud.google.com/logging/docs/structured-logging "Use the
Logging agent"; none of its keys is one of the special fields the agent moves out of jsonPayload, such as severity
or message); stacks/serving/benchmark_metrics.py turns the same MEASURES and LABELS into log-based metrics and the
dashboard's tiles, and tooling/operations/promote.py reads the report through the same MEASURES: one definition of
each number, for the Job, the metrics and the gate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stacks import naming
from stacks.facts.versions import IMAGES
from stacks.naming import MANAGED_BY_LABELS, SYSTEM_POOL_SELECTOR
from stacks.security import scan_exceptions
from stacks.security.bucket_access import OBJECT_USER, Grant
from stacks.security.pod_security import ContainerSecurity, container_security_context, secure_pod

IMAGE_KEY = "inferencePerf"
RESULTS_PREFIX = "benchmarks/"
SUMMARY_REPORT = "summary_lifecycle_metrics.json"
# Where inference-perf also writes its reports in the Job's container (storage.local_storage, which it always
# writes: inference_perf/main.py; LocalStorageClient writes <path>/<report name>), for the summary line.
LOCAL_REPORTS = "/tmp/inference-perf-reports"  # noqa: S108 (the container's own writable root filesystem)
CONFIG_PATH = "/etc/inference-perf"
CONFIG_FILE = "config.yml"
# The image's Dockerfile (kubernetes-sigs/inference-perf Dockerfile at 0f274573: FROM python:3.12.9-slim-bookworm,
# no USER) runs as root and the tool writes its local report and the tokenizer's Hugging Face cache under its
# working tree and /root/.cache: its own user and a writable root filesystem, everything else restricted.
SECURITY = ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    why="inference-perf's image runs as root and writes its reports and tokenizer cache (Dockerfile: no USER)",
)
RESOURCES = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}}
# How long the Job may run past its scenario's load before Kubernetes stops it: the candidate's servers start
# (the Job is created with them and waits for their health endpoint: a cold start with compilation takes up to an
# hour, workloads/vllm/plan.py COLD_START_S), then the tokenizer download and the report upload.
WAIT_S = 5400
MARGIN_S = 1200
# The wait, in the image's own Python (standard library only): poll the server's health URL every 10 s.
WAIT_SCRIPT = (
    "import sys, time, urllib.request as u\n"
    "end = time.time() + float(sys.argv[2])\n"
    "while True:\n"
    "    try:\n"
    "        if u.urlopen(sys.argv[1], timeout=10).status == 200: break\n"
    "    except Exception as e:\n"
    "        print('waiting for', sys.argv[1], e, flush=True)\n"
    "    if time.time() > end: sys.exit('the server never answered ' + sys.argv[1])\n"
    "    time.sleep(10)\n"
)


@dataclass(frozen=True)
class Measure:
    """One number of a gate run: its key in the Job's summary line (so in its log entry's jsonPayload) and where
    inference-perf's summary report has it (inference_perf/reportgen/base.py summarize_requests at 0.7.0:
    successes.latency.<metric>.{mean,min,max,median,p<N>}, successes.throughput.*, successes.goodput_metrics
    .goodput_percentage (0-100, only with report.goodput constraints), successes.count, failures.count)."""

    key: str
    path: tuple[str, ...]
    scale: float = 1.0
    title: str = ""  # its dashboard tile; "" for a number not charted (no log-based metric)
    unit: str = "1"  # the log-based metric's unit (Cloud Monitoring MetricDescriptor.unit, UCUM)

    def read(self, summary: dict[str, Any]) -> float | None:
        """Its value in a summary report (None where the report has none)."""
        node: Any = summary
        for part in self.path:
            node = node.get(part) if isinstance(node, dict) else None
        return None if node is None else float(node) * self.scale


MEASURES: tuple[Measure, ...] = (
    Measure("ttftP90Seconds", ("successes", "latency", "time_to_first_token", "p90"), title="TTFT p90", unit="s"),
    Measure("tpotP90Seconds", ("successes", "latency", "time_per_output_token", "p90"), title="TPOT p90", unit="s"),
    Measure(
        "outputTokensPerSecond",
        ("successes", "throughput", "output_tokens_per_sec"),
        title="output throughput",
        unit="1/s",
    ),
    Measure("goodput", ("successes", "goodput_metrics", "goodput_percentage"), 0.01, "goodput at the SLO", "1"),
    Measure("requests", ("successes", "count")),
    Measure("failures", ("failures", "count")),
)
# What the summary line says it is (jsonPayload.event), and the labels every charted number carries: which
# workload (its route), which release (the candidate set's release_label) and which scenario.
SUMMARY_EVENT = "tpu-serving-benchmark"
LABELS = ("workload", "release", "scenario")


def summary_line(summary: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The Job's summary line for `summary` (what SUMMARY_SCRIPT prints): the event, the labels, each measure the
    report has."""
    values = {m.key: m.read(summary) for m in MEASURES}
    return {"event": SUMMARY_EVENT, **labels, **{k: v for k, v in values.items() if v is not None}}


# After the run, in the image's own Python (standard library only): inference-perf's exit status kept, then the
# summary line from the local report, printed as one JSON line. argv: the config file, the report, the measures
# ({key: [path, scale]}) and the line's fixed fields, both as JSON (MEASURES and LABELS: one definition).
SUMMARY_SCRIPT = (
    "import json, subprocess, sys\n"
    "code = subprocess.call(['inference-perf', '--config_file', sys.argv[1]])\n"
    "try:\n"
    "    report = json.load(open(sys.argv[2]))\n"
    "except OSError as e:\n"
    "    sys.exit(code or 'no summary report: ' + str(e))\n"
    "line = json.loads(sys.argv[4])\n"
    "for key, (path, scale) in json.loads(sys.argv[3]).items():\n"
    "    node = report\n"
    "    for part in path:\n"
    "        node = node.get(part) if isinstance(node, dict) else None\n"
    "    if node is not None:\n"
    "        line[key] = float(node) * scale\n"
    "print(json.dumps(line), flush=True)\n"
    "sys.exit(code)\n"
)


def summary_command(labels: dict[str, str]) -> list[str]:
    """The gate container's command: inference-perf, then its summary line (SUMMARY_SCRIPT)."""
    measures = {m.key: [list(m.path), m.scale] for m in MEASURES}
    return [
        "python3",
        "-c",
        SUMMARY_SCRIPT,
        f"{CONFIG_PATH}/{CONFIG_FILE}",
        f"{LOCAL_REPORTS}/{SUMMARY_REPORT}",
        json.dumps(measures, separators=(",", ":")),
        json.dumps({"event": SUMMARY_EVENT, **labels}, separators=(",", ":")),
    ]


@dataclass(frozen=True)
class Scenario:
    """One load the gate can apply: a constant request rate for `duration_s`, prompts and outputs of the given
    token lengths (a normal distribution between min and max around mean)."""

    name: str
    description: str
    api: str  # inference-perf APIType; the random generator supports only completion (DATAGEN_APIS)
    rate: float  # requests per second
    duration_s: int
    input_tokens: tuple[int, int, int]  # mean, min, max
    output_tokens: tuple[int, int, int]
    # Wrap each prompt in the tokenizer's chat template as one user turn (inference-perf 0.7.0 DataConfig
    # .use_chat_template, config/datagen/config.py: only for the random generator, on the completions path): the
    # request shape of a chat turn, which the random generator cannot send through the chat API.
    chat_template: bool = False

    def max_tokens(self) -> int:
        """The longest request it sends: its largest prompt and its largest answer (a server's context must hold
        both)."""
        return self.input_tokens[2] + self.output_tokens[2]

    def distribution(self, tokens: tuple[int, int, int]) -> dict[str, Any]:
        mean, low, high = tokens
        return {"type": "normal", "mean": mean, "min": low, "max": high, "std_dev": max(1, (high - low) // 6)}


# The generator every scenario uses (data.type) and the APIs it can send: inference-perf 0.7.0 (PyPI wheel
# inference_perf-0.7.0-py3-none-any.whl) inference_perf/datagen/synthetic/random_datagen.py RandomDataGenerator
# .get_supported_apis returns [APIType.Completion]; datagen/base.py BaseGenerator.__init__ raises "Unsupported API
# type" for any other, and main.py builds the generator before any load, so a chat-API scenario would fail the Job
# before it sent a request. tests/test_rollout.py reads the wheel (when cached) to confirm.
DATAGEN = "random"
DATAGEN_APIS = ("completion",)

# The scenarios a gate may name (rollout.gate.scenario). Adding one is an entry here.
SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "chat",
            "short chat turns at a steady rate: prompts about 500 tokens (the model's chat template applied), answers"
            " about 250",
            "completion",
            rate=2.0,
            duration_s=300,
            input_tokens=(512, 64, 1024),
            output_tokens=(256, 32, 512),
            chat_template=True,
        ),
        Scenario(
            "long-context",
            "long documents, short answers (summaries, retrieval): prompts about 3,000 tokens, answers about 200",
            "completion",
            rate=0.5,
            duration_s=600,
            input_tokens=(3000, 1500, 3800),
            output_tokens=(200, 50, 256),
        ),
    )
}


def results_prefix(route: str) -> str:
    """The stack bucket prefix of a workload's benchmark reports: the gate's identity writes here and nowhere else."""
    return f"{RESULTS_PREFIX}{route}/"


def job_name(route: str, candidate: str, weight: int, scenario: str, attempt: int = 0) -> str:
    """The gate Job of one release step and attempt: a new name for each candidate, weight, scenario and attempt
    (rollout.attempt, which `make promote` raises at a hold or a rollback), so each `pulumi up` of a new step or a
    new attempt runs a new benchmark (a Job's pod template cannot change) writing to a new report path: inference-perf
    does not overwrite a report already in the bucket (0.7.0 inference_perf/client/filestorage/gcs.py
    save_report skips an object that exists), so a reused path would leave `make promote` reading the old one.
    Attempt 0 hashes as before attempts existed (a live stack's Job keeps its name)."""
    step = f"{weight}:{scenario}" + (f":attempt-{attempt}" if attempt else "")
    return f"{naming.fit(route, naming.LABEL_MAX - 14)}-gate-{naming.short_hash(f'{candidate}|{step}', 8)}"


def summary_url(bucket: str, route: str, job: str) -> str:
    return f"gs://{bucket}/{results_prefix(route)}{job}/{SUMMARY_REPORT}"


def grants(bucket: str, route: str) -> list[Grant]:
    """The gate Job's identity: read-write on the workload's benchmark prefix of the stack bucket, nothing else."""
    return [Grant("benchmarks", bucket, OBJECT_USER, results_prefix(route))]


@dataclass(frozen=True)
class Target:
    """What the gate benchmarks: the candidate set's own Service (bypassing the route's weights) and the model name
    clients send."""

    base_url: str
    health_path: str  # answers 200 once the server serves: the Job waits for it before the load starts
    server_type: str  # inference-perf's ModelServerType of the server (config/client/modelserver/config.py)
    model: str
    tokenizer: str | None  # a Hugging Face id the tool loads the tokenizer from; None: the tool asks the server
    token_secret: tuple[str, str] | None  # (Secret, key) of a Hugging Face token for a gated tokenizer


def config(
    scenario: Scenario,
    target: Target,
    *,
    bucket: str,
    path: str,
    ttft_s: float | None,
    tpot_s: float | None,
) -> dict[str, Any]:
    """inference-perf's config for one run of `scenario` against `target`, its reports to gs://<bucket>/<path>/."""
    constraints = {k: v for k, v in (("ttft", ttft_s), ("tpot", tpot_s)) if v is not None}
    out: dict[str, Any] = {
        "api": {"type": scenario.api, "streaming": True},
        "data": {
            "type": DATAGEN,
            "input_distribution": scenario.distribution(scenario.input_tokens),
            "output_distribution": scenario.distribution(scenario.output_tokens),
            **({"use_chat_template": True} if scenario.chat_template else {}),
        },
        "load": {"type": "constant", "stages": [{"rate": scenario.rate, "duration": scenario.duration_s}]},
        "server": {
            "type": target.server_type,
            "model_name": target.model,
            "base_url": target.base_url,
            "ignore_eos": True,
        },
        "report": {
            "request_lifecycle": {"summary": True, "per_stage": False, "per_request": False},
            "prometheus": {"summary": False, "per_stage": False},
        },
        "storage": {
            "local_storage": {"path": LOCAL_REPORTS},
            "google_cloud_storage": {"bucket_name": bucket, "path": path},
        },
    }
    if constraints:
        out["report"]["goodput"] = {"constraints": constraints}
    if target.tokenizer:
        out["tokenizer"] = {"pretrained_model_name_or_path": target.tokenizer}
    return out


def manifests(
    *,
    name: str,
    namespace: str,
    service_account: str,
    scenario: Scenario,
    target: Target,
    bucket: str,
    route: str,
    ttft_s: float | None,
    tpot_s: float | None,
    image: str,
    release: str,
) -> list[dict[str, Any]]:
    """The gate: a ConfigMap with inference-perf's config and the Job that runs it once on the system pool, as
    its own identity (`grants`). `pulumi up` does not wait for it (pulumi.com/skipAwait): `make promote` does."""
    labels = {"app": f"{route}-gate", "role": "benchmark"}
    cfg = config(scenario, target, bucket=bucket, path=f"{results_prefix(route)}{name}", ttft_s=ttft_s, tpot_s=tpot_s)
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {**labels, **MANAGED_BY_LABELS}},
        "data": {CONFIG_FILE: json.dumps(cfg, indent=2)},
    }
    env: list[dict[str, Any]] = []
    if target.token_secret is not None:
        secret, key = target.token_secret
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}})
    container: dict[str, Any] = {
        "name": "inference-perf",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": summary_command({"workload": route, "release": release, "scenario": scenario.name}),
        "resources": RESOURCES,
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_PATH, "readOnly": True}],
    }
    if env:
        container["env"] = env
    wait = {
        "name": "wait-for-server",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["python3", "-c", WAIT_SCRIPT, f"{target.base_url}{target.health_path}", str(WAIT_S)],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        # secure_pod sets app containers' contexts; an init container carries its own
        "securityContext": container_security_context(SECURITY),
    }
    pod = {
        "restartPolicy": "Never",
        "initContainers": [wait],
        "serviceAccountName": service_account,
        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
        "containers": [container],
        "volumes": [{"name": "config", "configMap": {"name": name}}],
    }
    skips = [*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT, *scan_exceptions.security(SECURITY)]
    annotations = {**scan_exceptions.skip_annotations(skips), "pulumi.com/skipAwait": "true"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {**labels, **MANAGED_BY_LABELS},
            "annotations": annotations,
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": WAIT_S + scenario.duration_s + MARGIN_S,
            "template": {"metadata": {"labels": labels}, "spec": secure_pod(pod, SECURITY)},
        },
    }
    return [config_map, job]


def default_image() -> str:
    return IMAGES[IMAGE_KEY]
