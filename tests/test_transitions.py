"""Switching `monitoring.adapter`, an add-on version, the gateway or the pause on a live stack is a clean `up`: the
program is run under the mocks with the old config and the new one, and the transition between the two runs
(tooling/review/transition.py, every Helm release expanded into what its chart installs) has no object managed under two
URNs, no replacement, no deletion out of order and no custom resource left without its CRD. Either direction is
checked."""

from __future__ import annotations

import copy
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
