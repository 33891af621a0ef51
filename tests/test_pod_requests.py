"""Every pod the stack installs has resource requests, so none is BestEffort (the first evicted under node pressure).

The stack's own manifests are checked here over every shipped stack file; the charts it installs (every add-on at
every supported version, every metrics adapter's chart) are rendered with helm in tests/test_addon_registry.py and
tests/test_metrics_adapters.py, and the PathwaysJob controller's release manifest in tests/test_addon_registry.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stacks.security import pod_security
from tests.conftest import STACK_FILES, recorded
from tooling.harness.k8s_objects import kubernetes_objects


def effective_requests(container: dict) -> dict:
    """A container's requests as the API server stores them: a resource with a limit and no request requests its
    limit ("If you specify a limit for a resource, but do not specify any request, ... Kubernetes copies the limit
    you specified and uses it as the requested value", kubernetes.io/docs/concepts/configuration/
    manage-resources-containers/)."""
    resources = container.get("resources", {})
    return {**resources.get("limits", {}), **resources.get("requests", {})}


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: Path(p).name)
def test_every_container_the_stack_applies_has_requests(path):
    checked = 0
    for obj in kubernetes_objects(recorded(path, False)):
        for spec in pod_security.pod_specs(obj.get("spec", {})):
            for container in (*spec["containers"], *spec.get("initContainers", [])):
                checked += 1
                assert effective_requests(container), (obj["kind"], obj["metadata"]["name"], container["name"])
    assert checked, "every stack file runs some pod (at least the metrics adapter)"
