"""Add-on releases: pinned charts from OCI registries, scheduled off TPU nodes, in dependency order."""

import pulumi
import pytest

from stacks import versions
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
