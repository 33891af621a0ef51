"""The JSON Schema of `Pulumi.<stack>.yaml`, generated from the config models so editors validate stack files.

    python -m tooling.generate.json_schema            # rewrite schema/stack-config.schema.json
    python -m tooling.generate.json_schema --check    # exit 1 if the committed schema is stale

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
from stacks.fleets.fleet import PATH as FLEET_KEY
from stacks.fleets.fleet import FleetConfig
from stacks.model import pulumi_path
from stacks.model.config_model import (
    AlertsConfig,
    BucketConfig,
    ClusterConfig,
    CostConfig,
    GatewayConfig,
    MonitoringConfig,
    TpuPoolConfig,
)
from stacks.model.local_target import LocalConfig
from stacks.model.profiles import PROFILES
from stacks.pieces.environment import GCP_PROJECT_RE
from tooling.harness.offline import ROOT
from workloads.registry import WORKLOAD_TYPES

SCHEMA_PATH = ROOT / "schema" / "stack-config.schema.json"
REF = "#/$defs/{model}"


def _model_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The model's schema, taking beside each number and plain string what `pulumi config set --path` writes for it,
    as the program does (stacks/model/pulumi_path.py)."""
    schema = TypeAdapter(tp).json_schema(by_alias=True, ref_template=REF, mode="validation")
    schema = pulumi_path.with_path_alternatives(schema)
    defs.update(schema.pop("$defs", {}))
    return schema


# gcp:project as the program checks it (stacks/pieces/environment.py GCP_PROJECT_RE).
PROJECT = {
    "type": "string",
    "pattern": f"^{GCP_PROJECT_RE.pattern}$",
    "description": "Google Cloud project id",
}
# A top-level boolean: `pulumi config set tpu-serving:paused true` writes the string "true", and the CLI hands the
# program every value as a string (pulumi==3.272.0 sdk/python/lib/pulumi/runtime/config.py get_config), which the
# program reads as JSON (stacks/pulumi_config.py raw_config): true and "true" are the same to it.
TOP_LEVEL_BOOLEAN = {"anyOf": [{"type": "boolean"}, {"enum": ["true", "false"]}]}


def _or_unset(schema: dict[str, Any]) -> dict[str, Any]:
    """A mapping or list key the program reads as unset when it is null (stacks/config.py _section)."""
    return {"anyOf": [schema, {"type": "null"}]}


def regional_properties(defs: dict[str, Any]) -> dict[str, Any]:
    """The keys of a regional stack (`pulumi up` builds the platform and its workloads)."""
    workload_refs = []
    for model in (t.config for t in WORKLOAD_TYPES.values()):
        defs[model.__name__] = _model_schema(model, defs)
        workload_refs.append({"$ref": REF.format(model=model.__name__)})
    return {
        "gcp:project": PROJECT,
        "gcp:region": {"type": "string", "description": "Region of the cluster, TPU pools and bucket"},
        f"{NS}:environment": {
            "enum": list(PROFILES),
            "description": "Safety profile: dev, staging or prod (stacks/model/profiles.py; docs/stack-config.md)",
        },
        f"{NS}:cluster": _or_unset(_model_schema(ClusterConfig, defs)),
        f"{NS}:bucket": _or_unset(_model_schema(BucketConfig, defs)),
        f"{NS}:tpuPools": _or_unset({"type": "array", "items": _model_schema(TpuPoolConfig, defs)}),
        f"{NS}:addons": _or_unset(_model_schema(addons.settings_model(), defs)),
        f"{NS}:monitoring": _or_unset(_model_schema(MonitoringConfig, defs)),
        f"{NS}:gateway": _or_unset(_model_schema(GatewayConfig, defs)),
        f"{NS}:cost": _or_unset(_model_schema(CostConfig, defs)),
        f"{NS}:alerts": _or_unset(_model_schema(AlertsConfig, defs)),
        f"{NS}:paused": {
            **TOP_LEVEL_BOOLEAN,
            "description": "Stop the spend without teardown: workloads at zero, TPU pools scale to zero; nothing "
            'deleted (docs/operations.md "Pause without teardown")',
            "default": False,
        },
        f"{NS}:decommission": {
            **TOP_LEVEL_BOOLEAN,
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
        f"{NS}:local": _or_unset(_model_schema(LocalConfig, defs)),
        f"{NS}:workloads": _or_unset(
            {
                "type": "array",
                "items": {"oneOf": workload_refs, "required": ["type"]},
                "description": f"Serving workloads; type is one of {', '.join(WORKLOAD_TYPES)}",
            }
        ),
    }


def fleet_properties(defs: dict[str, Any]) -> dict[str, Any]:
    """The keys of a fleet stack (a config with tpu-serving:fleet; components/fleet.py reads no other)."""
    return {
        "gcp:project": {**PROJECT, "description": "The fleet's host project: its memberships' project"},
        FLEET_KEY: _model_schema(FleetConfig, defs),
    }


def _only(properties: dict[str, Any], required: list[str], known: list[str]) -> dict[str, Any]:
    """A config branch: its keys, the required ones, and no other tpu-serving: key (other namespaces, pulumi: or
    gcp:zone, are allowed)."""
    return {
        "properties": properties,
        "required": required,
        "patternProperties": {f"^{NS}:(?!({'|'.join(known)})$)": False},
    }


def stack_config_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    regional = regional_properties(defs)
    fleet_keys = fleet_properties(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://tpu-serving.dev/schema/stack-config.schema.json",
        "title": "tpu-serving stack configuration (Pulumi.<stack>.yaml): a regional stack, or a fleet stack",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                # a config with tpu-serving:fleet is a fleet stack (__main__.py; docs/fleet.md), any other a
                # regional one
                "if": {"required": [FLEET_KEY]},
                "then": _only(fleet_keys, ["gcp:project", FLEET_KEY], ["fleet"]),
                "else": _only(regional, ["gcp:project", "gcp:region", f"{NS}:environment"], list(KNOWN_KEYS)),
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
        },
        "$defs": dict(sorted(defs.items())),
    }


def regional_key(schema: dict[str, Any], key: str) -> dict[str, Any]:
    """A regional stack's key in `schema` (stack_config_schema()), its mapping or list when it may also be null."""
    node = schema["properties"]["config"]["else"]["properties"][key]
    options = [o for o in node.get("anyOf", [node]) if o.get("type") != "null"]
    return options[0] if len(options) == 1 else node


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
