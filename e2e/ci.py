"""The CI set of `make e2e-ci`: the examples run end to end in CI (the full `make e2e` over every example is too long
for CI's 90 minutes on 2 cores). Chosen so that every workload type of the registry (workloads/registry.py), every
controller the local cluster runs (tooling/local/local_controllers.py EVERY_CONTROLLER) and every metrics adapter
(stacks/monitoring/adapters ADAPTERS) is exercised by at least one of them; tests/test_e2e_ci_set.py asserts that
coverage over the registries, so a new workload type, controller or adapter without a CI example fails it.

    python -m e2e.ci      prints the set, comma-separated (E2E_STACKS of `make e2e-ci`)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# stack name -> what it is in the set for (the coverage test checks the claim, not this text)
CI_STACKS: dict[str, str] = {
    "all-in-one": "JetStream, JetStream-Pathways on LWS, Saxml on JobSet, PathwaysJob; the Stackdriver adapter "
    "(stood in by prometheus-adapter)",
    "pathways-job": "Kueue (the one example that enables it)",
    "vllm-single-host-keda": "vLLM; KEDA (operator and metrics API server) as the adapter",
    "gemma-hpa-prometheus": "prometheus-adapter as the adapter",
}


def workload_types(outputs: dict[str, Any]) -> set[str]:
    """The workload types a run of a stack serves (its `workloads` output)."""
    return {w["type"] for w in (outputs.get("workloads") or {}).values()}


def controllers(releases: Iterable[tuple[str, str]], deployments: Iterable[tuple[str, str]]) -> set[str]:
    """The local cluster's controllers a stack makes run (tooling/local/local_controllers.py: a controller starts
    when its Deployment exists): a chart's controllers when the stack installs that chart (`releases`: (chart
    reference, version) of its Helm releases), a stand-in when the stack registers the Deployment it stands in for
    (`deployments`: (namespace, name))."""
    from stacks.facts import versions
    from tooling.local.local_controllers import EVERY_CONTROLLER

    installed = set(releases)
    registered = set(deployments)
    out = set()
    for controller in EVERY_CONTROLLER:
        if controller.chart is None:
            if (controller.namespace, controller.deployment) in registered:
                out.add(controller.name)
        elif any((v.chart, v.version) in installed for v in versions.CHARTS[controller.chart].values()):
            out.add(controller.name)
    return out


if __name__ == "__main__":
    print(",".join(CI_STACKS))
