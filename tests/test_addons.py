"""Add-on releases: pinned charts from OCI registries, scheduled off TPU nodes, in dependency order."""

import re

import pulumi
import pytest

from stacks.facts import versions
from tests.conftest import make_config

RELEASE = "kubernetes:helm.sh/v3:Release"
SYSTEM = {"tpu-serving/role": "system"}


def releases(rec):
    return {r.inputs["name"]: r for r in rec.of_type(RELEASE)}


def test_lws_and_jobset_are_installed_pinned_by_default(run):
    rec = run(make_config())
    found = releases(rec)
    assert set(found) == {"lws", "jobset"}
    lws, jobset = found["lws"].inputs, found["jobset"].inputs
    assert (lws["chart"], lws["version"], lws["namespace"]) == (
        "oci://registry.k8s.io/lws/charts/lws",
        "0.7.0",
        "lws-system",
    )
    assert (jobset["chart"], jobset["version"], jobset["namespace"]) == (
        "oci://registry.k8s.io/jobset/charts/jobset",
        "0.10.1",
        "jobset-system",
    )
    assert lws["values"]["image"]["manager"] == {
        "repository": "registry.k8s.io/lws/lws",
        "tag": "v0.7.0",
        "pullPolicy": "IfNotPresent",
    }
    assert jobset["values"]["image"]["tag"] == "v0.10.1"
    assert lws["createNamespace"] is False and lws["atomic"] is True  # the stack owns the namespace


def test_controllers_are_scheduled_on_the_system_pool(run):
    rec = run(make_config(tpu_serving__addons={"kueue": {"enabled": True}}))
    found = releases(rec)
    assert found["lws"].inputs["values"]["nodeSelector"] == SYSTEM
    assert found["jobset"].inputs["values"]["controller"]["nodeSelector"] == SYSTEM
    assert found["kueue"].inputs["values"]["controllerManager"]["nodeSelector"] == SYSTEM
    system_pool = rec.one("gcp:container/nodePool:NodePool", "cluster-system")
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    for release in found.values():
        assert system_pool.urn in release.dependencies
        assert release.provider.startswith(provider.urn)
        # no release carries a TPU toleration
        assert "google.com/tpu" not in str(release.inputs["values"])


def test_user_values_merge_over_ours(run):
    rec = run(
        make_config(
            tpu_serving__addons={"lws": {"values": {"replicaCount": 2, "image": {"manager": {"pullPolicy": "Always"}}}}}
        )
    )
    values = releases(rec)["lws"].inputs["values"]
    assert values["replicaCount"] == 2
    assert values["image"]["manager"] == {
        "repository": "registry.k8s.io/lws/lws",
        "tag": "v0.7.0",
        "pullPolicy": "Always",
    }


def test_addons_can_be_disabled_and_versions_chosen(run):
    rec = run(make_config(tpu_serving__addons={"lws": {"enabled": False}, "jobset": {"version": "0.12.0"}}))
    found = releases(rec)
    assert set(found) == {"jobset"}
    assert found["jobset"].inputs["version"] == "0.12.0"
    assert found["jobset"].inputs["values"]["image"]["tag"] == "v0.12.0"
    assert rec.outputs["addons"] == {
        "jobset": {
            "chart": "oci://registry.k8s.io/jobset/charts/jobset",
            "version": "0.12.0",
            "namespace": "jobset-system",
        }
    }


def test_pathways_job_controller_is_optional_and_follows_jobset(run):
    assert not run(make_config()).of_type("kubernetes:yaml/v2:ConfigFile")
    rec = run(make_config(tpu_serving__addons={"pathwaysJob": {"enabled": True}}))
    config_file = rec.one("kubernetes:yaml/v2:ConfigFile")
    assert config_file.inputs["file"] == versions.PATHWAYS_JOB["0.1.4"].url
    assert releases(rec)["jobset"].urn in config_file.dependencies
    assert rec.outputs["addons"]["pathwaysJob"]["version"] == "0.1.4"


@pytest.mark.parametrize(
    "addons,expected",
    [
        (
            {"lws": {"version": "0.5.0"}},
            "tpu-serving:addons.lws.version: '0.5.0' is not supported; supported: 0.7.0, 0.10.0",
        ),
        (
            {"jobset": {"version": "v0.10.1"}},
            "tpu-serving:addons.jobset.version: 'v0.10.1' is not supported; supported: 0.10.1",
        ),
        (
            {"kueue": {"enabled": True, "version": "0.9.0"}},
            "tpu-serving:addons.kueue.version: '0.9.0' is not supported",
        ),
        (
            {"pathwaysJob": {"enabled": True, "version": "0.0.1"}},
            "tpu-serving:addons.pathwaysJob.version: '0.0.1' is not supported",
        ),
        (
            {"pathwaysJob": {"enabled": True}, "jobset": {"enabled": False}},
            "tpu-serving:addons.pathwaysJob.enabled: the PathwaysJob controller needs JobSet: enable addons.jobset",
        ),
        ({"lws": {"enabeld": True}}, "tpu-serving:addons.lws.enabeld: unknown key; allowed: enabled, version, values"),
    ],
)
def test_addon_config_errors(run, addons, expected):
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__addons=addons))
    assert expected in str(err.value)


# ---- Kueue: scoped to the namespaces it manages ----------------------------------------------------------------

KUEUE_CHART = versions.CHARTS["kueue"]["0.17.1"]
# What the stack and its users create that Kueue 0.17.1's webhooks intercept (charts/kueue/templates/webhook/
# manifests.yaml rules): none of these may be admitted outside the namespaces Kueue manages.
WORKLOAD_RESOURCES = {"pods", "deployments", "statefulsets", "jobs", "jobsets", "leaderworkersets"}


def kueue_objects(namespaces: list[str]) -> list[dict]:
    from stacks.addons import addon
    from tests.helm_charts import render

    entry = addon("kueue")
    settings = entry.settings.model_validate({"enabled": True, "namespaces": namespaces})
    return render(KUEUE_CHART, entry.chart_values(KUEUE_CHART, settings))


@pytest.mark.parametrize("namespaces", [["gemma", "batch"], []], ids=["two", "none"])
def test_kueue_webhooks_admit_only_the_namespaces_it_manages(namespaces):
    """`helm template` of kubernetes-sigs/kueue@v0.17.1 charts/kueue with the stack's values: every
    `failurePolicy: Fail` webhook over Pods, Deployments, StatefulSets, Jobs, JobSets or LeaderWorkerSets selects
    exactly the managed namespaces (with none, no namespace: every namespace has kubernetes.io/metadata.name).
    With the chart's defaults, the job kinds' webhooks have no namespaceSelector at all."""
    from stacks.addons.kueue import managed_namespaces_selector

    objects = kueue_objects(namespaces)
    webhooks = [w for o in objects if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]]
    assert len(webhooks) == 43
    scoped = [w for w in webhooks if {r for rule in w["rules"] for r in rule["resources"]} & WORKLOAD_RESOURCES]
    assert len(scoped) == 12  # mutating and validating for each of the six kinds
    for webhook in scoped:
        assert webhook["namespaceSelector"] == managed_namespaces_selector(namespaces), webhook["name"]
    selector = managed_namespaces_selector(namespaces)["matchExpressions"][0]
    assert (selector["operator"], selector.get("values")) == (
        ("In", sorted(namespaces)) if namespaces else ("DoesNotExist", None)
    )
    # its controller has requests (the chart's default: 500m, 512Mi)
    from tests.helm_charts import containers

    for where, container in containers(objects):
        assert container["resources"]["requests"].keys() >= {"cpu", "memory"}, where


def test_kueue_manager_config_is_the_charts_default_plus_the_scope():
    """The configuration the stack writes is kubernetes-sigs/kueue@v0.17.1 charts/kueue/values.yaml
    `managerConfig.controllerManagerConfigYaml` (whose `manageJobsWithoutQueueName` and
    `managedJobsNamespaceSelector` are commented out) plus those two keys."""
    import yaml

    from stacks.addons.kueue import CHART_MANAGER_CONFIG, manager_config
    from tests.helm_charts import chart_dir

    values = chart_dir(KUEUE_CHART) / "values.yaml"
    if not values.exists():
        pytest.skip(f"no chart source at {values} (../shared/reference/charts)")
    text = yaml.safe_load(values.read_text())["managerConfig"]["controllerManagerConfigYaml"]
    assert yaml.safe_load(text) == CHART_MANAGER_CONFIG
    assert "#manageJobsWithoutQueueName: true" in text and "#managedJobsNamespaceSelector:" in text
    assert manager_config(["a"]) == {
        **CHART_MANAGER_CONFIG,
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a"]}]
        },
    }


def test_kueue_managed_namespaces_wait_for_its_release(run):
    workload = {
        "type": "jetstream",
        "name": "gemma",
        "namespace": "gemma",
        "pool": "v5e-2x4",
        "model": "gemma-7b",
        "checkpoint": "gs://my-bucket/gemma-7b/items",
    }
    rec = run(
        make_config(
            tpu_serving__addons={"kueue": {"enabled": True, "namespaces": ["gemma"]}},
            tpu_serving__workloads=[workload, {**workload, "name": "other", "namespace": "other"}],
        )
    )
    kueue = releases(rec)["kueue"]
    config = kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    assert '"values": [\n          "gemma"\n        ]' in config
    # the managed namespace, and so the Deployment in it, waits for Kueue (Helm waits for its webhook Deployment)
    assert kueue.urn in rec.one("kubernetes:core/v1:Namespace", "namespaces-gemma").dependencies
    assert kueue.urn not in rec.one("kubernetes:core/v1:Namespace", "namespaces-other").dependencies
    assert not kueue.inputs.get("skipAwait")


@pytest.mark.parametrize(
    ("namespaces", "message"),
    [
        (["kube-system"], "tpu-serving:addons.kueue.namespaces: 'kube-system' cannot be managed by the Kueue"),
        (["kueue-system"], "tpu-serving:addons.kueue.namespaces: 'kueue-system' cannot be managed by the Kueue"),
        (["Bad_Name"], "tpu-serving:addons.kueue.namespaces"),
    ],
)
def test_kueue_namespaces_are_checked(run, namespaces, message):
    with pytest.raises(pulumi.RunError, match=re.escape(message)):
        run(make_config(tpu_serving__addons={"kueue": {"enabled": True, "namespaces": namespaces}}))
