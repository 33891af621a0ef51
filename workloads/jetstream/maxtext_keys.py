"""The MaxText config keys of the pinned server image (maxtext_keys.json beside this file), and the check of a
workload's `maxtext` overrides against them."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stacks.problems import Problem, close_matches


@functools.cache
def maxtext_keys() -> dict[str, Any]:
    """maxtext_keys.json beside this file: the MaxText config keys of the pinned server image, extracted from MaxText's
    base config at the tag the image is built from (tooling/oracles/maxtext_keys.py records the origin)."""
    return json.loads((Path(__file__).with_name("maxtext_keys.json")).read_text())


def maxtext_key_problems(path: str, overrides: Mapping[str, Any]) -> list[Problem]:
    """Each `maxtext` key MaxText's base config does not have: MaxText refuses it at start (its pyconfig: "Key ... was
    passed at the command line but isn't in config")."""
    data = maxtext_keys()
    keys = set(data["keys"])
    return [
        Problem(
            f"{path}.maxtext.{key}",
            f"{key} is not a MaxText config key of the pinned server ({data['source']}), which refuses it at start; "
            f"{close_matches(key, keys)}",
        )
        for key in overrides
        if key not in keys
    ]
