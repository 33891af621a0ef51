"""The offline render: files per object, options, graph, summary, validation, golden snapshots, determinism."""

from __future__ import annotations

import difflib
import re

import pytest
import yaml

from tests.conftest import STACK_FILES, recorded
from tooling.harness.offline import ROOT, Registration
from tooling.oracles.schemas import crd_dir
from tooling.review import render, summary
from tooling.review.graph import LAYERS

EXAMPLES = render.example_files()


@pytest.fixture(scope="module")
def dev_files() -> dict[str, str]:
    path = ROOT / "Pulumi.dev.yaml"
    return render.render_files(render.parse_stack_file(path), recorded(path, True))


def test_kubernetes_objects_one_file_each(dev_files):
    assert "k8s/kube-system/PodMonitoring-tpu-device-plugin.yaml" in dev_files
    assert "k8s/_cluster/APIService-v1beta1.external.metrics.k8s.io.yaml" in dev_files
    assert "k8s/lws-system/HelmRelease-lws.yaml" in dev_files
    podmon = yaml.safe_load(dev_files["k8s/kube-system/PodMonitoring-tpu-device-plugin.yaml"])
    assert podmon["apiVersion"] == "monitoring.googleapis.com/v1"
    assert podmon["spec"]["endpoints"] == [{"interval": "15s", "port": 2112}]  # integers, not floats
    adapter = yaml.safe_load(dev_files["k8s/custom-metrics/Deployment-custom-metrics-stackdriver-adapter.yaml"])
    assert adapter["spec"]["replicas"] == 1 and isinstance(adapter["spec"]["replicas"], int)


def test_gcp_resources_with_options(dev_files):
    cluster = yaml.safe_load(dev_files["gcp/container.Cluster-cluster-gke.yaml"])
    assert cluster["type"] == "gcp:container/cluster:Cluster"
    assert cluster["inputs"]["name"] == "tpu-serving-dev"
    assert cluster["options"]["parent"] == "tpu-serving:cluster:Cluster cluster"
    assert cluster["options"]["deleteBeforeReplace"] is True
    assert cluster["options"]["ignoreChanges"] == ["nodeConfig"]
    pool = yaml.safe_load(dev_files["gcp/container.NodePool-tpu-v5e-2x4.yaml"])
    assert "gcp:container/cluster:Cluster cluster-gke" in pool["options"]["dependsOn"]
    # values known only after apply say so
    assert cluster["inputs"]["nodeConfig"]["serviceAccount"] == "(known after apply)"


def test_secrets_never_written(dev_files):
    text = "\n".join(dev_files.values())
    assert "gke-gcloud-auth-plugin" not in text  # the kubeconfig (a secret) is not rendered
    assert not any(name.startswith("k8s/") and "providers" in name for name in dev_files)


def test_graph_has_components_as_subgraphs_and_dependency_edges(dev_files):
    graph = dev_files["graph-full.mmd"]
    assert graph.startswith("flowchart LR\n")
    assert "subgraph" in graph and '["cluster (Cluster)"]' in graph
    assert graph.count(" --> ") > 10
    small = dev_files["graph.mmd"]
    # components only; the subgraphs of graph.mmd are its layers
    assert 'Cluster_cluster["cluster<br/><small>Cluster' in small and "subgraph Cluster_cluster" not in small
    assert small.count("subgraph ") <= len(LAYERS)


def test_summary(dev_files):
    """summary.md leads with what a reviewer checks first (warnings, cost, IAM, exposure) and ends with the graph
    (issue 34 item 15): its headings are summary.SECTIONS, in that order."""
    summary_page = dev_files["summary.md"]
    headings = re.findall(r"^## (.+)$", summary_page, re.M)
    assert headings == list(summary.SECTIONS)
    assert headings[:4] == ["Warnings", "Estimated cost", "IAM grants", "Network exposure"]
    assert headings[-1] == "Graph"
    assert "| v5e-2x4 | v5e | 2x4 | ct5lp-hightpu-8t | 1 | 8 | 8 | 1 | 8 | on-demand |" in summary_page
    assert "estimate" in summary_page.lower() and "2025-06-01" in summary_page


def section(page: str, title: str) -> str:
    return page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_summary_lists_workloads_and_warnings():
    path = next(p for p in EXAMPLES if p.parent.name == "all-in-one")
    files = render.render_files(render.parse_stack_file(path), recorded(path, True))
    summary = files["summary.md"]
    assert "| llama3-405b | jetstream-pathways | v6e-4x4 | llama3-405b |" in summary
    assert "| sax | saxml | v5e-4x8 | sax |" in summary
    # all-in-one lists its operators' range and puts every pool in a zone Google's TPU zone list names for its
    # generation (stacks/facts/catalog.py): what is left is what every example carries until its user edits it
    warnings = section(summary, "Warnings").strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("- gcp:project: 'my-tpu-project' is the examples' placeholder")


def test_summary_lists_every_warning(tmp_path):
    path = tmp_path / "Pulumi.p.yaml"
    path.write_text(
        "config:\n  gcp:project: tpu-test-project\n  gcp:region: europe-west4\n  tpu-serving:environment: prod\n"
        "  tpu-serving:cluster:\n    privateNodes: false\n"
    )
    summary = render.render_stack(path)[2]["summary.md"]
    warnings = section(summary, "Warnings")
    assert "- tpu-serving:cluster.privateNodes=false: nodes get public IP addresses" in warnings
    # the region is a note on the estimate, in the cost section, not a warning (it would fail --strict)
    assert "no list prices" not in warnings
    cost = section(summary, "Estimated cost")
    assert "- note: no list prices for region 'europe-west4'" in cost


def test_render_is_deterministic(tmp_path):
    path = ROOT / "Pulumi.dev.yaml"
    first = render.render_stack(path)[2]
    second = render.render_stack(path)[2]
    assert first == second


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: render.stack_name(p))
def test_golden_snapshot(path):
    """Every example's render is committed under tests/golden/<stack>/; refresh with `make golden`."""
    golden = render.GOLDEN / render.stack_name(path)
    files = render.files_of(render.stack_of(path), recorded(path, True))
    committed = {str(p.relative_to(golden)): p.read_text() for p in golden.rglob("*") if p.is_file()}
    assert sorted(committed) == sorted(files), "files differ from tests/golden; run `make golden` and review the diff"
    for name, text in sorted(files.items()):
        if committed[name] != text:
            diff = "".join(
                difflib.unified_diff(committed[name].splitlines(True), text.splitlines(True), "golden", "render")
            )
            pytest.fail(f"{name} differs from its golden snapshot (run `make golden`):\n{diff[:3000]}")


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: render.stack_name(p))
def test_render_check_passes_for_every_shipped_stack(path, tmp_path, capsys):
    assert render.main(["--check", "--out", str(tmp_path), str(path)]) == 0
    out = capsys.readouterr().out
    assert " 0 violations" in out
    assert (tmp_path / render.stack_name(path) / "summary.md").is_file()


def test_check_reports_violations(capsys):
    from stacks.config import parse_stack_config
    from tooling.harness.offline import Recording
    from workloads.registry import WORKLOAD_TYPES

    cfg = parse_stack_config(
        {"environment": "dev"},
        stack="t",
        pulumi_project="tpu-serving",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=WORKLOAD_TYPES,
    )
    bad = Registration(
        type="kubernetes:core/v1:Service",
        name="bad",
        urn="urn:bad",
        custom=True,
        inputs={"apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"}, "spec": {"portz": []}},
        parent="",
        provider="",
        dependencies=[],
        protect=False,
        retain_on_delete=False,
        deleted_with="",
        ignore_changes=[],
        delete_before_replace=False,
        additional_secret_outputs=[],
    )
    errors = render.check(cfg, Recording(resources=[bad]))
    assert errors and "portz" in errors[0]


def test_missing_crds_are_said_not_passed(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TPU_SERVING_CRDS", str(tmp_path / "nowhere"))
    assert render.main(["--check", "--out", str(tmp_path), "dev"]) == 0
    out = capsys.readouterr().out
    assert "custom resources NOT checked" in out
    assert "not checked: monitoring.googleapis.com/v1 PodMonitoring" in out


def test_config_error_exits_non_zero(tmp_path, capsys):
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  gcp:project: tpu-test-project\n  gcp:region: us-east5\n  tpu-serving:environment: qa\n")
    assert render.main(["--out", str(tmp_path), str(bad)]) == 1
    assert "tpu-serving:environment: 'qa' is not allowed" in capsys.readouterr().err


def test_the_pathways_job_controller_manifest_is_rendered_and_said_unchecked(tmp_path, capsys):
    """Issue 14: the PathwaysJob controller's ConfigFile (a multi-language component) appears in k8s/ like a Helm
    release, with the pinned manifest it applies; --check says its objects are not validated offline."""
    path = next(p for p in EXAMPLES if p.parent.name == "pathways-job")
    files = render.render_files(render.parse_stack_file(path), recorded(path, True))
    entry = yaml.safe_load(files["k8s/_cluster/ConfigFile-addons-pathways-job.yaml"])
    assert entry["file"] == "https://github.com/google/pathways-job/releases/download/v0.1.4/install.yaml"
    assert list(entry) == ["file", "options"]
    assert render.main(["--check", "--out", str(tmp_path), str(path)]) == 0
    assert (
        "not checked: ConfigFile addons-pathways-job: the upstream manifest https://github.com/google/pathways-job"
        in capsys.readouterr().out
    )


# ---- the options of Kubernetes objects (the goldens once recorded inputs only) --------------------------------


def test_every_kubernetes_golden_records_its_resource_options():
    """Each tests/golden/<example>/k8s/** file holds an `options:` block beside the object: the parent component and
    the provider (the stack's cluster), as the gcp/ files do; so a change of parent, provider, dependsOn or
    replaceOnChanges shows in the goldens' diff."""
    files = sorted(render.GOLDEN.glob("*/k8s/**/*.yaml"))
    assert files
    for path in files:
        options = yaml.safe_load(path.read_text())["options"]
        assert options["provider"].startswith("pulumi:providers:kubernetes "), path  # a provider the stack made
        assert options["parent"].startswith("tpu-serving:"), path


def test_dropping_replace_on_changes_from_the_saxml_jobset_changes_its_render():
    """A JobSet's replicatedJobs are immutable (kubernetes-sigs/jobset@v0.10.1 pkg/webhooks/jobset_webhook.go), so
    Saxml's JobSet is replaced on a change there; the render records the option, and a program without it renders
    otherwise (the goldens recorded inputs only, so dropping the option changed none)."""
    path = next(p for p in EXAMPLES if p.parent.name == "saxml-175b")
    recording = recorded(path, True)
    name = next(n for n in render.kubernetes_files(recording) if "/JobSet-" in n)
    before = render.kubernetes_files(recording)[name]
    options = yaml.safe_load(before)["options"]
    assert options["replaceOnChanges"] == ["spec.replicatedJobs"] and options["deleteBeforeReplace"] is True
    assert before == (render.GOLDEN / "saxml-175b" / name).read_text()
    jobset = next(r for r in recording.resources if r.type == "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    jobset.replace_on_changes = []
    assert render.kubernetes_files(recording)[name] != before


def test_what_reads_a_kubernetes_render_as_a_manifest_gets_no_options_block():
    """The review (tooling/review/recreate.py read_render) compares a ComputeClass's fields, and the scan hands checkov
    manifests: neither sees the options block as a field of the object; the review keeps the options apart."""
    from tooling.review.recreate import COMPUTE_CLASS, read_render
    from tooling.scans.scan import scan_files

    resources = read_render(render.GOLDEN / "gemma-fallback")
    compute_class = next(r for r in resources.values() if r["type"] == COMPUTE_CLASS)
    assert "options" not in compute_class["inputs"] and compute_class["inputs"]["kind"] == "ComputeClass"
    assert compute_class["options"]["provider"] == "pulumi:providers:kubernetes cluster-k8s"
    rendered = {
        str(p.relative_to(render.GOLDEN / "gemma-fallback")): p.read_text()
        for p in (render.GOLDEN / "gemma-fallback").rglob("*.yaml")
    }
    scanned = scan_files(rendered)
    assert scanned and all("options" not in yaml.safe_load(text) for text in scanned.values())
    assert sum(rel.startswith("k8s/") for rel in scanned) == sum(rel.startswith("k8s/") for rel in rendered)
