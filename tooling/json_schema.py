"""The JSON Schema of `Pulumi.<stack>.yaml`, generated from the config models so editors validate stack files.

    python -m tooling.json_schema            # rewrite schema/stack-config.schema.json
    python -m tooling.json_schema --check    # exit 1 if the committed schema is stale

The schema checks shapes and enums; the cross-field rules (catalog, zones, pools) stay in stacks/config.py
and stacks/pieces/.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import TypeAdapter

from stacks import addons
from stacks.config import KNOWN_KEYS, NS
from stacks.config_model import (
    BucketConfig,
    ClusterConfig,
    CostConfig,
    GatewayConfig,
    MonitoringConfig,
    TpuPoolConfig,
)
from stacks.local_target import LocalConfig
from stacks.profiles import PROFILES
from tooling.offline import ROOT
from workloads.registry import WORKLOAD_TYPES

SCHEMA_PATH = ROOT / "schema" / "stack-config.schema.json"
REF = "#/$defs/{model}"


def _model_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    schema = TypeAdapter(tp).json_schema(by_alias=True, ref_template=REF, mode="validation")
    defs.update(schema.pop("$defs", {}))
    return schema


def stack_config_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    workload_refs = []
    for model in (t.config for t in WORKLOAD_TYPES.values()):
        defs[model.__name__] = _model_schema(model, defs)
        workload_refs.append({"$ref": REF.format(model=model.__name__)})
    properties: dict[str, Any] = {
        "gcp:project": {"type": "string", "description": "Google Cloud project id"},
        "gcp:region": {"type": "string", "description": "Region of the cluster, TPU pools and bucket"},
        f"{NS}:environment": {
            "enum": list(PROFILES),
            "description": "Safety profile: dev, staging or prod (stacks/profiles.py; docs/stack-config.md)",
        },
        f"{NS}:cluster": _model_schema(ClusterConfig, defs),
        f"{NS}:bucket": _model_schema(BucketConfig, defs),
        f"{NS}:tpuPools": {"type": "array", "items": _model_schema(TpuPoolConfig, defs)},
        f"{NS}:addons": _model_schema(addons.settings_model(), defs),
        f"{NS}:monitoring": _model_schema(MonitoringConfig, defs),
        f"{NS}:gateway": _model_schema(GatewayConfig, defs),
        f"{NS}:cost": _model_schema(CostConfig, defs),
        f"{NS}:paused": {
            "type": "boolean",
            "description": "Stop the spend without teardown: workloads at zero, TPU pools scale to zero; nothing "
            'deleted (docs/operations.md "Pause without teardown")',
            "default": False,
        },
        f"{NS}:decommission": {
            "type": "boolean",
            "description": "Lift staging/prod protection on purpose so `pulumi destroy` can retire the stack",
            "default": False,
        },
        f"{NS}:hfToken": {
            # only as a secret: `pulumi config set --secret` writes {secure: <ciphertext>}
            "type": "object",
            "properties": {"secure": {"type": "string", "description": "The ciphertext Pulumi writes"}},
            "required": ["secure"],
            "additionalProperties": False,
            "description": "Hugging Face token for gated models, set only as a secret (`pulumi config set --secret`); "
            "vLLM workloads read it from a Kubernetes Secret",
        },
        f"{NS}:local": _model_schema(LocalConfig, defs),
        f"{NS}:workloads": {
            "type": "array",
            "items": {"oneOf": workload_refs, "required": ["type"]},
            "description": f"Serving workloads; type is one of {', '.join(WORKLOAD_TYPES)}",
        },
    }
    known = "|".join(KNOWN_KEYS)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://tpu-serving.dev/schema/stack-config.schema.json",
        "title": "tpu-serving stack configuration (Pulumi.<stack>.yaml)",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": properties,
                "required": ["gcp:project", "gcp:region", f"{NS}:environment"],
                # other namespaces (pulumi:, gcp:zone, ...) are allowed; unknown tpu-serving: keys are not
                "patternProperties": {f"^{NS}:(?!({known})$)": False},
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": dict(sorted(defs.items())),
    }


def render_schema() -> str:
    return json.dumps(stack_config_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the committed schema differs from the models")
    args = parser.parse_args(argv)
    text = render_schema()
    if args.check:
        if not SCHEMA_PATH.exists() or SCHEMA_PATH.read_text() != text:
            print(f"{SCHEMA_PATH.relative_to(ROOT)} is stale: run `make schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA_PATH.parent.mkdir(exist_ok=True)
    SCHEMA_PATH.write_text(text)
    print(f"wrote {SCHEMA_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
