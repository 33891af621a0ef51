"""What the render shows a reviewer first (issue 14): stack outputs, IAM grants, images, network exposure and
protection in summary.md; a graph with readable ids, provider and bucket edges, small enough for GitHub."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import EXAMPLES, STACK_FILES, make_config, recorded, stack_ksa
from tooling.harness.k8s_objects import is_object, kubernetes_objects
from tooling.harness.offline import UNKNOWN, parse_stack_file
from tooling.review import graph, summary

ALL_IN_ONE = next(p for p in EXAMPLES if p.name == "Pulumi.all-in-one.yaml")
DEV = STACK_FILES[0]


def page(path) -> str:
    return summary.summary(parse_stack_file(path), recorded(path, True))


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def mermaid_blocks(text: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", text, re.S)


def check_mermaid(text: str) -> tuple[set[str], list[tuple[str, str]]]:
    """Declared node ids and edges; fails on ids that are not plain identifiers, undeclared endpoints or
    unbalanced subgraphs."""
    declared, edges, depth = set(), [], 0
    for line in text.splitlines()[1:]:
        line = line.strip()
        if line == "end":
            depth -= 1
            continue
        if m := re.fullmatch(r'subgraph (\w+)\[".*"\]', line):
            declared.add(m.group(1))
            depth += 1
        elif m := re.fullmatch(r'(\w+)\[".*"\]', line):
            declared.add(m.group(1))
        elif m := re.fullmatch(r"(\w+) (?:-->|-\.->\|\w+\|) (\w+)", line):
            edges.append((m.group(1), m.group(2)))
        else:
            pytest.fail(f"unexpected Mermaid line {line!r}")
        assert depth >= 0
    assert depth == 0
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", i) for i in declared)
    assert {n for e in edges for n in e} <= declared
    return declared, edges


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem)
def test_graphs_are_valid_readable_and_fit_github(path):
    rec = recorded(path, True)
    small, full = graph.component_graph(rec), graph.full_graph(rec)
    nodes, _ = check_mermaid(small)
    check_mermaid(full)
    # one node per top-level component or resource (and one subgraph per layer)
    layers = {layer_id for layer_id, _ in graph.LAYERS}
    assert len(nodes - layers) == len({graph.top_level(rec)[r.urn].urn for r in rec.resources})
    # GitHub draws a Mermaid block only within Mermaid's default limits (see tooling/review/graph.py for the source)
    for text in (small, full):
        assert graph.fits_github(text), (len(text), graph.edge_count(text))
    assert not re.search(r"\bn[0-9a-f]{10}\b", full), "hash ids are unreadable in a diff"


def test_ids_name_the_resource_and_stay_stable():
    rec = recorded(ALL_IN_ONE, True)
    ids = graph.node_ids(rec)
    assert ids[rec.one("gcp:container/cluster:Cluster").urn] == "Cluster_cluster_gke"
    assert ids[rec.one("gcp:container/nodePool:NodePool", "tpu-v5e-2x4").urn] == "NodePool_tpu_v5e_2x4"
    assert ids[rec.one("tpu-serving:tpu:TpuSlicePool", "tpu-v5e-2x4").urn] == "TpuSlicePool_tpu_v5e_2x4"
    assert len(set(ids.values())) == len(ids)
    assert graph.full_graph(rec) == graph.full_graph(recorded(ALL_IN_ONE, True))


def test_every_kubernetes_object_has_an_edge_from_the_clusters_provider():
    rec = recorded(ALL_IN_ONE, True)
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    from_provider = {e.target for e in graph.edges(rec) if e.source == provider.urn}
    objects = [r for r in rec.resources if r.type.startswith("kubernetes:") and r.custom]
    assert objects and all(r.urn in from_provider for r in objects)
    assert f"Provider_cluster_k8s -.->|provider| {graph.node_ids(rec)[objects[0].urn]}" in graph.full_graph(rec)


def test_the_bucket_has_edges_to_what_uses_it():
    path = next(p for p in EXAMPLES if p.name == "Pulumi.llama3-405b-pathways.yaml")
    rec = recorded(path, True)
    bucket = rec.one("gcp:storage/bucket:Bucket", "bucket-gcs")
    uses = {rec.by_urn(e.target).type for e in graph.edges(rec) if e.source == bucket.urn}
    # the LeaderWorkerSet reads gs://<bucket>/pathways/... without depending on the bucket; the grant depends on it
    assert "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet" in uses
    assert "gcp:storage/bucketIAMMember:BucketIAMMember" in uses


def test_summary_embeds_both_graphs():
    text = page(ALL_IN_ONE)
    blocks = mermaid_blocks(text)
    rec = recorded(ALL_IN_ONE, True)
    assert blocks == [graph.component_graph(rec), graph.full_graph(rec)]
    assert "<details><summary>Expand: every resource (" in text


def test_stack_outputs_as_pulumi_stack_output_json_prints_them():
    text = page(ALL_IN_ONE)
    rec = recorded(ALL_IN_ONE, True)
    shown = json.loads(re.search(r"```json\n(.*?)```", section(text, "Stack outputs"), re.S).group(1))
    assert set(shown) == set(rec.outputs)
    assert shown["kubeconfig"] == "[secret]" and "kubeconfig" in rec.secret_outputs
    assert shown["clusterEndpoint"] == UNKNOWN  # computed by GKE
    assert shown["clusterName"] == "tpu-serving-all-in-one"
    assert all(shown[k] == v for k, v in rec.outputs.items() if k not in rec.secret_outputs)


def test_every_iam_grant_is_listed_with_a_readable_member():
    rec = recorded(ALL_IN_ONE, True)
    grants = [r for r in rec.resources if r.type.startswith("gcp:") and r.type.endswith("IAMMember")]
    rows = summary.iam_grants(rec, "my-tpu-project")
    assert len(rows) == len(grants) > 0
    assert {row[3].split(" ", 1)[1] for row in rows} == {g.name for g in grants}
    assert not any(UNKNOWN in row[0] or UNKNOWN in row[2] for row in rows)
    assert [
        f"`serviceAccount:my-tpu-project.svc.id.goog[gemma/{stack_ksa('gemma', 'all-in-one')}]`",
        "`roles/iam.workloadIdentityUser`",
    ] in [row[:2] for row in rows]
    # a prefix-scoped bucket grant says which prefix
    on = {row[3].split(" ", 1)[1]: row[2] for row in rows}
    (http_cell,) = [n for n in on if n.startswith("workload-sax-http-identity-viewer-sax-root-sax-sax-")]
    assert on[http_cell] == "bucket `my-tpu-project-tpu-serving-all-in-one`, only sax-root/sax/sax/"


def test_every_image_is_listed_pinned_and_traced_to_the_matrix():
    rec = recorded(ALL_IN_ONE, True)
    rows = {row[0].strip("`"): row for row in summary.images(rec)}
    in_objects = {c["image"] for obj in kubernetes_objects(rec) for c in _containers(obj)}
    assert in_objects and in_objects <= set(rows)
    assert all(row[1] == "yes" and row[2] for row in rows.values()), rows
    assert rows["registry.k8s.io/lws/lws:v0.7.0"][2] == "`CHARTS['lws']['0.7.0']`"
    assert not summary.pinned("busybox") and not summary.pinned("x/y:latest") and summary.pinned("x/y:v1")


def _containers(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers"):
                yield from value
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _containers(value)


def test_network_exposure_lists_the_control_plane_and_every_service(run):
    rec = recorded(ALL_IN_ONE, True)
    rows = summary.exposure(rec)
    services = [r for r in rec.resources if r.type == "kubernetes:core/v1:Service" and is_object(r)]
    # and the Services the add-on charts install (tooling/data/chart_objects.json), marked with their release
    from_charts = [r for r in rows if "(Helm release `" in r[0]]
    assert from_charts and len(rows) == len(services) + len(from_charts) + 1
    assert rows[0][0].startswith("GKE control plane") and "`203.0.113.0/24`" in rows[0][3]
    sax = next(r for r in rows if "`sax/sax-http`" in r[0])
    # Saxml's unauthenticated HTTP API defaults to exposure: cluster
    assert sax[1:] == ["ClusterIP", "8888/TCP", "inside the cluster (ClusterIP)"]
    dev = summary.exposure(recorded(DEV, True))
    # the dev stack reaches its control plane through the DNS endpoint; its IP endpoint is the VPC's only
    assert dev[0][3].startswith("DNS endpoint (IAM: container.clusters.connect); IP endpoint: the VPC only")
    opened = make_config(tpu_serving__cluster={"controlPlaneEndpoint": "ip"})
    assert "**public IP endpoint, any address**" in summary.exposure(run(opened, preview=True))[0][3]  # said out loud


def test_protection_of_stateful_resources_per_environment():
    staging = {row[0]: row[1:] for row in summary.protection(recorded(ALL_IN_ONE, True))}
    assert staging["container.Cluster cluster-gke"] == ["yes", "no", "yes", ""]
    assert staging["storage.Bucket bucket-gcs"] == ["yes", "yes", "", "no"]
    dev = {row[0]: row[1:] for row in summary.protection(recorded(DEV, True))}
    assert dev["container.Cluster cluster-gke"][:3] == ["no", "no", "no"]
    assert dev["storage.Bucket bucket-gcs"] == ["no", "no", "", "yes"]
