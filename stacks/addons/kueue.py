"""Kueue (kubernetes-sigs/kueue): job queueing and quotas, off by default, scoped to the namespaces it manages.

The kueue 0.17.1 chart registers 43 admission webhooks, most `failurePolicy: Fail`, over Pods, Deployments,
StatefulSets, Jobs, JobSets and LeaderWorkerSets (kubernetes-sigs/kueue@v0.17.1 charts/kueue/templates/webhook/
manifests.yaml). With the chart's default configuration (values.yaml `managerConfig.controllerManagerConfigYaml`,
where `managedJobsNamespaceSelector` is commented out) the job kinds' webhooks have no namespaceSelector at all and
the Pod/Deployment/StatefulSet ones exclude only kube-system and kueue-system: any Kueue outage would block every
workload of the cluster. The template gives each of those webhooks `namespaceSelector:
<managedJobsNamespaceSelector>` when the configuration has that key, so the stack writes the chart's default
configuration with the selector of `addons.kueue.namespaces` (none: a selector no namespace matches).
`manageJobsWithoutQueueName` stays false (the chart's default, commented out), so even there only objects with a
`kueue.x-k8s.io/queue-name` label are queued.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from stacks.addons.addon import Addon, AddonSettings, OptionalChartAddonConfig, user_values
from stacks.facts import versions
from stacks.facts.addon_values import deep_merge, image_values
from stacks.naming import DNS1123_LABEL, SYSTEM_POOL_SELECTOR
from stacks.security.pod_security import BASELINE

# Every namespace carries this label with its own name (Kubernetes 1.22+, "Well-Known Labels, Annotations and
# Taints": kubernetes.io/metadata.name, set by the control plane).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# The chart's default controller configuration: kubernetes-sigs/kueue@v0.17.1 charts/kueue/values.yaml
# `managerConfig.controllerManagerConfigYaml`, its uncommented keys (tests/test_addons.py compares it with the file).
CHART_MANAGER_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 5,
            "LocalQueue.kueue.x-k8s.io": 1,
            "ClusterQueue.kueue.x-k8s.io": 1,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 50, "burst": 100},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "trainer.kubeflow.org/trainjob",
            "kubeflow.org/paddlejob",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/jaxjob",
            "workload.codeflare.dev/appwrapper",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}


class KueueAddonConfig(OptionalChartAddonConfig):
    namespaces: list[Annotated[str, Field(pattern=f"^{DNS1123_LABEL.pattern}$")]] = Field(
        default_factory=list,
        description="Namespaces whose jobs Kueue manages: its webhooks act there only (none: nowhere).",
    )


def managed_namespaces_selector(namespaces: Sequence[str]) -> dict[str, Any]:
    """The namespaces Kueue manages, as a label selector; with none, one that no namespace matches (every namespace
    has the name label, and `In` needs at least one value)."""
    if not namespaces:
        return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "DoesNotExist"}]}
    return {"matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(namespaces))}]}


def manager_config(namespaces: Sequence[str]) -> dict[str, Any]:
    return {
        **CHART_MANAGER_CONFIG,
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": managed_namespaces_selector(namespaces),
    }


def _namespaces(settings: AddonSettings) -> Sequence[str]:
    return list(getattr(settings, "namespaces", []))


def kueue_values(chart: versions.ChartVersion, settings: AddonSettings) -> dict[str, Any]:
    # keys of charts/kueue/values.yaml: controllerManager.manager.image.*, controllerManager.nodeSelector,
    # managerConfig.controllerManagerConfigYaml (a YAML string the chart parses with fromYaml; JSON is YAML)
    ours = {
        "controllerManager": {"manager": {"image": image_values(chart)}, "nodeSelector": dict(SYSTEM_POOL_SELECTOR)},
        "managerConfig": {"controllerManagerConfigYaml": json.dumps(manager_config(_namespaces(settings)), indent=2)},
    }
    return deep_merge(ours, user_values(settings))


ADDON = Addon(
    key="kueue",
    title="Kueue",
    description="Kueue, managing the jobs of `namespaces` only.",
    settings=KueueAddonConfig,
    releases=versions.CHARTS["kueue"],
    # The kueue chart's pod security defaults are not in the reference set: baseline until verified.
    pod_security=BASELINE,
    values=kueue_values,
    admits=_namespaces,
)
