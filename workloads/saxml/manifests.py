"""The Kubernetes objects of a Saxml workload, from its plan: the admin server's Deployment, the model servers'
JobSet and NetworkPolicy, the HTTP server's Deployment and Service, and the model publication Job."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from stacks.naming import SYSTEM_POOL_SELECTOR
from stacks.security import network_policy, scan_exceptions
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption
from stacks.serving.workload_plan import (
    INTERNAL_LB_ANNOTATION,
    JOBSET_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    cpu_deployment,
    tpu_resources,
)
from workloads.saxml.plan import (
    ADMIN_PORT,
    HTTP_PORT,
    MODEL_PORT,
    MODEL_SERVER_JOB,
    MODEL_SERVER_ROLE,
    TPU_RUNTIME_PORT,
    SaxmlPlan,
    platform_chip,
)
from workloads.saxml.publication import LOAD_TIMEOUT_MINUTES, PUBLISH_SCRIPT, models_hash

JOBSET_API = "jobset.x-k8s.io/v1alpha2"


# google/saxml saxml/tools/docker/Dockerfile.admin: Ubuntu, static binaries in /usr/bin started by a bash
# entrypoint, no USER (root) but nothing that needs root; glog writes its log files to /tmp (golang/glog exits
# when it cannot create them), and the cell state goes to gs://. So: a non-root UID, read-only root, /tmp writable.
ADMIN_SECURITY = ContainerSecurity(writable=("/tmp",))
# The sax-http image's Dockerfile is not published with the tutorial (ai-on-gke tools/saxml-on-gke/httpserver
# has only its README): its user and writable paths are unverified, so the server keeps them.
HTTP_SECURITY = IMAGE_DEFAULTS
# The publication Job runs `python3 -c` with the standard library only and writes no file: restricted.
PUBLISH_SECURITY = ContainerSecurity(writable=())
# kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml: privileged + hostNetwork
# for the model server's TPU runtime (multi-host ICI on port 8471). The namespace is `privileged` as a result.
MODEL_SERVER_SECURITY = ContainerSecurity(
    non_root=False,
    read_only_root=False,
    writable=(),
    privileged=True,
    why="Saxml model server TPU runtime, as the upstream tutorial (sax-model-server-set.yaml)",
)


def _meta(plan: SaxmlPlan, role: str, **extra: Any) -> dict[str, Any]:
    return plan.metadata(plan.component(role), plan.labels(role), **extra)


def admin_deployment(plan: SaxmlPlan) -> dict[str, Any]:
    # Not privileged (the tutorial's is): the admin server only serves gRPC and reads/writes GCS.
    container = {
        "name": "sax-admin-server",
        "image": plan.image("admin"),
        "ports": [{"containerPort": ADMIN_PORT}],
        "env": [{"name": "GSBUCKET", "value": plan.bucket}, {"name": "SAX_CELL", "value": plan.cell}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
    }
    replicas = 0 if plan.paused else 1
    no_probe = "the admin server serves gRPC only (no HTTP health endpoint); the upstream tutorial has no probe"
    skips = (("CKV_K8S_8", no_probe), ("CKV_K8S_9", no_probe))
    deployment = cpu_deployment(
        plan, plan.component("admin"), plan.labels("admin"), replicas, container, ADMIN_SECURITY, skips
    )
    # One admin server per cell, ever: its leader election is in-process only (google/saxml@v1.1.0:saxml/common/
    # addr.go SetAddr takes env.Get().Lead, which saxml/common/platform/cloud.go implements as a process-local
    # mutex), so a second admin pod would also write the cell's location file and assign models from its own state.
    # A rolling update (Deployment default: maxSurge 25%, rounded up to 1) runs two during every rollout; Recreate
    # stops the old one first (the model servers and the HTTP server find the new one through the location file).
    deployment["spec"]["strategy"] = {"type": "Recreate"}
    return deployment


# The checkov findings the model-server JobSet accepts (stacks/security/scan_exceptions.py). The model server's one port is
# its gRPC service (`--port`); no upstream source documents an HTTP health endpoint, and neither upstream manifest
# probes it (kubernetes-engine-samples ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml, ai-on-gke
# tools/saxml-on-gke/single-host-inference/gptj/model-server.yaml). A model server that dies fails its Job and the
# JobSet restarts the slice (failurePolicy.maxRestarts).
MODEL_SERVER_SKIPS: tuple[scan_exceptions.Skip, ...] = (
    *scan_exceptions.TAG_PINNED,
    scan_exceptions.CPU_LIMIT,
    scan_exceptions.HOST_MEMORY_LIMIT,
    scan_exceptions.HOST_NETWORK,
    *scan_exceptions.security(MODEL_SERVER_SECURITY),
    *scan_exceptions.probes("the model server serves gRPC only (no health endpoint) and upstream probes none"),
)


# A disruption (eviction, preemption, a node drained for host maintenance or an upgrade) restarts the model servers
# without using up failurePolicy.maxRestarts, which never resets: else the cell stops for good at the
# (maxRestarts + 1)th disruption of its life. kubernetes-sigs/jobset@v0.10.1:site/static/examples/failure-policy/
# host-maintenance-event-model.yaml and site/content/en/docs/tasks/failure_policy.md: the Job's podFailurePolicy fails
# the Job (reason PodFailurePolicy) when a pod has the DisruptionTarget condition, and a JobSet rule on that reason
# restarts the JobSet with RestartJobSetAndIgnoreMaxRestarts; every other failure counts as before. The pod condition
# is Kubernetes' (https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions:
# preemption, the Eviction API, the taint manager, pod GC, and the kubelet's node-pressure or graceful node shutdown
# termination); a Job's podFailurePolicy needs the pod's restartPolicy Never (the JobSet webhook's default is
# OnFailure, kubernetes-sigs/jobset@v0.10.1:pkg/webhooks/jobset_webhook.go). Rule names: the webhook's
# ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, 1-128 characters; reason: one of its validOnJobFailureReasons.
DISRUPTION_RULE = {
    "name": "restartOnDisruption",
    "action": "RestartJobSetAndIgnoreMaxRestarts",
    "onJobFailureReasons": ["PodFailurePolicy"],
}


def disruption_pod_failure_policy() -> dict[str, Any]:
    """The model-server Job's podFailurePolicy: a disrupted pod fails its Job with reason PodFailurePolicy."""
    return {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}


def model_server_jobset(plan: SaxmlPlan) -> dict[str, Any]:
    shape = plan.shape
    pod_spec = {
        # a Job's podFailurePolicy needs Never (DISRUPTION_RULE)
        "restartPolicy": "Never",
        "serviceAccountName": plan.service_account,
        # The Saxml model server's TPU runtime (multi-host ICI on port 8471) needs the host network and a
        # privileged container, as in the upstream tutorial (kubernetes-engine-samples
        # ai-ml/llm-multihost-tpus-saxml/sax-model-server-set.yaml); no upstream source (the tutorial, the saxml
        # repository at v1.1.0/v1.2.0) shows a multi-host model server without them, so they stay until a real
        # deploy shows otherwise. Consequence: "Pods running on the host network (hostNetwork: true) don't use
        # Workload Identity Federation for GKE" (https://cloud.google.com/kubernetes-engine/docs/concepts/
        # workload-identity#restrictions), so the model servers act as their pool's node service account, which the
        # stack makes per Saxml workload with read access to its cell's prefix only (node_grants; its registry
        # entry says exclusive_pool).
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        **plan.tpu_placement(),
        "containers": [
            {
                "name": "sax-model-server",
                "image": plan.image("model"),
                "args": [
                    f"--port={MODEL_PORT}",
                    f"--sax_cell={plan.cell}",
                    f"--platform_chip={platform_chip(shape.generation.name)}",
                ],
                "ports": [{"containerPort": MODEL_PORT}, {"containerPort": TPU_RUNTIME_PORT}],
                "env": [
                    {"name": "SAX_ROOT", "value": plan.sax_root},
                    {"name": "MEGASCALE_NUM_SLICES", "value": ""},  # one model server per slice, as upstream
                ],
                "resources": tpu_resources(shape),
            }
        ],
    }
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": _meta(
            plan,
            MODEL_SERVER_ROLE,
            annotations={JOBSET_EXCLUSIVE: SLICE_TOPOLOGY_KEY, **scan_exceptions.skip_annotations(MODEL_SERVER_SKIPS)},
        ),
        "spec": {
            # paused: the JobSet stays, its Jobs' pods are gone, and the idle slices scale to zero
            **({"suspend": True} if plan.paused else {}),
            "failurePolicy": {"maxRestarts": plan.workload.max_restarts, "rules": [dict(DISRUPTION_RULE)]},
            "replicatedJobs": [
                {
                    "name": MODEL_SERVER_JOB,
                    "replicas": plan.pool.slices,
                    "template": {
                        "spec": {
                            "parallelism": shape.hosts,
                            "completions": shape.hosts,
                            "backoffLimit": 0,
                            "podFailurePolicy": disruption_pod_failure_policy(),
                            "template": {
                                "metadata": {"labels": plan.labels("model-server")},
                                "spec": disruption.drained(secure_pod(pod_spec, MODEL_SERVER_SECURITY)),
                            },
                        }
                    },
                }
            ],
        },
    }


def http_deployment(plan: SaxmlPlan) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/", "port": HTTP_PORT}, "periodSeconds": 10, "failureThreshold": 3}
    container = {
        "name": "sax-http",
        "image": plan.image("http"),
        "ports": [{"containerPort": HTTP_PORT}],
        "env": [{"name": "SAX_ROOT", "value": plan.sax_root}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        "readinessProbe": {**probe, "initialDelaySeconds": 5},
        "livenessProbe": {**probe, "initialDelaySeconds": 30},
    }
    replicas = 0 if plan.paused else plan.workload.http.replicas
    deployment = cpu_deployment(
        plan,
        plan.component("http"),
        plan.labels("http"),
        replicas,
        container,
        HTTP_SECURITY,
        service_account=plan.http_service_account,
    )
    # it takes the clients' requests: drained like the servers behind it (stacks/serving/disruption.py)
    template = deployment["spec"]["template"]
    template["spec"] = disruption.drained(template["spec"])
    return deployment


def http_service(plan: SaxmlPlan) -> dict[str, Any]:
    exposure = plan.workload.http.exposure
    metadata = _meta(plan, "http")
    spec: dict[str, Any] = {
        "type": "ClusterIP" if exposure == "cluster" else "LoadBalancer",
        "selector": plan.labels("http"),
        "ports": [{"protocol": "TCP", "port": HTTP_PORT, "targetPort": HTTP_PORT}],
    }
    if exposure == "internal":
        metadata["annotations"] = dict(INTERNAL_LB_ANNOTATION)
    if exposure != "cluster" and plan.workload.http.source_ranges:
        spec["loadBalancerSourceRanges"] = list(plan.workload.http.source_ranges)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def model_server_network_policy(plan: SaxmlPlan) -> dict[str, Any]:
    """Only the cell's own servers may reach the model-server ports.

    Kubernetes leaves NetworkPolicy for hostNetwork pods undefined, and GKE Dataplane V2 does not filter
    traffic to host-network endpoints: this policy states the intent and takes effect only where the data plane
    applies pod policies to these pods.
    """
    peers = [{"podSelector": {"matchLabels": plan.labels(role)}} for role in ("http", "admin", "model-server")]
    return {
        "apiVersion": network_policy.API,
        "kind": "NetworkPolicy",
        "metadata": _meta(plan, "model-server"),
        "spec": {
            "podSelector": {"matchLabels": plan.labels("model-server")},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": peers,
                    "ports": [{"protocol": "TCP", "port": MODEL_PORT}, {"protocol": "TCP", "port": TPU_RUNTIME_PORT}],
                }
            ],
        },
    }


def publish_job(plan: SaxmlPlan) -> dict[str, Any]:
    """A Job that makes the cell's published models exactly `models`, and waits until they are loaded.

    Its name carries a hash of the model list, so every change of `models` runs a new Job (publishing what
    was added, unpublishing what was removed) and an unchanged list runs nothing.
    """
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            **_meta(plan, "models"),
            "name": f"{plan.component('models')}-{models_hash(plan)}",
            "annotations": scan_exceptions.skip_annotations([*scan_exceptions.TAG_PINNED, scan_exceptions.CPU_LIMIT]),
        },
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": LOAD_TIMEOUT_MINUTES * 60,
            "template": {
                "metadata": {"labels": plan.labels("models")},
                "spec": secure_pod(
                    {
                        "restartPolicy": "Never",
                        "nodeSelector": dict(SYSTEM_POOL_SELECTOR),
                        "containers": [
                            {
                                "name": "publish",
                                "image": plan.image("http"),
                                "command": ["python3", "-c", PUBLISH_SCRIPT],
                                "env": [
                                    {"name": "SAX_HTTP", "value": plan.http_url},
                                    {"name": "SAX_CELL", "value": plan.cell},
                                    {"name": "MODELS", "value": json.dumps(plan.desired_models(), sort_keys=True)},
                                    {"name": "LOAD_TIMEOUT_SECONDS", "value": str(LOAD_TIMEOUT_MINUTES * 60 - 120)},
                                ],
                                "resources": {
                                    "requests": {"cpu": "50m", "memory": "64Mi"},
                                    "limits": {"memory": "256Mi"},
                                },
                            }
                        ],
                    },
                    PUBLISH_SECURITY,
                ),
            },
        },
    }


@dataclass(frozen=True)
class ServedSaxmlPlan(SaxmlPlan):
    """The plan `check` returns: SaxmlPlan's values with the pod manifests this module makes of them (the plan's
    values sit below the manifests, so the objects built from them are added here, one layer up)."""

    def pod_manifests(self) -> list[dict[str, Any]]:
        pods = [admin_deployment(self), model_server_jobset(self), http_deployment(self)]
        return [*pods, publish_job(self)] if self.workload.models is not None and not self.paused else pods
