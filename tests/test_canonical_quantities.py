"""Every memory quantity the stack writes is in the form the API server stores it (k8s.io/apimachinery
pkg/api/resource/quantity.go: a decimal-SI quantity is written back with the largest suffix that keeps it whole, so
`100000M` reads back `100G`). A LeaderWorkerSet's controller re-encodes its pod templates, so a non-canonical string
read back differently and every `pulumi preview` of llama2-70b-disaggregated showed a change (make e2e)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stacks.serving.workload_plan import memory_quantity
from tests.conftest import STACK_FILES, recorded
from tooling.review.render import stack_name

DECIMAL = re.compile(r"^([0-9]+)([kMGTPE]?)$")


def _memories(data: Any) -> list[str]:
    out = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("requests", "limits") and isinstance(value, dict) and isinstance(value.get("memory"), str):
                out.append(value["memory"])
            out += _memories(value)
    elif isinstance(data, list):
        for item in data:
            out += _memories(item)
    return out


def test_memory_quantity_is_the_api_servers_form() -> None:
    assert [memory_quantity(*a) for a in ((100000, "M"), (32000, "M"), (32500, "M"), (1000, "G"), (8, "G"))] == [
        "100G", "32G", "32500M", "1T", "8G"
    ]  # fmt: skip


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_every_decimal_memory_quantity_is_canonical(path: Path) -> None:
    for res in recorded(path, False).resources:
        if not res.type.startswith("kubernetes:") or res.type.endswith(":Release"):
            continue
        for value in _memories(res.inputs):
            match = DECIMAL.match(value)
            if match:
                assert memory_quantity(int(match.group(1)), match.group(2)) == value, (res.name, value)


def _quantities(data: Any, out: list[Any]) -> list[Any]:
    """Every value of a `requests` or `limits` map in `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("requests", "limits") and isinstance(value, dict):
                out += list(value.values())
            _quantities(value, out)
    elif isinstance(data, list):
        for item in data:
            _quantities(item, out)
    return out


@pytest.mark.parametrize("path", STACK_FILES, ids=stack_name)
def test_every_resource_quantity_is_written_as_the_string_it_reads_back(path: Path) -> None:
    """A resource.Quantity reads back as a string (k8s.io/apimachinery pkg/api/resource/quantity.go MarshalJSON):
    written as a number into a custom resource whose webhook or controller re-encodes it (LeaderWorkerSet's pod
    templates), it differs from the program's input at every preview (make e2e on ironwood: google.com/tpu 4 vs "4")."""
    for res in recorded(path, False).resources:
        if not res.type.startswith("kubernetes:") or res.type.endswith(":Release"):
            continue
        numbers = [v for v in _quantities(res.inputs, []) if isinstance(v, int | float) and not isinstance(v, bool)]
        assert not numbers, (res.name, numbers)
