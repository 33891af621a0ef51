"""The offline API rules (tooling/oracles/api_rules.py): every shipped stack meets them, the longest names the config
allows stay within them (issue 11 item 10), and each rule catches what its API refuses."""

from __future__ import annotations

import copy

import pytest

from stacks import naming
from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import load_stack_file
from tooling.oracles import api_rules


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_shipped_stacks_meet_the_api_rules(path):
    recording = recorded(path, True)
    assert api_rules.kubernetes_errors(kubernetes_objects(recording)) == []
    assert api_rules.gcp_errors(recording) == []


def covering_stack_files() -> list:
    """The fewest shipped stack files (all-in-one first) that together hold every workload type shipped."""
    files = sorted(STACK_FILES, key=lambda p: (p.parent.name != "all-in-one", p.name))
    chosen, seen = [], set()
    for path in files:
        types = {w.get("type") for w in load_stack_file(path).get("tpu-serving:workloads") or []}
        if types - seen:
            chosen.append(path)
            seen |= types
    return chosen


def longest_config(path) -> tuple[dict, str]:
    """A shipped stack with every user-chosen name at the longest the config allows, and the longest stack name
    Pulumi allows: 100 characters of letters, digits, '-', '_', '.' (pulumi/pulumi pkg/backend/diy/store.go,
    "stack names are limited to 100 characters")."""
    config = copy.deepcopy(load_stack_file(path))
    config["gcp:project"] = "p" + "-x" * 14 + "9"  # 30 characters, the longest project id
    renamed = {}
    for i, pool in enumerate(config.get("tpu-serving:tpuPools") or []):
        renamed[pool["name"]] = pool["name"] = f"pool{i}-" + "p" * 30  # 36: the longest pool name
    longest = {"saxml": 23}  # a Saxml name leaves JobSet's derived pod names within 63 (the error says so)
    for i, workload in enumerate(config.get("tpu-serving:workloads") or []):
        workload["pool"] = renamed.get(workload["pool"], workload["pool"])
        workload["name"] = (f"w{i}" + "n" * 40)[: longest.get(workload["type"], 40)]
        workload["namespace"] = f"ns{i}-" + "s" * 58  # 63: the longest namespace
    cluster = config.setdefault("tpu-serving:cluster", {}) or {}
    cluster["labels"] = {"k" * 63: "v" * 63}
    config["tpu-serving:cluster"] = cluster
    stack = ("Stack.Name_" * 10)[:100]
    return config, stack


@pytest.mark.parametrize("path", covering_stack_files(), ids=lambda p: p.name)
def test_the_longest_names_stay_within_the_api_rules(run, path):
    config, stack = longest_config(path)
    recording = run(config, preview=True, stack=stack)
    assert api_rules.gcp_errors(recording) == []
    assert api_rules.kubernetes_errors(kubernetes_objects(recording)) == []
    accounts = recording.of_type("gcp:serviceaccount/account:Account")
    assert accounts and all(len(a.inputs["displayName"].encode()) <= 100 for a in accounts)


def test_display_names_fit_100_bytes_even_in_multibyte_text():
    name = naming.service_account_display_name("ns/ksa (" + "é" * 80 + ")")
    assert len(name.encode()) <= 100 and name.startswith("ns/ksa (")
    assert naming.service_account_display_name("short") == "short"


def _deployment(**container):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {
            "replicas": 1,
            "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", **container}]}},
        },
    }


@pytest.mark.parametrize(
    "obj, expected",
    [
        (_deployment(image="gcr.io/p/x:v1"), None),
        (_deployment(image="gcr.io/p/x: v1"), "is not a valid image reference"),
        (_deployment(image="gcr.io/P/x:v1"), "is not a valid image reference"),
        (
            {**_deployment(image="a"), "metadata": {"name": "x\n", "namespace": "ns"}},
            "metadata.name: 'x\\n' is not a DNS-1123 subdomain",
        ),
        ({**_deployment(image="a"), "metadata": {"name": "x", "namespace": "Ns"}}, "is not a DNS-1123 label"),
        (
            {**_deployment(image="a"), "metadata": {"name": "x", "labels": {"a": "b\tc"}}},
            "label a='b\\tc' is not a valid label value",
        ),
        (_deployment(image="a", ports=[{"containerPort": 70000}]), "port 70000 is not in 1-65535"),
        (
            _deployment(
                image="a", ports=[{"containerPort": 1, "name": "metrics"}, {"containerPort": 2, "name": "metrics"}]
            ),
            "port name 'metrics' is used twice",
        ),
        ({**_deployment(image="a"), "spec": {"replicas": 2**31}}, "2147483648 is outside the int32 range"),
        (
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s"},
                "spec": {"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 80}]},
            },
            "port 80/TCP is used twice",
        ),
        (
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "j" * 50},
                "spec": {"replicatedJobs": [{"name": "sax-model-server", "replicas": 2, "template": {"spec": {}}}]},
            },
            "derived Job",
        ),
        (
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h"},
                "spec": {
                    "minReplicas": 1,
                    "maxReplicas": 2,
                    "behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 3600}]}},
                },
            },
            "periodSeconds: not in 1..1800",
        ),
    ],
)
def test_kubernetes_rules(obj, expected):
    errors = api_rules.object_errors(obj)
    if expected is None:
        assert errors == []
    else:
        assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    "type_, inputs, expected",
    [
        ("gcp:serviceaccount/account:Account", {"accountId": "abcdef", "displayName": "x" * 101}, "101 bytes"),
        ("gcp:serviceaccount/account:Account", {"accountId": "abc"}, "is not a service account id"),
        ("gcp:container/nodePool:NodePool", {"name": "p" * 41}, "is not a GKE node pool name"),
        ("gcp:container/nodePool:NodePool", {"name": "pool\n"}, "is not a GKE node pool name"),
        ("gcp:storage/bucket:Bucket", {"name": "my-google-data"}, "contains 'google'"),
        (
            "gcp:compute/subnetwork:Subnetwork",
            {"name": "s", "secondaryIpRanges": [{"rangeName": "r"}, {"rangeName": "r"}]},
            "are not unique",
        ),
        ("gcp:compute/network:Network", {"name": "n", "description": ""}, "description: empty string"),
        ("gcp:container/cluster:Cluster", {"name": "c", "resourceLabels": {"a": "B"}}, "is not a Google Cloud label"),
    ],
)
def test_gcp_rules(type_, inputs, expected):
    errors = api_rules.gcp_resource_errors(type_, inputs)
    assert any(expected in e for e in errors), errors


def test_a_notification_channels_labels_are_its_configuration_not_resource_labels():
    """monitoring v3 NotificationChannel: `labels` configure the channel (email_address of an email channel,
    https://cloud.google.com/monitoring/support/notification-options); its resource labels are `userLabels`."""
    channel = "gcp:monitoring/notificationChannel:NotificationChannel"
    assert api_rules.gcp_resource_errors(channel, {"labels": {"email_address": "oncall@example.com"}}) == []
    assert api_rules.gcp_resource_errors(channel, {"userLabels": {"Team": "x"}}) != []
