"""The checkov findings `make scan` (tooling/scan.py) accepts outside the stack's own Kubernetes objects, each with
its reason, in one place: the objects Helm renders from the add-on charts (the stack cannot annotate them) and the
stack's Google Cloud resources (scanned as Terraform JSON). docs/security.md lists exactly these
(tests/test_scan.py), and the scan fails on an entry nothing fails any more (stale).

Check ids and their sources: checkov 3.3.30 checkov/kubernetes/checks/resource/k8s/*.py and
checkov/terraform/checks/resource/gcp/*.py, .../graph_checks/gcp/*.json.
"""

from __future__ import annotations

from dataclasses import dataclass

# ---- Helm charts: chart name -> check id -> reason (every object the chart renders, with the stack's values) -------

_TAG = "the chart names its image by tag; no upstream source states a digest (as the stack's own images)"
_PULL = "the chart's IfNotPresent with a tag-pinned image, as the stack's own pods"
_TOKEN = "a controller: it watches and writes its resources through the API server with its service account's token"
_NO_CPU_LIMIT = "no CPU limit, as the stack's own servers: CFS throttling stalls a controller; the request reserves CPU"
# The charts' default is no cert-manager (jobset values.yaml `certManager.enable: false`, kueue and lws
# `enableCertManager: false`, at the tags of tooling/chart_objects.py SOURCES): the controller manages its webhook
# certificate itself, keeping it in a Secret of its namespace and its webhook configurations' caBundle current.
_WEBHOOKS = (
    "the controller keeps its own webhook configurations' caBundle current (its internal certificate management, the "
    "chart's default without cert-manager), so the chart's ClusterRole may patch them"
)
_SECRETS = (
    "a Role in the controller's own namespace lets it read and update the Secret holding its webhook serving "
    "certificate (its internal certificate management); no other namespace's Secrets"
)
_UID = "the chart sets runAsNonRoot without runAsUser: the image's non-root user, whose UID may be below 10000"
_EPP_NO_SC = (
    "llm-d-router@v0.10.0 config/charts/routerlib/templates/_deployment.yaml renders the epp container without a "
    "securityContext and offers no value for one (only the optional proxy sidecar has one)"
)
# What the three sigs.k8s.io controller charts (jobset, kueue, lws) have in common.
_CONTROLLER = {
    "CKV_K8S_15": _PULL,
    "CKV_K8S_38": _TOKEN,
    "CKV_K8S_40": _UID,
    "CKV_K8S_43": _TAG,
    "CKV_K8S_155": _WEBHOOKS,
}
CHART_ACCEPTED: dict[str, dict[str, str]] = {
    "jobset": {**_CONTROLLER, "CKV2_K8S_5": _SECRETS},
    "kueue": {**_CONTROLLER, "CKV2_K8S_5": _SECRETS},
    "lws": {
        **_CONTROLLER,
        "CKV_K8S_11": _NO_CPU_LIMIT,
        "CKV_K8S_13": "the chart requests 1Gi and sets no memory limit by default; an OOM kill of the controller stops "
        "every LeaderWorkerSet's reconciliation",
    },
    "prometheus-adapter": {
        "CKV_K8S_11": _NO_CPU_LIMIT,
        "CKV_K8S_15": _PULL,
        "CKV_K8S_38": "it serves the external and custom metrics APIs: it reads the API server (and is called by it)",
        "CKV_K8S_43": _TAG,
    },
    "llm-d-router-gateway": {
        "CKV_K8S_11": _NO_CPU_LIMIT,
        "CKV_K8S_15": _PULL,
        "CKV_K8S_38": "the endpoint picker watches the InferencePool and its pods through the API server",
        "CKV_K8S_43": _TAG,
        **{
            check: _EPP_NO_SC
            for check in ("CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_29", "CKV_K8S_30")
            + ("CKV_K8S_31", "CKV_K8S_37", "CKV_K8S_40")
        },
    },
}


@dataclass(frozen=True)
class GcpAccepted:
    check: str
    resource: str  # a regular expression over the resource's Pulumi name (the Terraform JSON resource name)
    reason: str


# The resources' Pulumi names (components/): network-vpc, network-subnet, cluster-gke, bucket-logs.
GCP_ACCEPTED: tuple[GcpAccepted, ...] = (
    GcpAccepted(
        "CKV2_GCP_18",
        "network-vpc",
        "a custom-mode VPC has none of the default network's permissive rules and its implied rules deny all "
        "ingress; GKE creates and maintains every rule the cluster needs (docs/security.md)",
    ),
    GcpAccepted(
        "CKV_GCP_26",
        "network-subnet",
        "VPC flow logs are on in prod only, for their log volume's cost; cluster.network.flowLogs turns them on",
    ),
    GcpAccepted(
        "CKV_GCP_61",
        "cluster-gke",
        "intranode visibility (and flow logs) are on in prod only, for cost; cluster.intranodeVisibility turns it on",
    ),
    GcpAccepted(
        "CKV_GCP_62",
        "bucket-logs",
        "the log bucket does not log its own writes: its only writer is Cloud Storage's access logging",
    ),
    GcpAccepted(
        "CKV_GCP_65",
        "cluster-gke",
        "Google Groups for RBAC needs a Workspace domain the stack cannot assume",
    ),
    GcpAccepted(
        "CKV_GCP_66",
        "cluster-gke",
        "Binary Authorization is opt-in (cluster.binaryAuthorization): the project policy must first admit every "
        "pinned image",
    ),
    GcpAccepted(
        "CKV_GCP_84",
        "images-docker-hub",
        "the remote repository caches public Docker Hub images the version matrix pins: Google-managed encryption, "
        "no customer key (a CMEK there would gate public images behind the user's key and its location)",
    ),
    GcpAccepted(
        "CKV_GCP_42",
        "fleet-ingress-agent",
        "GKE's multi-cluster Gateway controller (the Multi Cluster Ingress service agent) needs roles/container.admin "
        "on the fleet's project, as GKE's setup guide grants it; a Google-managed agent, not a stack identity",
    ),
    GcpAccepted(
        "CKV_GCP_78",
        "bucket-logs",
        "access-log objects are written once under unique names and deleted by the retention rule; versioning would "
        "keep each deleted log as a noncurrent version, defeating the retention",
    ),
)
