"""Schemas of GKE custom resources whose CRD GKE installs itself and publishes only as a reference page.

Written from the documentation (no upstream file exists to download), strict: every object has
`additionalProperties: false`, so a misspelt or invented field fails offline. They cover the fields the stack
writes, not every field the API accepts; a field added here needs its source.

- ComputeClass (`cloud.google.com/v1`):
  C1 https://docs.cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass (spec.activeMigration,
  nodePoolAutoCreation, description, nodePoolConfig.serviceAccount/nodeLabels, priorityDefaults.location.zones,
  priorities[].machineType/spot/placement.policyName/reservations.affinity+specific[].name/project);
  C2 GKE's TPU ComputeClass samples (priorities[].tpu.type/count/topology, priorities[].flexStart.enabled).
"""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_BOOL = {"type": "boolean"}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


_LABELS = {"type": "object", "additionalProperties": _STR}
_PRIORITY = _obj(
    {
        "machineType": _STR,
        "spot": _BOOL,
        "tpu": _obj({"type": _STR, "count": {"type": "integer"}, "topology": _STR}, ("type", "count", "topology")),
        "placement": _obj({"policyName": _STR}, ("policyName",)),
        "reservations": _obj(
            {
                "affinity": {"enum": ["Specific", "AnyBestEffort", "None"]},
                "specific": {"type": "array", "items": _obj({"name": _STR, "project": _STR}, ("name",))},
            },
            ("affinity",),
        ),
        "flexStart": _obj({"enabled": _BOOL}, ("enabled",)),
    }
)

# (apiVersion, kind) -> schema of the object without metadata (validated like a CRD's openAPIV3Schema).
SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("cloud.google.com/v1", "ComputeClass"): _obj(
        {
            "apiVersion": {"const": "cloud.google.com/v1"},
            "kind": {"const": "ComputeClass"},
            "spec": _obj(
                {
                    "description": _STR,
                    "priorities": {"type": "array", "items": _PRIORITY, "minItems": 1},
                    "priorityDefaults": _obj({"location": _obj({"zones": {"type": "array", "items": _STR}})}),
                    "nodePoolAutoCreation": _obj({"enabled": _BOOL}),
                    "activeMigration": _obj({"optimizeRulePriority": _BOOL}),
                    "nodePoolConfig": _obj({"serviceAccount": _STR, "nodeLabels": _LABELS}),
                },
                ("priorities",),
            ),
        },
        ("apiVersion", "kind", "spec"),
    ),
}
