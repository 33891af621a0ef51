"""Local mode (tpu-serving:local, stacks/model/local_target.py): the same components and workload code apply the stack's
Kubernetes layer to a cluster of the user's own, with the Google Cloud layer stood in.

Over every example (and the dev stack): a local run registers no Google Cloud resource and calls no Google Cloud
data source, and registers exactly the Kubernetes objects the GKE-mode run of the same stack file does, with the
same inputs, except where a value is stood in: a chart comes from its source folder instead of its registry, a CRD
file or release manifest from its local copy instead of its URL, and the provider's kubeconfig is the local one.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from stacks.facts import versions
from stacks.model import local_target
from tests.conftest import STACK_FILES, recorded, reference_dir, session_run
from tooling.harness.k8s_objects import plain
from tooling.harness.offline import Recording, load_stack_file, recorded_outputs, run_program
from tooling.review.render import stack_name

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:6443"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
users:
- name: admin
  user: {token: local-test}
"""
RELEASE = "kubernetes:helm.sh/v3:Release"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
K8S_PROVIDER = "pulumi:providers:kubernetes"
# What local mode stands in, per type: the inputs that name where a chart, CRD file or manifest comes from, and the
# provider's kubeconfig (the local cluster's).
STOOD_IN: dict[str, tuple[str, ...]] = {
    RELEASE: ("chart", "version", "repositoryOpts"),
    CONFIG_GROUP: ("files",),
    CONFIG_FILE: ("file",),
    K8S_PROVIDER: ("kubeconfig",),
}


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("local") / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


def sources() -> str:
    root = reference_dir()
    if not (root / "charts").is_dir():
        pytest.skip(f"upstream file missing: {root}/charts (the local run reads charts from ../shared/reference)")
    return str(root)


def local_config(path: Path, kubeconfig: Path) -> dict[str, Any]:
    config = copy.deepcopy(load_stack_file(path))
    from tooling.local.local_stack import CHART_CACHE_ROOT

    # as write_project lays them out: the reference, then the charts `make bbr-chart` fetched
    config["tpu-serving:local"] = {"kubeconfig": str(kubeconfig), "sources": [sources(), str(CHART_CACHE_ROOT)]}
    return config


def local_run(path: Path, kubeconfig: Path) -> Recording:
    """The stack run in local mode; skipped, naming it, where a chart it installs has no source in the reference
    folder (the body-based router's, gateway-api-inference-extension v1.5.0, is not in ../shared/reference: a local
    run reads every chart from there or from the charts `make bbr-chart` fetched into .cache/charts, never a
    registry)."""
    try:
        return session_run(local_config(path, kubeconfig), stack=stack_name(path), stack_outputs=recorded_outputs(path))
    except pulumi.RunError as err:
        if "not found in the local sources" in str(err):
            pytest.skip(f"a chart source is not at hand (make bbr-chart): {str(err).split(';')[0]}")
        raise


def kubernetes_objects(rec: Recording) -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> inputs less the stood-in ones, of every Kubernetes resource and provider."""
    out = {}
    for r in rec.resources:
        if not (r.type.startswith("kubernetes:") or r.type == K8S_PROVIDER):
            continue
        inputs = plain(r.inputs, mask_secrets=True)
        out[(r.type, r.name)] = {k: v for k, v in inputs.items() if k not in STOOD_IN.get(r.type, ())}
    return out


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_local_run_registers_no_google_cloud_resource(path: Path, kubeconfig: Path):
    rec = local_run(path, kubeconfig)
    google = sorted({r.type for r in rec.resources if r.type.startswith(("gcp:", "pulumi:providers:gcp"))})
    assert google == [], google
    assert [c for c in rec.calls if c.startswith("gcp:")] == []
    assert rec.outputs["local"]["kubeconfig"] == str(kubeconfig)


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_local_run_registers_the_kubernetes_objects_of_the_gke_run(path: Path, kubeconfig: Path):
    gke, local = kubernetes_objects(recorded(path, False)), kubernetes_objects(local_run(path, kubeconfig))
    assert sorted(set(gke) - set(local)) == [], "Kubernetes objects a local run leaves out"
    assert sorted(set(local) - set(gke)) == [], "Kubernetes objects only a local run registers"
    differ = [key for key in gke if gke[key] != local[key]]
    assert differ == [], f"inputs differ beyond the stood-in values: {differ[:3]}"


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.stem.removeprefix("Pulumi."))
def test_local_sources_are_the_pinned_versions(path: Path, kubeconfig: Path):
    """Each local release reads the chart at the version the GKE run pulls: the reference folder of that version
    (../shared/reference/SOURCES.md "charts/"), whose Chart.yaml names the same chart; each CRD file is the one the GKE
    run fetches, by file name, from the folder of that version."""
    gke = {r.name: plain(r.inputs) for r in recorded(path, False).of_type(RELEASE)}
    for release in local_run(path, kubeconfig).of_type(RELEASE):
        chart_dir, pinned = Path(release.inputs["chart"]), gke[release.name]
        folder, _, in_repo = local_target.CHART_SOURCES[local_target.chart_name(pinned["chart"])]
        assert str(chart_dir).endswith(f"/{folder.format(version=pinned['version'])}/{in_repo}"), chart_dir
        assert yaml.safe_load((chart_dir / "Chart.yaml").read_text())["name"] == local_target.chart_name(
            pinned["chart"]
        )
        assert "version" not in release.inputs and "repositoryOpts" not in release.inputs
    urls = {r.name: plain(r.inputs)["files"] for r in recorded(path, False).of_type(CONFIG_GROUP)}
    for group in local_run(path, kubeconfig).of_type(CONFIG_GROUP):
        files = group.inputs["files"]
        assert [Path(f).name for f in files] == [u.rsplit("/", 1)[-1] for u in urls[group.name]]
        assert all(Path(f).is_file() for f in files), files


def test_every_pinned_chart_and_crd_file_has_a_local_source():
    """Every chart version the matrix supports (and the endpoint picker's) and each one's CRD files resolve in the
    reference folder, so a local run of any supported version needs no registry."""
    found = local_target.LocalSources((Path(sources()),))
    for by_version in versions.CHARTS.values():
        for chart in by_version.values():
            assert (found.chart(chart) / "Chart.yaml").is_file()
            if chart.crds is not None:
                assert all(Path(f).is_file() for f in found.crd_files(chart.crds, chart))
    assert (found.chart(versions.LLM_D_ROUTER) / "Chart.yaml").is_file()
    for manifest in versions.PATHWAYS_JOB.values():
        assert found.manifest(manifest).is_file()


def test_a_missing_chart_source_is_one_clear_error(tmp_path: Path, kubeconfig: Path):
    config = local_config(STACK_FILES[0], kubeconfig)
    config["tpu-serving:local"]["sources"] = [str(tmp_path)]
    with pytest.raises(Exception) as err:
        run_program(config, stack="dev")
    message = str(err.value)
    assert "not found in the local sources (tpu-serving:local.sources)" in message, message
    assert str(tmp_path) in message and "never a registry" in message


def test_a_missing_kubeconfig_names_the_path_and_how_to_make_one(tmp_path: Path):
    config = local_config(STACK_FILES[0], tmp_path / "nope")
    with pytest.raises(Exception) as err:
        run_program(config, stack="dev")
    assert f"{tmp_path / 'nope'} does not exist" in str(err.value)
    assert "make local-cluster STACK=<stack>" in str(err.value)


def test_local_key_is_validated_with_the_others():
    from stacks.config import parse_stack_config
    from stacks.problems import ConfigError
    from workloads.registry import WORKLOAD_TYPES

    raw = {k.split(":", 1)[1]: v for k, v in load_stack_file(STACK_FILES[0]).items() if k.startswith("tpu-serving:")}
    raw["local"] = {"kubeconfg": "x"}
    with pytest.raises(ConfigError) as err:
        parse_stack_config(
            raw,
            stack="dev",
            pulumi_project="tpu-serving",
            gcp_project="p",
            region="us-central1",
            workload_types=WORKLOAD_TYPES,
        )
    assert "tpu-serving:local.kubeconfig" in str(err.value) and "tpu-serving:local.kubeconfg" in str(err.value)


# ---- the local harness (tooling/local/local_stack.py) -----------------------------------------------------------------


def test_the_harness_installs_what_gke_would_from_the_reference():
    """Every CRD stacks/gke_managed.MANAGED says a regional GKE cluster has, from the reference's upstream copy (the
    ComputeClass CRD, which GKE does not publish, as a named stand-in), GKE's GatewayClasses and Managed Prometheus's
    namespaces; a CRD the reference lacks is named, not invented."""
    from stacks.facts import gke_managed
    from tooling.local import local_stack

    found = local_stack.gke_objects(Path(sources()))
    crds = {o["metadata"]["name"] for o in found.objects if o["kind"] == "CustomResourceDefinition"}
    wanted = {
        name
        for row in gke_managed.MANAGED
        if row.kind == gke_managed.CRD and row.when != gke_managed.MULTI_CLUSTER_GATEWAY
        for name in row.names
    }
    assert crds == wanted - set(found.missing)
    assert set(found.missing) == {"grpcroutes.gateway.networking.k8s.io", "referencegrants.gateway.networking.k8s.io"}
    assert "stand-in" in found.origins[f"CustomResourceDefinition/{local_stack.COMPUTE_CLASS_CRD}"]
    # the fleet's regional stacks register an AutoscalingMetric (stacks/fleets/fleet.py): GKE's CRD, stood in
    assert "stand-in" in found.origins[f"CustomResourceDefinition/{gke_managed.AUTOSCALING_METRIC_CRD}"]
    stand_in = next(o for o in found.objects if o["metadata"]["name"] == gke_managed.AUTOSCALING_METRIC_CRD)
    assert (stand_in["spec"]["group"], stand_in["spec"]["names"]["kind"], stand_in["spec"]["scope"]) == (
        "autoscaling.gke.io",
        "AutoscalingMetric",
        "Namespaced",
    )
    from stacks.fleets import fleet

    assert fleet.AUTOSCALING_METRIC_API == f"autoscaling.gke.io/{stand_in['spec']['versions'][0]['name']}"
    assert {o["metadata"]["name"] for o in found.objects if o["kind"] == "Namespace"} == gke_managed.namespaces()
    # the CRDs the examples' custom resources need that GKE provides: PodMonitoring, InferencePool, ComputeClass
    assert {"podmonitorings.monitoring.googleapis.com", "inferencepools.inference.networking.k8s.io"} <= crds


def test_a_local_project_runs_this_program_with_the_stack_config_and_local_added(tmp_path: Path, kubeconfig: Path):
    from tooling.local import local_stack

    local = local_stack.LocalStack("vllm-single-host", tmp_path)
    source = next(p for p in STACK_FILES if p.name == "Pulumi.vllm-single-host.yaml")
    local_stack.write_project(local, source, [Path(sources())])
    project = yaml.safe_load((local.project / "Pulumi.yaml").read_text())
    assert project["name"] == "tpu-serving"
    assert (local.project / project["main"]).resolve() == Path(local_stack.ROOT)
    config = yaml.safe_load(local.config_file.read_text())["config"]
    # the charts with file:// dependencies vendored first (tests/test_local_vendored_charts.py), then the sources,
    # then the charts `make bbr-chart` takes from the Go module proxy (the body-based router's, not in the reference)
    vendored = str(local.folder / "vendored-sources")
    cache = str(local_stack.CHART_CACHE_ROOT)
    assert config["tpu-serving:local"] == {
        "kubeconfig": str(local.kubeconfig),
        "sources": [vendored, sources(), cache],
    }
    assert {k: v for k, v in config.items() if k != "tpu-serving:local"} == load_stack_file(source)


def test_the_harness_talks_only_to_loopback(tmp_path: Path):
    from tooling.local import local_stack

    assert local_stack.on_loopback("https://127.0.0.1:6443") and local_stack.on_loopback("https://[::1]:1")
    assert not local_stack.on_loopback("https://10.0.0.1:6443")
    remote = tmp_path / "kubeconfig"
    remote.write_text(KUBECONFIG.replace("127.0.0.1", "203.0.113.10"))
    with pytest.raises(SystemExit, match="not on loopback"):
        local_stack.Kube(remote)


def test_a_local_run_finds_the_body_based_routers_chart_in_the_go_module_cache():
    """A stack with body-based routing applied locally: the router's chart (gateway-api-inference-extension
    config/charts/body-based-routing, not in ../shared/reference) is found where `make bbr-chart` puts it."""
    from stacks.facts import versions
    from stacks.model.local_target import LocalSources
    from tooling.local import local_stack

    chart = versions.BODY_BASED_ROUTER
    found = LocalSources((Path("/nonexistent/reference"), local_stack.CHART_CACHE_ROOT))
    try:
        folder = found.chart(chart)
    except FileNotFoundError as e:
        pytest.skip(f"the body-based router's chart is not in .cache/charts (make bbr-chart): {e}")
    assert (folder / "Chart.yaml").exists()
    assert yaml.safe_load((folder / "Chart.yaml").read_text())["name"] == "body-based-routing"


def test_a_local_run_without_the_reference_folder_says_so(tmp_path: Path):
    """Not an HTTP 404 from the API server when the first GKE CRD is waited for (seen from a git worktree, whose
    ../shared/reference does not exist): the missing folder, named, and how to point at one."""
    from tooling.local import local_stack

    local = local_stack.LocalStack("dev", tmp_path)
    local.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    local.kubeconfig.write_text(KUBECONFIG)
    with pytest.raises(SystemExit, match="TPU_SERVING_REFERENCE"):
        local_stack.prepare("dev", root=tmp_path, reference=tmp_path / "no-reference")
