"""What GKE installs and manages in a cluster, per GKE version, with sources: objects the stack never creates.

An object GKE installs is GKE's. A stack that applies it too either fails (the Kubernetes provider answers
AlreadyExists), or, with `upsertExistingObjects`, takes it over, and then a `pulumi destroy`, or dropping it from
the program, deletes it: for a CustomResourceDefinition, with every object of its kind in the cluster.

The decision (docs/operations.md "What GKE manages"): the stack creates none of these objects at any version. A cluster's
version is only a floor (`cluster.minMasterVersion`; unset, the release channel's default, unknown offline), and
GKE upgrades the control plane by itself, so an object GKE installs only from a later version would become GKE's
under the stack; a version does not exempt anything. Where the stack relies on such an object (the gateway's
InferencePool CRD), it requires a minMasterVersion at or above the version GKE installs it from (`required_version`).

Sources:
- G1 https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities: the single-cluster
  GatewayClasses gke-l7-global-external-managed, gke-l7-regional-external-managed, gke-l7-rilb, gke-l7-gxlb (and
  their -mc multi-cluster variants, with gke-l7-cross-regional-internal-managed-mc) on GKE Standard 1.24 and later;
  the Gateway API CRDs GKE installs per version (1.32.2-gke.1475000: v1.2.0 ... 1.35.2-gke.1842000: v1.5.0).
- G2 https://cloud.google.com/kubernetes-engine/docs/how-to/deploying-gateways: GKE Gateway controller on GKE
  Standard 1.24 or later; the Gateway API is enabled per cluster (gatewayApiConfig; pulumi-gcp 10.2.0
  container.ClusterGatewayApiConfigArgs.channel CHANNEL_STANDARD).
- G3 https://llm-d.ai/docs/dev/resources/gateway/install-crds: "GKE automatically installs all GA CRDs for Gateway
  API and Gateway API Inference Extension on GKE versions 1.34.0-gke.1626000 or later" (the GA Inference Extension
  CRD is InferencePool, inference.networking.k8s.io/v1).
- G4 https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources: GKE's Gateway policies
  (HealthCheckPolicy, GCPBackendPolicy, GCPGatewayPolicy, networking.gke.io) come with the GKE Gateway controller.
- G5 https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed: managed collection (the cluster's
  monitoringConfig.managedPrometheus) runs GKE's copy of GoogleCloudPlatform/prometheus-engine, whose
  manifests (v0.17.2 manifests/setup.yaml, operator.yaml; ../shared/reference/manifests/prometheus-engine-v0.17.2)
  define these CRDs and the namespaces gmp-system and gmp-public.
- G6 https://docs.cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes: custom
  ComputeClasses (cloud.google.com/v1) from GKE 1.30.3-gke.1451000 (stacks/serving/compute_class.py C4).
- G7 https://cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics "Requirements": the
  AutoscalingMetric (autoscaling.gke.io/v1beta1) a Pod's metric is exported to the load balancer with, "GKE
  1.34.1-gke.1127000 or later with clusters in the Rapid channel" (its later revision, expose-custom-metrics-load-
  balancer, and expose-custom-metrics-autoscaling: 1.35.1-gke.1396000); the page applies the object and installs no
  CRD, so GKE does (stacks/fleets/fleet.py F1, G1, G2 register one per exporting regional cluster).
- G8 https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gke-service-extensions: "The GKE Gateway
  controller supports the following Service Extensions: GCPRoutingExtension ... GCPTrafficExtension"
  (networking.gke.io/v1); the page applies them and installs no CRD, so they come with the Gateway controller (the
  body-based router's chart, gateway-api-inference-extension v1.5.0 config/charts/body-based-routing
  templates/gke.yaml, creates a GCPRoutingExtension with provider gke). The page names no first version: every
  version the stack runs on.
"""

from __future__ import annotations

from dataclasses import dataclass

from stacks.facts import catalog

CRD = "CustomResourceDefinition"

# What a row comes with: every cluster, or a cluster setting the stack turns on.
ALWAYS = "every cluster"
GATEWAY_API = "Gateway API enabled (gatewayApiConfig)"
MANAGED_PROMETHEUS = "managed collection (monitoringConfig.managedPrometheus)"
MULTI_CLUSTER_GATEWAY = "multi-cluster Gateways on the fleet"

GATEWAY_API_CRDS = (
    "gatewayclasses.gateway.networking.k8s.io",
    "gateways.gateway.networking.k8s.io",
    "httproutes.gateway.networking.k8s.io",
    "grpcroutes.gateway.networking.k8s.io",
    "referencegrants.gateway.networking.k8s.io",
)
INFERENCE_POOL_CRD = "inferencepools.inference.networking.k8s.io"
AUTOSCALING_METRIC_CRD = "autoscalingmetrics.autoscaling.gke.io"


# The sources of the module docstring, by id (the README table links them).
SOURCES: dict[str, str] = {
    "G1": "https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities",
    "G2": "https://cloud.google.com/kubernetes-engine/docs/how-to/deploying-gateways",
    "G3": "https://llm-d.ai/docs/dev/resources/gateway/install-crds",
    "G4": "https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gateway-resources",
    "G5": "https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed",
    "G6": "https://docs.cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes",
    "G7": "https://cloud.google.com/kubernetes-engine/docs/how-to/expose-custom-metrics",
    "G8": "https://cloud.google.com/kubernetes-engine/docs/how-to/configure-gke-service-extensions",
}


@dataclass(frozen=True)
class Managed:
    """Objects of one kind GKE installs from a GKE version on, when a cluster setting is on."""

    kind: str
    names: tuple[str, ...]  # metadata.name (cluster-scoped objects)
    since: str  # the first GKE version that installs them; "" = every version the stack runs on
    when: str  # ALWAYS or the cluster setting they come with
    sources: tuple[str, ...]  # ids of SOURCES


MANAGED: tuple[Managed, ...] = (
    Managed(CRD, GATEWAY_API_CRDS, "1.24", GATEWAY_API, ("G1", "G2")),
    Managed(CRD, GATEWAY_API_CRDS, "1.34.0-gke.1626000", ALWAYS, ("G3",)),
    Managed(
        "GatewayClass",
        ("gke-l7-global-external-managed", "gke-l7-regional-external-managed", "gke-l7-rilb", "gke-l7-gxlb"),
        "1.24",
        GATEWAY_API,
        ("G1",),
    ),
    Managed(
        "GatewayClass",
        (
            "gke-l7-global-external-managed-mc",
            "gke-l7-regional-external-managed-mc",
            "gke-l7-cross-regional-internal-managed-mc",
            "gke-l7-rilb-mc",
            "gke-l7-gxlb-mc",
        ),
        "1.24",
        MULTI_CLUSTER_GATEWAY,
        ("G1",),
    ),
    Managed(
        CRD,
        (
            "healthcheckpolicies.networking.gke.io",
            "gcpbackendpolicies.networking.gke.io",
            "gcpgatewaypolicies.networking.gke.io",
        ),
        "1.24",
        GATEWAY_API,
        ("G4",),
    ),
    Managed(
        CRD,
        ("gcproutingextensions.networking.gke.io", "gcptrafficextensions.networking.gke.io"),
        "",
        GATEWAY_API,
        ("G8",),
    ),
    Managed(CRD, (INFERENCE_POOL_CRD,), "1.34.0-gke.1626000", ALWAYS, ("G3",)),
    Managed(
        CRD,
        tuple(
            f"{plural}.monitoring.googleapis.com"
            for plural in (
                "podmonitorings",
                "clusterpodmonitorings",
                "clusternodemonitorings",
                "rules",
                "clusterrules",
                "globalrules",
                "operatorconfigs",
            )
        ),
        "",
        MANAGED_PROMETHEUS,
        ("G5",),
    ),
    Managed("Namespace", ("gmp-system", "gmp-public"), "", MANAGED_PROMETHEUS, ("G5",)),
    Managed(CRD, ("computeclasses.cloud.google.com",), "1.30.3-gke.1451000", ALWAYS, ("G6",)),
    Managed(CRD, (AUTOSCALING_METRIC_CRD,), "1.34.1-gke.1127000", ALWAYS, ("G7",)),
)


def stack_settings(gateway_api: bool) -> frozenset[str]:
    """The settings of MANAGED the stack turns on: managed collection always (components/cluster.py
    cluster_observability_args), the Gateway API with tpu-serving:gateway (cluster_addons_args)."""
    return frozenset({MANAGED_PROMETHEUS, *([GATEWAY_API] if gateway_api else [])})


def never_created() -> frozenset[tuple[str, str]]:
    """(kind, name) of every object GKE installs in some version or with some setting: the stack creates none
    (module docstring: a cluster's version is a floor, and the stack's settings may change)."""
    return frozenset((row.kind, name) for row in MANAGED for name in row.names)


def namespaces() -> frozenset[str]:
    """The namespaces GKE creates and owns."""
    return frozenset(name for kind, name in never_created() if kind == "Namespace")


def installed_from(kind: str, name: str, when: frozenset[str]) -> str | None:
    """The earliest GKE version that installs the object in a cluster with the settings `when` (ALWAYS is always
    on); None when no such version is recorded."""
    versions = [
        row.since for row in MANAGED if row.kind == kind and name in row.names and row.when in (when | {ALWAYS})
    ]
    return min(versions, key=catalog.version_tuple) if versions else None


def required_version(min_master_version: str | None, kind: str, name: str, when: frozenset[str]) -> str | None:
    """None when a control plane of at least `min_master_version` has the object GKE installs; else the version
    the stack must require (also when the version is unpinned: the release channel's default is unknown offline)."""
    need = installed_from(kind, name, when)
    if need is None:
        raise ValueError(f"GKE installs no {kind} {name} (stacks/facts/gke_managed.py MANAGED)")
    if min_master_version and catalog.version_tuple(min_master_version) >= catalog.version_tuple(need):
        return None
    return need


# The first GKE version with the InferencePool CRD, which an enabled gateway needs (stacks/pieces/gateway.py).
INFERENCE_POOL_SINCE = required_version(None, CRD, INFERENCE_POOL_CRD, frozenset())
