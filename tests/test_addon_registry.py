"""The add-on registry (stacks/addons): every entry complete, and an entry added there alone is installed, validated,
summarised and in the JSON Schema, with no other file touched."""

from __future__ import annotations

import re
from pathlib import Path

import pulumi
import pytest
from pydantic.alias_generators import to_camel, to_snake

from stacks import addons
from stacks.addons import Addon, ChartAddonConfig, CrdPolicy
from stacks.facts import versions
from stacks.facts.catalog import version_tuple
from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.problems import Problem
from stacks.security import pod_security
from tests.conftest import make_config
from workloads.registry import WORKLOAD_TYPES

DOCS = Path(__file__).resolve().parent.parent / "docs"
ADDONS_PAGE = DOCS / "addons-and-monitoring.md"
REFERENCE = DOCS / "configuration.md"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@pytest.mark.parametrize("entry", addons.ADDONS, ids=lambda a: a.key)
def test_every_entry_is_complete(entry: Addon):
    # the key is a camelCase config key that round-trips through the model's field name
    assert re.fullmatch(r"[a-z][a-zA-Z0-9]*", entry.key) and to_camel(to_snake(entry.key)) == entry.key
    assert DNS_LABEL.fullmatch(entry.resource_name) and entry.title
    assert entry.releases, "at least one supported release (stacks/facts/versions.py)"
    assert set(addons.settings_model().model_fields[to_snake(entry.key)].annotation.model_fields) >= {
        "enabled",
        "version",
    }
    for version, release in entry.releases.items():
        assert release.version == version and DNS_LABEL.fullmatch(release.namespace)
        assert entry.summary(release)["version"] == version
        # Helm alone manages CRDs only where no supported upgrade can change them
        assert entry.crd_policy(release) is not CrdPolicy.HELM or len(entry.releases) == 1
        if isinstance(release, versions.ChartVersion):
            # a chart: a namespace the stack labels, values that pin the image and select the system pool
            assert entry.pod_security in pod_security.LEVELS and entry.values is not None
            assert issubclass(entry.settings, ChartAddonConfig)
            values = entry.chart_values(release, entry.settings())
            assert release.image_repository in str(values) and release.image_tag in str(values)
            assert str(dict(SYSTEM_POOL_SELECTOR))[1:-1] in str(values)
        else:
            # a manifest brings its own namespace and carries no Helm values
            assert isinstance(release, versions.ManifestVersion)
            assert entry.pod_security is None and entry.values is None
            assert entry.crd_policy(release) is CrdPolicy.MANIFEST


CHART_RELEASES = [
    (entry, release) for entry in addons.ADDONS for release in entry.releases.values() if entry.values is not None
]


@pytest.mark.parametrize(
    ("entry", "release"), CHART_RELEASES, ids=lambda v: getattr(v, "key", getattr(v, "version", ""))
)
def test_every_chart_pod_has_requests(entry: Addon, release: versions.ChartVersion):
    """Every add-on chart at every supported version, rendered by `helm template` with the stack's values (its
    default settings, enabled): every container requests cpu and memory, so none is BestEffort (first evicted)."""
    from tests.helm_charts import containers, render

    settings = entry.settings.model_validate({"enabled": True})
    objects = render(release, entry.chart_values(release, settings))
    assert containers(objects)
    for where, container in containers(objects):
        assert container.get("resources", {}).get("requests", {}).keys() >= {"cpu", "memory"}, where


def test_the_manifest_addons_pods_have_requests():
    """The PathwaysJob controller's release manifest (google/pathways-job@v0.1.4 release/install.yaml, saved in
    ../shared/reference/manifests/pathways-job-v0.1.4/) requests 10m and 64Mi."""
    import yaml

    from tests.conftest import reference_dir
    from tests.helm_charts import containers

    path = reference_dir() / "manifests/pathways-job-v0.1.4/install.yaml"
    if not path.exists():
        pytest.skip(f"no reference manifest at {path}")
    assert versions.PATHWAYS_JOB["0.1.4"].url.endswith("/v0.1.4/install.yaml")
    objects = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert containers(objects)
    for where, container in containers(objects):
        assert container["resources"]["requests"].keys() >= {"cpu", "memory"}, where


@pytest.mark.parametrize("entry", addons.ADDONS, ids=lambda a: a.key)
def test_needs_name_earlier_entries_and_the_defaults_meet_them(entry: Addon):
    earlier = {a.key for a in addons.ADDONS[: addons.ADDONS.index(entry)]}
    for release in entry.releases.values():
        for key, minimum in entry.needs(release).items():
            assert key in earlier, f"{entry.key} needs {key}, which must come earlier in ADDONS"
            needed = addons.addon(key)
            assert version_tuple(needed.default_version) >= version_tuple(minimum)


def test_registry_keys_and_names_are_unique():
    assert len({a.key for a in addons.ADDONS}) == len(addons.ADDONS)
    assert len({a.resource_name for a in addons.ADDONS}) == len(addons.ADDONS)


def test_pathways_job_needs_jobset_from_its_readme():
    # google/pathways-job@v0.1.4 README: "JobSet >= v0.8.0" (../shared/reference/manifests/pathways-job-v0.1.4)
    entry = addons.addon("pathwaysJob")
    assert entry.needs(entry.releases["0.1.4"]) == {"jobset": "0.8.0"}
    # the manifest's first object is its Namespace (google/pathways-job@v0.1.4:release/install.yaml)
    assert entry.releases["0.1.4"].namespace == "pathways-job-system"


def test_workload_types_name_registered_addons():
    assert {t.addon for t in WORKLOAD_TYPES.values() if t.addon} <= {a.key for a in addons.ADDONS}


def test_docs_table_lists_every_addon_with_its_versions():
    rows = {line.split("|")[1].strip(): line for line in ADDONS_PAGE.read_text().splitlines() if line.startswith("| ")}
    for entry in addons.ADDONS:
        row = rows.get(entry.title)
        assert row is not None, f"docs/addons-and-monitoring.md's add-on table has no row for {entry.title}"
        cells = [c.strip() for c in row.split("|")]
        assert cells[3:5] == [entry.default_version, ", ".join(entry.releases)], entry.key
        # and the generated configuration reference documents its key
        assert f"| `tpu-serving:addons.{entry.key}.enabled` |" in REFERENCE.read_text(), entry.key


def test_unknown_addon_key_is_refused():
    with pytest.raises(KeyError, match="'nope' is not a registered add-on"):
        addons.addon("nope")


# ---- a fake entry, added to the registry alone --------------------------------------------------------------

FAKE_CHART = versions.ChartVersion(
    "oci://example.com/charts/fake", "1.2.0", "example.com/fake", "v1.2.0", "fake-system", "fake"
)


def _fake_values(chart: versions.ChartVersion, settings) -> dict:
    return {"image": {"tag": chart.image_tag}, "nodeSelector": dict(SYSTEM_POOL_SELECTOR), **settings.values}


FAKE = Addon(
    key="fakeThing",
    title="Fake",
    description="A fake add-on.",
    settings=ChartAddonConfig,
    releases={"1.2.0": FAKE_CHART, "1.0.0": FAKE_CHART},
    pod_security=pod_security.RESTRICTED,
    values=_fake_values,
    needs=lambda release: {"jobset": "0.10.0"},
)


@pytest.fixture
def fake_registered(monkeypatch):
    monkeypatch.setattr(addons, "ADDONS", (*addons.ADDONS, FAKE))


def test_a_fake_entry_is_installed_and_summarised(run, fake_registered):
    rec = run(make_config(tpu_serving__addons={"fakeThing": {"values": {"extra": 1}}}))
    release = rec.one("kubernetes:helm.sh/v3:Release", "addons-fake-thing")
    assert release.inputs["chart"] == "oci://example.com/charts/fake" and release.inputs["values"]["extra"] == 1
    namespace = rec.one("kubernetes:core/v1:Namespace", "addons-fake-thing-ns")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert namespace.urn in release.dependencies
    # it needs JobSet: registered after it and depending on it
    assert rec.one("kubernetes:helm.sh/v3:Release", "addons-jobset").urn in release.dependencies
    assert rec.outputs["addons"]["fakeThing"] == {
        "chart": "oci://example.com/charts/fake",
        "version": "1.2.0",
        "namespace": "fake-system",
    }


def test_a_fake_entry_is_validated(run, fake_registered):
    with pytest.raises(
        pulumi.RunError, match=r"addons.fakeThing.enabeld: unknown key; allowed: enabled, version, values"
    ):
        run(make_config(tpu_serving__addons={"fakeThing": {"enabeld": True}}))
    with pytest.raises(
        pulumi.RunError, match=r"addons.fakeThing.version: '9.9.9' is not supported; supported: 1.2.0, 1.0.0"
    ):
        run(make_config(tpu_serving__addons={"fakeThing": {"version": "9.9.9"}}))
    with pytest.raises(pulumi.RunError, match=r"addons.fakeThing.enabled: the Fake needs JobSet: enable addons.jobset"):
        run(make_config(tpu_serving__addons={"jobset": {"enabled": False}}))


def test_a_fake_entry_is_in_the_json_schema(fake_registered):
    from tooling.generate.json_schema import regional_key, stack_config_schema

    schema = regional_key(stack_config_schema(), "tpu-serving:addons")
    assert schema["properties"]["fakeThing"] == {"$ref": "#/$defs/ChartAddonConfig", "description": "A fake add-on."}


def test_a_needed_addon_below_the_minimum_is_reported(monkeypatch):
    import dataclasses

    strict = dataclasses.replace(FAKE, needs=lambda release: {"jobset": "0.11.0"})
    monkeypatch.setattr(addons, "ADDONS", (*addons.ADDONS, strict))
    config = addons.settings_model().model_validate({"jobset": {"version": "0.10.1"}})
    assert addons.check(config, "a") == [
        Problem("a.jobset.version", "'0.10.1' is too old for the Fake (needs >= 0.11.0)")
    ]
    assert addons.check(addons.settings_model().model_validate({"jobset": {"version": "0.12.0"}}), "a") == []


def jetstream(name: str) -> dict:
    """A jetstream workload in namespace `name` on BASE's v5e-2x4 pool."""
    return {
        "type": "jetstream",
        "name": name,
        "namespace": name,
        "pool": "v5e-2x4",
        "model": "gemma-7b",
        "checkpoint": "gs://my-bucket/gemma-7b/items",
    }


def test_a_fake_entry_with_webhooks_orders_the_namespaces_it_admits_after_it(run, monkeypatch):
    """An add-on whose webhooks admit a namespace's objects (Addon.admits): the stack creates that workload
    namespace, and so everything in it, only after the add-on's release; other namespaces do not wait for it; and
    it may not admit kube-system or its own namespace."""
    import dataclasses

    admitting = dataclasses.replace(FAKE, admits=lambda settings: ["gemma"] if settings.enabled else [])
    monkeypatch.setattr(addons, "ADDONS", (*addons.ADDONS, admitting))
    rec = run(make_config(tpu_serving__workloads=[jetstream("gemma"), jetstream("other")]))
    release = rec.one("kubernetes:helm.sh/v3:Release", "addons-fake-thing")
    assert release.urn in rec.one("kubernetes:core/v1:Namespace", "namespaces-gemma").dependencies
    assert release.urn not in rec.one("kubernetes:core/v1:Namespace", "namespaces-other").dependencies
    for bad in ("kube-system", "fake-system"):
        monkeypatch.setattr(
            addons, "ADDONS", (*addons.ADDONS[:-1], dataclasses.replace(FAKE, admits=lambda settings, ns=bad: [ns]))
        )
        config = addons.settings_model().model_validate({})
        assert [p.path for p in addons.check(config, "a")] == ["a.fakeThing.namespaces"], bad
