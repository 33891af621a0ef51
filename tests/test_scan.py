"""`make scan` (tooling/scans/scan.py) covers every pod (issue 25): checkov reads the pods of built-in kinds only, so the
scan writes out the Pods each custom resource's controller creates from its pod templates, with the resource's
checkov skips; and every container the stack builds requests CPU and memory unless its object says why not."""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.security.pod_security import pod_templates
from tests.conftest import EXAMPLES
from tooling.review.render import render_stack
from tooling.scans.scan import (
    POD_KINDS,
    PODS_DIR,
    SKIP_PREFIX,
    Target,
    evaluate,
    expanded_pods,
    scan_files,
    targets_of,
    terraform_inputs,
    terraform_json,
)
from tooling.scans.scan_accepted import CHART_ACCEPTED, GCP_ACCEPTED

# checkov 3.3.30 checks/resource/k8s: CPURequests.py CKV_K8S_10, MemoryRequests.py CKV_K8S_12
CPU_REQUEST, MEMORY_REQUEST = "CKV_K8S_10", "CKV_K8S_12"


def _rendered_objects(path: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The files the scan writes for `path`, and the rendered Kubernetes objects among them (a copy: each test may
    change its own)."""
    return copy.deepcopy(_rendered_once(path))


@functools.cache
def _rendered_once(path: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """One render of `path` per test process (five tests here read every example's)."""
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
        for _, template, spec in pod_templates(obj.get("spec") or {}):
            # the object's skips, then the template's own (a skip one template needs sits on that template)
            own = _skipped(template.get("annotations"))
            expected.append(
                (obj["metadata"].get("namespace"), spec["containers"], dict(sorted({**own, **skips}.items())))
            )
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
    from tooling.harness.offline import ROOT

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
            # a pod template's own skips (scan_exceptions.template_skip_annotations; tooling/scans/scan.py applies them)
            for _, meta, _ in pod_templates(obj.get("spec") or {}):
                skipped |= set(_skipped(meta.get("annotations")))
    assert listed == skipped


# ---- skips are checked, not only read (tooling/scans/scan.py evaluate; `make scan` runs checkov without them) -----------


def test_the_scan_fails_on_an_unaccepted_failure_a_stale_skip_and_a_skip_without_reason():
    targets = {
        "a.yaml": Target("", {"CKV_K8S_8": "why", "CKV_K8S_9": "why"}),
        "b.yaml": Target("", {"CKV_K8S_8": ""}),
        # a custom resource's skips are checked through its expanded pods, not on the resource itself
        "lws.yaml": Target("", {"CKV_K8S_25": "why"}, stale_checked=False),
    }
    failures = {"a.yaml": {"CKV_K8S_8", "CKV_K8S_43"}, "b.yaml": {"CKV_K8S_8"}}
    assert evaluate(targets, failures, "k8s") == [
        "FAILED CKV_K8S_43 in k8s/a.yaml",
        "STALE SKIP CKV_K8S_9 in k8s/a.yaml: the file passes it without the skip",
        "SKIPPED WITHOUT REASON CKV_K8S_8 in k8s/b.yaml",
    ]


def test_targets_carry_no_skip_annotation_and_a_pod_inherits_only_its_templates_skips():
    obj = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "w", "namespace": "n", "annotations": {"checkov.io/skip1": "CKV_K8S_43=tag"}},
        "spec": {
            "leaderWorkerTemplate": {
                "leaderTemplate": {"metadata": {}, "spec": {"containers": [{"name": "l", "image": "i:1"}]}},
                "workerTemplate": {
                    "metadata": {"annotations": {"checkov.io/skip1": "CKV_K8S_8=no http"}},
                    "spec": {"containers": [{"name": "w", "image": "i:1"}]},
                },
            }
        },
    }
    files = scan_files({"k8s/n/LeaderWorkerSet-w.yaml": yaml.safe_dump(obj)})
    targets = targets_of(files)
    assert all(SKIP_PREFIX not in t.text for t in targets.values())
    skips = {rel.rsplit("-", 2)[-2]: t.skips for rel, t in targets.items() if rel.startswith(PODS_DIR)}
    assert skips == {
        "leadertemplate": {"CKV_K8S_43": "tag"},
        "workertemplate": {"CKV_K8S_43": "tag", "CKV_K8S_8": "no http"},
    }
    assert not targets["k8s/n/LeaderWorkerSet-w.yaml"].stale_checked


# Checks whose failure is a plain property of a pod spec (checkov 3.3.30 checks/resource/k8s: LivenessProbe.py
# CKV_K8S_8, ReadinessProbe.py CKV_K8S_9, CPURequests.py CKV_K8S_10, MemoryRequests.py CKV_K8S_12, a container
# without `securityContext.capabilities.add` passes CKV_K8S_25): evaluated here without checkov, so a skip a pod does
# not need fails `make test` as well as `make scan`.
def _fails(check: str, containers: list[dict[str, Any]]) -> bool:
    def requests(c: dict[str, Any]) -> dict[str, Any]:
        return (c.get("resources") or {}).get("requests") or {}

    return {
        "CKV_K8S_8": lambda: any("livenessProbe" not in c for c in containers),
        "CKV_K8S_9": lambda: any("readinessProbe" not in c for c in containers),
        "CKV_K8S_10": lambda: any("cpu" not in requests(c) for c in containers),
        "CKV_K8S_12": lambda: any("memory" not in requests(c) for c in containers),
        "CKV_K8S_25": lambda: any(
            ((c.get("securityContext") or {}).get("capabilities") or {}).get("add") for c in containers
        ),
    }[check]()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_no_pod_carries_a_probe_request_or_capability_skip_it_does_not_need(path: Path):
    """Every expanded pod, and every built-in pod kind, with the skips it carries: each of these skips matches a
    container that fails the check (vLLM leaders are probed, so their Ray workers' probe skips sit on the worker
    template; jax-tpu's capabilities concern the disaggregated leader only; a PathwaysJob's program requests CPU and
    memory; jetstream-http is probed)."""
    files, objects = _rendered_objects(path)
    pods = [yaml.safe_load(t) for rel, t in files.items() if rel.startswith(f"{PODS_DIR}/")]
    pods += [o for o in objects if o["kind"] in POD_KINDS and o["kind"] != "CronJob"]
    for pod in pods:
        skipped = _skipped(pod["metadata"].get("annotations"))
        for _, _, spec in pod_templates(pod.get("spec") or {}, "spec") or [(None, None, pod["spec"])]:
            for check in set(skipped) & {"CKV_K8S_8", "CKV_K8S_9", "CKV_K8S_10", "CKV_K8S_12", "CKV_K8S_25"}:
                assert _fails(check, spec["containers"]), f"{pod['kind']} {pod['metadata']['name']}: stale {check}"


# ---- Google Cloud resources as Terraform JSON ---------------------------------------------------------------------


def test_every_google_cloud_resource_is_written_under_its_terraform_type_and_field_names():
    _, _, rendered = render_stack(EXAMPLES[0].parent.parent / "all-in-one" / "Pulumi.all-in-one.yaml")
    document, unknown = terraform_json(rendered)
    assert unknown == []
    gcp = [yaml.safe_load(t) for rel, t in rendered.items() if rel.startswith("gcp/")]
    assert sum(len(v) for v in document["resource"].values()) == len(gcp)
    cluster = document["resource"]["google_container_cluster"]["cluster-gke"]
    # the fields checkov's cluster checks read, under the provider's names (CKV_GCP_12 GKENetworkPolicyEnabled.py)
    assert cluster["datapath_provider"] == "ADVANCED_DATAPATH"
    assert "private_cluster_config" in cluster and "enable_private_nodes" in cluster["private_cluster_config"]
    bucket = document["resource"]["google_storage_bucket"]["bucket-gcs"]
    # a list of blocks under its singular Terraform name; a map's keys are data and stay as given
    assert bucket["lifecycle_rule"][0]["condition"]["age"] == 7 and bucket["logging"]["log_bucket"].endswith("-logs")
    assert bucket["labels"]["stack"] == "all-in-one"
    assert terraform_inputs(
        "gcp:storage/bucket:Bucket", {"lifecycleRules": [{"condition": {"daysSinceNoncurrentTime": 3}}]}
    ) == {"lifecycle_rule": [{"condition": {"days_since_noncurrent_time": 3}}]}


def _table_rows(section: str) -> list[list[str]]:
    from tooling.harness.offline import ROOT

    page = (ROOT / "docs" / "security.md").read_text()
    text = page.split(f"\n{section}", 1)[1].split("\n#", 1)[0]
    return [
        [cell.strip() for cell in row.split("|")[1:-1]]
        for row in text.splitlines()
        if row.startswith("| ") and re.search(r"CKV2?_", row)
    ]


def test_the_security_page_lists_exactly_the_accepted_google_cloud_findings():
    rows = [r for r in _table_rows("### Google Cloud checks") if r[0].startswith("CKV")]
    assert sorted(re.match(r"CKV2?_GCP_\d+", r[0]).group(0) for r in rows) == sorted(a.check for a in GCP_ACCEPTED)
    assert all(a.reason and "=" not in a.reason for a in GCP_ACCEPTED)


def test_the_security_page_lists_exactly_the_accepted_chart_findings():
    listed = {
        (chart.strip(), check)
        for row in _table_rows("### Chart exceptions")
        for chart in row[0].split(",")
        for check in re.findall(r"CKV2?_K8S_\d+", row[1])
    }
    accepted = {(chart, check) for chart, checks in CHART_ACCEPTED.items() for check in checks}
    assert listed == accepted
    assert all(reason for checks in CHART_ACCEPTED.values() for reason in checks.values())


def test_jetstream_http_is_probed_on_its_own_root_in_every_workload_that_runs_it():
    """A hung jetstream-http restarts itself, not the TPU engine: its own liveness and readiness probes call `/`, which
    its server answers itself (GoogleCloudPlatform/ai-on-gke@707c3e38:tutorials-and-examples/inference-servers/jetstream/http-server/http_server.py
    `@app.get("/") def root()`, a static JSON; /healthcheck instead asks the engine over gRPC), and every
    jetstream-http image the matrix pins records that it serves `/`."""
    from stacks.facts.versions import IMAGE_RECORDS
    from workloads.jetstream.server import JETSTREAM_HTTP_PORT, JETSTREAM_HTTP_ROOT, JETSTREAM_HTTP_SERVES

    seen = set()
    for path in EXAMPLES:
        for obj in _rendered_objects(path)[1]:
            for _, _, spec in pod_templates(obj.get("spec") or {}):
                for c in spec["containers"]:
                    if c["name"] != "jetstream-http":
                        continue
                    seen.add(obj["kind"])
                    # no liveness probe in a LeaderWorkerSet: a restart there recreates the whole group
                    # (tests/test_change_safety.py, issue 36 #12)
                    probes = ("livenessProbe", "readinessProbe") if obj["kind"] == "Deployment" else ("readinessProbe",)
                    for probe in probes:
                        get = c[probe]["httpGet"]
                        assert (get["path"], get["port"]) == (JETSTREAM_HTTP_ROOT, JETSTREAM_HTTP_PORT), (obj, probe)
    # JetStream (Deployment) and JetStream-Pathways (LeaderWorkerSet)
    assert seen == {"Deployment", "LeaderWorkerSet"}
    assert JETSTREAM_HTTP_ROOT in (JETSTREAM_HTTP_SERVES.endpoints or ())
    for key in ("jetstreamHttp", "jetstreamHttpPathways"):
        assert JETSTREAM_HTTP_ROOT in (IMAGE_RECORDS[key].serves.endpoints or ()), key


# ---- Helm charts ----------------------------------------------------------------------------------------------------


def test_without_helm_or_chart_sources_the_scan_says_it_skipped_the_charts_and_why(monkeypatch, tmp_path):
    from tooling.oracles import chart_objects
    from tooling.scans.scan import chart_renderer

    monkeypatch.setattr(chart_objects, "find_helm", lambda: None)
    render, note = chart_renderer()
    assert render is None and note.startswith("Helm charts NOT scanned: no helm") and "make helm" in note
    monkeypatch.setattr(chart_objects, "find_helm", lambda: "/usr/bin/true")
    monkeypatch.setattr(chart_objects, "charts_root", lambda: tmp_path / "absent")
    render, note = chart_renderer()
    assert render is None and str(tmp_path / "absent") in note


def test_every_chart_release_of_an_example_is_rendered_with_its_values_and_scanned():
    """The chart Deployments (here vllm-multi-host's: the llm-d router's endpoint picker, the LWS and JobSet
    controllers) are scan targets, in the release's namespace as Helm installs them, accepting CHART_ACCEPTED."""
    from tooling.oracles import chart_objects
    from tooling.oracles.chart_objects import chart_name, releases_of
    from tooling.scans.scan import chart_files, chart_renderer

    render, note = chart_renderer()
    if render is None:
        pytest.skip(note)
    path = next(p for p in EXAMPLES if p.name == "Pulumi.vllm-multi-host.yaml")
    _, recording, _ = render_stack(path)
    releases = releases_of(recording)
    charts = chart_files(recording, render)
    assert set(charts) == {chart_name(r.chart) for r in releases} >= {"llm-d-router-gateway", "lws", "jobset"}
    at_hand = chart_objects.charts_root()
    for release in releases:
        chart = chart_name(release.chart)
        if not chart_objects.has_source(
            at_hand, chart_objects.Release(release.chart, release.version, "", "", {}, False)
        ):
            # not at hand (the body-based router's chart is not in ../shared/reference): named unscanned, no targets
            assert not charts[chart], chart
            continue
        deployments = [yaml.safe_load(t.text) for rel, t in charts[chart].items() if "/Deployment-" in rel]
        assert deployments, chart
        assert all(d["metadata"]["namespace"] == release.namespace for d in deployments), chart
        assert all(t.skips == CHART_ACCEPTED.get(chart, {}) and not t.stale_checked for t in charts[chart].values())


def test_a_chart_release_without_its_source_is_named_unscanned_not_a_crash(tmp_path):
    """A chart release whose source the reference folder does not carry (here a KEDA version no folder holds)
    renders nothing and the scan names it, instead of failing on the missing source (tooling/oracles/chart_objects.py
    has_source)."""
    from tooling.oracles.chart_objects import Release
    from tooling.scans import scan

    unscanned: set[str] = set()
    render, _ = scan.chart_renderer(unscanned)
    if render is None:
        pytest.skip("no helm: chart_renderer renders nothing")
    release = Release("https://kedacore.github.io/charts/keda", "9.9.9", "r", "ns", {}, skip_crds=True)
    assert render(release) == []
    assert unscanned == {"keda@9.9.9"}
    assert not hasattr(scan, "UNSCANNED")  # no module-level state: two scans in one process do not share it
