"""Switching `monitoring.adapter`, an add-on version, the gateway or the pause on a live stack is a clean `up`: the
program is run under the mocks with the old config and the new one, and the transition between the two runs
(tooling/review/transition.py, every Helm release expanded into what its chart installs) has no object managed under two
URNs, no replacement, no deletion out of order and no custom resource left without its CRD. Either direction is
checked."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from stacks.facts import versions
from tests.conftest import EXAMPLES, session_run
from tooling.harness.offline import Recording, Registration, load_stack_file
from tooling.review import transition
from tooling.review.render import stack_name


def example(name: str) -> Path:
    (path,) = [p for p in EXAMPLES if p.name == f"Pulumi.{name}.yaml"]
    return path


def _with(config: dict[str, Any], key: str, **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(config)
    out[key] = {**(out.get(key) or {}), **changes}
    return out


def _addon(config: dict[str, Any], addon: str, version: str) -> dict[str, Any]:
    out = copy.deepcopy(config)
    addons = out.setdefault("tpu-serving:addons", {})
    addons[addon] = {**addons.get(addon, {}), "version": version}
    return out


def _other(chart: str) -> str:
    """A supported version of `chart` other than its default (stacks/facts/versions.py CHARTS)."""
    return next(v for v in versions.CHARTS[chart] if v != versions.default_version(chart))


def cases() -> list[tuple[str, str, Any]]:
    return [
        # the HPA's metrics move from one adapter to the other
        ("gemma-hpa", "adapter", lambda c: _with(c, "tpu-serving:monitoring", adapter="prometheus-adapter")),
        # to and from KEDA, whose chart renders the APIService the stack registers for the others (issue 34 #8)
        ("gemma-hpa", "keda", lambda c: _with(c, "tpu-serving:monitoring", adapter="keda")),
        ("gemma-hpa-prometheus", "keda", lambda c: _with(c, "tpu-serving:monitoring", adapter="keda")),
        # the Inference Gateway in front of a multi-host vLLM, on and off
        ("vllm-multi-host", "gateway", lambda c: _with(c, "tpu-serving:gateway", enabled=False)),
        # the other supported chart version of the add-ons the workloads' custom resources need
        ("vllm-multi-host", "lws", lambda c: _addon(c, "lws", _other("lws"))),
        ("saxml-175b", "jobset", lambda c: _addon(c, "jobset", _other("jobset"))),
        ("all-in-one", "pause", lambda c: {**c, "tpu-serving:paused": True}),
        # pausing what an HPA scales (a Deployment; a LeaderWorkerSet) takes spec.replicas over from
        # kube-controller-manager, forced (issue 36 #1)
        ("gemma-hpa", "pause", lambda c: {**c, "tpu-serving:paused": True}),
        ("vllm-multi-host", "pause", lambda c: {**c, "tpu-serving:paused": True}),
        # the upgrade hold: the node pools' own exclusions and the cluster's scope change in place
        (
            "all-in-one",
            "hold",
            lambda c: _with(c, "tpu-serving:cluster", maintenance={"holdMinorAndNodeUpgrades": False}),
        ),
    ]


def _run(config: dict[str, Any], stack: str) -> Recording:
    # once per config for the session (both directions read the same two runs; the checker only reads them)
    return session_run(config, stack=stack)


@pytest.mark.parametrize(("name", "what", "change"), cases(), ids=[f"{n}-{w}" for n, w, _ in cases()])
@pytest.mark.parametrize("direction", ["forth", "back"])
def test_the_transition_is_clean(name, what, change, direction):
    path = example(name)
    before = load_stack_file(path)
    after = change(before)
    assert after != before, "the change changes the config"
    old, new = _run(before, stack_name(path)), _run(after, stack_name(path))
    if direction == "back":
        old, new = new, old
    assert list(transition.problems(old, new)) == []


def _external(config: dict[str, Any], **gateway: Any) -> dict[str, Any]:
    out = _with(config, "tpu-serving:gateway", exposure="external", **gateway)
    if "cloudArmorPolicy" in gateway:
        out["tpu-serving:gateway"].pop("sourceRanges", None)
    return out


RANGES = ["203.0.113.0/24", "198.51.100.0/24"]
GATEWAY_CHANGES = {
    "narrowed": lambda c: _external(c, sourceRanges=RANGES[:1]),
    "to-existing-policy": lambda c: _external(c, cloudArmorPolicy="operators-policy"),
    "to-internal": lambda c: {
        **c,
        "tpu-serving:gateway": {k: v for k, v in c["tpu-serving:gateway"].items() if k != "sourceRanges"}
        | {"exposure": "internal"},
    },
    "gateway-off": lambda c: _with(c, "tpu-serving:gateway", enabled=False),
}


@pytest.mark.parametrize("what", GATEWAY_CHANGES)
@pytest.mark.parametrize("direction", ["forth", "back"])
def test_an_external_gateways_source_ranges_removed_or_narrowed(what, direction):
    """The stack's Cloud Armor policy is deleted only after everything the load balancer builds on it (issue 36 #4),
    and still a one-step `up` that deletes it is refused: GKE's Gateway controller takes the policy off the backend
    services asynchronously, after the GCPBackendPolicy changes
    (https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources: "the Policy is processed by
    the Gateway controller and the underlying load balancer resource is (re)configured"), and the bridged provider's
    delete is one DELETE with no retry on resourceInUseByAnotherResource (hashicorp/terraform-provider-google-beta
    google-beta/services/compute/resource_compute_region_security_policy.go resourceComputeRegionSecurityPolicyDelete:
    transport_tpg.SendRequest without ErrorRetryPredicates). Narrowing the ranges updates the policy's rules in
    place; adding a policy is clean. No example has an external gateway, so one is made from vllm-multi-host."""
    path = example("vllm-multi-host")
    before = _external(load_stack_file(path), sourceRanges=RANGES)
    after = GATEWAY_CHANGES[what](before)
    old, new = _run(before, stack_name(path)), _run(after, stack_name(path))
    if direction == "back":
        old, new = new, old
    found = list(transition.problems(old, new))
    if direction == "back" or what == "narrowed":
        assert found == []
    else:
        (problem,) = found  # ordered after its users: only the asynchronous detach is left
        assert problem.startswith("in use: gateway-armor is deleted in the same `up` that detaches it"), problem


def test_the_two_step_procedure_for_the_armor_policy_is_documented():
    """The refusal names its procedure, and docs/operations.md has it (the change table's row and the section)."""
    from tooling.generate import transition_matrix

    effect = transition_matrix.effect("gateway.exposure -> external")
    assert (effect.forth, effect.back) == ("clean", "refused")
    assert "--exclude" in effect.procedure and "backend-services" in effect.procedure
    text = (Path(__file__).parents[1] / "docs" / "operations.md").read_text()
    assert "### Removing the gateway's Cloud Armor policy" in text and "--exclude" in text


# ---- the checker itself finds each failure mode ------------------------------------------------------------------


def _reg(
    name: str, type_: str, inputs: dict[str, Any], *, deps: tuple[str, ...] = (), parent: str = ""
) -> Registration:
    urn = f"urn:pulumi:s::p::{type_}::{name}"
    return Registration(type_, name, urn, True, inputs, parent=parent, dependencies=list(deps))


APISERVICE = "kubernetes:apiregistration.k8s.io/v1:APIService"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, **({"namespace": namespace} if namespace else {})}}


def test_it_names_an_object_managed_under_two_urns():
    old = Recording([_reg("stackdriver-apiservice", APISERVICE, _meta("v1beta1.external.metrics.k8s.io"))])
    new = Recording([_reg("prometheus-apiservice", APISERVICE, _meta("v1beta1.external.metrics.k8s.io"))])
    (problem,) = transition.problems(old, new)
    assert problem.startswith("collision: stackdriver-apiservice (deleted) and prometheus-apiservice (created)")


def test_it_names_a_replacement_and_a_deletion_out_of_order_and_an_orphan():
    ns = _reg("ns", transition.NAMESPACE, _meta("gw"))
    crds = _reg("crds", "kubernetes:yaml/v2:ConfigGroup", {"files": ["https://x/y/jobset.x-k8s.io_jobsets.yaml"]})
    jobset = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
    route = _reg("route", "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", _meta("r", "gw"))
    old = Recording(
        [
            ns,
            crds,
            route,
            _reg("js", jobset, _meta("a", "x")),
            _reg("svc", "kubernetes:core/v1:Service", _meta("s", "x")),
        ]
    )
    new = Recording([_reg("js", jobset, _meta("a", "x")), _reg("svc", "kubernetes:core/v1:Service", _meta("t", "x"))])
    found = list(transition.problems(old, new))
    assert found[0].startswith("replaced: svc")
    assert "replaced: svc: metadata.name 's' -> 't' (replaces it)" in found
    assert "deletion order: route does not depend on its Namespace ns, deleted too" in found
    assert "orphan: js stays while its CRD goes with crds" in found


def test_it_names_a_field_the_provider_replaces_a_node_pool_for():
    # tooling/data/provider_rules.json: location is ForceNew on google_container_node_pool
    pool = "gcp:container/nodePool:NodePool"
    old = Recording([_reg("pool", pool, {"name": "p", "location": "us-east5"})])
    new = Recording([_reg("pool", pool, {"name": "p", "location": "us-east1"})])
    problems = list(transition.problems(old, new))
    assert problems == ["replaced: pool: location us-east5 -> us-east1 (replaces it)"]


# ---- issue 36: the fixes the checker's new failure modes guard -------------------------------------------------


def test_the_immutable_fields_are_derived_from_the_crds_and_webhooks():
    """stacks/facts/immutable_fields.py is what tooling/oracles/immutable_fields.py derives (no hand edits), and holds the two
    the issue found: LWS subGroupPolicy (webhook, kubernetes-sigs/lws@v0.7.0 pkg/webhooks/leaderworkerset_webhook.go
    ValidateUpdate) and JobSet failurePolicy (CEL `self == oldSelf` in the jobset@v0.10.1 CRD)."""
    from stacks.facts import immutable_fields
    from tooling.oracles import immutable_fields as derive
    from tooling.oracles.crds import crd_source

    lws = immutable_fields.replace_on_changes("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    # pulumi-kubernetes diffs an added or removed map at the map's path (interleaved has no subGroupPolicy), and the
    # engine replaces only when a replaceOnChanges path contains the diff's path (pulumi/pulumi applyReplaceOnChanges,
    # resource.PropertyPath.Contains: a prefix of the path's elements): the map's path covers both changes
    for diff in ("spec.leaderWorkerTemplate.subGroupPolicy", "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"):
        assert any(diff.split(".")[: len(p.split("."))] == p.split(".") for p in lws), diff
    assert "spec.failurePolicy" in immutable_fields.replace_on_changes("jobset.x-k8s.io/v1alpha2", "JobSet")
    directory, where = crd_source()
    if directory is None:
        pytest.skip(where)
    assert derive.OUT.read_text() == derive.module_text(derive.derive(directory)), (
        "run python -m tooling.oracles.immutable_fields"
    )


def test_every_custom_resource_is_replaced_on_its_immutable_fields():
    from stacks.facts import immutable_fields
    from tests.conftest import EXAMPLES, recorded

    seen = set()
    for path in EXAMPLES:
        for reg in recorded(path, False).resources:
            if reg.type.startswith("kubernetes:") and "apiVersion" in reg.inputs and "kind" in reg.inputs:
                wanted = immutable_fields.replace_on_changes(str(reg.inputs["apiVersion"]), str(reg.inputs["kind"]))
                assert set(wanted) <= set(reg.replace_on_changes), (path.name, reg.name)
                seen.update([reg.inputs["kind"]] if wanted else [])
    assert {"LeaderWorkerSet", "JobSet", "PathwaysJob"} <= seen


def test_a_stack_from_before_the_single_workload_type_keeps_its_resources():
    """A state written when each workload type had its own component token is matched through the component's
    aliases: nothing is created again (issue 36 #2)."""
    from components.serving import SERVING_TYPE
    from workloads.registry import WORKLOAD_TYPES

    legacy = WORKLOAD_TYPES.legacy_components
    assert set(legacy) == {
        f"tpu-serving:workloads:{t}" for t in ("JetStream", "JetStreamPathways", "Saxml", "Vllm", "PathwaysJob")
    }

    path = example("all-in-one")
    new = _run(load_stack_file(path), stack_name(path))
    workloads = [r for r in new.resources if r.type == SERVING_TYPE]
    assert workloads and all(set(legacy) <= set(r.alias_types) for r in workloads)
    old_type = "tpu-serving:workloads:JetStream"
    old = Recording(
        [
            Registration(
                **{
                    **vars(r),
                    "urn": r.urn.replace(SERVING_TYPE, old_type),
                    "parent": r.parent.replace(SERVING_TYPE, old_type),
                    "type": old_type if r.type == SERVING_TYPE else r.type,
                }
            )
            for r in new.resources
        ]
    )
    assert list(transition.problems(old, new)) == []


@pytest.mark.parametrize("name", ["gemma-hpa", "vllm-multi-host", "vllm-single-host-keda"])
def test_paused_what_an_autoscaler_scaled_forces_its_replicas(name):
    """Paused, an autoscaled Deployment or LeaderWorkerSet sets spec.replicas 0 with conflicts forced (the field is
    kube-controller-manager's); running, it sets no replicas and forces nothing (issue 36 #1)."""
    path = example(name)
    config = load_stack_file(path)
    for paused, rec in (
        (False, _run(config, stack_name(path))),
        (True, _run({**config, "tpu-serving:paused": True}, stack_name(path))),
    ):
        scaled = [
            r
            for r in rec.resources
            if r.type in ("kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
            and r.parent.endswith("::workload-" + r.inputs["metadata"]["name"])
        ]
        assert scaled, name
        for reg in scaled:
            annotations = reg.inputs["metadata"].get("annotations") or {}
            assert (annotations.get("pulumi.com/patchForce") == "true") is paused, reg.name
            assert reg.inputs["spec"].get("replicas") == (0 if paused else None), reg.name


@pytest.mark.parametrize("name", ["gemma-hpa", "vllm-multi-host", "vllm-single-host-keda"])
def test_autoscaling_to_fixed_replicas_forces_the_field_the_hpa_owned(name):
    """From autoscaling to fixed replicas the Deployment or LeaderWorkerSet sets spec.replicas over the value
    kube-controller-manager owns (its HPA wrote it through the scale subresource): server-side apply refuses that
    unless forced, and pulumi-kubernetes forces an object annotated `pulumi.com/patchForce: "true"`
    (pulumi/pulumi-kubernetes provider/pkg/await/await.go ssaUpdate and patchForce, at v4.25.0, the commit the local
    toolchain builds, and unchanged after 4.32.0). The program cannot see the previous config, so every object that
    sets the field carries the annotation: the `up` succeeds (issue 36 #1). What is left is the race with the HPA
    that Pulumi deletes at the end of the `up`: refused in one step, the two-step procedure (pin min = max, `up`,
    then remove) documented (transition_matrix.EFFECTS)."""
    path = example(name)
    before = load_stack_file(path)
    after = copy.deepcopy(before)
    for workload in after["tpu-serving:workloads"]:
        if workload.pop("autoscaling", None) is not None:
            workload["replicas"] = 2
    old, new = _run(before, stack_name(path)), _run(after, stack_name(path))
    fixed = [
        r
        for r in new.resources
        if r.type in ("kubernetes:apps/v1:Deployment", "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
        and r.inputs["spec"].get("replicas") == 2
    ]
    assert fixed, name
    for reg in fixed:
        assert reg.inputs["metadata"]["annotations"]["pulumi.com/patchForce"] == "true", reg.name
    found = list(transition.problems(old, new))
    assert not [p for p in found if p.startswith("conflict:")], found
    races = [p for p in found if p.startswith("race:")]
    assert races, "the HPA deleted at the end of the up may still rescale"
    assert all("first pin autoscaling minReplicas = maxReplicas" in p for p in races), races
    from tooling.generate import transition_matrix

    assert transition_matrix.verdict(found) == "refused"
    kind = "workloads[vllm].autoscaling unset"
    assert transition_matrix.effect(kind).forth == "refused"
    assert "first set `autoscaling.minReplicas` and `maxReplicas`" in transition_matrix.effect(kind).procedure


def test_the_providers_force_new_fields_are_read_from_its_table():
    """tooling/data/k8s_force_new.json is what tooling/oracles/k8s_force_new.py reads from the provider's table
    (pulumi/pulumi-kubernetes provider/pkg/provider/diff.go forceNew, at the module the local toolchain builds; the
    same table after 4.32.0), and the review replaces on what the issue-36 review found missing: a Deployment's
    selector, a Service's clusterIP, a StatefulSet's and a Job's immutables."""
    from tooling.oracles import k8s_force_new

    force_new = transition.FORCE_NEW
    assert "spec.selector" in force_new["kubernetes:apps/v1:Deployment"]
    assert "spec.clusterIP" in force_new["kubernetes:core/v1:Service"]
    assert {"spec.serviceName", "spec.volumeClaimTemplates"} <= set(force_new["kubernetes:apps/v1:StatefulSet"])
    assert {"spec.template", "spec.completions"} <= set(force_new["kubernetes:batch/v1:Job"])
    deployment = "kubernetes:apps/v1:Deployment"
    old = Recording([_reg("d", deployment, {**_meta("d", "x"), "spec": {"selector": {"matchLabels": {"a": "1"}}}})])
    new = Recording([_reg("d", deployment, {**_meta("d", "x"), "spec": {"selector": {"matchLabels": {"a": "2"}}}})])
    assert list(transition.problems(old, new)) == [
        "replaced: d: spec.selector changes (the Kubernetes provider replaces the object)"
    ]
    path = k8s_force_new.source()
    if path is None:
        pytest.skip(f"no {k8s_force_new.MODULE} in the Go module cache (docs/toolchain.md)")
    kubernetes = k8s_force_new.kubernetes_source()
    if kubernetes is None:
        pytest.skip(f"no {k8s_force_new.KUBERNETES} in the Go module cache")
    assert k8s_force_new.OUT.read_text() == k8s_force_new.text(k8s_force_new.derive_all(path, kubernetes)), (
        "run python -m tooling.oracles.k8s_force_new"
    )


def test_a_built_in_field_the_api_server_refuses_to_change_is_named():
    """What the API server refuses to change on update and the provider does not replace for (a Job's
    podFailurePolicy: k8s.io/kubernetes@v1.35.4 pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate; a
    StatefulSet's spec but for the fields ValidateStatefulSetUpdate lets change) is an `immutable` problem, read from
    the Kubernetes sources (tooling/oracles/k8s_force_new.py api_immutables), unless replaceOnChanges covers it."""
    from tooling.oracles import k8s_force_new

    job = "kubernetes:batch/v1:Job"
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    old = Recording([_reg("j", job, {**_meta("j", "x"), "spec": {"podFailurePolicy": policy}})])
    new = Recording([_reg("j", job, {**_meta("j", "x"), "spec": {}})])
    assert list(transition.problems(old, new)) == [
        "immutable: j: spec.podFailurePolicy changes in place, which the API server refuses"
    ]
    sts = "kubernetes:apps/v1:StatefulSet"
    old = Recording([_reg("s", sts, {**_meta("s", "x"), "spec": {"replicas": 1, "minReadySeconds": 1}})])
    new = Recording([_reg("s", sts, {**_meta("s", "x"), "spec": {"replicas": 2, "minReadySeconds": 2}})])
    assert list(transition.problems(old, new)) == []
    assert "spec.clusterIP" in transition.API_IMMUTABLE["kubernetes:core/v1:Service"]
    kubernetes, diff = k8s_force_new.kubernetes_source(), k8s_force_new.source()
    if kubernetes is None or diff is None:
        pytest.skip(f"no {k8s_force_new.KUBERNETES} or provider module in the Go module cache")
    assert k8s_force_new.OUT.read_text() == k8s_force_new.text(k8s_force_new.derive_all(diff, kubernetes))


def test_a_replacement_under_the_same_name_deletes_first():
    """The engine creates a replaceOnChanges replacement before deleting the old object unless deleteBeforeReplace
    (the provider asks for it only for its own forceNew fields: pulumi/pulumi-kubernetes provider/pkg/provider/
    provider.go Diff), and the same name's server-side apply then meets the old object: on a local cluster the LWS
    subGroupPolicy change failed so ("Server-Side Apply field conflict detected", e2e/transitions.py lws-subgroup).
    Every custom resource replaced for its immutable fields is deleted first, and the review names one that is not."""
    from tests.conftest import EXAMPLES, recorded

    seen = 0
    for path in EXAMPLES:
        for reg in recorded(path, False).resources:
            if reg.type.startswith("kubernetes:") and reg.replace_on_changes:
                assert reg.delete_before_replace, (path.name, reg.name)
                seen += 1
    assert seen
    lws = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
    policy = "spec.leaderWorkerTemplate.subGroupPolicy"
    spec = {"leaderWorkerTemplate": {"subGroupPolicy": {"subGroupSize": 2}}}

    def reg(inputs: dict[str, Any], first: bool) -> Registration:
        return dataclasses.replace(_reg("l", lws, inputs), replace_on_changes=[policy], delete_before_replace=first)

    old = Recording([reg({**_meta("l", "x"), "spec": spec}, True)])
    for first in (True, False):
        new = Recording([reg({**_meta("l", "x"), "spec": {"leaderWorkerTemplate": {}}}, first)])
        found = list(transition.problems(old, new))
        assert any(p.startswith("collision: l is replaced under the same name") for p in found) is not first, found
