"""Issue 34 #2: every trigger's metadata is typed as its scaler declares it.

A trigger's metadata is a map of strings (the ScaledObject CRD), each read into the scaler's typed metadata struct
by KEDA's typed config (tests/data/keda/prometheus_scaler_metadata.json records the prometheus scaler's struct at
kedacore/keda@v2.20.2 with its origin). A value that does not parse as its field's type fails the trigger, and one
failed trigger leaves the ScaledObject with no scaler and no HPA: a fractional target rendered as a Kubernetes
quantity (`threshold: 800m`) where the field is a float64 read with json.Unmarshal did exactly that.

Checked over every trigger the stack can write (each metric the KEDA adapter serves, at whole and fractional
targets) and every ScaledObject of every shipped stack and of the KEDA example at fractional targets.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from stacks.monitoring import metrics
from stacks.monitoring.adapters import keda
from tests.conftest import STACK_FILES, recorded
from tooling.harness.offline import load_stack_file
from workloads.jetstream.server import JETSTREAM_METRICS
from workloads.vllm import metrics as vllm_metrics

ROOT = Path(__file__).resolve().parents[1]
SPEC = json.loads((ROOT / "tests" / "data" / "keda" / "prometheus_scaler_metadata.json").read_text())
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
KEDA_EXAMPLE = ROOT / "examples" / "vllm-single-host" / "Pulumi.vllm-single-host-keda.yaml"
# strconv.ParseBool (Go's strconv/atob.go)
GO_BOOLS = {"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"}
# time.ParseDuration's grammar (Go's time/format.go): a sequence of decimal numbers, each with a unit
GO_DURATION = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
FRACTIONS = (0.8, 2.5, 0.001, 1234.75, 1, 8)


def _reject(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def why_not(go_type: str, value: Any, enum: list[str] | None = None) -> str | None:
    """Why `value` fails KEDA's typed config for a field of `go_type` (typed_config.go setConfigValueHelper), or
    None when it parses."""
    if not isinstance(value, str):
        return f"{value!r} is not a string (trigger metadata is map[string]string)"
    parts = [p.strip() for p in value.split(",")]
    if enum is not None and not set(parts) <= set(enum):
        return f"{value!r} is not among {enum}"
    if go_type in ("string", "[]Type"):
        return None
    if go_type == "bool":
        return None if value in GO_BOOLS else f"{value!r} is not a strconv.ParseBool value"
    if go_type == "time.Duration":
        return None if GO_DURATION.fullmatch(value) or value.isdigit() else f"{value!r} is not a Go duration"
    if go_type == "map[string]string":
        return None if all(p.count("=") == 1 for p in parts) else f"{value!r} is not key=value,..."
    if go_type == "float64":  # json.Unmarshal into a float64: a JSON number, nothing else
        try:
            parsed = json.loads(value, parse_constant=_reject)
        except ValueError as err:
            return f"{value!r} is not a JSON number ({err})"
        return None if type(parsed) in (int, float) else f"{value!r} is not a JSON number"
    return f"no model of Go type {go_type} (tests/data/keda/prometheus_scaler_metadata.json)"


def problems(trigger: dict[str, Any]) -> list[str]:
    """Everything in one trigger's metadata that the scaler refuses."""
    assert trigger["type"] == SPEC["trigger"], f"no typed metadata recorded for a {trigger['type']!r} trigger"
    fields, metadata = SPEC["fields"], trigger.get("metadata") or {}
    found = [f"unknown parameter {k!r} (the scaler ignores it)" for k in metadata if k not in fields]
    for name, field in fields.items():
        if name not in metadata:
            if field["required"] and "default" not in field:
                found.append(f"missing required parameter {name!r}")
            continue
        why = why_not(field["go"], metadata[name], field.get("enum"))
        if why is not None:
            found.append(f"{name}: {why}")
    return found


def test_the_record_is_the_scalers_struct():
    assert SPEC["origin"].startswith("kedacore/keda@v2.20.2 ") and SPEC["trigger"] == "prometheus"
    assert SPEC["fields"]["threshold"] == {"go": "float64", "required": True}
    # every default reads as its own type
    assert all(why_not(f["go"], f["default"], f.get("enum")) is None for f in SPEC["fields"].values() if "default" in f)


@pytest.mark.parametrize(
    ("go_type", "value", "ok"),
    [
        ("float64", "0.8", True),
        ("float64", "8", True),
        ("float64", "1e-3", True),
        ("float64", "800m", False),  # a Kubernetes quantity: what issue 34 #2 found
        ("float64", ".8", False),
        ("float64", "NaN", False),
        ("float64", '"0.8"', False),
        ("bool", "true", True),
        ("bool", "yes", False),
        ("time.Duration", "1m30s", True),
        ("time.Duration", "1500", True),
        ("time.Duration", "a minute", False),
        ("map[string]string", "a=b,c=d", True),
        ("map[string]string", "a", False),
    ],
)
def test_the_model_reads_as_go_does(go_type: str, value: str, ok: bool):
    assert (why_not(go_type, value) is None) is ok


def _served() -> dict[str, metrics.HpaMetric]:
    served = {**JETSTREAM_METRICS, **vllm_metrics.VLLM_METRICS}
    return {n: m for n, m in served.items() if m.origin in keda.ADAPTER.origins}


@pytest.mark.parametrize("name", sorted(_served()))
def test_every_trigger_the_stack_writes_is_typed_as_the_scaler_declares(name: str):
    scope = keda.Scope("p", "tpu-serving-s", "w", {"app": "w"}, pool="w")
    for target in FRACTIONS:
        trigger = keda.trigger(_served()[name], target, scope)
        assert problems(trigger) == [], (name, target)
        assert float(trigger["metadata"]["threshold"]) == target


def _triggers(rec: Any) -> list[dict[str, Any]]:
    return [t for so in rec.of_type(SCALED_OBJECT) for t in so.inputs["spec"]["triggers"]]


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_rendered_trigger_is_typed_as_the_scaler_declares(path: Path):
    for trigger in _triggers(recorded(path, False)):
        assert problems(trigger) == [], (path.name, trigger["name"])


def test_the_keda_example_at_fractional_targets(run):
    config = copy.deepcopy(load_stack_file(KEDA_EXAMPLE))
    (workload,) = config["tpu-serving:workloads"]
    for metric, target in zip(workload["autoscaling"]["metrics"], (0.8, 2.5), strict=True):
        metric["target"] = target
    triggers = _triggers(run(config, stack="vllm-single-host-keda"))
    assert [t["metadata"]["threshold"] for t in triggers] == ["0.8", "2.5"]
    assert all(problems(t) == [] for t in triggers)
