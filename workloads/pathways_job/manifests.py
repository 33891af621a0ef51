"""The objects of a PathwaysJob: the PathwaysJob itself (the head's pod template in batch mode) and, for its
namespace's Pod Security level, the security-relevant part of the pods the controller builds from it; and
`ServedPathwaysJobPlan`, the plan with those pods, which `check` returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stacks.security import scan_exceptions
from stacks.security.pod_security import IMAGE_DEFAULTS, secure_pod
from stacks.serving.workload_plan import TPU_TOLERATION
from workloads.pathways_job.plan import (
    MAIN_CONTAINER,
    PROXY_CONTAINER,
    RM_CONTAINER,
    PathwaysJobPlan,
)

API_VERSION = "pathways-job.pathways.domain/v1"
KIND = "PathwaysJob"
# The user's JAX client program requests this much, so its pod is never BestEffort (first evicted): the client
# drives the Pathways workers over the network and needs little CPU (what a given program needs, only a run shows).
MAIN_REQUESTS = {"cpu": "500m", "memory": "1Gi"}
COMPONENTS = {"server": "pathways_server", "proxy": "proxy_server", "worker": "worker"}


def _template(plan: PathwaysJobPlan) -> dict[str, Any]:
    """The head pod template of a batch job: the user's program as the `main` container. The controller adds the
    resource manager and proxy as sidecars, host networking and the JAX environment."""
    job = plan.workload.job
    assert job is not None
    container: dict[str, Any] = {
        "name": MAIN_CONTAINER,
        "image": job.image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {"requests": dict(MAIN_REQUESTS)},
    }
    if job.command is not None:
        container["command"] = list(job.command)
    if job.args is not None:
        container["args"] = list(job.args)
    if job.env:
        container["env"] = [{"name": k, "value": v} for k, v in job.env.items()]
    spec: dict[str, Any] = {"containers": [container]}
    if plan.head_on_cpu:
        spec["nodeSelector"] = plan.head_selector
        taint = plan.head_taint
        assert taint is not None  # a batch job's head pool
        spec["tolerations"] = [{**taint, "operator": "Equal"}]
    else:
        # beside a worker on a TPU host (the controller sets the TPU node selector); TPU nodes are tainted
        spec["tolerations"] = [dict(TPU_TOLERATION)]
    # The user's image: its user and writable paths are unknown, so it keeps them (stacks/security/pod_security.py).
    return {"metadata": {"labels": dict(plan.labels)}, "spec": secure_pod(spec, IMAGE_DEFAULTS)}


# The checkov findings a PathwaysJob accepts in its user template (stacks/security/scan_exceptions.py). The `main` container is
# the user's batch program: it requests MAIN_REQUESTS, but its memory peak is the program's own (no limit), and it
# serves nothing to probe; a failure ends the job (maxRestarts).
USER_PROGRAM = "the user's batch program (job.image): its memory peak is its own, so it requests but sets no limit"
SKIPS: tuple[scan_exceptions.Skip, ...] = (
    ("CKV_K8S_43", "job.image is the user's reference, used as given"),
    scan_exceptions.PULL_POLICY,
    scan_exceptions.CPU_LIMIT,
    *scan_exceptions.security(IMAGE_DEFAULTS),
    ("CKV_K8S_13", USER_PROGRAM),
    *scan_exceptions.probes("a batch job serves nothing to probe; a failure ends the job (maxRestarts)"),
)


def pathways_job(plan: PathwaysJobPlan) -> dict[str, Any]:
    shape = plan.shape
    controller: dict[str, Any] = {"deploymentMode": plan.workload.deployment_mode, "mainContainerName": MAIN_CONTAINER}
    if not plan.interactive:
        controller["template"] = _template(plan)
    spec: dict[str, Any] = {
        "maxRestarts": plan.workload.max_restarts,
        "pathwaysDir": plan.pathways_dir,
        "pathwaysVersion": plan.pathways_version,
        "workers": [
            {
                "type": shape.machine_type,
                "topology": shape.topology,
                "numSlices": plan.pool.slices,
                # the controller adds the TPU selectors to these (CTRL makeTPUNodeSelector): its pods select the
                # job's own pool, not any pool of the same slice shape
                "nodeSelector": dict(plan.pool.pool_selector),
            }
        ],
        "controller": controller,
    }
    custom = [
        {"componentType": component, "image": getattr(plan.workload.images, key)}
        for key, component in COMPONENTS.items()
        if getattr(plan.workload.images, key)
    ]
    if custom:
        spec["customComponents"] = custom
    meta = plan.metadata(plan.name, plan.labels)
    if not plan.interactive:
        meta["annotations"] = scan_exceptions.skip_annotations(SKIPS)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": meta, "spec": spec}


def controller_pods(plan: PathwaysJobPlan) -> list[dict[str, Any]]:
    """The security-relevant part of the pod specs the controller builds from the PathwaysJob (CTRL
    MakePathwaysHeadPodSpec, MakeWorkerJob): every pod on the host network, the workers with a hostPath /tmp. They
    pass only the `privileged` Pod Security level, so the workload's namespace must allow it."""
    head_containers: list[dict[str, Any]] = [{"name": RM_CONTAINER}, {"name": PROXY_CONTAINER}]
    if not plan.interactive:
        head_containers = [*_template(plan)["spec"]["containers"], *head_containers]
    head: dict[str, Any] = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "containers": head_containers}
    # makeTPUNodeSelector: workers[0].nodeSelector plus the accelerator and topology, for the workers and a
    # colocated head
    tpu_selector = {**pathways_job(plan)["spec"]["workers"][0]["nodeSelector"], **plan.shape.node_selector}
    if not plan.head_on_cpu:
        head["nodeSelector"] = tpu_selector
    worker = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "nodeSelector": tpu_selector,
        "containers": [{"name": "pathways-worker", "volumeMounts": [{"name": "shared-tmp", "mountPath": "/tmp"}]}],
        "volumes": [{"name": "shared-tmp", "hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}}],
    }
    return [{"kind": "Pod", "spec": head}, {"kind": "Pod", "spec": worker}]


@dataclass(frozen=True)
class ServedPathwaysJobPlan(PathwaysJobPlan):
    """The plan `check` returns: PathwaysJobPlan's values with the pod manifests this module makes of them (the plan's
    values sit below the manifests, so the objects built from them are added here, one layer up)."""

    def pod_manifests(self) -> list[dict[str, Any]]:
        """The pods of this workload, for its namespace's Pod Security level: the ones the controller makes."""
        return controller_pods(self)
