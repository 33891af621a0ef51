"""Google's API schemas (discovery documents) for what the stack sends: the dashboard JSON and enum-valued inputs.

google-api-python-client ships each API's discovery document (`googleapiclient/discovery_cache/documents/
<api>.<version>.json`). `python -m tooling.oracles.api_schemas --wheel <google_api_python_client-*.whl>` (or `--download
<folder>`: pip downloads the pinned VERSION first) keeps, from the documents the provider calls (container v1beta1
and compute beta: terraform-provider-google-beta uses the beta APIs; monitoring v1 and v3; billingbudgets v1;
storage v1), the schemas reachable from the resources the stack creates, without their prose,
in tooling/data/api_schemas.json with the wheel's version and path, so the tests need no extra package.

- `dashboard_errors`: the dashboard JSON (stacks/monitoring/dashboard.py) strictly against monitoring v1 `Dashboard`: unknown
  fields, types, int32 ranges, enums, "Required." fields, the proto oneofs (ONEOFS) and the mosaic geometry.
- `body_errors`: the alert policies, notification channels, custom services, SLOs and the budget, as the provider
  sends them (`api_body`: its renames and URL parameters, BODIES), strictly against monitoring v3 and
  billingbudgets v1.
- `enum_errors`: each enum-valued input of the cluster, node pools, network, subnetworks, router NAT and bucket
  against the API field it becomes (the same path in the API resource, or ALIASES where the provider renames or
  flattens it; URL_PARAMETERS and NO_API_FIELD inputs have no field in the body).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data" / "api_schemas.json"
PACKAGE = "google-api-python-client"
VERSION = "2.202.0"  # the wheel the data was read from (regenerate after changing it)
DOCUMENTS_PATH = "googleapiclient/discovery_cache/documents/"
# document -> the resource schemas the stack sends (everything they reference is kept too)
ROOTS: dict[str, tuple[str, ...]] = {
    "monitoring.v1": ("Dashboard",),
    # the release gate's log-based metrics (components/monitoring.py, stacks/serving/benchmark_metrics.py)
    "logging.v2": ("LogMetric",),
    # the alerts piece and cost attribution (components/alerts.py, components/cost.py)
    "monitoring.v3": ("AlertPolicy", "NotificationChannel", "Service", "ServiceLevelObjective"),
    "billingbudgets.v1": ("GoogleCloudBillingBudgetsV1Budget",),
    "container.v1beta1": ("Cluster", "NodePool"),
    "compute.beta": ("Network", "Subnetwork", "Router", "RouterNat"),
    "storage.v1": ("Bucket",),
    # what `make preflight` and `make maintenance` read back from gcloud (tooling/operations/preflight.py, tooling/operations/host_maintenance.py)
    "compute.v1": ("Region", "Reservation", "Instance"),
    "container.v1": ("ServerConfig",),
    "serviceusage.v1": ("GoogleApiServiceusageV1Service",),
    "cloudresourcemanager.v1": ("Policy",),
    "orgpolicy.v2": ("GoogleCloudOrgpolicyV2Policy",),
}
_KEEP = ("type", "$ref", "items", "properties", "additionalProperties", "enum", "format", "readOnly")


def _slim(node: Any) -> Any:
    """A schema without prose: its structure, enums, formats, and `required` where the description says so."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key in _KEEP:
        if key not in node:
            continue
        value = node[key]
        if key == "properties":
            value = {k: _slim(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties"):
            value = _slim(value)
        out[key] = value
    if str(node.get("description", "")).startswith("Required."):
        out["required"] = True
    return out


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


# Descriptions that list a string field's values where the document has no enum (storage v1), kept verbatim:
# DESCRIBED_VALUES below must each appear in them.
DESCRIBED = {
    "storage.v1": (
        "Bucket.storageClass",
        "Bucket.iamConfiguration.publicAccessPrevention",
        "Bucket.lifecycle.rule.action.type",
    ),
}


def _described(doc: dict[str, Any], dotted: str) -> str:
    node: Any = doc["schemas"][dotted.split(".")[0]]
    for part in dotted.split(".")[1:]:
        node = node["properties"][part]
        node = node.get("items", node)
    return str(node["description"])


def extract(wheel: Path) -> dict[str, Any]:
    version = re.match(r"google_api_python_client-([^-]+)-", wheel.name)
    out: dict[str, Any] = {
        "source": {"package": PACKAGE, "version": version.group(1) if version else "?", "path": DOCUMENTS_PATH},
        "documents": {},
    }
    with zipfile.ZipFile(wheel) as zf:
        for name, roots in ROOTS.items():
            doc = json.loads(zf.read(f"{DOCUMENTS_PATH}{name}.json"))
            schemas, todo = {}, list(roots)
            while todo:
                ref = todo.pop()
                if ref in schemas:
                    continue
                schemas[ref] = _slim(doc["schemas"][ref])
                todo.extend(_refs(doc["schemas"][ref]))
            out["documents"][name] = {
                "revision": doc.get("revision"),
                "schemas": dict(sorted(schemas.items())),
                "descriptions": {d: _described(doc, d) for d in DESCRIBED.get(name, ())},
            }
    return out


@cache
def data() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def schema(document: str, name: str) -> dict[str, Any]:
    return data()["documents"][document]["schemas"][name]


# ---- strict validation ----------------------------------------------------------------------------------------

INT32 = (-(2**31), 2**31 - 1)
DURATION = re.compile(r"-?\d+(\.\d{1,9})?s")  # google-duration: JSON Duration, seconds with an "s" suffix
# Proto oneofs (a discovery document lists their members as plain optional fields): at most one member is set.
# googleapis/googleapis google/monitoring/dashboard/v1: dashboard.proto `oneof layout`; widget.proto `oneof
# content` (every widget kind: the discovery document's Widget fields other than title, id, timeRange and
# visibilityCondition, which sit outside it); metrics.proto TimeSeriesQuery `oneof source` (filter, ratio, MQL,
# PromQL, SQL) and TimeSeriesFilter/TimeSeriesFilterRatio `oneof output_filter`; scorecard.proto `oneof data_view`.
_WIDGET_NOT_CONTENT = {"title", "id", "timeRange", "visibilityCondition"}
ONEOFS: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {
    ("monitoring.v1", "Dashboard"): {"layout": ("gridLayout", "mosaicLayout", "rowLayout", "columnLayout")},
    ("monitoring.v1", "TimeSeriesQuery"): {
        "source": (
            "timeSeriesFilter",
            "timeSeriesFilterRatio",
            "timeSeriesQueryLanguage",
            "prometheusQuery",
            "opsAnalyticsQuery",
        )
    },
    ("monitoring.v1", "TimeSeriesFilter"): {"output_filter": ("pickTimeSeriesFilter", "statisticalTimeSeriesFilter")},
    ("monitoring.v1", "TimeSeriesFilterRatio"): {
        "output_filter": ("pickTimeSeriesFilter", "statisticalTimeSeriesFilter")
    },
    ("monitoring.v1", "Scorecard"): {"data_view": ("gaugeView", "sparkChartView", "blankView")},
    # compute v1 Reservation: "Union field type can be only one of the following: specificReservation,
    # aggregateReservation" (https://cloud.google.com/compute/docs/reference/rest/v1/reservations, JSON
    # representation); what `make preflight` reads back (tooling/operations/preflight.py RESERVATION_KINDS: one per member).
    ("compute.v1", "Reservation"): {"type": ("specificReservation", "aggregateReservation")},
}


def widget_kinds() -> tuple[str, ...]:
    return tuple(sorted(set(schema("monitoring.v1", "Widget")["properties"]) - _WIDGET_NOT_CONTENT))


def _oneofs(document: str, name: str) -> dict[str, tuple[str, ...]]:
    if (document, name) == ("monitoring.v1", "Widget"):
        return {"content": widget_kinds()}
    return ONEOFS.get((document, name), {})


def validate(document: str, node: dict[str, Any], value: Any, where: str, out: list[str], ref: str = "") -> None:
    """Strictly: unknown fields, types, int32, enums, google-duration, "Required." fields, oneofs."""
    if "$ref" in node:
        validate(document, schema(document, node["$ref"]), value, where, out, node["$ref"])
        return
    kind = node.get("type")
    here = where or "(root)"
    if kind == "object" or "properties" in node:
        if not isinstance(value, dict):
            out.append(f"{here}: {value!r} is not an object")
            return
        props = node.get("properties")
        for key, item in value.items():
            sub = props.get(key) if props is not None else node.get("additionalProperties")
            if sub is None:
                out.append(f"{where}.{key}".lstrip(".") + f": not a field of {ref or 'this object'}")
            else:
                validate(document, sub, item, f"{where}.{key}".lstrip("."), out)
        for key, sub in (props or {}).items():
            if sub.get("required") and key not in value:
                out.append(f"{where}.{key}".lstrip(".") + f": required in {ref or 'this object'}")
        for oneof, members in _oneofs(document, ref).items():
            if len(set_ := [m for m in members if m in value]) > 1:
                out.append(f"{here}: oneof {oneof} of {ref} has {len(set_)} members set ({', '.join(set_)})")
    elif kind == "array":
        if not isinstance(value, list):
            out.append(f"{here}: {value!r} is not a list")
            return
        for i, item in enumerate(value):
            validate(document, node.get("items", {}), item, f"{where}[{i}]", out)
    elif kind == "string":
        if not isinstance(value, str):
            if node.get("format") in ("int64", "uint64") and type(value) is int:
                return
            out.append(f"{here}: {value!r} is not a string")
        elif "enum" in node and value not in node["enum"]:
            out.append(f"{here}: {value!r} is not one of {node['enum']}")
        elif node.get("format") == "google-duration" and not DURATION.fullmatch(value):
            out.append(f"{here}: {value!r} is not a duration ('<seconds>s')")
    elif kind == "integer":
        if type(value) is not int:
            out.append(f"{here}: {value!r} is not an integer")
        elif node.get("format") == "int32" and not INT32[0] <= value <= INT32[1]:
            out.append(f"{here}: {value} is outside int32")
    elif kind == "number":
        if type(value) not in (int, float):
            out.append(f"{here}: {value!r} is not a number")
    elif kind == "boolean" and type(value) is not bool:
        out.append(f"{here}: {value!r} is not a boolean")


# MosaicLayout (monitoring v1 discovery document, revision in the data): "The number of columns must be between 1
# and 48, inclusive"; Tile: "Tiles must have a minimum width of 1" / "minimum height of 1", "x_pos cannot be
# negative", "y_pos cannot be negative", "Tiles must be contained within the specified number of columns". The
# API drops zero values (stacks/dashboard.api_shape), so an absent xPos/yPos is 0 and an absent width/height is 0.
MOSAIC_COLUMNS = (1, 48)


def mosaic_errors(layout: dict[str, Any]) -> list[str]:
    out: list[str] = []
    columns = layout.get("columns", 0)
    if type(columns) is not int:
        return out  # reported as a type error
    if not MOSAIC_COLUMNS[0] <= columns <= MOSAIC_COLUMNS[1]:
        out.append(f"mosaicLayout.columns: {columns} is not in {MOSAIC_COLUMNS[0]}..{MOSAIC_COLUMNS[1]}")
    for i, tile in enumerate(layout.get("tiles") or []):
        x, y, w, h = (tile.get(k, 0) for k in ("xPos", "yPos", "width", "height"))
        if not all(type(v) is int for v in (x, y, w, h)):
            continue  # reported as a type error
        where = f"mosaicLayout.tiles[{i}]"
        if w < 1 or h < 1:
            out.append(f"{where}: width {w} and height {h} must be at least 1")
        if x < 0 or y < 0:
            out.append(f"{where}: xPos {x} and yPos {y} cannot be negative")
        if x + w > columns:
            out.append(f"{where}: xPos {x} + width {w} is past the {columns} columns")
    return out


def dashboard_errors(dashboard_json: str) -> list[str]:
    """What the Monitoring API would refuse in a dashboard's JSON (the provider sends it as the request body)."""
    body = json.loads(dashboard_json)
    out: list[str] = []
    validate("monitoring.v1", {"$ref": "Dashboard"}, body, "", out)
    if isinstance(body.get("mosaicLayout"), dict):
        out.extend(mosaic_errors(body["mosaicLayout"]))
    return out


# ---- enum-valued inputs ---------------------------------------------------------------------------------------

# Pulumi type -> (document, the API schema its inputs become)
API_RESOURCES: dict[str, tuple[str, str]] = {
    "gcp:container/cluster:Cluster": ("container.v1beta1", "Cluster"),
    "gcp:container/nodePool:NodePool": ("container.v1beta1", "NodePool"),
    "gcp:compute/network:Network": ("compute.beta", "Network"),
    "gcp:compute/subnetwork:Subnetwork": ("compute.beta", "Subnetwork"),
    "gcp:compute/router:Router": ("compute.beta", "Router"),
    "gcp:compute/routerNat:RouterNat": ("compute.beta", "RouterNat"),
    "gcp:storage/bucket:Bucket": ("storage.v1", "Bucket"),
}
# Inputs the provider renames or moves: (type, input path or path prefix, lists stepped through) -> API path from
# the root (`*`: a map's value). The longest matching key applies. Sources: google-beta resource_container_cluster.go
# (expandClusterNetworkConfig, expandMaintenancePolicy, expandLoggingConfig/expandMonitoringConfig,
# min_master_version -> initialClusterVersion), resource_container_node_pool.go (node_config -> config,
# node_locations -> locations), resource_compute_network.go (routing_mode -> routingConfig.routingMode),
# resource_compute_router_nat.go, resource_storage_bucket.go (lifecycle_rule -> lifecycle.rule, matches_prefix ->
# matchesPrefix, public_access_prevention -> iamConfiguration.publicAccessPrevention).
_CLUSTER, _POOL = "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"
_EXCLUSIONS = "maintenancePolicy.maintenanceExclusions"
ALIASES: dict[tuple[str, str], str] = {
    (_CLUSTER, "datapathProvider"): "networkConfig.datapathProvider",
    (_CLUSTER, "gatewayApiConfig"): "networkConfig.gatewayApiConfig",
    (_CLUSTER, "loggingConfig.enableComponents"): "loggingConfig.componentConfig.enableComponents",
    (_CLUSTER, "monitoringConfig.enableComponents"): "monitoringConfig.componentConfig.enableComponents",
    (_CLUSTER, "minMasterVersion"): "initialClusterVersion",
    (_CLUSTER, f"{_EXCLUSIONS}.exclusionName"): "maintenancePolicy.window.maintenanceExclusions",  # the map's key
    (_CLUSTER, _EXCLUSIONS): "maintenancePolicy.window.maintenanceExclusions.*",
    (_CLUSTER, f"{_EXCLUSIONS}.exclusionOptions"): "maintenancePolicy.window.maintenanceExclusions.*"
    ".maintenanceExclusionOptions",
    # google-beta resource_container_cluster.go expandMaintenancePolicy: recurring_window becomes
    # MaintenancePolicy.window.recurringWindow {window: TimeWindow{startTime, endTime}, recurrence}
    (_CLUSTER, "maintenancePolicy.recurringWindow.recurrence"): "maintenancePolicy.window.recurringWindow.recurrence",
    (_CLUSTER, "maintenancePolicy.recurringWindow.startTime"): "maintenancePolicy.window.recurringWindow.window"
    ".startTime",
    (_CLUSTER, "maintenancePolicy.recurringWindow.endTime"): "maintenancePolicy.window.recurringWindow.window.endTime",
    (_POOL, "nodeConfig"): "config",
    (_POOL, "nodeLocations"): "locations",
    ("gcp:compute/network:Network", "routingMode"): "routingConfig.routingMode",
    ("gcp:compute/routerNat:RouterNat", "subnetworks.sourceIpRangesToNats"): "subnetworks.sourceIpRangesToNat",
    ("gcp:storage/bucket:Bucket", "publicAccessPrevention"): "iamConfiguration.publicAccessPrevention",
    ("gcp:storage/bucket:Bucket", "lifecycleRules"): "lifecycle.rule",
    ("gcp:storage/bucket:Bucket", "lifecycleRules.condition.matchesPrefixes"): "lifecycle.rule.condition.matchesPrefix",
}
# Inputs with no field in the API resource's body: the request URL's parameters (project, location, region, the
# parent cluster or router), and provider-only inputs (networkingMode -> ipAllocationPolicy.useIpAliases;
# insecureKubeletReadonlyPortEnabled "TRUE"/"FALSE" -> a boolean; lifecycle withState -> isLive).
URL_PARAMETERS = {"project", "location", "region", "cluster", "router"}
NO_API_FIELD: dict[str, set[str]] = {
    _CLUSTER: {"networkingMode", "nodeConfig.kubeletConfig.insecureKubeletReadonlyPortEnabled"},
    _POOL: {"nodeConfig.kubeletConfig.insecureKubeletReadonlyPortEnabled"},
    "gcp:storage/bucket:Bucket": {"lifecycleRules.condition.withState"},
}
# storage v1 lists these values in descriptions only (kept in the data; a test checks each value appears there).
DESCRIBED_VALUES: dict[tuple[str, str], tuple[str, ...]] = {
    ("storage.v1", "Bucket.storageClass"): (
        "STANDARD",
        "NEARLINE",
        "COLDLINE",
        "ARCHIVE",
        "MULTI_REGIONAL",
        "REGIONAL",
        "DURABLE_REDUCED_AVAILABILITY",
    ),
    ("storage.v1", "Bucket.iamConfiguration.publicAccessPrevention"): ("inherited", "enforced"),
    ("storage.v1", "Bucket.lifecycle.rule.action.type"): (
        "Delete",
        "SetStorageClass",
        "AbortIncompleteMultipartUpload",
    ),
}


def api_field(document: str, root: str, api_path: str) -> dict[str, Any] | None:
    """The schema of the field at a dotted API path (`*`: a map's value; list items are stepped through)."""
    node: dict[str, Any] = schema(document, root)
    for part in api_path.split("."):
        while "$ref" in node or node.get("type") == "array":
            node = schema(document, node["$ref"]) if "$ref" in node else node.get("items", {})
        if part == "*":
            node = node.get("additionalProperties") or {}
            continue
        props = node.get("properties") or {}
        if part not in props:
            return None
        node = props[part]
    while "$ref" in node:
        node = schema(document, node["$ref"])
    return node


def api_path(type_: str, input_path: str) -> str:
    """The API path an input becomes (ALIASES, longest matching key first)."""
    for (t, key), target in sorted(ALIASES.items(), key=lambda kv: -len(kv[0][1])):
        if t == type_ and (input_path == key or input_path.startswith(key + ".")):
            return target + input_path[len(key) :]
    return input_path


def allowed_values(type_: str, input_path: str) -> tuple[str, ...] | None | bool:
    """The values the API allows for an input (a tuple); None for a free-form API field; False when the input has
    no API field."""
    document, root = API_RESOURCES[type_]
    if input_path in URL_PARAMETERS or input_path in NO_API_FIELD.get(type_, set()):
        return False
    path = api_path(type_, input_path)
    described = DESCRIBED_VALUES.get((document, f"{root}.{path}"))
    if described:
        return described
    node = api_field(document, root, path)
    if node is None:
        parent = api_field(document, root, path.rpartition(".")[0]) if "." in path else None
        return None if parent is not None and "additionalProperties" in parent else False  # a map's key
    enum = node.get("enum") or (node.get("items") or {}).get("enum")
    return tuple(enum) if enum else None


def string_inputs(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(input path without list indices, value) of every string an input holds."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from string_inputs(value, f"{path}.{key}".lstrip("."))
    elif isinstance(node, list):
        for value in node:
            yield from string_inputs(value, path)
    elif isinstance(node, str):
        yield path, node


def enum_errors(type_: str, inputs: dict[str, Any], unknown: str) -> list[str]:
    """Each string input whose API field is an enum holds one of its values; an input that maps to no API field
    (and is not a URL parameter or in NO_API_FIELD) is reported, so a new input is classified before it ships."""
    out = []
    for path, value in string_inputs(inputs):
        allowed = allowed_values(type_, path)
        if allowed is False:
            if path not in URL_PARAMETERS and path not in NO_API_FIELD.get(type_, set()):
                out.append(f"{path}: no API field in {API_RESOURCES[type_][1]} (add it to ALIASES or NO_API_FIELD)")
        elif isinstance(allowed, tuple) and value != unknown and value not in allowed:
            out.append(f"{path}: {value!r} is not one of {list(allowed)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", type=Path, help="a google_api_python_client-<version>-*.whl")
    ap.add_argument("--download", type=Path, help=f"pip download {PACKAGE}=={VERSION} into this folder and read it")
    ap.add_argument("--out", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.download:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(args.download)]
        subprocess.run([*pip, f"{PACKAGE}=={VERSION}"], check=True)
        args.wheel = next(args.download.glob(f"google_api_python_client-{VERSION}-*.whl"))
    if args.wheel is None:
        ap.error("give --wheel or --download")
    result = extract(args.wheel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# ---- the alerts' and the budget's request bodies ------------------------------------------------------------------

_SLO, _BUDGET = "gcp:monitoring/slo:Slo", "gcp:billing/budget:Budget"
# Pulumi type -> (document, schema of the body the provider sends), the inputs that are the request URL's (not in the
# body), and the provider's renames. Sources, hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/:
# monitoring/resource_monitoring_slo.go (rolling_period_days -> rollingPeriod "<days*86400>s", request_based_sli ->
# serviceLevelIndicator.requestBased; service and slo_id in the URL), monitoring/resource_monitoring_custom_service.go
# (service_id -> the URL's serviceId; `custom: {}` added by its encoder), billingbudgets/resource_billing_budget.go
# (all_updates_rule -> notificationsRule; budget_filter.labels map[string][]string; billing_account in the URL).
BODIES: dict[str, tuple[str, str, frozenset[str]]] = {
    "gcp:monitoring/alertPolicy:AlertPolicy": ("monitoring.v3", "AlertPolicy", frozenset({"project"})),
    "gcp:monitoring/notificationChannel:NotificationChannel": (
        "monitoring.v3",
        "NotificationChannel",
        frozenset({"project"}),
    ),
    "gcp:monitoring/customService:CustomService": ("monitoring.v3", "Service", frozenset({"project", "serviceId"})),
    _SLO: ("monitoring.v3", "ServiceLevelObjective", frozenset({"project", "service", "sloId"})),
    _BUDGET: ("billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget", frozenset({"billingAccount"})),
    # google-beta services/logging/resource_logging_metric.go: its fields are the API's (project in the URL)
    "gcp:logging/metric:Metric": ("logging.v2", "LogMetric", frozenset({"project"})),
}


def _integral(value: Any) -> Any:
    """Mocks record numbers as floats: a whole float back to an int (the API's integers). A value another resource
    computes is None where the mocks computed nothing: left out (nothing to check); in a preview it is a string
    (tooling.harness.offline.UNKNOWN), kept: a string field that is there."""
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_integral(v) for v in value if v is not None]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def api_body(type_: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The request body the provider makes of a resource's recorded (camelCase) inputs."""
    _, _, url = BODIES[type_]
    body = {k: v for k, v in inputs.items() if k not in url}
    if type_ == _SLO:
        if "rollingPeriodDays" in body:
            body["rollingPeriod"] = f"{int(body.pop('rollingPeriodDays')) * 86400}s"
        if "requestBasedSli" in body:
            body["serviceLevelIndicator"] = {"requestBased": body.pop("requestBasedSli")}
    elif type_ == _BUDGET:
        if "allUpdatesRule" in body:
            body["notificationsRule"] = body.pop("allUpdatesRule")
        labels = body.get("budgetFilter", {}).get("labels")
        if labels:
            body["budgetFilter"] = {**body["budgetFilter"], "labels": {k: [v] for k, v in labels.items()}}
    elif type_ == "gcp:monitoring/customService:CustomService":
        body.setdefault("custom", {})
    return _integral(body)


def body_errors(type_: str, inputs: dict[str, Any]) -> list[str]:
    """The body the provider sends, strictly against its API schema (validate)."""
    document, root, _ = BODIES[type_]
    out: list[str] = []
    validate(document, {"$ref": root}, api_body(type_, inputs), "", out)
    return out
