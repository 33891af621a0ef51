"""Saxml multi-host serving: validation and manifests.

A Sax cell is an admin server and model servers that find each other through `SAX_ROOT` in the stack bucket
(the admin server writes its address there; no Service is needed for it). Each model server is one multi-host
slice, run as one replicated Job of a JobSet: replicas = the pool's slices, parallelism = completions = hosts per
slice. An HTTP server fronts the cell. Safer than the tutorial: bucket-scoped IAM instead of project-wide
storage.admin, no public endpoint unless asked for with source ranges, and privileged + hostNetwork only on the
model servers, whose TPU runtime needs them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacks import naming
from stacks.facts import catalog
from stacks.facts.versions import IMAGES, Serves, image_gaps
from stacks.naming import SYSTEM_POOL_SELECTOR, stack_service_account
from stacks.problems import Problem
from stacks.security import network_policy, scan_exceptions
from stacks.security.bucket_access import OBJECT_USER, OBJECT_VIEWER, Grant, gcs_location, read_grant
from stacks.security.pod_security import IMAGE_DEFAULTS, ContainerSecurity, secure_pod
from stacks.serving import disruption
from stacks.serving.pool_plan import PoolPlan
from stacks.serving.startup import StartupPath
from stacks.serving.workload_plan import (
    INTERNAL_LB_ANNOTATION,
    JOBSET_EXCLUSIVE,
    SLICE_TOPOLOGY_KEY,
    WorkloadPlan,
    cpu_deployment,
    tpu_resources,
)
from stacks.serving.workload_type import WorkloadContext
from workloads.saxml.config import SaxHttpConfig, SaxmlWorkload

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
ADMIN_PORT = 10000
MODEL_PORT = 10001
# TPU runtime port between the hosts of a slice (the tutorial's model-server second port)
TPU_RUNTIME_PORT = 8471
HTTP_PORT = 8888
SAX_ROOT_PREFIX = "sax-root/"
# the admin image's entrypoint: admin_config --fs_root=gs://${GSBUCKET}/sax-fs-root
# (google/saxml@v1.1.0:saxml/tools/docker/Dockerfile.admin)
SAX_FS_ROOT_PREFIX = "sax-fs-root/"
CELL_PREFIX = "/sax/"  # Sax names a cell /sax/<cell> and its models /sax/<cell>/<model>
# A Sax model name (google/saxml@v1.1.0:saxml/common/naming.go validateModelName, pattern "^[a-z]+[a-z0-9-_]*$").
SAX_NAME_RE = re.compile(r"[a-z]+[a-z0-9_-]*")
# A model class as Saxml's registry finds it: `<module>.<Class>` (full_registration_name), or that name relative to
# its REGISTRY_ROOT (google/saxml@v1.1.0:saxml/server/servable_model_registry.py register/get): Python identifiers
# joined by dots.
MODEL_PATH_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
CELL_RE = re.compile(rf"{CELL_PREFIX}[a-z][a-z0-9_-]{{0,62}}")  # a Sax name (SAX_NAME_RE): a letter first
# images.<key> -> the version-matrix image it defaults to (stacks/facts/versions.py IMAGES)
DEFAULT_IMAGES = {"admin": "saxAdminServer", "model": "saxModelServer", "http": "saxHttp"}
# The default images that run on the TPUs: the type serves the generations they all serve.
TPU_IMAGES = (DEFAULT_IMAGES["model"],)
SAX_WEIGHT_BITS = 16


def cell_of(workload: SaxmlWorkload) -> str:
    """The workload's Sax cell: its `cell`, by default one of its own named after it."""
    return workload.cell or f"{CELL_PREFIX}{workload.name}"


@dataclass(frozen=True)
class SaxmlPlan(WorkloadPlan):
    workload: SaxmlWorkload

    @property
    def cell(self) -> str:
        return cell_of(self.workload)

    @property
    def forwarded_ports(self) -> tuple[int, ...]:
        return (HTTP_PORT,)

    @property
    def sax_root(self) -> str:
        return f"gs://{self.bucket}/{SAX_ROOT_PREFIX.rstrip('/')}"

    @property
    def cell_prefix(self) -> str:
        """The cell's directory under SAX_ROOT: `<sax-root>/sax/<cell>/` (google/saxml@v1.1.0:saxml/common/cell.go
        Path = RootDir joined with the cell name); location.proto, config.proto and METADATA live there."""
        return f"{SAX_ROOT_PREFIX}{self.cell.strip('/')}/"

    @property
    def state_prefix(self) -> str:
        """The admin server's state directory: `<fs_root>/sax/<cell>/` (saxml/admin/admin.go Start: FsRootDir joined
        with the cell; state.proto), fs_root being gs://$GSBUCKET/sax-fs-root in the admin image's entrypoint."""
        return f"{SAX_FS_ROOT_PREFIX}{self.cell.strip('/')}/"

    @property
    def http_service_account(self) -> str:
        """The HTTP server's own Kubernetes ServiceAccount: it only reads the cell (the admin server writes)."""
        return stack_service_account(self.component("http"), self.identity_suffix)

    def read_paths(self) -> list[tuple[str, str]]:
        return [
            (f"models[{i}].checkpoint", m.checkpoint)
            for i, m in enumerate(self.workload.models or [])
            if m.checkpoint.startswith("gs://")
        ]

    def admin_grants(self) -> list[Grant]:
        """The admin server writes the cell's directory (admin_config, addr.SetAddr) and its state."""
        return [
            Grant("cell", self.bucket, OBJECT_USER, self.cell_prefix),
            Grant("state", self.bucket, OBJECT_USER, self.state_prefix),
        ]

    def http_grants(self) -> list[Grant]:
        """The HTTP server (the Python Sax client) only finds the admin server: it reads the cell's directory."""
        return [Grant("cell", self.bucket, OBJECT_VIEWER, self.cell_prefix)]

    def node_grants(self) -> list[Grant]:
        """The model servers' node identity: they read the cell's directory (location.Join: cell.Exists, Watch of
        location.proto; they start no admin server, --admin_port unset) and each model's gs:// checkpoint."""
        grants = [Grant("cell", self.bucket, OBJECT_VIEWER, self.cell_prefix)]
        for i, (_, url) in enumerate(self.read_paths()):
            other = f"{gcs_location(url)[0]}-objectviewer"
            grant = read_grant(f"checkpoint{i}", url, self.bucket, other_buckets=True, other_key=other)
            if grant is not None and (grant.bucket, grant.prefix) not in {(g.bucket, g.prefix) for g in grants}:
                grants.append(grant)
        return grants

    @property
    def hosts_needed(self) -> int:
        """One model server per slice of the pool (the JobSet's replicas)."""
        return self.pool.slices * self.shape.hosts

    @property
    def weights_bytes(self) -> int | None:
        """Every published model a model server loads, at SAX_WEIGHT_BITS, as the HBM check counts them; None when a
        model's size is unknown."""
        sizes = [m.params_billion or params_billion(m.model_path) for m in self.workload.models or []]
        if not sizes or not all(sizes):
            return None
        return sum(catalog.weight_bytes(s, SAX_WEIGHT_BITS) for s in sizes if s)

    @property
    def chips_at_peak(self) -> int:
        """The model servers hold every slice of the pool."""
        return self.pool.total_chips

    def component(self, role: str) -> str:
        return f"{self.name}-{role}"

    def labels(self, role: str) -> dict[str, str]:
        return {"app": self.component(role)}

    @property
    def http_service(self) -> str:
        return self.component("http")

    @property
    def http_url(self) -> str:
        return f"http://{self.http_service}.{self.namespace}.svc:{HTTP_PORT}"

    @property
    def startup(self) -> StartupPath:
        """A model server loads each published model's checkpoint from gs:// itself (the publication Job waits for
        it), with no startup probe of its own; the stack sets no compile cache (whether the Saxml model server honours
        JAX_COMPILATION_CACHE_DIR is not checked)."""
        return StartupPath(images=(self.image("model"),), weights="checkpoint-gcs", compile_cache="none")

    def image(self, key: str) -> str:
        return getattr(self.workload.images, key) or self.served(IMAGES[DEFAULT_IMAGES[key]])

    def model_name(self, model: str) -> str:
        return model if model.startswith(CELL_PREFIX) else f"{self.cell}/{model}"

    def desired_models(self) -> list[dict[str, Any]]:
        return [
            {
                "model": self.model_name(m.model),
                "model_path": m.model_path,
                "checkpoint": m.checkpoint,
                "replicas": m.replicas,
            }
            for m in self.workload.models or []
        ]

    def ingress_allows(self) -> list[dict[str, Any]]:
        """The HTTP server to its clients; the admin server to the model servers, which run on the host network
        (their traffic comes from node addresses, which only a rule without `from` admits)."""
        return [
            network_policy.allow_clients(self.component("http"), self.namespace, self.labels("http"), [HTTP_PORT]),
            network_policy.allow_clients(self.component("admin"), self.namespace, self.labels("admin"), [ADMIN_PORT]),
        ]

    def pod_manifests(self) -> list[dict[str, Any]]:
        pods = [admin_deployment(self), model_server_jobset(self), http_deployment(self)]
        return [*pods, publish_job(self)] if self.workload.models is not None and not self.paused else pods


# ---- validation ---------------------------------------------------------------------------------------


def params_billion(model_path: str) -> float | None:
    """Model size from the Saxml class name (LmCloudSpmd175B32Test -> 175), when it says."""
    match = re.search(r"(\d+(?:\.\d+)?)B", model_path.rsplit(".", 1)[-1])
    return float(match.group(1)) if match else None


MODEL_SERVER_ROLE = "model-server"
MODEL_SERVER_JOB = "sax-model-server"


def longest_pod_name(name: str, slices: int, hosts: int) -> str:
    """The longest model server pod name JobSet's webhook checks (stacks/naming.py jobset_longest_names): the JobSet
    is `<name>-model-server`, its replicated Job `sax-model-server` with one Job per slice and one pod per host."""
    return naming.jobset_longest_names(f"{name}-{MODEL_SERVER_ROLE}", MODEL_SERVER_JOB, slices, hosts)[1]


def check(
    path: str,
    workload: SaxmlWorkload,
    pool: PoolPlan | None,
    namespace: str,
    ctx: WorkloadContext,
    problems: list[Problem],
    warnings: list[str],
) -> SaxmlPlan | None:
    """Add the workload's problems and warnings; return its plan (None: it has problems, or no pool)."""
    cell = cell_of(workload)
    if not CELL_RE.fullmatch(cell):
        problems.append(
            Problem(
                f"{path}.cell",
                f"{cell!r} is not of the form /sax/<name> (a lowercase letter, then lowercase letters, digits, '-', "
                "'_'; Saxml's naming.go)",
            )
        )
    _check_http(path, workload.http, ctx.environment, problems)
    _check_models(path, workload, cell, problems)
    if pool is None or not _check_pool(path, workload, pool, problems):
        return None
    # Saxml's chip map knows tpuv2/v3/v4/v4i/v5e only; any other --platform_chip raises "chip type unknown" at start
    # (google/saxml@v1.1.0:saxml/server/proto_util.py to_chip_type, server/model_service_base.py; same at v1.2.0).
    plan = SaxmlPlan.on(workload, pool, namespace, ctx)
    model_image = plan.image("model")
    for gap in image_gaps(model_image, Serves(tpus=frozenset({pool.shape.generation.name}))):
        problems.append(Problem(f"{path}.pool", f"pool {pool.name!r} is {pool.shape.generation.name}, but {gap}"))
    _check_models_fit(path, workload, pool, problems, warnings)
    return plan


def _check_models(path: str, workload: SaxmlWorkload, cell: str, problems: list[Problem]) -> None:
    """Each model is in the workload's cell, named as Sax names models, once, with a model class Saxml can look up
    (an empty or malformed modelPath fails only when the publish Job runs)."""
    seen: dict[str, int] = {}
    for i, model in enumerate(workload.models or []):
        where = f"{path}.models[{i}]"
        if model.model.startswith(CELL_PREFIX) and not model.model.startswith(f"{cell}/"):
            problems.append(Problem(f"{where}.model", f"{model.model!r} is not in the cell {cell}"))
            continue
        name = model.model.removeprefix(f"{cell}/")
        if not SAX_NAME_RE.fullmatch(name):
            problems.append(
                Problem(
                    f"{where}.model",
                    f"{model.model!r} is not a Sax model name: a lowercase letter, then lowercase letters, digits, "
                    f"'-' and '_' (or {cell}/<that name>)",
                )
            )
        elif f"{cell}/{name}" in seen:
            problems.append(
                Problem(
                    f"{where}.model",
                    f"{model.model!r} is the model {cell}/{name} of models[{seen[f'{cell}/{name}']}] again; a cell "
                    "publishes each model once (give it another name)",
                )
            )
        seen.setdefault(f"{cell}/{name}", i)
        if not MODEL_PATH_RE.fullmatch(model.model_path):
            problems.append(
                Problem(
                    f"{where}.modelPath",
                    f"{model.model_path!r} is not a Saxml model class: Python identifiers joined by dots, e.g. "
                    "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test",
                )
            )


def _check_http(path: str, http: SaxHttpConfig, environment: str, problems: list[Problem]) -> None:
    """Who may reach the HTTP server, which has no authentication: listed CIDRs, the whole internet only in dev."""
    if http.exposure == "external" and not http.source_ranges:
        problems.append(
            Problem(
                f"{path}.http.sourceRanges",
                "required with exposure 'external': the CIDRs allowed to reach the public load balancer "
                "(Saxml's HTTP API has no authentication)",
            )
        )
    for i, cidr in enumerate(http.source_ranges):
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError as err:
            problems.append(Problem(f"{path}.http.sourceRanges[{i}]", f"{cidr!r} is not a valid CIDR block ({err})"))
            continue
        if network.prefixlen == 0 and http.exposure == "external" and environment != "dev":
            problems.append(
                Problem(
                    f"{path}.http.sourceRanges[{i}]",
                    f"{cidr!r} opens Saxml's unauthenticated HTTP API to the whole internet; allowed only in dev "
                    f"(environment is {environment!r}): list the CIDRs of its clients",
                )
            )
    if http.source_ranges and http.exposure == "cluster":
        problems.append(
            Problem(
                f"{path}.http.sourceRanges", "only used with exposure 'internal' or 'external' (exposure is 'cluster')"
            )
        )


def _check_pool(path: str, workload: SaxmlWorkload, pool: PoolPlan, problems: list[Problem]) -> bool:
    """A multi-host pool, on which JobSet can name the model server pods; False when it cannot serve there."""
    if not pool.shape.multi_host:
        problems.append(
            Problem(
                f"{path}.pool",
                f"pool {pool.name!r} is single-host ({pool.shape.generation.name} {pool.shape.topology}); "
                "Saxml multi-host serving needs a multi-host pool",
            )
        )
        return False
    longest = longest_pod_name(workload.name, pool.slices, pool.shape.hosts)
    if len(longest) > naming.DNS_LABEL_MAX:
        problems.append(
            Problem(
                f"{path}.name",
                f"{workload.name!r} is too long for a Saxml workload on pool {pool.name!r}: JobSet names its model "
                f"server pods up to {longest!r} ({len(longest)} characters, with the Job controller's 5 random "
                f"ones), and JobSet refuses names over {naming.DNS_LABEL_MAX}; use at most "
                f"{len(workload.name) - len(longest) + naming.DNS_LABEL_MAX} characters",
            )
        )
    return True


def _check_models_fit(
    path: str, workload: SaxmlWorkload, pool: PoolPlan, problems: list[Problem], warnings: list[str]
) -> None:
    """Each model's replicas fit the pool's model servers (one per slice), and its weights one slice's HBM."""
    for i, model in enumerate(workload.models or []):
        if model.replicas > pool.slices:
            problems.append(
                Problem(
                    f"{path}.models[{i}].replicas",
                    f"{model.replicas} is more than the {pool.slices} model server(s) of pool {pool.name!r} (one per slice)",
                )
            )
        size = model.params_billion or params_billion(model.model_path)
        if size:
            warning = catalog.sizing_warning(size, SAX_WEIGHT_BITS, pool.shape, f"{path}.models[{i}]")
            if warning:
                warnings.append(warning)


# ---- manifests ----------------------------------------------------------------------------------------

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
                    f"--platform_chip={shape.generation.saxml_platform_chip}",
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


# The model publication Job's program, run as `python3 -c` in the sax-http image: a module of its own, linted,
# type-checked and tested (tests/test_saxml_publish.py), whose text the Job carries.
PUBLISH_SCRIPT = (Path(__file__).parent / "publish_models.py").read_text()

LOAD_TIMEOUT_MINUTES = 55


def models_hash(plan: SaxmlPlan) -> str:
    return hashlib.sha256(json.dumps(plan.desired_models(), sort_keys=True).encode()).hexdigest()[:8]


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


def curl_examples(plan: SaxmlPlan, address: str) -> dict[str, str]:
    model = (
        plan.desired_models()[0]
        if plan.workload.models
        else {
            "model": f"{plan.cell}/lm175b",
            "model_path": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test",
            "checkpoint": "None",
            "replicas": 1,
        }
    )

    def curl(method: str, path: str, body: dict) -> str:
        return (
            f"curl -s -X {method} http://{address}/{path} -H 'Content-Type: application/json' -d '{json.dumps(body)}'"
        )

    return {
        "publish": curl("POST", "publish", model),
        "listcell": curl("GET", "listcell", {"model": model["model"]}),
        "generate": curl(
            "POST", "generate", {"model": model["model"], "query": "Q: Who is the mother of Harry Potter? A: "}
        ),
        "unpublish": curl("POST", "unpublish", {"model": model["model"]}),
    }
