"""The config as `pulumi config set --path` writes it: every value of every shipped stack file, set through `--path`,
configures the same stack, and the JSON Schema accepts it too (stacks/model/pulumi_path.py).

Source: pulumi/pulumi sdk/go/common/resource/config/object.go `coerce` (read at 1b5949891b, v3.259.0 + 14; the
pinned CLI is stacks/facts/versions.py PULUMI_CLI), which value.go `coerceObject` applies to every `--path` value set
without `--type` (map.go `Set`): "false" and "true" become booleans; a string of more than one character starting with
"0" stays a string; else one strconv.ParseInt (then ParseUint) accepts, base 10, becomes an integer; anything else
stays a string. `pulumi_coerce` below is that rule, so "0.8" for a number field reaches the program as the string
"0.8", and "123" for a string field as the integer 123.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from stacks.config import ConfigError
from stacks.model import pulumi_path
from tests.conftest import STACK_FILES, make_config, pool
from tooling.harness.offline import is_secure, load_stack_file, parse_config
from tooling.scans import fuzz

INT64 = (-(2**63), 2**64 - 1)  # ParseInt, then ParseUint


def pulumi_coerce(text: str) -> Any:
    """What `pulumi config set --path <key> <text>` stores at the key (module docstring)."""
    if text in ("true", "false"):
        return text == "true"
    if len(text) > 1 and text[0] == "0":
        return text
    if re.fullmatch(r"[+-]?[0-9]+", text) and INT64[0] <= int(text) <= INT64[1]:
        return int(text)
    return text


def typed(value: Any) -> str:
    """What a user types on the command line for `value` as the stack file has it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def as_path_set(node: Any, top: bool = True) -> Any:
    """Every scalar below a top-level key as `--path` would have stored it (a top-level scalar is stored as written;
    encrypted values stay)."""
    if isinstance(node, dict):
        if is_secure(node):
            return node
        return {k: as_path_set(v, top and False) for k, v in node.items()}
    if isinstance(node, list):
        return [as_path_set(v, False) for v in node]
    return node if node is None or top else pulumi_coerce(typed(node))


def shipped() -> list[Any]:
    return [p for p in STACK_FILES if "tpu-serving:fleet" not in load_stack_file(p)]


@pytest.mark.parametrize("path", shipped(), ids=lambda p: p.name)
def test_every_shipped_value_set_with_path_configures_the_same_stack(path):
    raw = load_stack_file(path)
    written = {k: as_path_set(v, top=not isinstance(v, dict | list)) for k, v in raw.items()}
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert repr(parse_config(written, stack)) == repr(parse_config(raw, stack))
    assert fuzz.schema_errors(written) == []


def test_the_rule_is_pulumis():
    assert [pulumi_coerce(t) for t in ("0.8", "true", "True", "on", "007", "0", "123", "-5", "1e3")] == [
        "0.8",
        True,
        "True",
        "on",
        "007",
        0,
        123,
        -5,
        "1e3",
    ]


def _vllm(target: Any = 8, **workload: Any) -> dict[str, Any]:
    return make_config(
        tpu_serving__environment="staging",
        tpu_serving__tpuPools=[pool(name="p", tpu="v6e", topology="2x2", zone="us-east5-b")],
        tpu_serving__workloads=[
            {
                "type": "vllm",
                "name": "chat",
                "pool": "p",
                "model": "gs://bucket/model",
                "autoscaling": {
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "metrics": [{"name": "vllm:num_requests_waiting", "target": target}],
                },
                **workload,
            }
        ],
    )


def test_a_number_field_takes_the_text_path_writes_and_only_a_decimal():
    """`--path ...metrics[0].target 0.8` stores "0.8": read as 0.8, and held to the field's range; a string that is no
    plain decimal (an exponent, hex, spaces, a sign where the minimum is 0) is refused as before, and the schema
    says the same of each."""
    cfg = parse_config(_vllm(pulumi_coerce("0.8")), "staging")
    assert cfg.workloads[0].workload.autoscaling.metrics[0].target == 0.8
    assert fuzz.schema_errors(_vllm("0.8")) == []
    for text in ("1e3", "0x10", " 1", ".5", "-0.5", "0.8 ", "on", "NaN"):
        with pytest.raises(ConfigError, match=re.escape(f"target: must be a number (got {text!r})")):
            parse_config(_vllm(text), "staging")
        assert fuzz.schema_errors(_vllm(text)), text


def test_a_string_field_takes_the_integer_path_writes_and_a_boolean_stays_strict():
    """`--path ...image 20240101` stores the integer 20240101: a plain string field reads it as its digits. A string
    field with a pattern (`revision`) does not: which integers a pattern admits, JSON Schema cannot say, so the program
    refuses it as the schema does (`--type string` stores the text). A boolean field still takes only true or false:
    "on", 1 and 0.0 are refused (and the schema refuses them)."""
    cfg = parse_config(_vllm(image=pulumi_coerce("20240101")), "staging")
    assert cfg.workloads[0].workload.image == "20240101"
    assert fuzz.schema_errors(_vllm(image=20240101)) == []
    with pytest.raises(ConfigError, match=r"revision: must be a string \(got 20240101\)"):
        parse_config(_vllm(revision=20240101), "staging")
    assert fuzz.schema_errors(_vllm(revision=20240101))
    for flag in ("on", 1, 0.0, "false"):
        bad = make_config(tpu_serving__environment="staging", tpu_serving__bucket={"accessLogs": flag})
        with pytest.raises(ConfigError, match=r"bucket\.accessLogs: must be true or false"):
            parse_config(bad, "staging")
        assert fuzz.schema_errors(bad), flag


def test_the_schema_takes_what_the_program_reads():
    """The alternatives the schema adds are exactly where the program converts: the same predicates."""
    schema = json.loads(fuzz_schema_text())
    target = schema["$defs"]["VllmHpaMetricConfig"]["properties"]["target"]
    assert {"type": "string", "pattern": pulumi_path.UNSIGNED, "$comment": pulumi_path.PATH_COMMENT} in target["anyOf"]
    assert copy.deepcopy(pulumi_path.INTEGER_TEXT) in schema["$defs"]["VllmWorkload"]["properties"]["image"]["anyOf"]


def fuzz_schema_text() -> str:
    from tooling.generate.json_schema import SCHEMA_PATH

    return SCHEMA_PATH.read_text()
