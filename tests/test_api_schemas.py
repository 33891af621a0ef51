"""Google's API schemas (tooling/oracles/api_schemas.py, tooling/data/api_schemas.json from google-api-python-client's
discovery documents): every shipped stack's dashboard JSON is a valid monitoring v1 Dashboard, strictly; its alert
policies, notification channels, custom services, SLOs and budget valid monitoring v3 / billingbudgets v1 bodies; and every
enum-valued input of the cluster, node pools, network, subnetworks, router NAT and bucket is one of its API field's
values (issue 22)."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from stacks.monitoring import dashboard
from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import plain
from tooling.harness.offline import UNKNOWN
from tooling.oracles import api_schemas as api
from tooling.oracles import provider_schema

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"


def test_the_data_records_its_source():
    data = api.data()
    assert data["source"] == {
        "package": "google-api-python-client",
        "version": api.VERSION,
        "path": "googleapiclient/discovery_cache/documents/",
    }
    assert sorted(data["documents"]) == sorted(api.ROOTS)
    for name, roots in api.ROOTS.items():
        assert data["documents"][name]["revision"]
        assert set(roots) <= set(data["documents"][name]["schemas"])


def test_described_values_appear_in_the_descriptions():
    """storage v1 has no enums: each value we allow is one its field's description names."""
    for (document, field), values in api.DESCRIBED_VALUES.items():
        description = api.data()["documents"][document]["descriptions"][field]
        assert all(v in description for v in values), (field, description)


def _dashboards(path, preview):
    return [plain(r.inputs)["dashboardJson"] for r in recorded(path, preview).of_type(DASHBOARD)]


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_shipped_dashboards_are_valid_monitoring_dashboards(path):
    boards = _dashboards(path, False)
    assert boards, "every shipped stack has its dashboard"
    for body in boards:
        assert api.dashboard_errors(body) == []
        tiles = json.loads(body)["mosaicLayout"]["tiles"]
        # ours, beyond the API: every tile shows exactly one widget kind, and no two tiles overlap
        kinds = set(api.widget_kinds())
        assert all(len(kinds & set(t["widget"])) == 1 for t in tiles)
        cells = [
            (x, y)
            for t in tiles
            for x in range(t.get("xPos", 0), t.get("xPos", 0) + t["width"])
            for y in range(t.get("yPos", 0), t.get("yPos", 0) + t["height"])
        ]
        assert len(cells) == len(set(cells)), "tiles overlap"


@pytest.mark.parametrize("preview", [True, False], ids=["preview", "up"])
@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_shipped_stacks_send_enum_values_the_apis_accept(path, preview):
    checked = 0
    for reg in recorded(path, preview).resources:
        if reg.type in api.API_RESOURCES:
            inputs = plain(reg.inputs)
            assert api.enum_errors(reg.type, inputs, UNKNOWN) == [], reg.name
            checked += sum(isinstance(api.allowed_values(reg.type, p), tuple) for p, _ in api.string_inputs(inputs))
    assert checked >= 15


@pytest.mark.parametrize("path", STACK_FILES[:2], ids=lambda p: p.name)
def test_every_input_the_provider_enum_validates_is_checked_against_the_api(path):
    """The two oracles together: an input whose provider field has an enum validator either maps to an API enum
    here, or has no API field (NO_API_FIELD: the provider's own values are all there is)."""
    for reg in recorded(path, False).resources:
        if reg.type not in api.API_RESOURCES:
            continue
        names = provider_schema.pulumi_names(reg.type)
        fields = provider_schema.rules()["resources"][reg.type]["fields"]
        for input_path, _ in api.string_inputs(plain(reg.inputs)):
            tf = names.get(input_path)
            if tf and fields[tf].get("enum"):
                allowed = api.allowed_values(reg.type, input_path)
                assert isinstance(allowed, tuple) or input_path in api.NO_API_FIELD[reg.type], input_path


def _board(**changes):
    body = dashboard.dashboard("c", "d")
    for key, value in changes.items():
        value(body) if callable(value) else body.__setitem__(key, value)
    return json.dumps(body)


def _first_widget(body):
    return body["mosaicLayout"]["tiles"][0]["widget"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda b: _first_widget(b)["xyChart"].update(dataSet=[]), "xyChart.dataSet: not a field of XyChart"),
        (lambda b: _first_widget(b).update(text={"content": "x"}), "oneof content of Widget has 2 members set"),
        (
            lambda b: _first_widget(b)["xyChart"]["dataSets"][0]["timeSeriesQuery"].update(timeSeriesQueryLanguage="x"),
            "oneof source of TimeSeriesQuery has 2 members set",
        ),
        (lambda b: b.update(gridLayout={}), "oneof layout of Dashboard has 2 members set"),
        (lambda b: _first_widget(b)["xyChart"]["dataSets"][0].update(plotType="PIE"), "'PIE' is not one of"),
        (lambda b: _first_widget(b)["xyChart"]["chartOptions"].update(mode="DARK"), "'DARK' is not one of"),
        (lambda b: _first_widget(b)["xyChart"].pop("dataSets"), "xyChart.dataSets: required in XyChart"),
        (lambda b: b.pop("displayName"), "displayName: required in Dashboard"),
        (lambda b: _first_widget(b)["xyChart"].update(timeshiftDuration="1h"), "is not a duration"),
        (lambda b: b["mosaicLayout"].update(columns=49), "mosaicLayout.columns: 49 is not in 1..48"),
        (lambda b: b["mosaicLayout"]["tiles"][1].update(xPos=36), "xPos 36 + width 24 is past the 48 columns"),
        (lambda b: b["mosaicLayout"]["tiles"][0].pop("width"), "width 0 and height 16 must be at least 1"),
        (lambda b: b["mosaicLayout"]["tiles"][0].update(yPos=2**31), "outside int32"),
        (lambda b: b["mosaicLayout"]["tiles"][0].update(height="16"), "'16' is not an integer"),
    ],
)
def test_dashboard_rules_catch_what_the_api_refuses(change, expected):
    assert api.dashboard_errors(_board()) == []
    errors = api.dashboard_errors(_board(x=change))
    assert any(expected in e for e in errors), errors


CLUSTER, POOL = "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"


@pytest.mark.parametrize(
    "type_, inputs, expected",
    [
        (CLUSTER, {"releaseChannel": {"channel": "FAST"}}, "releaseChannel.channel: 'FAST' is not one of"),
        (CLUSTER, {"datapathProvider": "EBPF"}, "datapathProvider: 'EBPF' is not one of"),
        (CLUSTER, {"loggingConfig": {"enableComponents": ["SYSTEM"]}}, "'SYSTEM' is not one of"),
        (
            CLUSTER,
            {"maintenancePolicy": {"maintenanceExclusions": [{"exclusionOptions": {"scope": "NO_PATCHES"}}]}},
            "exclusionOptions.scope: 'NO_PATCHES' is not one of",
        ),
        (POOL, {"placementPolicy": {"type": "SPREAD"}}, "placementPolicy.type: 'SPREAD' is not one of"),
        (POOL, {"nodeConfig": {"workloadMetadataConfig": {"mode": "GCE"}}}, "'GCE' is not one of"),
        ("gcp:compute/network:Network", {"routingMode": "WORLD"}, "routingMode: 'WORLD' is not one of"),
        ("gcp:compute/subnetwork:Subnetwork", {"purpose": "PROXY"}, "purpose: 'PROXY' is not one of"),
        ("gcp:compute/routerNat:RouterNat", {"subnetworks": [{"sourceIpRangesToNats": ["ALL"]}]}, "'ALL' is not"),
        ("gcp:storage/bucket:Bucket", {"storageClass": "standard"}, "storageClass: 'standard' is not one of"),
        ("gcp:storage/bucket:Bucket", {"lifecycleRules": [{"action": {"type": "delete"}}]}, "'delete' is not"),
        (CLUSTER, {"inventedField": "x"}, "inventedField: no API field in Cluster"),
    ],
)
def test_enum_rules_catch_what_the_apis_refuse(type_, inputs, expected):
    errors = api.enum_errors(type_, inputs, UNKNOWN)
    assert any(expected in e for e in errors), errors
    assert api.enum_errors(type_, {**inputs, "name": UNKNOWN}, UNKNOWN) == errors  # a free-form field passes


def test_the_extractor_keeps_reachable_schemas_without_prose(tmp_path, monkeypatch):
    doc = {
        "revision": "20260101",
        "schemas": {
            "Root": {
                "description": "prose",
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["A", "B"], "enumDescriptions": ["a", "b"]},
                    "child": {"$ref": "Child", "description": "Required. The child."},
                },
            },
            "Child": {"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}},
            "Unused": {"type": "object"},
        },
    }
    wheel = tmp_path / "google_api_python_client-9.9.9-py3-none-any.whl"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(api.DOCUMENTS_PATH + "x.v1.json", json.dumps(doc))
    wheel.write_bytes(buffer.getvalue())
    monkeypatch.setattr(api, "ROOTS", {"x.v1": ("Root",)})
    monkeypatch.setattr(api, "DESCRIBED", {})
    out = api.extract(wheel)
    assert out["source"]["version"] == "9.9.9"
    assert out["documents"]["x.v1"] == {
        "revision": "20260101",
        "descriptions": {},
        "schemas": {
            "Child": {"type": "object", "properties": {"n": {"type": "integer", "format": "int32"}}},
            "Root": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["A", "B"]},
                    "child": {"$ref": "Child", "required": True},
                },
            },
        },
    }


@pytest.mark.skipif(
    not os.environ.get("TPU_SERVING_GAPI_WHEEL"),
    reason="set TPU_SERVING_GAPI_WHEEL to google_api_python_client-2.202.0-py3-none-any.whl (pip download)",
)
def test_the_data_is_what_the_extractor_reads():
    assert api.extract(Path(os.environ["TPU_SERVING_GAPI_WHEEL"])) == api.data()


# ---- the alerts' and the budget's bodies (monitoring v3, billingbudgets v1) ---------------------------------------


def test_shipped_alerts_slos_channels_services_and_budgets_are_valid_api_bodies():
    """Every AlertPolicy, NotificationChannel, CustomService, Slo and Budget a shipped stack registers (the
    vllm-staging-slo example has each), as the provider sends it (api.BODIES: google-beta v7.45.0's renames), is a
    valid monitoring v3 / billingbudgets v1 body, strictly."""
    seen: dict[str, int] = dict.fromkeys(api.BODIES, 0)
    for path in STACK_FILES:
        for preview in (True, False):
            for type_ in api.BODIES:
                for r in recorded(path, preview).of_type(type_):
                    seen[type_] += 1
                    assert api.body_errors(type_, plain(r.inputs)) == [], (path.name, preview, r.name)
    assert all(seen.values()), seen


def test_the_body_check_catches_what_the_api_refuses():
    slo = {
        "project": "p",
        "service": "s",
        "displayName": "x",
        "goal": 0.99,
        "rollingPeriodDays": 28.0,
        "requestBasedSli": {"distributionCut": {"distributionFilter": "f", "range": {"min": 0.0, "max": 2.5}}},
    }
    assert api.body_errors("gcp:monitoring/slo:Slo", slo) == []
    body = api.api_body("gcp:monitoring/slo:Slo", slo)
    assert body["rollingPeriod"] == "2419200s" and "requestBased" in body["serviceLevelIndicator"]
    policy = {
        "displayName": "x",
        "combiner": "AND",
        "severity": "HIGH",  # AlertPolicy.severity: CRITICAL | ERROR | WARNING
        "conditions": [{"displayName": "c", "conditionMatchedLog": {"filter": "f"}}],
        "alertStrategy": {"notificationRateLimit": {"period": "10m"}},  # a google-duration is "<seconds>s"
    }
    errors = api.body_errors("gcp:monitoring/alertPolicy:AlertPolicy", policy)
    assert any(e.startswith("severity:") for e in errors) and any("notificationRateLimit.period" in e for e in errors)
    budget = {
        "billingAccount": "A",
        "amount": {"specifiedAmount": {"units": "5", "currencyCode": "USD"}},
        "budgetFilter": {"calendarPeriod": "WEEK"},
    }
    errors = api.body_errors("gcp:billing/budget:Budget", budget)
    assert any(e.startswith("budgetFilter.calendarPeriod: 'WEEK' is not one of") for e in errors), errors
    channel = {"project": "p", "type": "email", "labels": {"email_address": "a@b.c"}, "enabled": "yes"}
    assert api.body_errors("gcp:monitoring/notificationChannel:NotificationChannel", channel) == [
        "enabled: 'yes' is not a boolean"
    ]
