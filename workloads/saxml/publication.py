"""The model publication Job's program (publish_models.py beside this file, carried as text), how long it may
wait for the models to load, and the hash of the model list that names it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from workloads.saxml.plan import SaxmlPlan

# The model publication Job's program, run as `python3 -c` in the sax-http image: a module of its own, linted,
# type-checked and tested (tests/test_saxml_publish.py), whose text the Job carries.
PUBLISH_SCRIPT = (Path(__file__).parent / "publish_models.py").read_text()

LOAD_TIMEOUT_MINUTES = 55


def models_hash(plan: SaxmlPlan) -> str:
    return hashlib.sha256(json.dumps(plan.desired_models(), sort_keys=True).encode()).hexdigest()[:8]
