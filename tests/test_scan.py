"""`make scan` (tooling/scan.py) covers every pod (issue 25): checkov reads the pods of built-in kinds only, so the
scan writes out the Pods each custom resource's controller creates from its pod templates, with the resource's
checkov skips; and every container the stack builds requests CPU and memory unless its object says why not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.pod_security import pod_templates
from tests.conftest import EXAMPLES
from tooling.render import render_stack
from tooling.scan import POD_KINDS, PODS_DIR, SKIP_PREFIX, expanded_pods, scan_files

# checkov 3.3.30 checks/resource/k8s: CPURequests.py CKV_K8S_10, MemoryRequests.py CKV_K8S_12
CPU_REQUEST, MEMORY_REQUEST = "CKV_K8S_10", "CKV_K8S_12"


def _rendered_objects(path: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The files the scan writes for `path`, and the rendered Kubernetes objects among them."""
    _, _, rendered = render_stack(path)
    files = scan_files(rendered)
    objects = [yaml.safe_load(text) for rel, text in sorted(files.items()) if rel.startswith("k8s/")]
    return files, [o for o in objects if isinstance(o, dict) and "kind" in o]


def _skipped(annotations: dict[str, str] | None) -> dict[str, str]:
    """check id -> reason of an object's checkov skip annotations."""
    return dict(sorted(v.split("=", 1) for k, v in (annotations or {}).items() if k.startswith(SKIP_PREFIX)))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_pod_template_of_a_custom_resource_is_scanned_as_a_pod(path: Path):
    files, objects = _rendered_objects(path)
    pods = {rel: yaml.safe_load(text) for rel, text in files.items() if rel.startswith(f"{PODS_DIR}/")}
    expected = []
    for obj in objects:
        if obj["kind"] in POD_KINDS:
            continue
        skips = _skipped(obj["metadata"].get("annotations"))
        for _, _, spec in pod_templates(obj.get("spec") or {}):
            expected.append((obj["metadata"].get("namespace"), spec["containers"], skips))
    scanned = [
        (p["metadata"].get("namespace"), p["spec"]["containers"], _skipped(p["metadata"]["annotations"]))
        for p in pods.values()
    ]
    assert sorted(map(repr, scanned)) == sorted(map(repr, expected))
    assert all(p["kind"] == "Pod" for p in pods.values())
    kinds = {o["kind"] for o in objects}
    # the multi-host workloads' kinds are among those expanded whenever the example registers them
    for kind in {"LeaderWorkerSet", "JobSet"} & kinds:
        assert any(f"/Pod-{kind}-" in rel for rel in pods), kind


def test_a_custom_kind_a_new_workload_registers_is_expanded_too():
    """Not a list of known kinds: any object outside checkov's own pod kinds, with its templates and skips."""
    container = {"name": "c", "image": "i:1"}
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n", "annotations": {"checkov.io/skip1": "CKV_K8S_8=why", "x": "y"}},
        "spec": {
            "a": {"template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [container]}}},
            "b": [{"metadata": {"annotations": {"checkov.io/skip1": "CKV_K8S_9=own"}}, "spec": {"containers": []}}],
        },
    }
    pods = expanded_pods(obj)
    assert [p["metadata"]["namespace"] for p in pods] == ["n", "n"]
    assert pods[0]["spec"]["containers"] == [container] and pods[0]["metadata"]["labels"] == {"app": "w"}
    assert pods[0]["metadata"]["annotations"] == {"checkov.io/skip1": "CKV_K8S_8=why"}
    # the resource's skips first, then the template's own, numbered again
    assert pods[1]["metadata"]["annotations"] == {
        "checkov.io/skip1": "CKV_K8S_8=why",
        "checkov.io/skip2": "CKV_K8S_9=own",
    }
    assert len({p["metadata"]["name"] for p in pods}) == 2
    # checkov reads a Deployment's pods itself: expanding it would count them twice
    assert expanded_pods({**obj, "kind": "Deployment"}) == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_container_requests_cpu_and_memory_or_its_object_says_why(path: Path):
    """A pod without CPU and memory requests is BestEffort: the scheduler counts nothing for it and the kubelet
    evicts it first (https://kubernetes.io/docs/concepts/workloads/pods/pod-qos/)."""
    _, objects = _rendered_objects(path)
    for obj in objects:
        skips = _skipped(obj["metadata"].get("annotations"))
        for where, _, spec in pod_templates(obj.get("spec") or {}):
            for c in spec["containers"]:
                requests = (c.get("resources") or {}).get("requests") or {}
                name = f"{obj['kind']} {obj['metadata']['name']} {where} {c['name']}"
                assert "cpu" in requests or skips.get(CPU_REQUEST), name
                assert "memory" in requests or skips.get(MEMORY_REQUEST), name


def test_the_security_page_lists_every_accepted_finding_and_nothing_else():
    """docs/security.md's exception table names exactly the check ids some example's objects skip."""
    from tooling.offline import ROOT

    page = (ROOT / "docs" / "security.md").read_text()
    table = page.split("\n### Exceptions (accepted checkov findings)\n", 1)[1].split("\n#", 1)[0]
    listed = {
        c
        for row in table.splitlines()
        if row.startswith("| CKV")
        for c in re.findall(r"CKV2?_K8S_\d+", row.split("|")[1])
    }
    skipped = set()
    for path in EXAMPLES:
        for obj in _rendered_objects(path)[1]:
            skipped |= set(_skipped(obj["metadata"].get("annotations")))
    assert listed == skipped
