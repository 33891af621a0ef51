"""Issue 22 part 2 item 3: no shipped stack creates an object GKE manages (stacks/facts/gke_managed.py, sources there).

What a stack creates is read from its recording: every Kubernetes object and patch it registers, every CRD file a
ConfigFile applies (the CRD files of stacks/facts/versions.py), the objects of an upstream manifest it applies, and what
what each Helm release installs with the stack's values (the record of the pinned Helm's render of its chart at the
pinned version, tooling/data/chart_objects.json).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from stacks.facts import gke_managed, versions
from stacks.workload_checks import FORBIDDEN_NAMESPACES
from tests.conftest import STACK_FILES, recorded, reference_dir
from tooling.generate.readme_tables import gke_managed_table
from tooling.harness.k8s_objects import plain
from tooling.harness.offline import Recording, parse_stack_file
from tooling.oracles import chart_objects

ROOT = Path(__file__).resolve().parent.parent
YAML_COMPONENTS = ("kubernetes:yaml/v2:ConfigFile", "kubernetes:yaml/v2:ConfigGroup")
RELEASE = "kubernetes:helm.sh/v3:Release"
WATCHED = {kind for kind, _ in gke_managed.never_created()}
stacks = pytest.mark.parametrize(
    "path", STACK_FILES, ids=lambda p: p.name.removeprefix("Pulumi.").removesuffix(".yaml")
)


def _crd_name(url: str) -> str | None:
    """metadata.name of an upstream CRD file the matrix pins (`<group>_<plural>.yaml`), None for another URL."""
    pinned = {f.url for files in versions.CRDS.values() for group in files.values() for f in group}
    pinned |= {u for charts in versions.CHARTS.values() for c in charts.values() if c.crds for u in c.crds.urls}
    if url not in pinned:
        return None
    group, plural = url.rsplit("/", 1)[1].removesuffix(".yaml").split("_", 1)
    return f"{plural}.{group}"


def _objects_in_yaml(text: str) -> set[tuple[str, str]]:
    """(kind, metadata.name) of the watched kinds in a manifest, parsed (libyaml's loader where PyYAML has it:
    linear in the text, where a pattern over it backtracked without bound on a chart's templates, issue 34 #21)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict)]
    return {(d["kind"], (d.get("metadata") or {}).get("name")) for d in docs if d.get("kind") in WATCHED}


def _manifest_objects(url: str) -> set[tuple[str, str]]:
    """The objects of an upstream manifest the stack applies (the reference copy of each ManifestVersion)."""
    copies = {m.url: f"manifests/pathways-job-v{m.version}/install.yaml" for m in versions.PATHWAYS_JOB.values()}
    if url not in copies:
        raise AssertionError(f"a ConfigFile applies {url}: record it here and in stacks/facts/versions.py")
    path = reference_dir() / copies[url]
    if not path.exists():
        pytest.skip(f"no reference copy of {url} ({path})")
    return _objects_in_yaml(path.read_text())


def _chart_objects(inputs: dict) -> set[tuple[str, str]]:
    """What a chart release installs with the values the stack gives it: the record of the pinned Helm's render of
    the chart at its tag (tooling/data/chart_objects.json, which tests/test_review_issue23.py compares with a fresh
    render), never its templates read as text."""
    objects = chart_objects.installed(inputs["chart"], inputs["version"], inputs["name"], inputs["namespace"])
    if objects is None:
        raise AssertionError(f"{inputs['chart']}@{inputs['version']} is not recorded: run `make chart-objects`")
    return {(o["kind"], o["name"]) for o in objects}


def created(recording: Recording) -> set[tuple[str, str]]:
    """(kind, name) of every object of a watched kind the stack creates, applies or patches."""
    found: set[tuple[str, str]] = set()
    for reg in recording.resources:
        if not reg.type.startswith("kubernetes:"):
            continue
        inputs = plain(reg.inputs)
        if reg.type in YAML_COMPONENTS:  # multi-language components (not custom): the provider applies their files
            for url in [inputs["file"]] if inputs.get("file") else inputs.get("files", []):
                name = _crd_name(url)
                found |= {(gke_managed.CRD, name)} if name else _manifest_objects(url)
        elif reg.type == RELEASE:
            found |= _chart_objects(inputs)
        elif reg.custom and isinstance(inputs.get("metadata"), dict):
            kind = inputs.get("kind") or reg.type.rsplit(":", 1)[1].removesuffix("Patch")
            found.add((kind, inputs["metadata"].get("name")))
    return {(kind, name) for kind, name in found if kind in WATCHED}


@stacks
def test_no_stack_creates_an_object_gke_manages(path):
    # GKE installs and owns these (stacks/facts/gke_managed.py MANAGED, with sources); a stack that applies one fails
    # with AlreadyExists or, adopting it, deletes it with every object of its kind on destroy (issue 22 item 2).
    # A cluster's version is only a floor that GKE raises by itself, so no version exempts an object.
    rec = recorded(path, False)
    assert not created(rec) & gke_managed.never_created()


def test_the_check_sees_what_a_stack_applies():
    # the old gateway applied GKE's InferencePool CRD from a ConfigFile: exactly what the check must catch
    url = versions.CRDS["gatewayApiInferenceExtension"]["1.6.0"][0].url
    assert _crd_name(url) == gke_managed.INFERENCE_POOL_CRD
    assert (gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD) in gke_managed.never_created()
    # and it sees the add-on CRDs a stack does apply (LWS and JobSet, from their pinned chart files)
    rec = recorded(ROOT / "Pulumi.dev.yaml", False)
    crds = {name for kind, name in created(rec) if kind == gke_managed.CRD}
    assert {"leaderworkersets.leaderworkerset.x-k8s.io", "jobsets.jobset.x-k8s.io"} <= crds


@stacks
def test_a_stack_relies_only_on_what_gke_installs_at_its_minimum_version(path):
    # an enabled gateway's InferencePools need GKE's InferencePool CRD: the stack's floor is at or above the
    # version GKE installs it from (https://llm-d.ai/docs/dev/resources/gateway/install-crds)
    cfg = parse_stack_file(path)
    if not cfg.gateway.enabled:
        return
    need = gke_managed.installed_from(
        gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, gke_managed.stack_settings(gateway_api=True)
    )
    assert need == "1.34.0-gke.1626000"
    assert (
        gke_managed.required_version(
            cfg.cluster.min_master_version,
            gke_managed.CRD,
            gke_managed.INFERENCE_POOL_CRD,
            gke_managed.stack_settings(True),
        )
        is None
    )


def test_installed_from_follows_the_settings():
    on = gke_managed.stack_settings(gateway_api=True)
    off = gke_managed.stack_settings(gateway_api=False)
    # G1/G2: with the Gateway API on, GKE Standard 1.24+; without it, G3's 1.34.0-gke.1626000
    assert gke_managed.installed_from(gke_managed.CRD, "httproutes.gateway.networking.k8s.io", on) == "1.24"
    assert gke_managed.installed_from(gke_managed.CRD, "httproutes.gateway.networking.k8s.io", off) == (
        "1.34.0-gke.1626000"
    )
    assert gke_managed.installed_from("GatewayClass", "gke-l7-rilb", on) == "1.24"
    assert gke_managed.installed_from("GatewayClass", "gke-l7-rilb", off) is None
    assert gke_managed.required_version("1.35", gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, on) is None
    with pytest.raises(ValueError):
        gke_managed.required_version("1.35", gke_managed.CRD, "nothing.example.com", on)


def test_the_gateway_classes_the_stack_uses_are_gkes():
    from stacks.serving.gateway import GATEWAY_CLASSES

    managed = {name for kind, name in gke_managed.never_created() if kind == "GatewayClass"}
    assert set(GATEWAY_CLASSES.values()) <= managed


def test_table_names_match_the_upstream_files():
    # the Gateway API CRDs the matrix validates against are among those GKE installs (G1)
    gateway_api = {
        f"{f.file_name.removesuffix('.yaml').split('_', 1)[1]}.gateway.networking.k8s.io"
        for f in versions.CRDS["gatewayApi"]["1.6.1"]
    }
    assert gateway_api <= set(gke_managed.GATEWAY_API_CRDS)
    # G5: the CRDs and namespaces of the prometheus-engine release GKE's managed collection runs
    setup = reference_dir() / "manifests/prometheus-engine-v0.17.2"
    if not setup.exists():
        pytest.skip(f"no prometheus-engine manifests under {setup}")
    upstream = set()
    for name in ("setup.yaml", "operator.yaml"):
        upstream |= {
            (d["kind"], d["metadata"]["name"])
            for d in yaml.safe_load_all((setup / name).read_text())
            if d and d.get("kind") in (gke_managed.CRD, "Namespace")
        }
    gmp = {
        (row.kind, name)
        for row in gke_managed.MANAGED
        if row.when == gke_managed.MANAGED_PROMETHEUS
        for name in row.names
    }
    assert gmp == upstream


def test_workloads_never_take_a_namespace_gke_owns():
    assert gke_managed.namespaces() == {"gmp-system", "gmp-public"}
    assert gke_managed.namespaces() <= FORBIDDEN_NAMESPACES


def test_docs_hold_the_table():
    page = (ROOT / "docs" / "operations.md").read_text()
    assert gke_managed_table() in page, (
        "docs/operations.md 'What GKE manages' is stale: run `python -m tooling.generate.docs`"
    )
