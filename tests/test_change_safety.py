"""Changes to a live stack that used to succeed and silently break something, and serving that did not survive a
fault (issue 36, items 5-12). Each test names the upstream source of the rule it encodes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ROOT, STACK_FILES, make_config, pool, recorded, reference_file
from tests.test_review_issue23 import _render
from tooling.harness.offline import Recording
from tooling.review.recreate import NOT_UPDATED, protected_needs, read_render, recreations, review

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
TPU_POOL = "tpu-serving:tpu:TpuSlicePool"


def _tpu_node_pools(rec: Recording) -> list[Any]:
    parents = {r.urn for r in rec.of_type(TPU_POOL)}
    return [r for r in rec.of_type(NODE_POOL) if r.parent in parents]


# ---- item 5: the upgrade hold is a cluster exclusion, which an update can change ---------------------------------


def _exclusions(rec: Recording) -> Any:
    return (rec.one(CLUSTER).inputs.get("maintenancePolicy") or {}).get("maintenanceExclusions")


@pytest.mark.parametrize("hold", [True, False])
def test_toggling_the_hold_changes_only_what_the_provider_updates(run, hold):
    """hashicorp/terraform-provider-google-beta@v7.45.0 (and @93c65b2d60, the 8.x line the pulumi-gcp 10.2.0 SDK
    matches): google-beta/services/container/resource_container_node_pool.go reads maintenance_policy only in
    expandNodePool (create); nodePoolUpdate has no HasChange for it and resourceContainerNodePoolUpdate ends with a
    read. So turning the hold on or off must change no node pool input (it would be a no-op update, diffed forever),
    and must change the cluster's exclusion, which the cluster's update sends (maintenance_policy is updatable)."""
    on = run(make_config(tpu_serving__cluster={"maintenance": {"holdMinorAndNodeUpgrades": hold}}))
    off = run(make_config(tpu_serving__cluster={"maintenance": {"holdMinorAndNodeUpgrades": not hold}}))
    assert bool(_exclusions(on)) == hold and bool(_exclusions(off)) == (not hold)
    pools_on = {r.name: r.inputs for r in on.of_type(NODE_POOL)}
    pools_off = {r.name: r.inputs for r in off.of_type(NODE_POOL)}
    assert pools_on == pools_off


def test_dev_to_prod_holds_existing_tpu_pools_through_the_cluster(run):
    """dev -> prod turns the hold on (its profile's default): the TPU node pools already exist, so only the cluster
    exclusion can hold them; its scope must include node upgrades (GKE API MaintenanceExclusionOptions.Scope
    NO_MINOR_OR_NODE_UPGRADES "also exclude all node pool upgrades", container v1 discovery document)."""
    prod = run(make_config(tpu_serving__environment="prod"), stack="prod")
    (exclusion,) = _exclusions(prod)
    assert exclusion["exclusionOptions"]["scope"] == "NO_MINOR_OR_NODE_UPGRADES"


def test_a_capacity_list_leaving_does_not_narrow_the_hold(run):
    """Item 8: a pool going from a capacity list to one capacity used to narrow the cluster's exclusion to
    NO_MINOR_UPGRADES while the node pools GKE created for the list still served; now the scope never depends on
    the pools."""
    listed = pool(tpu="v5e", topology="2x4", capacity=["spot", "on-demand"], autoscaling={"minNodes": 0, "maxNodes": 3})
    held = {"maintenance": {"holdMinorAndNodeUpgrades": True}, "minMasterVersion": "1.35.0-gke.1000000"}
    with_list = run(make_config(tpu_serving__cluster=held, tpu_serving__tpuPools=[listed]))
    single = run(make_config(tpu_serving__cluster=held, tpu_serving__tpuPools=[{**listed, "capacity": "spot"}]))
    assert _exclusions(with_list) == _exclusions(single)


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_node_pool_replaces_or_ignores_what_the_provider_never_updates(path):
    """tooling/recreate.NOT_UPDATED (the provider's nodePoolUpdate never sends placement_policy nor
    maintenance_policy): a field sent replaces the pool on change; a TPU node pool ignores its create-only upgrade
    exclusion, which a pool created by an earlier version carries (no perpetual diff)."""
    rec = recorded(path, True)
    tpu = {r.urn for r in _tpu_node_pools(rec)}
    for reg in rec.of_type(NODE_POOL):
        for field in NOT_UPDATED[NODE_POOL]:
            if field in reg.inputs:
                assert field in reg.replace_on_changes, (reg.name, field)
        if reg.urn in tpu:
            assert "maintenancePolicies" in reg.ignore_changes, reg.name


def test_the_review_does_not_flag_a_legacy_pool_exclusion(tmp_path):
    """A render from before (node pools sending their own exclusion) against now: the field is ignored, so the
    review names no change of it (and `pulumi up` proposes none)."""
    prod = (ROOT / "Pulumi.dev.yaml").read_text().replace("environment: dev", "environment: prod")
    new = read_render(_render(prod, tmp_path, "prod-new"))
    old = {k: {**v, "inputs": dict(v["inputs"])} for k, v in new.items()}
    for body in old.values():
        if body["type"] == NODE_POOL and "tpu-pool" in str(body["inputs"].get("nodeConfig")):
            body["inputs"]["maintenancePolicies"] = [{"exclusionUntilEndOfSupports": [{"enabled": True}]}]
    assert recreations(old, new) == []


# ---- item 6: a single-host pool's shape is a replacement the review shows and `protect` stops -------------------


@pytest.mark.parametrize(
    "edit",
    [
        ("topology: 2x4", "topology: 2x2"),  # ct5lp-hightpu-8t -> ct5lp-hightpu-4t
        ("tpu: v5e\n      topology: 2x4", "tpu: v6e\n      topology: 2x4"),  # -> ct6e-standard-8t
    ],
    ids=["topology", "generation"],
)
def test_a_single_host_pool_shape_change_is_a_replacement_prod_refuses(tmp_path, edit):
    """google-beta node_config.go: machine_type is Optional+Computed, not ForceNew, and nodePoolNodeConfigUpdate
    sends it in an UpdateNodePool (v7.45.0 and 93c65b2d60): left alone, a single-host pool's new shape is an
    in-place machine-type migration of the serving nodes that the review counts as 0 recreations and `protect` does
    not stop. The stack replaces instead (replaceOnChanges), so the review names it and prod refuses it."""
    prod = (ROOT / "Pulumi.dev.yaml").read_text().replace("environment: dev", "environment: prod")
    old = _render(prod, tmp_path, "prod-old")
    new = _render(prod.replace(*edit), tmp_path, "prod-new")
    lines = review(old, new)
    (change,) = [line for line in lines if "nodeConfig.machineType" in line]
    assert change.startswith("gcp:container/nodePool:NodePool tpu-v5e-2x4: nodeConfig.machineType ct5lp-hightpu-8t")
    assert change.endswith("(replaces it: replaceOnChanges)")
    (need,) = protected_needs(read_render(old), read_render(new), recreations(old, new), "prod")
    assert need.startswith("gcp:container/nodePool:NodePool tpu-v5e-2x4: `pulumi up` refuses: it is protected")


def test_every_tpu_node_pool_replaces_on_a_machine_type_change(run):
    for reg in _tpu_node_pools(run(make_config())):
        assert "nodeConfig.machineType" in reg.replace_on_changes, reg.name


# ---- item 9: a disruption restarts Saxml's model servers without using up maxRestarts -----------------------------

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
# kubernetes-sigs/jobset@v0.10.1:pkg/webhooks/jobset_webhook.go: ruleNameFmt and validOnJobFailureReasons
# (batchv1.JobReason*: BackoffLimitExceeded, DeadlineExceeded, FailedIndexes, MaxFailedIndexesExceeded,
# PodFailurePolicy)
RULE_NAME = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
JOB_FAILURE_REASONS = {
    "BackoffLimitExceeded",
    "DeadlineExceeded",
    "FailedIndexes",
    "MaxFailedIndexesExceeded",
    "PodFailurePolicy",
}


def _saxml_jobsets() -> list[Any]:
    out = []
    for path in STACK_FILES:
        rec = recorded(path, False)
        out += [r for r in rec.of_type(JOBSET) if r.inputs["metadata"]["name"].endswith("-model-server")]
    assert out, "no example runs Saxml"
    return out


def test_a_saxml_disruption_restarts_the_jobset_without_counting():
    """kubernetes-sigs/jobset@v0.10.1:site/static/examples/failure-policy/host-maintenance-event-model.yaml (and
    site/content/en/docs/tasks/failure_policy.md): a pod with the DisruptionTarget condition fails its Job through
    the Job's podFailurePolicy (reason PodFailurePolicy), and a JobSet rule on that reason restarts it with
    RestartJobSetAndIgnoreMaxRestarts. Before, every eviction or host event used one of maxRestarts, which never
    resets: the cell stopped for good at its fifth disruption. The JobSet is validated against the CRD at the
    pinned tag by tests/test_saxml.py test_saxml_objects_validate (the CRD requires onPodConditions[].status)."""
    import re

    for jobset in _saxml_jobsets():
        spec = jobset.inputs["spec"]
        rules = spec["failurePolicy"]["rules"]
        first = rules[0]  # rules are evaluated in order, the first match wins (the CRD's description)
        assert first["action"] == "RestartJobSetAndIgnoreMaxRestarts"
        assert first["onJobFailureReasons"] == ["PodFailurePolicy"]
        assert all(re.fullmatch(RULE_NAME, r["name"]) and 1 <= len(r["name"]) <= 128 for r in rules)
        assert all(set(r.get("onJobFailureReasons", [])) <= JOB_FAILURE_REASONS for r in rules)
        assert spec["failurePolicy"]["maxRestarts"] >= 0  # still bounds the failures that are not disruptions
        for job in spec["replicatedJobs"]:
            job_spec = job["template"]["spec"]
            (rule,) = job_spec["podFailurePolicy"]["rules"]
            assert rule == {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
            # a Job with a podFailurePolicy needs restartPolicy Never (the JobSet webhook would default OnFailure)
            assert job_spec["template"]["spec"]["restartPolicy"] == "Never"


def test_the_saxml_failure_policy_validates_against_the_jobset_crd():
    """The new failurePolicy and podFailurePolicy against the JobSet CRD at v0.10.1 (../shared/reference/crds, or
    the recorded schema): the schema every JobSet this stack applies must pass."""
    from tooling.harness.k8s_objects import kubernetes_objects
    from tooling.oracles.schemas import validate_objects

    reference_file("crds/jobset.x-k8s.io_jobsets.yaml")  # no recorded JobSet schema: without it, skip saying so
    path = next(p for p in STACK_FILES if p.name == "Pulumi.saxml-175b.yaml")
    objects = [o for o in kubernetes_objects(recorded(path, False)) if o["kind"] == "JobSet"]
    report = validate_objects(objects, "1.34")
    assert report.ok and not report.unchecked and report.checked == len(objects), report.errors


# ---- item 11: one Saxml admin server at a time -------------------------------------------------------------------


def test_the_saxml_admin_server_is_never_two_during_a_rollout():
    """google/saxml@v1.1.0: saxml/common/addr.go SetAddr blocks on env.Get().Lead, and saxml/common/platform/
    cloud.go's Lead is a process-local mutex (muLeader): no election across pods, so two admin servers of one cell
    both write its location file. A Deployment's default RollingUpdate surges a second pod (maxSurge 25%, rounded
    up: kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-surge); Recreate never does."""
    for path in STACK_FILES:
        for reg in recorded(path, False).of_type("kubernetes:apps/v1:Deployment"):
            if reg.inputs["metadata"]["name"].endswith("-admin") and "sax-admin-server" in str(reg.inputs):
                assert reg.inputs["spec"]["strategy"] == {"type": "Recreate"}, reg.name
                assert reg.inputs["spec"]["replicas"] <= 1


# ---- item 12: no sidecar liveness probe in a LeaderWorkerSet whose group restarts on any container restart ----------

LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def test_no_lws_restarts_a_whole_slice_group_for_a_sidecar():
    """kubernetes-sigs/lws@v0.7.0: pkg/controllers/pod_controller.go handleRestartPolicy deletes the group's leader
    (recreating every pod of the group, every host of the slice) when pkg/utils/pod/pod_utils.go ContainerRestarted
    finds any container with restartCount > 0, under RestartPolicy RecreateGroupOnPodRestart (the CRD's default).
    jetstream-http's own liveness probe (its root path) restarted it alone in a Deployment, but in a leader it cost a
    cold start of the whole slice; the engine's probe (/healthcheck, answered through jetstream-http) still sees a
    hung jetstream-http."""
    from workloads.jetstream.server import JETSTREAM_HTTP_ROOT

    seen = 0
    for path in STACK_FILES:
        for lws in recorded(path, False).of_type(LWS):
            template = lws.inputs["spec"]["leaderWorkerTemplate"]
            if template.get("restartPolicy", "RecreateGroupOnPodRestart") != "RecreateGroupOnPodRestart":
                continue
            for pod in (template.get("leaderTemplate"), template["workerTemplate"]):
                for container in (pod or {}).get("spec", {}).get("containers", []):
                    probe = container.get("livenessProbe")
                    seen += container["name"] == "jetstream-http"
                    assert not (container["name"] == "jetstream-http" and probe), lws.name
                    assert not probe or probe.get("httpGet", {}).get("path") != JETSTREAM_HTTP_ROOT, lws.name
    assert seen, "no example has a jetstream-http sidecar in a LeaderWorkerSet"


def test_a_single_host_jetstream_http_keeps_its_liveness_probe():
    """In a Deployment's pod a container's restart restarts that container only: the cheap fix for a hung server."""
    path = next(p for p in STACK_FILES if p.name == "Pulumi.all-in-one.yaml")
    sidecars = [
        c
        for d in recorded(path, False).of_type("kubernetes:apps/v1:Deployment")
        for c in d.inputs["spec"]["template"]["spec"]["containers"]
        if c["name"] == "jetstream-http"
    ]
    assert sidecars and all("livenessProbe" in c for c in sidecars)


# ---- item 8: the endpoint picker's recorded objects keep its namespace apart from its release name -----------------


def test_the_router_charts_namespace_named_objects_are_recorded_as_the_namespace():
    """llm-d/llm-d-router@v0.10.0:config/charts/routerlib/templates/_gke.yaml names the metrics reader
    `printf "%s-%s-metrics-reader" .Release.Namespace .Release.Name`. The record was rendered from a stack whose
    workload namespace equals the release name, so it took both for the release: a workload in a namespace of
    another name was reviewed with objects it does not get."""
    from stacks.facts.versions import LLM_D_ROUTER
    from tooling.oracles import chart_objects

    objects = chart_objects.installed(LLM_D_ROUTER.chart, LLM_D_ROUTER.version, "llama", "serving")
    assert objects is not None
    names = {(o["kind"], o["name"]) for o in objects}
    assert ("ClusterRole", "serving-llama-metrics-reader") in names
    assert ("ClusterRoleBinding", "serving-llama-metrics-reader-role-binding") in names
    assert not any("llama-llama" in name for _, name in names), names


def test_a_per_release_chart_is_never_recorded_with_its_namespace_equal_to_its_release():
    from tooling.oracles import chart_objects

    release = chart_objects.Release("oci://x/chart", "1.0.0", "same", "same", {}, False)
    with pytest.raises(ValueError, match="namespace = release name"):
        chart_objects.record_objects(release, [], templated=True)


# ---- item 8: adding, removing or renaming a PathwaysJob replaces its pool's node pools ----------------------------


@pytest.mark.parametrize(
    "edit",
    [
        ("      name: pw\n", "      name: pw2\n"),  # renamed: another node service account
        ("    - type: pathways-job\n      name: pw\n      pool: v6e-4x4\n", ""),  # removed: the stack's node account
    ],
    ids=["renamed", "removed"],
)
def test_a_pathways_job_change_replaces_its_pools_node_pools_and_says_so(tmp_path, edit):
    """A PathwaysJob's pool serves it alone and runs as the workload's own node service account
    (workloads/pathways_job/component.py): node_config.service_account is ForceNew in google-beta
    (tooling/data/provider_rules.json), so adding, removing or renaming the job replaces every node pool of its pool.
    The review names it, and docs/operations.md's table of changes that recreate lists it."""
    path = next(p for p in STACK_FILES if p.name == "Pulumi.pathways-job.yaml")
    text = path.read_text()
    assert edit[0] in text
    old = _render(text, tmp_path, "pj-old")
    new = _render(text.replace(*edit), tmp_path, "pj-new")
    lines = [line for line in recreations(old, new) if "nodeConfig.serviceAccount" in line]
    assert lines and all(line.startswith("gcp:container/nodePool:NodePool tpu-v6e-4x4-s0:") for line in lines), lines
    table = (ROOT / "docs" / "operations.md").read_text().split("Changes that recreate", 1)[1].split("\n\n")[1]
    assert "`pathways-job`" in table and "node service account" in table


# ---- items 7, 8, 10: the operations page says what each such change does and its safe procedure -------------------


def test_the_operations_page_has_a_row_per_kind_of_change_touched_here():
    page = (ROOT / "docs" / "operations.md").read_text()
    section = page.split("## Changes to a live stack: what they do to serving", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| change")]
    for needle in (
        "holdMinorAndNodeUpgrades",
        "capacity list",
        "single-host pool",
        "`pathways-job`",
        "vLLM moved between a single-host and a multi-host pool",
        "`models[].replicas`",
        "`checkpoint`",
        "admin",
        "disruption of a Saxml model server",
        "addons.kueue.enabled: false",
        "PathwaysJob head pod evicted",
        "PathwaysJob worker pod evicted",
    ):
        (row,) = [r for r in rows if needle in r.split(" | ")[0]]
        assert len(row.split(" | ")) == 3 and all(cell.strip() for cell in row.strip("|").split(" | ")), row
    # the pathways-job page no longer promises that a drain restarts the job once
    assert "restarts once" not in (ROOT / "docs" / "workloads" / "pathways-job.md").read_text()
