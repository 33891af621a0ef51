"""What a reviewer sees (issue 23, items 7-11): every Gateway in "Network exposure", what each chart installs, what
replacing a protected resource needs and what a ComputeClass change does, a gateway request that works as pasted,
and a component graph drawn as its transitive reduction in layers."""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from stacks.facts import gke_managed, versions
from stacks.serving import gateway as gateway_module
from tests.conftest import EXAMPLES, ROOT, STACK_FILES, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import load_stack_file
from tooling.oracles import chart_objects
from tooling.review import graph, model_routing, render, render_diff, summary
from tooling.review.recreate import compute_class_changes, protected_needs, read_render, recreations, review
from workloads.registry import WORKLOAD_TYPES

ALL_IN_ONE = next(p for p in EXAMPLES if p.name == "Pulumi.all-in-one.yaml")
MULTI_HOST = next(p for p in EXAMPLES if p.parent.name == "vllm-multi-host")


def _gateway_config(**gateway: Any) -> dict[str, Any]:
    cfg = load_stack_file(MULTI_HOST)
    cfg["tpu-serving:gateway"] = {**cfg["tpu-serving:gateway"], **gateway}
    return cfg


# ---- item 7: every Gateway in "Network exposure" ---------------------------------------------------------------


def test_an_external_gateway_is_listed_with_its_class_scheme_port_and_cloud_armor_ranges(run):
    rec = run(
        _gateway_config(exposure="external", sourceRanges=["203.0.113.0/24", "198.51.100.7/32"]),
        preview=True,
        stack="vllm-multi-host",
    )
    rows = [r for r in summary.exposure(rec) if r[0].startswith("Gateway ")]
    assert len(rows) == len(rec.of_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")) == 1
    what, kind_, ports, reach = rows[0]
    assert what == "Gateway `inference-gateway/inference-gateway`"
    assert "gke-l7-regional-external-managed" in kind_ and "external Application Load Balancer" in kind_
    assert ports == "80/HTTP (http)"
    assert reach.startswith("**the internet**")
    # the route, the header it needs, and the policy the stack put in front of its backend with the allowed ranges
    assert "route `llama70b/llama70b` (header `X-Gateway-Base-Model-Name: gs://" in reach
    assert "Cloud Armor `tpu-serving-vllm-multi-host-gateway` allows only `203.0.113.0/24`, `198.51.100.7/32`" in reach


def test_an_existing_cloud_armor_policy_and_an_internal_gateway_are_said(run):
    rec = run(
        _gateway_config(exposure="external", cloudArmorPolicy="team-policy"), preview=True, stack="vllm-multi-host"
    )
    (row,) = [r for r in summary.exposure(rec) if r[0].startswith("Gateway ")]
    assert "Cloud Armor `team-policy` (an existing policy, not in this stack)" in row[3]
    (internal,) = [r for r in summary.exposure(recorded(MULTI_HOST, True)) if r[0].startswith("Gateway ")]
    assert "gke-l7-rilb" in internal[1] and internal[3].startswith("the VPC;")


def test_the_summary_page_shows_the_gateway_under_network_exposure(tmp_path):
    import yaml

    stack = tmp_path / "Pulumi.vllm-multi-host.yaml"
    stack.write_text(yaml.safe_dump({"config": _gateway_config(exposure="external", sourceRanges=["203.0.113.0/24"])}))
    text = render.render_stack(stack)[2]["summary.md"]
    section = text.split("\n## Network exposure\n", 1)[1].split("\n## ", 1)[0]
    assert "gke-l7-regional-external-managed" in section and "`203.0.113.0/24`" in section


# ---- item 8: what charts install -------------------------------------------------------------------------------


def _stack_releases():
    from tests.conftest import session_run

    return chart_objects.stack_releases(lambda cfg, stack: session_run(cfg, preview=True, stack=stack))


def test_every_chart_release_the_stacks_register_has_a_record():
    """Every chart and version the matrix pins (add-ons, metrics adapters, the endpoint picker), and every release
    a shipped stack or an add-on version registers, is in tooling/data/chart_objects.json with its objects."""
    records = chart_objects.load()
    assert set(chart_objects.pinned_charts()) <= set(records)
    releases = _stack_releases()
    assert set(releases) == set(chart_objects.pinned_charts())
    for key, release in releases.items():
        objects = chart_objects.installed(release.chart, release.version, release.name, release.namespace)
        assert objects, key
        # cluster-scoped objects are marked and carry no namespace; namespaced ones have one
        assert all((o["namespace"] is None) == o["clusterScoped"] for o in objects), key
    # the charts the issue names: RBAC, webhooks, APIServices, CRDs among them
    kinds = {o["kind"] for r in records.values() for o in r["objects"] if o["clusterScoped"]}
    assert {
        "ClusterRole",
        "ClusterRoleBinding",
        "MutatingWebhookConfiguration",
        "APIService",
        "CustomResourceDefinition",
    } <= kinds


def _pinned_helm() -> str:
    helm = chart_objects.find_helm()
    if helm is None:
        pytest.skip("no helm binary (HELM, PATH, or `python -m tooling.oracles.chart_objects --fetch-helm`)")
    version = subprocess.run([helm, "version", "--short"], capture_output=True, text=True).stdout
    if not version.startswith(versions.HELM.helm_version + "+"):
        pytest.skip(f"helm {version.strip()} is not the pinned {versions.HELM.helm_version} (make helm)")
    return helm


def test_the_record_holds_exactly_the_releases_the_stacks_register():
    recorded_ = json.loads(chart_objects.DATA.read_text())
    assert set(recorded_["charts"]) == set(_stack_releases()), (
        "run `python -m tooling.oracles.chart_objects` and commit it"
    )


@pytest.mark.parametrize("key", sorted(chart_objects.load()))
def test_the_record_matches_a_fresh_helm_render(key: str):
    """Re-render each chart with the pinned Helm over its source at its tag (../shared/reference/charts, then
    charts-staged: KEDA's) and the values the program passes today; the committed record must be that render. A
    chart whose source is not at hand skips, naming it."""
    helm, charts = _pinned_helm(), chart_objects.charts_root()
    release = _stack_releases().get(key)
    if release is None:
        pytest.fail(f"{key} is recorded but no stack registers it: run `python -m tooling.oracles.chart_objects`")
    if not chart_objects.has_source(charts, release):
        where = chart_objects.chart_dir(charts, release.chart, release.version)
        pytest.skip(f"no chart source for {key} at {where} ({chart_objects.source(release.chart, release.version)})")
    fresh = chart_objects.render_all(helm, charts, {key: release})
    assert fresh["charts"][key] == chart_objects.load()[key], "run `python -m tooling.oracles.chart_objects`"


def test_the_generator_keeps_the_record_of_a_chart_whose_source_is_absent(tmp_path, monkeypatch, capsys):
    """No chart source at all (an empty --charts folder): `--check` renders nothing, keeps every recorded entry,
    names each with the folder it looked in, and passes; a release with neither source nor record is an error."""
    monkeypatch.setenv("HELM", shutil.which("true") or "/bin/true")  # never asked to render
    releases = _stack_releases()
    monkeypatch.setattr(chart_objects, "stack_releases", lambda: releases)
    assert chart_objects.main(["--check", "--charts", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    for key, release in releases.items():
        where = chart_objects.chart_dir(tmp_path, release.chart, release.version)
        assert f"{key}: kept the recorded entry (no chart source at {where})" in err
    recorded_ = json.loads(chart_objects.DATA.read_text())
    first = sorted(releases)[0]
    del recorded_["charts"][first]
    with pytest.raises(FileNotFoundError, match=f"no chart source and no record for {re.escape(first)}"):
        chart_objects.render_at_hand("true", tmp_path, releases, recorded_)


def test_the_summary_lists_what_each_release_installs_and_its_services():
    from tooling.harness.offline import parse_stack_file

    rec = recorded(MULTI_HOST, True)
    page = summary.summary(parse_stack_file(MULTI_HOST), rec)
    releases = page.split("\n## Helm releases\n", 1)[1].split("\n## ", 1)[0]
    assert "### `lws` in `lws-system`: oci://registry.k8s.io/lws/charts/lws 0.7.0" in releases
    assert "| ClusterRole | `lws-manager-role` |  | **cluster** |" in releases
    assert "| MutatingWebhookConfiguration | `lws-mutating-webhook-configuration` |  | **cluster** |" in releases
    # the endpoint picker's release, named after the workload
    assert "| Deployment | `llama70b-epp` | `llama70b` | namespace |" in releases
    exposure = page.split("\n## Network exposure\n", 1)[1].split("\n## ", 1)[0]
    assert (
        "Service `llama70b/llama70b-epp` (Helm release `llama70b`) | ClusterIP | 9002/TCP (grpc-ext-proc)" in exposure
    )
    assert "Service `lws-system/lws-webhook-service` (Helm release `lws`)" in exposure
    # images: the picker's full registry path, traced to the matrix
    images = {row[0]: row for row in summary.images(rec)}
    assert images["`ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0`"][2] == "`LLM_D_ROUTER`"


def test_a_release_without_a_record_is_said(monkeypatch):
    monkeypatch.setattr(chart_objects, "load", lambda path=chart_objects.DATA: {})
    lines = summary.helm_releases(recorded(MULTI_HOST, True))
    assert "**Not recorded**: run `make helm chart-objects` (Helm and the chart sources at their tags)." in lines


# ---- item 9: replacing a protected resource; a ComputeClass change ---------------------------------------------


def _render(text: str, tmp_path: Path, name: str) -> Path:
    stack = tmp_path / name / f"Pulumi.{'prod' if 'prod' in name else 'fallback'}.yaml"
    stack.parent.mkdir(parents=True)
    stack.write_text(text)
    files = render.render_stack(stack)[2]
    out = tmp_path / "out" / name / render.stack_name(stack)
    render.write(files, out)
    return out


def test_moving_a_prod_tpu_pool_says_pulumi_up_refuses_and_what_it_needs(tmp_path):
    prod = (ROOT / "Pulumi.dev.yaml").read_text().replace("environment: dev", "environment: prod")
    old = _render(prod, tmp_path, "prod-old")
    # node_config.spot is ForceNew (tooling/data/provider_rules.json, google-beta resource_container_node_pool.go)
    new = _render(prod.replace("capacity: on-demand", "capacity: spot"), tmp_path, "prod-new")
    lines = review(old, new)
    assert lines[0].endswith("nodeConfig.spot (unset) -> true (replaces it)"), lines[0]
    (need,) = [line for line in lines if "refuses" in line]
    assert need.startswith("gcp:container/nodePool:NodePool tpu-v5e-2x4: `pulumi up` refuses: it is protected")
    assert "stops serving" in need and 'docs/operations.md "Moving a serving TPU pool"' in need
    # the URN to unprotect, as Pulumi spells it (parent component type, then the resource's)
    assert (
        "`pulumi state unprotect 'urn:pulumi:prod::tpu-serving::tpu-serving:tpu:TpuSlicePool$"
        "gcp:container/nodePool:NodePool::tpu-v5e-2x4'`" in need
    )
    # the procedure exists where the message says
    page = (ROOT / "docs" / "operations.md").read_text()
    assert "### Moving a serving TPU pool" in page
    # the same change in dev (unprotected) needs nothing more than the line
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    dev_old = _render(dev, tmp_path, "dev-old")
    dev_new = _render(dev.replace("capacity: on-demand", "capacity: spot"), tmp_path, "dev-new")
    assert not protected_needs(read_render(dev_old), read_render(dev_new), recreations(dev_old, dev_new), "dev")


def test_moving_a_prod_tpu_pool_to_another_zone_is_a_replacement_pulumi_up_refuses(tmp_path):
    """The issue's own scenario: the provider would update nodeLocations in place (GKE removes the old zone's nodes),
    so the stack replaces TPU node pools on a zone change (components/tpu_pool.py) and the review says what that
    needs."""
    prod = (ROOT / "Pulumi.dev.yaml").read_text().replace("environment: dev", "environment: prod")
    old = _render(prod, tmp_path, "prod-old")
    new = _render(prod.replace("zone: us-central1-a", "zone: us-central1-c"), tmp_path, "prod-new")
    lines = review(old, new)
    assert lines[0].endswith('nodeLocations ["us-central1-a"] -> ["us-central1-c"] (replaces it: replaceOnChanges)'), (
        lines
    )
    (need,) = [line for line in lines if "refuses" in line]
    assert need.startswith("gcp:container/nodePool:NodePool tpu-v5e-2x4: `pulumi up` refuses: it is protected")


def test_a_protected_pool_removed_needs_unprotect_first(tmp_path):
    old = read_render(Path(ROOT / "tests" / "golden" / "all-in-one"))
    new = {k: v for k, v in old.items() if "tpu-v6e-4x4" not in k}
    lines = protected_needs(old, new, recreations(old, new), "all-in-one")
    assert lines == [
        "gcp:container/nodePool:NodePool tpu-v6e-4x4-s0: `pulumi up` refuses: it is protected (`protect`) deletion; "
        "`pulumi state unprotect 'urn:pulumi:all-in-one::tpu-serving::tpu-serving:tpu:TpuSlicePool$"
        "gcp:container/nodePool:NodePool::tpu-v6e-4x4-s0'` first (the preview gate also needs the `allow-replace` label)"
    ]


def test_a_capacity_list_pool_zone_change_shows_the_compute_class_change_and_its_effect(tmp_path):
    (path,) = [p for p in EXAMPLES if p.parent.name == "gemma-fallback"]
    text = path.read_text()
    old = _render(text, tmp_path, "fallback-old")
    new = _render(text.replace("zone: us-west4-a", "zone: us-west4-b"), tmp_path, "fallback-new")
    assert recreations(old, new) == []  # no node pool of its own: nothing is replaced
    (line,) = compute_class_changes(read_render(old), read_render(new))
    assert line.startswith(
        'kubernetes:cloud.google.com/v1:ComputeClass tpu-v5e-2x4: spec.priorityDefaults.location.zones ["us-west4-a"] '
        '-> ["us-west4-b"] (updated in place'
    )
    assert "already runs for the class stay where they are and keep serving" in line
    assert line in review(old, new)
    comment = render_diff.comment("+++ head/x/y\n", ["x"], "main", recreated=[f"x: {line}"])
    assert f"- x: {line}" in comment


def test_compare_cli_prints_what_a_protected_replacement_needs(tmp_path, capsys):
    stack = tmp_path / "Pulumi.prod.yaml"
    prod = (ROOT / "Pulumi.dev.yaml").read_text().replace("environment: dev", "environment: prod")
    stack.write_text(prod)
    assert render.main(["--out", str(tmp_path / "a"), str(stack)]) == 0
    stack.write_text(prod.replace("capacity: on-demand", "capacity: spot"))
    assert render.main(["--out", str(tmp_path / "b"), "--compare", str(tmp_path / "a"), str(stack)]) == 0
    out = capsys.readouterr().out
    assert "  protected: gcp:container/nodePool:NodePool tpu-v5e-2x4: `pulumi up` refuses" in out


# ---- item 10: the gateway request works as pasted ----------------------------------------------------------------


class _Gateway:
    """A stand-in for the Gateway's address: records each request and answers like vLLM."""

    def __init__(self):
        import http.server
        import threading

        seen = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                seen.append((self.path, dict(self.headers), json.loads(body)))
                reply = json.dumps({"choices": [{"text": "a tensor chip"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def _paste(command: str, tmp_path: Path, address: str) -> subprocess.CompletedProcess:
    """Run a command as pasted into bash, with a stand-in kubectl: `get gateway` prints the address, `exec ... --`
    runs the rest here (as it would in the serving container)."""
    import sys

    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    (bin_ / "kubectl").write_text(
        f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
        f"if args[:2] == ['get', 'gateway']: print({address!r}, end='')\n"
        "elif 'exec' in args: os.execvp(args[args.index('--') + 1], args[args.index('--') + 1:])\n"
        "else: sys.exit(f'unexpected kubectl {args}')\n"
    )
    (bin_ / "kubectl").chmod(0o755)
    python_dir = str(Path(sys.executable).parent)  # `python3` in the serving container: the venv's, here
    env = {"PATH": f"{bin_}:{python_dir}:/usr/bin:/bin"}
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("output", ["gatewayRequestInCluster", "gatewayCurl"])
def test_the_gateway_request_works_as_pasted_and_carries_what_the_route_matches(output, tmp_path):
    """The outputs' requests, run in bash as pasted: each reaches the Gateway's address as a plain OpenAI request
    (no routing header: issue 38) whose body names a model for which the body-based router, replayed over the
    recorded ConfigMaps (tooling/review/model_routing.py), sets the header (name and value) the HTTPRoute matches.
    gatewayRequestInCluster leaves from a serving container (an internal gateway answers only inside the VPC);
    gatewayCurl from where the gateway is reachable."""
    if output == "gatewayCurl" and shutil.which("curl") is None:
        pytest.skip("no curl on this machine")
    rec = recorded(MULTI_HOST, True)
    command = rec.outputs["gateway"]["routes"]["llama70b"][output]
    (match,) = rec.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs["spec"]["rules"][0]["matches"]
    (header,) = match["headers"]
    gateway = _Gateway()
    try:
        done = _paste(command, tmp_path, gateway.address)
    finally:
        gateway.server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "a tensor chip" in done.stdout
    ((path, headers, body),) = gateway.requests
    assert path.startswith(match["path"]["value"]) and path == "/v1/completions"
    assert not [k for k in headers if k.lower().startswith("x-gateway")]
    adapters, bases = model_routing.adapters_store(kubernetes_objects(rec), summary.body_router_namespace(rec) or "")
    assert header["name"] == gateway_module.MODEL_HEADER
    assert model_routing.base_model_header(body["model"], adapters, bases) == header["value"]


@pytest.mark.parametrize("example", ["vllm-multi-host", "vllm-single-host"])
def test_the_in_cluster_request_runs_in_a_serving_container_the_stack_creates(example, run):
    """It execs into what the stack registers: the LeaderWorkerSet's group-0 leader pod and its leader container,
    or the Deployment and its container."""
    (path,) = [p for p in EXAMPLES if p.name == f"Pulumi.{example}.yaml"]
    cfg = load_stack_file(path)
    cfg["tpu-serving:gateway"] = {"enabled": True}
    # GKE installs the InferencePool CRD from this version on; an enabled gateway needs it (stacks/facts/gke_managed.py)
    minimum = gke_managed.installed_from(gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, frozenset())
    cfg["tpu-serving:cluster"] = {**cfg.get("tpu-serving:cluster", {}), "minMasterVersion": minimum}
    rec = run(cfg, stack=example, preview=True)
    command = rec.outputs["gateway"]["routes"]["llama70b"]["gatewayRequestInCluster"]
    target = re.search(r"kubectl -n (\S+) exec (\S+) -c (\S+) --", command)
    assert target
    namespace, pod, container = target.groups()
    if pod.startswith("pod/"):
        (lws,) = rec.of_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
        meta, spec = lws.inputs["metadata"], lws.inputs["spec"]
        assert pod == f"pod/{meta['name']}-0"  # group 0's leader (LeaderWorkerSet pod naming)
        containers = spec["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    else:
        (deployment,) = [
            d for d in rec.of_type("kubernetes:apps/v1:Deployment") if d.inputs["metadata"]["namespace"] == namespace
        ]
        meta = deployment.inputs["metadata"]
        assert pod == f"deploy/{meta['name']}"
        containers = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert meta["namespace"] == namespace and container in {c["name"] for c in containers}


# ---- item 11: the component graph ------------------------------------------------------------------------------


def _reach(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    nodes = {n for p in pairs for n in p}
    return {(a, b) for a in nodes for b in nodes if a != b and graph._reaches(pairs, a, b)}


def test_transitive_reduction_drops_exactly_the_implied_edges():
    assert graph.transitive_reduction({("c", "w"), ("c", "n"), ("n", "w")}) == {("c", "n"), ("n", "w")}
    assert graph.transitive_reduction({("a", "b")}) == {("a", "b")}
    # a cycle keeps what it reaches
    cyc = {("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")}
    assert _reach(graph.transitive_reduction(cyc)) == _reach(cyc)
    rng = random.Random(23)
    for _ in range(200):
        nodes = range(rng.randint(2, 8))
        dag = {(a, b) for a, b in itertools.combinations(nodes, 2) if rng.random() < 0.4}
        reduced = graph.transitive_reduction(dag)
        assert reduced <= dag and _reach(reduced) == _reach(dag)
        # minimal: no kept edge is implied by the others (a DAG's reduction is unique)
        assert all(not graph._reaches(reduced - {e}, *e) for e in reduced)


LAYER_IDS = [layer_id for layer_id, _ in graph.LAYERS]


def _layers(mermaid: str) -> list[tuple[str, list[str]]]:
    out, current = [], None
    for line in mermaid.splitlines():
        if m := re.fullmatch(r'\s*subgraph (\w+)\[".*"\]', line):
            current = (m.group(1), [])
            out.append(current)
        elif line.strip() == "end":
            current = None
        elif current is not None and (m := re.fullmatch(r'\s*(\w+)\[".*"\]', line)):
            current[1].append(m.group(1))
    return out


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem)
def test_component_graph_is_layered_and_reduced(path):
    rec = recorded(path, True)
    text = graph.component_graph(rec)
    layers = _layers(text)
    # layers are subgraphs, in order; every component is in exactly one
    assert [name for name, _ in layers] == [i for i in LAYER_IDS if i in {name for name, _ in layers}]
    ids = graph.node_ids(rec)
    tops = {ids[t.urn] for t in graph.top_level(rec).values()}
    placed = [n for _, members in layers for n in members]
    assert sorted(placed) == sorted(tops)
    where = {n: LAYER_IDS.index(name) for name, members in layers for n in members}
    drawn = {(a, b) for a, b in re.findall(r"^  (\w+) (?:-->|-\.->\|\w+\|) (\w+)$", text, re.M)}
    pairs = set(graph.component_pairs(rec))
    assert drawn == graph.transitive_reduction(pairs) and _reach(drawn) == _reach(pairs)
    # no edge points back up a layer
    assert all(where[a] <= where[b] for a, b in drawn), [(a, b) for a, b in drawn if where[a] > where[b]]


def test_all_in_one_no_longer_draws_the_cluster_to_each_workload():
    rec = recorded(ALL_IN_ONE, True)
    small, full = graph.component_graph(rec), graph.full_graph(rec)
    assert "Cluster_cluster --> Serving_workload_sax" not in small
    assert (
        "Cluster_cluster --> Namespaces_namespaces" in small
        and "Namespaces_namespaces --> Serving_workload_sax" in small
    )
    # 37, the JetStream workload's grant on the stack bucket (its compile cache, issue 26), and the image
    # repositories (cluster.images.mirror) to the cluster and to the two workloads' own node identities (saxml,
    # pathways-job) that read them
    assert graph.edge_count(small) < len(graph.component_pairs(rec)) == 41
    # the full graph stays behind "Expand" in the summary and in the pull-request comment
    assert "Cluster_cluster_gke --> NodePool_cluster_system" in full
    comment = render_diff.comment("+++ head/aio/x\n", ["aio"], "main", graphs={"aio": small}, full_graphs={"aio": full})
    assert graph.fits_github(full)  # GitHub still draws it
    expanded = f"<details><summary>Expand: every resource and edge of aio</summary>\n\n```mermaid\n{full}```"
    # behind "Expand" when the comment has room for it beside the diff (render_diff._expanded: COMMENT_LIMIT less
    # DIFF_ROOM less the pictures before it), else a pointer to `make render`; the all-in-one's full graph (each
    # identity's storage.buckets.get binding, issue 26) no longer has that room, a smaller one does
    if expanded not in comment:
        assert len(full) + 200 > render_diff.COMMENT_LIMIT - render_diff.DIFF_ROOM - len(small)
        assert "`make render STACK=aio` writes `graph-full.mmd`" in comment
        short = render_diff.comment(
            "+++ head/aio/x\n", ["aio"], "main", graphs={"aio": small}, full_graphs={"aio": small}
        )
        assert f"every resource and edge of aio</summary>\n\n```mermaid\n{small}```" in short


def test_every_workload_type_lands_in_the_workloads_layer():
    """Over the registry: each type's component, as the shipped stacks register it, is drawn in the last layer."""
    from tooling.harness.offline import parse_stack_file

    seen = set()
    for path in STACK_FILES:
        rec, cfg = recorded(path, True), parse_stack_file(path)
        tops = {t.name: t for t in graph.top_level(rec).values()}
        for w in cfg.workloads:
            assert graph.LAYERS[graph.layer(tops[f"workload-{w.name}"])][1] == "workloads"
            seen.add(w.workload.type)
        assert graph.LAYERS[graph.layer(tops["namespaces"])][1] == "platform services"
    assert seen == set(WORKLOAD_TYPES)
