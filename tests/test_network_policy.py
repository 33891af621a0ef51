"""Ingress NetworkPolicies of every serving namespace: default deny, and exactly the allowed paths per workload type.

Semantics: https://kubernetes.io/docs/concepts/services-networking/network-policies/ (an empty podSelector selects
every pod of the namespace; a policy with Ingress in policyTypes and no rule denies all ingress; a rule without
`from` admits every source; policies are additive).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks.security import scan_exceptions
from tests.conftest import EXAMPLES, ROOT, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.scans.scan import Target, evaluate, parse_skips, report_failures


def _objects(example: str, stack: str | None = None) -> list[dict]:
    stack = stack or example
    return kubernetes_objects(recorded(ROOT / "examples" / example / f"Pulumi.{stack}.yaml", False))


def _allowed(objects: list[dict], namespace: str, labels: dict[str, str]) -> set[tuple[str, int | None]]:
    """(source, port) pairs admitted to a pod with `labels`: source "any", "namespace" or "ns:<name>"."""
    paths: set[tuple[str, int | None]] = set()
    for o in objects:
        if o["kind"] != "NetworkPolicy" or o["metadata"]["namespace"] != namespace:
            continue
        selector = o["spec"]["podSelector"].get("matchLabels", {})
        if not selector.items() <= labels.items():
            continue
        for rule in o["spec"].get("ingress", []):
            ports = [p["port"] for p in rule.get("ports", [])] or [None]
            sources = []
            for peer in rule.get("from", [{"any": True}]):
                if "any" in peer:
                    sources.append("any")
                elif "namespaceSelector" in peer:
                    sources.append("ns:" + peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"])
                else:
                    assert peer == {"podSelector": {}}, peer
                    sources.append("namespace")
            paths.update((s, p) for s in sources for p in ports)
    return paths


def _default_deny(objects: list[dict], namespace: str) -> bool:
    return any(
        o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == namespace
        and o["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
        for o in objects
    )


def test_jetstream_serving_and_metrics_only():
    objects = _objects("gemma-hpa")
    assert _default_deny(objects, "gemma")
    assert _allowed(objects, "gemma", {"app": "gemma"}) == {
        ("namespace", None),
        ("any", 8000),  # jetstream-http
        ("any", 9000),  # JetStream gRPC, also in the Service
        ("ns:gmp-system", 9100),  # Managed Prometheus scrapes the server metrics
    }


def test_pathways_leader_serving_and_metrics_workers_only_their_namespace():
    objects = _objects("llama3-405b-pathways")
    assert _default_deny(objects, "llama3-405b")
    leader = _allowed(objects, "llama3-405b", {"app": "llama3-405b"})
    assert leader == {("namespace", None), ("any", 8000), ("ns:gmp-system", 9100)}
    # workers (no app label): only the leader and each other (the resource manager and worker ports)
    assert _allowed(objects, "llama3-405b", {"leaderworkerset.sigs.k8s.io/name": "llama3-405b"}) == {
        ("namespace", None)
    }


def test_saxml_http_and_admin_ports():
    objects = _objects("saxml-175b")
    assert _default_deny(objects, "sax")
    assert _allowed(objects, "sax", {"app": "sax-http"}) == {("namespace", None), ("any", 8888)}
    # the model servers reach the admin server from the host network (node addresses): a rule without `from`
    assert _allowed(objects, "sax", {"app": "sax-admin"}) == {("namespace", None), ("any", 10000)}
    assert _allowed(objects, "sax", {"app": "sax-models"}) == {("namespace", None)}


@pytest.mark.parametrize(
    "example,namespace,serving,workers",
    [
        ("vllm-single-host", "llama70b", {"app": "llama70b", "role": "leader"}, None),
        (
            "vllm-multi-host",
            "llama70b",
            {"app": "llama70b", "leaderworkerset.sigs.k8s.io/name": "llama70b", "role": "leader"},
            {"app": "llama70b", "leaderworkerset.sigs.k8s.io/name": "llama70b", "role": "worker"},
        ),
    ],
)
def test_vllm_serving_pods_open_their_port_to_clients_and_metrics(example, namespace, serving, workers):
    """Without the gateway's allows, the Service's clients and the PodMonitoring's collectors still reach vLLM's
    port 8000 (its API and /metrics), and only on the serving pods (the leaders on a multi-host pool)."""
    objects = _objects(example)
    assert _default_deny(objects, namespace)
    allowed = _allowed(objects, namespace, serving)
    assert {("namespace", None), ("any", 8000), ("ns:gmp-system", 8000)} <= allowed
    assert {port for source, port in allowed if source == "any"} == {8000}
    if workers:
        assert _allowed(objects, namespace, workers) == {("namespace", None)}


@pytest.mark.parametrize("stack,port", [("gemma-hpa", 6443), ("gemma-hpa-prometheus", 6443)])
def test_adapter_namespace_admits_the_api_server_only_on_the_api_port(stack, port):
    objects = _objects("gemma-hpa", stack)
    assert _default_deny(objects, "custom-metrics")
    assert _allowed(objects, "custom-metrics", {"app": "gmp-frontend"}) == {("namespace", None), ("any", port)}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_created_namespace_denies_ingress_by_default(path: Path):
    objects = kubernetes_objects(recorded(path, False))
    for ns in {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"} - {
        "lws-system",
        "jobset-system",
        "kueue-system",  # as LWS's and JobSet's: an add-on controller's namespace (components/addons.py)
    }:
        assert _default_deny(objects, ns), ns


# ---- the checkov scan's exceptions -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_skip_annotation_has_a_check_id_and_a_reason(path: Path):
    for o in kubernetes_objects(recorded(path, False)):
        for key, value in (o["metadata"].get("annotations") or {}).items():
            if key.startswith("checkov.io/skip"):
                check, sep, reason = value.partition("=")
                assert sep and check.startswith(("CKV_K8S_", "CKV2_K8S_")) and reason and "=" not in reason, value


def test_annotations_refuse_a_reason_checkov_would_split():
    with pytest.raises(ValueError, match="must not contain"):
        scan_exceptions.skip_annotations([("CKV_K8S_8", "a=b")])
    assert scan_exceptions.skip_annotations([("CKV_K8S_8", "x"), ("CKV_K8S_8", "y")]) == {
        "checkov.io/skip1": "CKV_K8S_8=x"
    }


def test_scan_fails_on_failures_and_on_skips_without_reason():
    """The scan reads checkov's report of the files without their skips (tooling/scans/scan.py report_failures) and
    compares it with the skips: a value without "=<reason>" is a skip without a reason."""
    report = {
        "summary": {"passed": 3, "failed": 2, "skipped": 0, "parsing_errors": 0},
        "results": {
            "failed_checks": [
                {"check_id": "CKV_K8S_8", "resource": "Deployment.a.b", "file_path": "/s/k8s/a/Deployment-b.yaml"},
                {"check_id": "CKV_K8S_15", "resource": "Deployment.a.b", "file_path": "/s/k8s/a/Deployment-b.yaml"},
            ],
        },
    }
    counts, failures, problems = report_failures(report)
    assert counts == {"passed": 3, "failed": 2, "parsing_errors": 0} and problems == []
    skips = parse_skips(["CKV_K8S_15"])
    assert skips == {"CKV_K8S_15": ""}
    found = evaluate({"s/k8s/a/Deployment-b.yaml": Target("", skips)}, failures, "build")
    assert [p.split()[0] for p in found] == ["FAILED", "SKIPPED"]
    assert report_failures({"summary": {"passed": 1, "parsing_errors": 1}, "results": {}})[2] != []
