"""Lifecycle: pause without teardown, decommissioning protected stacks, teardown order, upgrades that never
recreate infrastructure, recreation review, leak audit, and the cost estimate."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys

import pulumi
import pytest

from stacks import addons
from stacks.facts import catalog, versions
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring.adapters.entry import DROP_API_SERVICES
from stacks.reports import cost
from tests.conftest import STACK_FILES, make_config, pool, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT, load_stack_file
from tooling.review import render
from tooling.review.recreate import recreations

ALL_IN_ONE = ROOT / "examples/all-in-one/Pulumi.all-in-one.yaml"
DATA_TYPES = {"gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool", "gcp:storage/bucket:Bucket"}


def paused(config: dict) -> dict:
    return {**config, "tpu-serving:paused": True}


# ---- pause ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pause_pair(request):
    from tooling.harness.offline import run_program

    config = load_stack_file(ALL_IN_ONE)
    return run_program(config, stack="all-in-one"), run_program(paused(config), stack="all-in-one")


def tpu(rec) -> dict:
    return {r.name: r.inputs for r in rec.of_type("gcp:container/nodePool:NodePool") if r.name.startswith("tpu-")}


def kept(rec) -> set:
    return {r.urn for r in rec.resources if r.type in DATA_TYPES or r.type.startswith("tpu-serving:")}


def data_names(rec) -> set:
    return {r.inputs.get("name") for r in rec.resources if r.type in DATA_TYPES}


def test_paused_tpu_pools_scale_to_zero_but_keep_their_definition(pause_pair):
    running, stopped = pause_pair

    assert tpu(running).keys() == tpu(stopped).keys()
    for name, inputs in tpu(stopped).items():
        assert inputs.get("nodeCount", 0) == 0, name
        assert inputs.get("initialNodeCount", 0) == 0, name
        assert inputs["autoscaling"]["minNodeCount"] == 0, name
        before = tpu(running)[name]
        # the slice definition is untouched: only the minimum moved
        for key in ("placementPolicy", "nodeConfig", "nodeLocations", "name"):
            assert inputs.get(key) == before.get(key), (name, key)
        assert inputs["autoscaling"]["maxNodeCount"] == before["autoscaling"]["maxNodeCount"]


def test_paused_workloads_run_no_replicas(pause_pair):
    _, stopped = pause_pair
    objects = kubernetes_objects(stopped)
    workload_kinds = [
        o
        for o in objects
        if o["kind"] in ("LeaderWorkerSet", "Deployment", "JobSet")
        and o["metadata"].get("namespace") in {"llama3-405b", "llama2", "sax", "gemma"}
    ]
    assert len(workload_kinds) >= 5
    for obj in workload_kinds:
        if obj["kind"] == "JobSet":
            assert obj["spec"]["suspend"] is True
        else:
            assert obj["spec"]["replicas"] == 0, obj["metadata"]["name"]
    assert not [o for o in objects if o["kind"] in ("HorizontalPodAutoscaler", "Job")]
    assert stopped.outputs["paused"] is True


def test_paused_keeps_everything_that_holds_data_with_the_same_names(pause_pair):
    running, stopped = pause_pair
    assert kept(running) == kept(stopped)
    removed = {r.urn for r in running.resources} - {r.urn for r in stopped.resources}
    # a PathwaysJob has no suspend field (google/pathways-job@v0.1.4:api/v1/pathwaysjob_types.go PathwaysJobSpec):
    # pausing removes it, and the controller's JobSet goes with it (owner reference). No replicas, no disruption
    # budget (stacks/serving/disruption.py).
    gone = ("HorizontalPodAutoscaler", "batch/v1:Job", ":PathwaysJob::", ":PodDisruptionBudget::")
    assert all(any(kind in urn for kind in gone) for urn in removed), removed
    assert data_names(running) == data_names(stopped)


def test_paused_cost_is_the_platform_only():
    cfg = render.parse_stack_file(ALL_IN_ONE)
    from dataclasses import replace

    running, stopped = cost.estimate(cfg), cost.estimate(replace(cfg, paused=True))
    tpu_lines = [line for line in stopped.lines if line.item.startswith("TPU pool")]
    assert tpu_lines and all(line.peak == 0 for line in tpu_lines)
    assert stopped.peak < running.peak and stopped.peak == round(
        sum(line.peak for line in stopped.lines if not line.item.startswith("TPU pool")), 2
    )
    assert "paused" in "\n".join(cost.summary_lines(stopped))


# ---- protection and decommissioning ---------------------------------------------------------------------


def test_decommission_lifts_protection_but_keeps_the_data(run):
    config = make_config(tpu_serving__environment="prod", tpu_serving__decommission=True)
    rec = run(config, stack="prod")
    assert not [r.name for r in rec.resources if r.protect]
    assert rec.one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is False
    bucket = rec.one("gcp:storage/bucket:Bucket", "bucket-gcs")
    assert bucket.retain_on_delete is True and bucket.inputs["forceDestroy"] is False
    assert any("decommission=true" in w for w in rec.warnings)


def test_bad_lifecycle_flags(run):
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:paused: must be true or false"):
        run({**make_config(), "tpu-serving:paused": "sometimes"})


# ---- teardown order -------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem)
def test_teardown_order_leaves_nothing(path):
    rec = recorded(path, False)
    cluster = rec.one("gcp:container/cluster:Cluster")
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    # the Kubernetes provider is built from the cluster's outputs, so everything using it is deleted first
    assert cluster.urn in provider.dependencies
    for r in rec.resources:
        assert r.deleted_with == "", f"{r.type} {r.name} uses deleted_with"
        if r.custom and r.type.startswith("kubernetes:"):
            assert r.provider.startswith(provider.urn), f"{r.type} {r.name} is not on the cluster's provider"
        if r.type == "gcp:container/nodePool:NodePool":
            assert cluster.urn in r.dependencies, r.name
    for svc in [
        o for o in kubernetes_objects(rec) if o["kind"] == "Service" and o["spec"].get("type") == "LoadBalancer"
    ]:
        assert svc["metadata"]["name"]  # LoadBalancer Services are ordinary provider resources (checked above)


# ---- upgrades -------------------------------------------------------------------------------------------


def infrastructure(rec) -> dict:
    return {
        (r.type, r.name): r.inputs for r in rec.resources if r.type in DATA_TYPES or r.type.startswith("gcp:compute/")
    }


def test_addon_and_image_upgrades_never_touch_cluster_pools_or_bucket(monkeypatch):
    from tooling.harness.offline import run_program

    config = load_stack_file(ALL_IN_ONE)
    before = run_program(config, stack="all-in-one")
    monkeypatch.setitem(versions.IMAGES, "saxHttp", "us-docker.pkg.dev/cloud-tpu-images/inference/sax-http:v1.9.9")
    monkeypatch.setitem(versions.IMAGES, "maxengineServer", "example.com/maxengine-server:v9")
    addons = {**config.get("tpu-serving:addons", {}), "lws": {"version": "0.10.0"}, "jobset": {"version": "0.12.0"}}
    upgraded = {**config, "tpu-serving:addons": addons}
    after = run_program(upgraded, stack="all-in-one")
    assert infrastructure(before) == infrastructure(after)
    earlier = {(r.type, r.name): r.inputs for r in before.resources}
    changed = {(r.type, r.name) for r in after.resources if earlier.get((r.type, r.name), r.inputs) != r.inputs}
    assert ("kubernetes:helm.sh/v3:Release", "addons-lws") in changed
    # a new server image starts a new compile-cache directory (keyed by image tag, stacks/serving/startup.py), so its
    # placeholder object moves with it (components/serving.py); nothing else outside Kubernetes changes
    keep = {
        (t, n) for t, n in changed if t == "gcp:storage/bucketObject:BucketObject" and n.endswith("-compile-cache-keep")
    }
    assert all(t.startswith("kubernetes:") for t, _ in changed - keep), changed


# Every supported upgrade (older -> newer) of each add-on whose CRDs the stack manages.
STACK_CRDS = (addons.CrdPolicy.STACK, addons.CrdPolicy.ADOPTED)
CRD_UPGRADES = [
    (addon.key, old, new)
    for addon in addons.ADDONS
    for old in addon.releases
    for new in addon.releases
    if addon.crd_policy(addon.releases[old]) in STACK_CRDS and catalog.version_tuple(old) < catalog.version_tuple(new)
]
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"
CRD_PATCH = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinitionPatch"
CUSTOM_RESOURCES = {
    "lws": "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "jobset": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
}


def test_every_supported_version_pair_is_checked():
    assert {(k, o, n) for k, o, n in CRD_UPGRADES} == {("lws", "0.7.0", "0.10.0"), ("jobset", "0.10.1", "0.12.0")}


@functools.cache
def all_in_one_at(key: str, version: str):
    from tooling.harness.offline import run_program

    config = load_stack_file(ALL_IN_ONE)
    addons = config.get("tpu-serving:addons", {})
    addons = {**addons, key: {**addons.get(key, {}), "version": version}}
    return run_program({**config, "tpu-serving:addons": addons}, stack="all-in-one")


def keep_patches(rec, key: str) -> dict[str, object]:
    return {r.inputs["metadata"]["name"]: r for r in rec.of_type(CRD_PATCH) if r.name.startswith(f"addons-{key}-")}


@pytest.mark.parametrize(("key", "old", "new"), CRD_UPGRADES, ids=lambda v: str(v))
def test_addon_upgrade_updates_its_crds_in_place_and_never_deletes_one(key, old, new):
    before, after = all_in_one_at(key, old), all_in_one_at(key, new)
    releases = addons.addon(key).releases
    old_crds, new_crds = releases[old].crds, releases[new].crds
    assert old_crds is not None and new_crds is not None
    group_before = before.one(CONFIG_GROUP, f"addons-{key}-crds")
    group_after = after.one(CONFIG_GROUP, f"addons-{key}-crds")
    # One ConfigGroup per add-on, named for the add-on and not the version: the same URN, so a version change is an
    # update. Its objects are named `<resourcePrefix>-<object name>`, the prefix defaulting to the group's name
    # (pulumi-kubernetes 4.34.2 sdk/python pulumi_kubernetes/yaml/v2/ConfigGroup.py, resource_prefix), so each CRD
    # keeps its URN too; and server-side apply updates it in place.
    assert group_before.urn == group_after.urn
    assert not group_after.delete_before_replace
    # It applies the chart's own CRD files at the new tag (what `helm install` of that version would create).
    assert group_before.inputs["files"] == list(old_crds.urls)
    assert group_after.inputs["files"] == list(new_crds.urls)
    assert all(f"/v{new}/" in url for url in group_after.inputs["files"])
    # No CRD leaves the program (that would delete it and, by garbage collection, every object of its kind).
    assert set(old_crds.names) <= set(new_crds.names)
    # Every CRD carries Helm's keep annotation before the new release is installed: Helm's upgrade skips deleting
    # an object that left the templates when its LIVE annotations say keep (helm/helm@v3.16.0 pkg/kube/client.go,
    # Update: info.Get() then ResourcePolicyIsKeep). lws 0.7.0 templates its CRD (kubernetes-sigs/lws@v0.7.0
    # charts/lws/templates/crds/), 0.10.0 moves it to crds/ (kubernetes-sigs/lws@v0.10.0 charts/lws/crds/).
    kept_before, kept_after = keep_patches(before, key), keep_patches(after, key)
    assert set(kept_before) == set(old_crds.names) and set(kept_after) == set(new_crds.names)
    release = after.one("kubernetes:helm.sh/v3:Release", f"addons-{key}")
    for name in old_crds.names:
        assert kept_before[name].urn == kept_after[name].urn
    for patch in kept_after.values():
        assert patch.inputs["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
        assert patch.urn in release.dependencies
    # Helm never upgrades or deletes `crds/` ("There is no support at this time for upgrading or deleting CRDs
    # using Helm", helm.sh/docs/chart_best_practices/custom_resource_definitions; a CRD moved from templates/ to
    # crds/ is deleted on upgrade: helm/helm#8163): the release skips them, and a
    # chart that keeps them under crds/ gets them from the stack first.
    assert release.inputs["skipCrds"] is True
    assert group_after.urn in release.dependencies
    assert {p.urn for p in kept_after.values()} <= set(release.dependencies)
    # The provider that applies them forces server-side apply conflicts (fields Helm set from the old template) and
    # adopts a CRD that already exists (pulumi-kubernetes 4.34.2 Provider enable_patch_force,
    # upsert_existing_objects: "By default, Pulumi will error if a resource already exists in the cluster").
    provider = after.one("pulumi:providers:kubernetes", "addons-crds-k8s")
    assert group_after.provider.startswith(provider.urn)
    assert provider.inputs["enablePatchForce"] in (True, "true")
    assert provider.inputs["upsertExistingObjects"] in (True, "true")
    assert provider.inputs["enableServerSideApply"] in (True, "true")
    # Every serving custom resource of the add-on waits for its CRDs.
    workloads = after.of_type(CUSTOM_RESOURCES[key])
    assert workloads, f"the all-in-one example has no {CUSTOM_RESOURCES[key]}"
    for workload in workloads:
        assert group_after.urn in workload.dependencies, workload.name


CRD_REVERTS = [(key, new, old) for key, old, new in CRD_UPGRADES]


@pytest.mark.parametrize(("key", "old", "new"), CRD_REVERTS, ids=lambda v: str(v))
def test_addon_revert_hands_the_crds_to_a_templating_chart_as_the_releases(key, old, new):
    """`up` at the newer version, then at the older one (LWS 0.10.0 -> 0.7.0, whose chart templates the CRD the
    stack applied from 0.10.0's crds/). Helm's upgrade would meet an existing CRD; it adopts it only when it carries
    the release's ownership metadata, and refuses it otherwise ("invalid ownership metadata": helm/helm@v3.17.3
    pkg/action/validate.go existingResourceConflict). So every CRD the release could render is stamped as the
    release's by a patch that keeps its URN across the versions and that the release waits for, at every version."""
    from components.addons import helm_ownership

    before, after = all_in_one_at(key, old), all_in_one_at(key, new)
    chart = addons.addon(key).releases[new]
    assert chart.crds is not None
    labels, annotations = helm_ownership(chart)
    assert labels == {"app.kubernetes.io/managed-by": "Helm"}
    assert annotations == {
        "meta.helm.sh/release-name": chart.release_name,
        "meta.helm.sh/release-namespace": chart.namespace,
    }
    for rec in (before, after):
        release = rec.one(RELEASE, f"addons-{key}")
        assert (release.inputs["name"], release.inputs["namespace"]) == (chart.release_name, chart.namespace)
        group = rec.one(CONFIG_GROUP, f"addons-{key}-crds")
        assert group.urn in release.dependencies
        for patch in keep_patches(rec, key).values():
            assert patch.urn in release.dependencies
            assert group.urn in patch.dependencies
            assert patch.inputs["metadata"]["labels"] == labels
            assert patch.inputs["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep", **annotations}
    kept_before, kept_after = keep_patches(before, key), keep_patches(after, key)
    assert set(kept_after) == set(chart.crds.names) <= set(kept_before)
    for name in chart.crds.names:
        assert kept_before[name].urn == kept_after[name].urn
    assert before.one(CONFIG_GROUP, f"addons-{key}-crds").urn == after.one(CONFIG_GROUP, f"addons-{key}-crds").urn


@pytest.mark.parametrize("version", list(versions.CHARTS["lws"]), ids=str)
def test_the_charts_render_the_crds_their_chart_crds_say(version):
    """`helm template` (which renders templates/, never crds/) of kubernetes-sigs/lws at each supported tag with
    the stack's values: a CRD is in the release's manifest exactly when `ChartCrds.templated` says so, and it is
    one the stack applies and stamps as the release's first."""
    from tests.helm_charts import render

    entry = addons.addon("lws")
    chart = versions.CHARTS["lws"][version]
    assert chart.crds is not None
    objects = render(chart, entry.chart_values(chart, entry.settings()))
    rendered = {o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"}
    assert bool(rendered) is chart.crds.templated
    assert rendered <= set(chart.crds.names)


def test_crd_names_match_the_upstream_crds():
    from tooling.oracles.schemas import crd_dir

    folder = crd_dir()
    if folder is None:
        from tooling.oracles.crds import crd_source

        pytest.skip(crd_source()[1])
    import yaml

    # the name each ChartCrds derives from its file name is the CRD's metadata.name in the upstream file
    # (libyaml's loader where present: the pure-Python one takes seconds on these large files)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    names: dict[str, str] = {}
    for addon in addons.ADDONS:
        for chart in addon.releases.values():
            if addon.crd_policy(chart) not in STACK_CRDS:
                continue
            file = chart.crds.paths[0].rsplit("/", 1)[-1]
            if file not in names:
                names[file] = yaml.load((folder / file).read_text(), Loader=loader)["metadata"]["name"]
            assert names[file] == chart.crds.names[0]


# ---- recreation review ----------------------------------------------------------------------------------


# A dev stack with a multi-host slice (the shipped dev stack serves vLLM on a single-host pool).
MULTI_HOST_DEV = """config:
  gcp:project: my-tpu-project
  gcp:region: us-central1
  tpu-serving:environment: dev
  tpu-serving:cluster:
    location: us-central1
  tpu-serving:tpuPools:
    - name: v6e-4x4
      tpu: v6e
      topology: 4x4
      zone: us-central1-b
      capacity: spot
"""


def test_compare_names_fields_that_recreate(tmp_path):
    old_config = tmp_path / "old-stack" / "Pulumi.dev.yaml"
    old_config.parent.mkdir()
    old_config.write_text(MULTI_HOST_DEV)
    old_files = render.render_stack(old_config)[2]
    render.write(old_files, tmp_path / "old")
    new_config = tmp_path / "Pulumi.dev.yaml"
    text = MULTI_HOST_DEV
    new_config.write_text(
        text.replace("topology: 4x4", "topology: 4x8").replace("location: us-central1\n", "location: us-central1-b\n")
    )
    cfg, rec, files = render.render_stack(new_config)
    render.write(files, tmp_path / "new")
    lines = recreations(tmp_path / "old", tmp_path / "new")
    assert any(
        "gcp:container/cluster:Cluster cluster-gke: location us-central1 -> us-central1-b" in line for line in lines
    )
    assert any("tpu-v6e-4x4-s0: placementPolicy" in line and "4x8" in line for line in lines)
    # an image or chart change recreates nothing
    assert recreations(tmp_path / "old", tmp_path / "old") == []


def test_compare_cli(tmp_path, capsys):
    assert render.main(["--out", str(tmp_path / "a"), "dev"]) == 0
    assert render.main(["--out", str(tmp_path / "b"), "--compare", str(tmp_path / "a"), "dev"]) == 0
    assert "0 change(s) that recreate resources" in capsys.readouterr().out


def test_compare_reads_the_earlier_render_before_overwriting_it(tmp_path, capsys):
    """`make render`, edit the config, `--compare build dev`: build/dev is both the earlier render and the output."""
    config = tmp_path / "Pulumi.dev.yaml"
    text = MULTI_HOST_DEV
    config.write_text(text)
    assert render.main(["--out", str(tmp_path / "build"), str(config)]) == 0
    config.write_text(text.replace("topology: 4x4", "topology: 4x8"))
    capsys.readouterr()
    assert render.main(["--out", str(tmp_path / "build"), "--compare", str(tmp_path / "build"), str(config)]) == 0
    out = capsys.readouterr().out
    assert "0 change(s)" not in out and "placementPolicy" in out and "recreates:" in out


@pytest.mark.parametrize("earlier", ["missing", "empty"])
def test_compare_without_an_earlier_render_fails(tmp_path, capsys, earlier):
    if earlier == "empty":
        (tmp_path / earlier).mkdir()
    assert render.main(["--out", str(tmp_path / "b"), "--compare", str(tmp_path / earlier), "dev"]) == 1
    err = capsys.readouterr().err
    assert f"--compare {tmp_path / earlier}: no earlier render of 'dev'" in err and "Traceback" not in err
    assert not (tmp_path / "b" / "dev").exists()


# ---- leak audit -----------------------------------------------------------------------------------------


def load_audit():
    spec = importlib.util.spec_from_file_location("leak_audit", ROOT / "scripts" / "leak_audit.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_leak_audit_finds_what_gke_left_behind(tmp_path, capsys):
    audit = load_audit()
    stack = tmp_path / "Pulumi.dev.yaml"
    stack.write_text((ROOT / "Pulumi.dev.yaml").read_text().replace("my-tpu-project", "tpu-test-project"))
    fixtures = ROOT / "tests" / "fixtures" / "gcloud"
    assert audit.main([str(stack), "--from-dir", str(fixtures / "leaky")]) == 1
    out = capsys.readouterr().out
    for expected in (
        "forwarding-rules: a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9",
        "firewall-rules: gke-tpu-serving-dev-1a2b3c4d-all",
        "firewall-rules: k8s-fw-a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9",
        "backend-services: k8s2-ab12cd34-sax-sax-http-xyz",
        "health-checks: k8s2-ab12cd34-sax-sax-http-xyz",
        "network-endpoint-groups: k8s1-ab12cd34-sax-sax-http-8888-9f8e7d6c",
        "disks: pvc-1234",
        "service-accounts: tpu-serving-dev-nodes@",
        "service-accounts: dev-sax-1a2b3c@",
    ):
        assert expected in out, expected
    for unrelated in (
        "other-team-lb",
        "default-allow-ssh",
        "someone-elses-disk",
        "unrelated-static-ip",
        "prod-sax",
        "ci-deployer",
    ):
        assert unrelated not in out
    assert "9 resource(s) left behind" in out
    assert audit.main([str(stack), "--from-dir", str(fixtures / "clean")]) == 0
    assert "nothing left behind" in capsys.readouterr().out


def test_leak_audit_reports_gcloud_failure(monkeypatch, capsys):
    audit = load_audit()

    def broken(kind, project):
        raise RuntimeError("not logged in")

    monkeypatch.setattr(audit, "gcloud_lister", broken)
    assert audit.main(["dev"]) == 2
    assert "not logged in" in capsys.readouterr().err


# ---- cost ---------------------------------------------------------------------------------------------


def test_cost_output(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(capacity="spot")]))
    out = rec.outputs["estimatedHourlyCost"]
    assert out["note"].startswith("estimate from public list prices of " + cost.PRICE_TABLE_DATE)
    line = out["items"]["TPU pool p"]
    # a spot slice starts empty (autoscaled from 0): nothing at the baseline, the whole slice at the peak
    assert line["baseline"] == 0 and line["peak"] == round(16 * catalog.generation("v6e").list_price.spot, 4)
    assert out["total"]["peak"] == round(sum(i["peak"] for i in out["items"].values()), 2)
    assert json.dumps(out)  # a plain, serializable output


def test_cost_per_workload_and_unknown_region(run):
    cfg = render.parse_stack_file(ALL_IN_ONE)
    est = cost.estimate(cfg)
    assert est.workloads["llama3-405b"] == round(16 * catalog.generation("v6e").list_price.on_demand, 4)
    assert est.workloads["gemma"] == round(4 * 8 * catalog.generation("v5e").list_price.on_demand, 4)
    rec = run(make_config(gcp__region="europe-west4", tpu_serving__tpuPools=[pool(zone="europe-west4-a")]))
    # about the estimate, not the stack: a note in the output, never a warning (render --strict fails on those)
    assert not any("no list prices" in w for w in rec.warnings)
    assert any("no list prices for region 'europe-west4'" in n for n in rec.outputs["estimatedHourlyCost"]["notes"])


# ---- switching the metrics adapter on a live stack -------------------------------------------------------------

GEMMA_HPA = ROOT / "examples/gemma-hpa/Pulumi.gemma-hpa.yaml"
APISERVICE = "kubernetes:apiregistration.k8s.io/v1:APIService"


@functools.cache
def gemma_hpa_with(adapter: str):
    from tooling.harness.offline import run_program

    config = load_stack_file(GEMMA_HPA)
    return run_program({**config, "tpu-serving:monitoring": {"adapter": adapter}}, stack="gemma-hpa")


# every adapter: the stack registers every APIService, whichever adapter serves it (issue 34 #8)
ADAPTER_SWITCHES = [(a, b) for a in metrics_adapters.ADAPTERS for b in metrics_adapters.ADAPTERS if a != b]


def test_kedas_release_post_renders_its_apiservice_away_and_the_stack_registers_it():
    """KEDA's chart renders `v1beta1.external.metrics.k8s.io` whatever its values (kedacore/charts@v2.20.2:
    keda/templates/metrics-server/apiservice.yaml, gated only on metricsServer.enabled): its release runs the
    post-renderer that drops it (stacks/monitoring/adapters/entry.py DROP_API_SERVICES), and the stack registers it
    under the resource every adapter uses, so a switch to or from KEDA is one `up` (tests/test_transitions.py)."""
    rec = gemma_hpa_with("keda")
    (release,) = [r for r in rec.of_type(RELEASE) if r.name == "monitoring-keda"]
    assert release.inputs["postrender"] == DROP_API_SERVICES
    (api,) = rec.of_type(APISERVICE)
    assert api.name == "monitoring-apiservice-external-v1beta1"
    assert api.inputs["spec"]["service"] == {"name": "keda-operator-metrics-apiserver", "namespace": "custom-metrics"}
    assert release.urn in api.dependencies


@pytest.mark.parametrize(("old", "new"), ADAPTER_SWITCHES, ids=lambda v: str(v))
def test_switching_the_adapter_updates_the_shared_apiservices_in_place(old, new):
    """`up` with monitoring.adapter `old`, then `new`. The APIServices both serve (v1beta1.external.metrics.k8s.io)
    are one stack resource in both programs (same URN): Pulumi updates it in place to point at the new adapter's
    Service, after that adapter serves, instead of Helm creating an object the stack owns (Helm refuses to adopt an
    object without its ownership metadata: helm/helm@v3.17.3 pkg/action/validate.go existingResourceConflict) or
    the stack creating one Helm still owns (AlreadyExists; Pulumi deletes the old adapter's resources last). No
    adapter's chart renders an APIService (tests/test_metrics_adapters.py renders them with helm)."""
    before, after = gemma_hpa_with(old), gemma_hpa_with(new)
    apis_before = {r.inputs["metadata"]["name"]: r for r in before.of_type(APISERVICE)}
    apis_after = {r.inputs["metadata"]["name"]: r for r in after.of_type(APISERVICE)}
    shared = set(apis_before) & set(apis_after)
    assert "v1beta1.external.metrics.k8s.io" in shared
    for name in shared:
        was, now = apis_before[name], apis_after[name]
        assert was.urn == now.urn, name
        assert not now.delete_before_replace and not now.replace_on_changes, name
        # it waits for what serves it in the new program: every release and Deployment of the new adapter's
        service = now.inputs["spec"]["service"]
        servers = [
            r
            for r in after.resources
            if r.type in (RELEASE, "kubernetes:apps/v1:Deployment")
            and r.name.startswith("monitoring-")
            and (r.type == RELEASE or r.inputs["metadata"]["name"] == service["name"])
        ]
        assert servers, service
        assert {r.urn for r in servers} <= set(now.dependencies), name
    # Helm releases of either program never carry an APIService in their values-driven templates (prometheus-adapter's
    # rules) or post-render it away (KEDA's)
    for rec in (before, after):
        for release in rec.of_type(RELEASE):
            if release.name.startswith("monitoring-") and "rules" in release.inputs["values"]:
                rules = release.inputs["values"]["rules"]
                assert not rules["external"] and not rules["custom"] and not rules["default"]
            elif release.name.startswith("monitoring-"):
                assert release.inputs["postrender"] == DROP_API_SERVICES
    # the HPA's reader role is shared the same way where both register it (KEDA's chart binds its own)
    role = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
    roles = [
        [r for r in rec.of_type(role) if r.name == "monitoring-external-metrics-reader"] for rec in (before, after)
    ]
    if all(roles):
        assert roles[0][0].urn == roles[1][0].urn
