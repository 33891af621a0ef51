"""Schemas of GKE custom resources whose CRD GKE installs itself and publishes only as a reference page.

Written from the documentation (no upstream file exists to download), strict: every object has
`additionalProperties: false`, so a misspelt or invented field fails offline. They cover the fields the stack
writes, not every field the API accepts; a field added here needs its source.

- ComputeClass (`cloud.google.com/v1`):
  C1 https://docs.cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass (spec.activeMigration,
  nodePoolAutoCreation, description, nodePoolConfig.serviceAccount/nodeLabels, priorityDefaults.location.zones,
  priorities[].machineType/spot/placement.policyName/reservations.affinity+specific[].name/project);
  C2 GKE's TPU ComputeClass samples (priorities[].tpu.type/count/topology, priorities[].flexStart.enabled).
- The multi-cluster Inference Gateway's objects (Preview; stacks/fleets/fleet.py F1, F2, F5), as the fleet stack writes
  them: HealthCheckPolicy and GCPBackendPolicy (`networking.gke.io/v1`) targeting a GCPInferencePoolImport, and
  AutoscalingMetric (`autoscaling.gke.io/v1beta1`). Their published CRDs (GoogleCloudPlatform/gke-gateway-api
  config/crd, at fc40d606a5332f11a8883f85caff66b63c4e88ef) predate the multi-cluster fields: that GCPBackendPolicy
  has no balancingMode, trafficDuration, customMetrics, scopes or capacityScalerPercent; no CRD of
  GCPInferencePoolImport or AutoscalingMetric is published. So these are written from F1/F2/F5 (tests/test_fleet.py
  checks each field the fleet writes is listed here with its source).
"""

from __future__ import annotations

from typing import Any

from stacks.fleets.fleet import METRIC_SELECTOR_KEY

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

_PERCENT = {"type": "integer", "minimum": 0, "maximum": 100}
# GCPBackendPolicy and HealthCheckPolicy targets (F1, F2: a GCPInferencePoolImport in the multi-cluster gateway)
_TARGET_REF = _obj({"group": _STR, "kind": _STR, "name": _STR}, ("group", "kind", "name"))
_BACKEND_POLICY_DEFAULT = _obj(
    {
        "timeoutSec": {"type": "integer", "minimum": 1, "maximum": 3600},  # F1 "up to 3600 seconds"
        "balancingMode": {"enum": ["RATE", "UTILIZATION", "CUSTOM_METRICS", "IN_FLIGHT"]},  # F1, F2
        "trafficDuration": {"enum": ["LONG", "SHORT"]},  # F1 (LONG)
        "customMetrics": {
            "type": "array",
            "items": _obj(
                {"name": _STR, "dryRun": _BOOL, "maxUtilizationPercent": _PERCENT}, ("name", "maxUtilizationPercent")
            ),
        },  # F1
        "scopes": {
            "type": "array",
            "items": _obj(
                {
                    "selector": _LABELS,
                    "backendPreference": {"enum": ["PREFERRED", "DEFAULT"]},  # F2
                    "capacityScalerPercent": _PERCENT,  # F2 (capacity scalers per scope), F5 (the name)
                    "maxRatePerEndpoint": {"type": "integer", "minimum": 0},  # F2
                },
                ("selector",),
            ),
        },
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
    ("networking.gke.io/v1", "GCPBackendPolicy"): _obj(
        {
            "apiVersion": {"const": "networking.gke.io/v1"},
            "kind": {"const": "GCPBackendPolicy"},
            "spec": _obj({"targetRef": _TARGET_REF, "default": _BACKEND_POLICY_DEFAULT}, ("targetRef",)),
        },
        ("apiVersion", "kind", "spec"),
    ),
    ("networking.gke.io/v1", "HealthCheckPolicy"): _obj(
        {
            "apiVersion": {"const": "networking.gke.io/v1"},
            "kind": {"const": "HealthCheckPolicy"},
            "spec": _obj(
                {
                    "targetRef": _TARGET_REF,
                    "default": _obj(
                        {
                            "config": _obj(
                                {
                                    "type": {"enum": ["HTTP", "HTTPS", "HTTP2", "GRPC", "TCP"]},
                                    "httpHealthCheck": _obj(
                                        {
                                            "requestPath": _STR,
                                            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                        }
                                    ),
                                },
                                ("type",),
                            )
                        }
                    ),
                },
                ("targetRef",),
            ),
        },
        ("apiVersion", "kind", "spec"),
    ),
    ("autoscaling.gke.io/v1beta1", "AutoscalingMetric"): _obj(
        {
            "apiVersion": {"const": "autoscaling.gke.io/v1beta1"},
            "kind": {"const": "AutoscalingMetric"},
            "spec": _obj(
                {
                    # G1 (stacks/fleets/fleet.py): selector label keys of letters, digits, hyphen and underscore only
                    "selector": _obj(
                        {"matchLabels": {**_LABELS, "propertyNames": {"pattern": METRIC_SELECTOR_KEY}}},
                        ("matchLabels",),
                    ),
                    "endpoints": {
                        "type": "array",
                        "items": _obj({"port": {"type": "integer", "minimum": 1, "maximum": 65535}, "path": _STR}),
                    },
                    "metrics": {
                        "type": "array",
                        "items": _obj({"name": _STR, "exportName": _STR}, ("name", "exportName")),
                    },
                },
                ("selector", "endpoints", "metrics"),
            ),
        },
        ("apiVersion", "kind", "spec"),
    ),
}
