"""`make e2e-ci` runs the CI set (e2e/ci.py CI_STACKS) end to end: together its examples exercise every workload type
of the registry, every controller the local cluster runs for a stack, and every metrics adapter. Checked over the
registries themselves, so a new workload type, controller or adapter without a CI example fails here. No Go: the
examples' recorded (offline) runs say what each one registers."""

from __future__ import annotations

from pathlib import Path

from e2e import ci
from stacks.monitoring import adapters as metrics_adapters
from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import load_stack_file
from tooling.local.local_controllers import EVERY_CONTROLLER
from tooling.review.render import stack_name
from workloads.registry import WORKLOAD_TYPES

BY_NAME = {stack_name(p): p for p in STACK_FILES}


def coverage(path: Path) -> tuple[set[str], set[str], str]:
    """(workload types, local controllers, metrics adapter) of one example."""
    rec = recorded(path, False)
    releases = {(r.inputs.get("chart"), r.inputs.get("version")) for r in rec.resources if r.type.endswith(":Release")}
    deployments = {
        (o["metadata"].get("namespace"), o["metadata"]["name"])
        for o in kubernetes_objects(rec)
        if o["kind"] == "Deployment"
    }
    monitoring = load_stack_file(path).get("tpu-serving:monitoring") or {}
    adapter = monitoring.get("adapter", metrics_adapters.DEFAULT)
    return ci.workload_types(rec.outputs), ci.controllers(releases, deployments), adapter


def test_the_ci_set_names_examples_with_a_kubernetes_layer() -> None:
    assert set(ci.CI_STACKS) <= set(BY_NAME), sorted(set(ci.CI_STACKS) - set(BY_NAME))


def test_the_ci_set_exercises_every_workload_type_controller_and_adapter() -> None:
    types: set[str] = set()
    controllers: set[str] = set()
    adapters: set[str] = set()
    for stack in ci.CI_STACKS:
        t, c, a = coverage(BY_NAME[stack])
        types |= t
        controllers |= c
        adapters.add(a)
    registry = set(WORKLOAD_TYPES)
    assert registry - types == set(), f"workload types no CI example serves: {sorted(registry - types)}"
    every = {c.name for c in EVERY_CONTROLLER}
    assert every - controllers == set(), f"local controllers no CI example runs: {sorted(every - controllers)}"
    every_adapter = set(metrics_adapters.ADAPTERS)
    assert every_adapter - adapters == set(), f"metrics adapters no CI example uses: {sorted(every_adapter - adapters)}"


def test_a_controller_runs_for_its_charts_release_or_the_deployment_it_stands_in_for() -> None:
    from stacks.facts import versions

    lws = versions.CHARTS["lws"][versions.default_version("lws")]
    stand_in = next(c for c in EVERY_CONTROLLER if c.chart is None)
    assert ci.controllers({(lws.chart, lws.version)}, set()) == {"lws-controller"}
    assert ci.controllers(set(), {(stand_in.namespace, stand_in.deployment)}) == {stand_in.name}
    assert ci.controllers({("oci://elsewhere/lws", lws.version)}, set()) == set()


def test_what_the_e2e_names_pending_is_a_registry_type_whose_controller_is_not_run_locally() -> None:
    """e2e/run_example.py NOT_RUN_HERE: a workload type whose pods a controller the local cluster does not run would
    create. Only registry types; and none whose maker runs here (then its pods must be checked, not excused)."""
    from e2e.run_example import NOT_RUN_HERE

    assert set(NOT_RUN_HERE) <= set(WORKLOAD_TYPES)
    local = {c.deployment for c in EVERY_CONTROLLER}
    assert "pathways-job-controller-manager" not in local  # google/pathways-job: no toolchain build, no process
