"""The controllers the stack installs, run for real beside the local cluster (docs/local-cluster.md "The controllers the stack installs").

On GKE a chart's Deployment runs the controller in a pod. On the local cluster kwok "runs" that pod (it becomes
Running, no container starts), so a supervisor does what the kubelet would: when the stack has installed a chart's
Deployment, it starts the toolchain's binary of that controller (built at the tag the matrix pins) as a local process
with the Deployment's own arguments and environment, its ConfigMap and Secret volumes as local files (Secrets kept in
sync, as the kubelet does: the controllers' own certificate managers write their serving certificate into a Secret
and wait for it to appear in their certificate folder), and the API credentials of its ServiceAccount (a token from
the TokenRequest API, so the chart's RBAC is what the controller has). Each controller gets an address of its own in
the cluster's network namespace (CONTROLLER_NET), binds its webhook, probe and metrics ports there, and the Services
selecting its pods get Endpoints at that address: the API server reaches webhooks and APIServices through them
(--enable-aggregator-routing), with the TLS names the controllers' certificates carry. Leader election is off (one
replica). As the kubelet does, a controller starts once the Secrets it mounts exist, and one that exits is started
again after a back-off (10 s doubling to 5 minutes), its log appended to; every restart is counted in
.cache/local/<stack>/controllers.json (`restarts`), which the e2e reads. A Deployment that is deleted stops its
controller.

    python -m tooling.local.local_controllers STACK     the supervisor (started by `make local-cluster`, in the namespace)
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from stacks.facts import versions
from stacks.monitoring.adapters import stackdriver
from stacks.monitoring.adapters.entry import ADAPTER_NAMESPACE
from tooling.local import local_cluster, toolchain
from tooling.local.local_cluster import Api, LocalClusterError, Paths

# The controllers' own addresses: one /32 each on the namespace's loopback, never routed (RFC 2544 range, like
# local_cluster.LOCAL_ADDRESS).
CONTROLLER_NET = "198.18.1."
POLL_SECONDS = 2.0
TOKEN_SECONDS = 24 * 3600
MANAGED_BY = "tpu-serving-local"
# Where the kubelet mounts a pod's ServiceAccount token, CA and namespace (automountServiceAccountToken); KEDA reads
# the namespace there (kedacore/keda@v2.20.2 cmd/operator: "Unable to get cluster object namespace").
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class Controller:
    """One controller a chart runs, and how its local process differs from the pod."""

    name: str  # the toolchain binary (unless `binary` says otherwise), and its name in controllers.json
    chart: str | None  # versions.CHARTS key: the release namespace (None: a stand-in names its `in_namespace`)
    deployment: str  # the chart's Deployment (tooling/data/chart_objects.json records it)
    # the chart passes a controller-runtime Configuration file with --config (LWS, JobSet, Kueue): its webhook,
    # probe and metrics listeners are set there
    config_file: bool = False
    # arguments added to the Deployment's, `{address}` filled in: listeners the chart leaves at their defaults
    # (all addresses, which two controllers in one namespace cannot share)
    extra_args: tuple[str, ...] = ()
    # A stand-in (STAND_INS) runs another binary than its Deployment's image: the toolchain binary, the namespace
    # of its Deployment, the flags of the Deployment's command and arguments it understands too (kept as they are;
    # every other flag is the image's own and dropped), what it stands in for, and its configuration file
    # (`{config}` in extra_args).
    binary: str | None = None
    in_namespace: str | None = None
    kept_flags: tuple[str, ...] = ()
    stands_in_for: str = ""
    config_text: str = ""

    @property
    def namespace(self) -> str:
        if self.chart is None:
            assert self.in_namespace is not None, self.name
            return self.in_namespace
        return versions.CHARTS[self.chart][versions.default_version(self.chart)].namespace

    @property
    def toolchain_binary(self) -> str:
        return self.binary or self.name


CONTROLLERS: tuple[Controller, ...] = (
    Controller("lws-controller", "lws", "lws-controller-manager", config_file=True),
    Controller("jobset-controller", "jobset", "jobset-controller", config_file=True),
    Controller("kueue-controller", "kueue", "kueue-controller-manager", config_file=True),
    # kedacore/keda@v2.20.2 cmd/operator/main.go flags: --health-probe-bind-address (":8081"),
    # --metrics-service-bind-address (":9666", the gRPC service the metrics API server reads)
    Controller(
        "keda-operator",
        "keda",
        "keda-operator",
        extra_args=("--health-probe-bind-address={address}:8081", "--metrics-service-bind-address={address}:9666"),
    ),
    # an aggregated API server (k8s.io/apiserver options): --bind-address, and kubeconfigs for delegated
    # authentication and authorization and its own reads (sigs.k8s.io/custom-metrics-apiserver pkg/cmd/builder.go
    # --lister-kubeconfig) outside a pod
    Controller(
        "keda-metrics-apiserver",
        "keda",
        "keda-operator-metrics-apiserver",
        extra_args=(
            "--bind-address={address}",
            "--authentication-kubeconfig={kubeconfig}",
            "--authorization-kubeconfig={kubeconfig}",
            "--lister-kubeconfig={kubeconfig}",
        ),
    ),
    Controller(
        "prometheus-adapter",
        "prometheusAdapter",
        "prometheus-adapter",
        extra_args=(
            "--bind-address={address}",
            "--authentication-kubeconfig={kubeconfig}",
            "--authorization-kubeconfig={kubeconfig}",
            "--lister-kubeconfig={kubeconfig}",
        ),
    ),
)


# ---- stand-ins: what the stack installs that cannot run here, answered by a toolchain binary that can -------------
#
# The Stackdriver adapter (custom-metrics-stackdriver, the default `monitoring.adapter`) is Google's image, built from
# GoogleCloudPlatform/k8s-stackdriver, which is no Go module the toolchain can build from the proxy at the pinned
# image, and it reads Cloud Monitoring, which is not here. The APIServices the stack registers for it
# (stackdriver.API_SERVICES: custom.metrics.k8s.io v1beta1 and v1beta2, external.metrics.k8s.io v1beta1) would have no
# server: the aggregator marks them unavailable, discovery of those groups fails, and the namespace controller cannot
# finish deleting any namespace (NamespaceDeletionDiscoveryFailure: it must list every namespaced resource of every
# group, kubernetes@v1.35.4 pkg/controller/namespace/deletion/namespaced_resources_deleter.go), so a workload's
# namespace change or `destroy` never completes, which GKE, where the adapter runs, never shows. The toolchain's
# prometheus-adapter (v0.12.0, on sigs.k8s.io/custom-metrics-apiserver v1.30.0, the same library the Stackdriver
# adapter serves its APIs with) answers the same three group versions when its configuration has a custom rule and
# an external rule (cmd/adapter/adapter.go main: WithCustomMetrics when `rules` is not empty, WithExternalMetrics
# when `externalRules` is not; pkg/apiserver/cmapis.go installs every custom.metrics version, v1beta2 and v1beta1).
# It runs in the adapter's place: the Deployment's ServiceAccount (so the stack's RBAC for the adapter is what it
# has), its Service's Endpoints, the flags both binaries take from that library (--secure-port, --cert-dir). It
# serves no metric: its Prometheus (STAND_IN_PROMETHEUS, a closed loopback port) answers nothing, so an HPA reading
# the adapter's metrics sees none, as on GKE before Cloud Monitoring has the series.
STAND_IN_PROMETHEUS = "http://127.0.0.1:9"  # the discard port on the namespace's loopback: nothing listens
_STAND_IN_SERIES = '{__name__="tpu_serving_local_stand_in"}'
STAND_IN_ADAPTER_CONFIG = yaml.safe_dump(
    {
        "rules": [
            {
                "seriesQuery": _STAND_IN_SERIES,
                "resources": {"template": "<<.Resource>>"},
                "name": {"as": "tpu_serving_local_stand_in"},
                "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
            }
        ],
        "externalRules": [
            {
                "seriesQuery": _STAND_IN_SERIES,
                "resources": {"template": "<<.Resource>>"},
                "name": {"as": "tpu_serving_local_stand_in"},
                "metricsQuery": "sum(<<.Series>>{<<.LabelMatchers>>})",
            }
        ],
    },
    sort_keys=False,
)

STAND_INS: tuple[Controller, ...] = (
    Controller(
        "stackdriver-adapter-stand-in",
        None,
        stackdriver.SERVICE_ACCOUNT,  # the Deployment's name (stacks/monitoring/adapters/stackdriver.py _server)
        binary="prometheus-adapter",
        in_namespace=ADAPTER_NAMESPACE,
        # k8s.io/apiserver pkg/server/options/serving.go SecureServingOptions.AddFlags, registered by both adapters
        kept_flags=("--secure-port", "--cert-dir"),
        stands_in_for=f"{stackdriver.NAME}: serves the metrics APIs it registers (no metric)",
        config_text=STAND_IN_ADAPTER_CONFIG,
        extra_args=(
            "--config={config}",
            f"--prometheus-url={STAND_IN_PROMETHEUS}",
            "--bind-address={address}",
            "--authentication-kubeconfig={kubeconfig}",
            "--authorization-kubeconfig={kubeconfig}",
            "--lister-kubeconfig={kubeconfig}",
        ),
    ),
)
EVERY_CONTROLLER = (*CONTROLLERS, *STAND_INS)


def address_of(controller: Controller) -> str:
    return f"{CONTROLLER_NET}{EVERY_CONTROLLER.index(controller) + 1}"


def kept_args(container: dict[str, Any], flags: tuple[str, ...]) -> list[str]:
    """The `--flag=value` arguments of a container's command and args whose flag is one of `flags`."""
    return [
        arg
        for arg in [*(container.get("command") or []), *(container.get("args") or [])]
        if arg.partition("=")[0] in flags
    ]


# ---- Workload Identity, stood in ----------------------------------------------------------------------------------
#
# On GKE every pod of a Workload-Identity node pool gets Google credentials for its KSA from the GKE metadata server,
# which the Google client libraries find as Application Default Credentials (golang.org/x/oauth2/google
# FindDefaultCredentials: the GOOGLE_APPLICATION_CREDENTIALS file first, the metadata server last). Here there is no
# metadata server: KEDA's `gcp` pod identity (kedacore/keda@v2.20.2 pkg/scalers/gcp/gcp_common.go tokenSource:
# google.DefaultTokenSource) fails to build the prometheus scaler ("google: could not find default credentials"),
# so no ScaledObject gets its HPA. Each local controller gets a credentials file of its own instead: a service
# account key made here (never registered anywhere) whose token endpoint is a closed loopback port, so the scaler
# builds as on GKE and every token request fails at once on the namespace's loopback, never leaving it.
STAND_IN_TOKEN_URI = "http://127.0.0.1:9/token"  # the discard port on the namespace's loopback: nothing listens


def google_credentials(folder: Path, account: str, namespace: str) -> Path:
    """A stand-in Application Default Credentials file for the KSA `namespace/account` (made once per folder)."""
    path = folder / "google-credentials.json"
    if path.exists():
        return path
    key = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    credentials = {
        "type": "service_account",
        "project_id": "tpu-serving-local",
        "private_key_id": "local-stand-in",
        "private_key": key,
        "client_email": f"{account}.{namespace}@tpu-serving-local.invalid",
        "client_id": "0",
        "token_uri": STAND_IN_TOKEN_URI,
    }
    _write(path, json.dumps(credentials, indent=2).encode())
    return path


# ---- pure: what the local process is, from the chart's Deployment --------------------------------------------------


def local_path(folder: Path, mount_path: str) -> Path:
    return folder / "mnt" / mount_path.lstrip("/")


def rewrite_args(args: list[str], mounts: dict[str, Path], address: str) -> list[str]:
    """The Deployment's arguments for a local process: paths under a volume mount point at its local copy, a
    listener on every address (`:port`) at the controller's own, leader election off."""
    out = []
    for arg in args:
        if arg in ("--leader-elect", "--leader-elect=true"):
            out.append("--leader-elect=false")
            continue
        key, eq, value = arg.partition("=")
        if eq:
            for mount, local in sorted(mounts.items(), key=lambda item: -len(item[0])):
                if value == mount or value.startswith(mount.rstrip("/") + "/"):
                    value = str(local) + value[len(mount.rstrip("/")) :]
                    break
            if key.endswith("bind-address") and value.startswith(":"):
                value = address + value
            out.append(f"{key}={value}")
        else:
            out.append(arg)
    return out


def rewrite_config(text: str, mounts: dict[str, Path], address: str) -> str:
    """A controller-runtime Configuration (LWS, JobSet, Kueue `--config`) for a local process: its webhook server
    on the controller's address with its certificates from the local copy of their Secret, its probes there too,
    the metrics listener off (nothing scrapes locally), leader election off."""
    config = yaml.safe_load(text) or {}
    cert_mount = next((m for m in mounts if "k8s-webhook-server" in m), "/tmp/k8s-webhook-server/serving-certs")
    webhook = config.setdefault("webhook", {})
    webhook["host"] = address
    webhook["certDir"] = str(mounts.get(cert_mount, Path(cert_mount)))
    config.setdefault("metrics", {})["bindAddress"] = "0"
    health = config.setdefault("health", {})
    port = str(health.get("healthProbeBindAddress", ":8081")).rsplit(":", 1)[-1]
    health["healthProbeBindAddress"] = f"{address}:{port}"
    config.setdefault("leaderElection", {})["leaderElect"] = False
    return yaml.safe_dump(config, sort_keys=False)


def launch_command(netns: str, binary: str, args: list[str], mounts: dict[str, Path]) -> list[str]:
    """The process as `ip netns exec` starts it (the namespace's network and /etc/hosts, a mount namespace of its
    own), with each volume mounted under /tmp bind-mounted at its path there, as the container runtime mounts it:
    some controllers do not take their certificate folder from their configuration (sigs.k8s.io/jobset@v0.10.1
    pkg/util/cert/cert.go certDir = "/tmp/k8s-webhook-server/serving-certs"), and the ServiceAccount folder
    (SERVICE_ACCOUNT_DIR, an empty folder made on this machine's /run). Other mounts are reached through the
    rewritten arguments only."""
    binds = sorted(
        (path, local)
        for path, local in mounts.items()
        if (path.startswith("/tmp/") or path == SERVICE_ACCOUNT_DIR) and local.is_dir()
    )
    if not binds:
        return ["ip", "netns", "exec", netns, binary, *args]
    steps = [f"mkdir -p '{path}' && mount --bind '{local}' '{path}'" for path, local in binds]
    script = " && ".join([*steps, 'exec "$@"'])
    return ["ip", "netns", "exec", netns, "sh", "-c", script, "sh", binary, *args]


def env_of(container: dict[str, Any], namespace: str, pod: str, address: str) -> dict[str, str]:
    """The container's environment as the kubelet would give it (values; the pod's namespace, name and IP)."""
    out = {}
    fields = {"metadata.namespace": namespace, "metadata.name": pod, "status.podIP": address}
    for item in container.get("env") or []:
        if "valueFrom" not in item:  # `value: ""` is omitted when served: the variable is set, empty
            out[item["name"]] = str(item.get("value", ""))
        else:
            field = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
            if field in fields:
                out[item["name"]] = fields[field]
    return out


def selects(service: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    return bool(selector) and selector.items() <= labels.items()


def endpoint_ports(service: dict[str, Any], container: dict[str, Any]) -> list[dict[str, Any]]:
    """Each Service port at the container port it targets (a name resolved through the container's ports)."""
    named = {p.get("name"): p["containerPort"] for p in container.get("ports") or [] if p.get("name")}
    out = []
    for port in service["spec"].get("ports") or []:
        target = port.get("targetPort", port["port"])
        number = named.get(target) if isinstance(target, str) else int(target)
        if number is None:
            continue
        entry = {"port": number, "protocol": port.get("protocol", "TCP")}
        if port.get("name"):
            entry["name"] = port["name"]
        out.append(entry)
    return out


def endpoints_objects(
    service: dict[str, Any], address: str, ports: list[dict[str, Any]], ready: bool = False
) -> list[tuple[str, dict]]:
    """The Endpoints and EndpointSlice of a Service served by a local controller at `address`: the address ready
    only once the controller's pod is (Supervisor.readiness), as the endpoints controllers write a pod that is not
    Ready under notReadyAddresses and `ready: false` (kubernetes@v1.35.4 pkg/controller/endpoint, endpointslice):
    the API server does not call a webhook or APIService there before."""
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace, "labels": {local_cluster.LOCAL_LABEL: "controller"}},
        "subsets": [{"addresses" if ready else "notReadyAddresses": [{"ip": address}], "ports": ports}],
    }
    slice_ = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{name}-local",
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
                local_cluster.LOCAL_LABEL: "controller",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": ready}}],
        "ports": ports,
    }
    return [
        (f"/api/v1/namespaces/{namespace}/endpoints", endpoints),
        (f"/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices", slice_),
    ]


def pod_endpoints(service: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Endpoints the endpoints controller would write for a Service whose pods no local controller serves: its
    Ready pods' addresses (kwok's, where nothing listens), each Service port at the container port it targets. The
    local cluster runs kube-controller-manager without that controller (its Endpoints for the local controllers
    would be overwritten), and `pulumi up` waits for a Service to have a ready endpoint (pulumi-kubernetes
    provider/pkg/await/service.go). None for a Service without a selector."""
    selector = service["spec"].get("selector") or {}
    if not selector:
        return None
    addresses: list[dict[str, Any]] = []
    ports: list[dict[str, Any]] = []
    for pod in pods:
        if not selects(service, pod["metadata"].get("labels") or {}) or not pod["status"].get("podIP"):
            continue
        conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
        if conditions.get("Ready") != "True" or pod["metadata"].get("deletionTimestamp"):
            continue
        addresses.append(
            {
                "ip": pod["status"]["podIP"],
                "targetRef": {
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                    "namespace": pod["metadata"]["namespace"],
                },
            }
        )
        if not ports:
            ports = endpoint_ports(
                service, {"ports": [p for c in pod["spec"]["containers"] for p in c.get("ports") or []]}
            )
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": namespace, "labels": {local_cluster.LOCAL_LABEL: "pods"}},
        "subsets": [{"addresses": sorted(addresses, key=lambda a: a["ip"]), "ports": ports}] if addresses else [],
    }


def hosts_lines(services: list[dict[str, Any]], address: str) -> list[str]:
    """/etc/hosts lines of the namespace: each Service's cluster DNS names at the controller's address (the KEDA
    metrics API server dials the operator by its Service name)."""
    out = []
    for service in services:
        name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
        out.append(f"{address} {name}.{namespace}.svc {name}.{namespace}.svc.cluster.local")
    return out


def owner_deployment(pod: dict[str, Any]) -> str | None:
    """The Deployment a pod belongs to: its ReplicaSet is named `<deployment>-<pod-template-hash>`
    (kubernetes@v1.35.4 pkg/controller/deployment/sync.go getNewReplicaSet)."""
    labels = pod["metadata"].get("labels") or {}
    template_hash = labels.get("pod-template-hash")
    for owner in pod["metadata"].get("ownerReferences") or []:
        if owner.get("kind") == "ReplicaSet" and template_hash and owner["name"].endswith(f"-{template_hash}"):
            return str(owner["name"][: -len(template_hash) - 1])
    return None


# Where the API server finds the Services it dials: webhooks (and CRD conversion webhooks) and APIServices
DIALING = (
    ("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "webhooks"),
    ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "webhooks"),
    ("/apis/apiregistration.k8s.io/v1/apiservices", "spec"),
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "spec"),
)


@dataclass(frozen=True)
class Probe:
    """One thing that must answer before a controller's pod is Ready: its readiness probe (scheme HTTP or HTTPS
    with `path`, or TCP), or a port the API server dials (scheme TLS: a handshake the API server would accept,
    `server_name` the Service's DNS name, `ca` the caBundle it is given, PEM; None where it verifies nothing)."""

    scheme: str
    port: int
    path: str | None = None
    server_name: str | None = None
    ca: str | None = None


def dialed_services(listings: list[tuple[str, list[dict[str, Any]]]]) -> dict[tuple[str, str], str | None]:
    """(namespace, name) -> the caBundle (PEM, None when there is none) of every Service the API server dials: a
    webhook's clientConfig, an APIService's spec (insecureSkipTLSVerify: None), a CRD's spec.conversion.webhook
    clientConfig. `listings`: (DIALING's field, its items)."""
    out: dict[tuple[str, str], str | None] = {}
    for where, items in listings:
        for item in items:
            if where == "webhooks":
                configs = [w.get("clientConfig") or {} for w in item.get("webhooks") or []]
            else:
                spec = item.get("spec") or {}
                if "names" in spec:  # a CRD
                    configs = [((spec.get("conversion") or {}).get("webhook") or {}).get("clientConfig") or {}]
                else:  # an APIService: its service and caBundle in its spec
                    configs = [
                        {**spec, "caBundle": None if spec.get("insecureSkipTLSVerify") else spec.get("caBundle")}
                    ]
            for config in configs:
                ref = config.get("service")
                if ref and ref.get("name"):
                    bundle = config.get("caBundle")
                    out[(ref["namespace"], ref["name"])] = base64.b64decode(bundle).decode() if bundle else None
    return out


def probe_targets(
    container: dict[str, Any], services: list[dict[str, Any]], dialed: dict[tuple[str, str], str | None]
) -> list[Probe]:
    """What must answer before the controller's pod is Ready: its readiness probe (httpGet or tcpSocket), and every
    port of those of `services` the API server dials (dialed_services: its webhook's, its API server's), with the
    TLS the API server would accept there. A named port is resolved through the container's ports."""
    named = {p.get("name"): p["containerPort"] for p in container.get("ports") or [] if p.get("name")}

    def number(port: Any) -> int | None:
        return named.get(port) if isinstance(port, str) and not port.isdigit() else int(port)

    out: list[Probe] = []
    probe = container.get("readinessProbe") or {}
    if "httpGet" in probe and number(probe["httpGet"]["port"]) is not None:
        get = probe["httpGet"]
        out.append(Probe(str(get.get("scheme", "HTTP")).upper(), number(get["port"]) or 0, get.get("path", "/")))
    elif "tcpSocket" in probe and number(probe["tcpSocket"]["port"]) is not None:
        out.append(Probe("TCP", number(probe["tcpSocket"]["port"]) or 0))
    for service in services:
        key = (service["metadata"]["namespace"], service["metadata"]["name"])
        if key not in dialed:
            continue
        for port in endpoint_ports(service, container):
            out.append(Probe("TLS", int(port["port"]), server_name=f"{key[1]}.{key[0]}.svc", ca=dialed[key]))
    return out


def answers(address: str, probe: Probe, timeout: float = 1.0) -> bool:
    """Whether the controller answers `probe` at `address`: as the kubelet's prober counts it for a readiness probe
    (an HTTP(S) GET answered 200 to 399, the certificate not verified, kubernetes@v1.35.4 pkg/probe/http/http.go; a
    TCP connection accepted), and, for a port the API server dials, a TLS handshake verified against the caBundle
    it is given, for the Service's DNS name (as the API server dials a webhook: k8s.io/apiserver
    pkg/util/webhook/authentication.go, the service's `<name>.<namespace>.svc`)."""
    if probe.scheme == "TCP":
        try:
            with socket.create_connection((address, probe.port), timeout=timeout):
                return True
        except OSError:
            return False
    if probe.scheme == "TLS":
        context = ssl.create_default_context(cadata=probe.ca) if probe.ca else ssl.create_default_context()
        if not probe.ca:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            with socket.create_connection((address, probe.port), timeout=timeout) as raw:
                with context.wrap_socket(raw, server_hostname=probe.server_name):
                    return True
        except (OSError, ssl.SSLError):
            return False
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    url = f"{probe.scheme.lower()}://{address}:{probe.port}{probe.path or '/'}"
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=context if probe.scheme == "HTTPS" else None) as resp:
            return 200 <= resp.status < 400
    except urllib.error.HTTPError as err:
        return 200 <= err.code < 400
    except (OSError, ValueError):
        return False


def readiness_patch(pod: dict[str, Any], ready: bool) -> dict[str, Any] | None:
    """The status patch that makes the pod's Ready and ContainersReady conditions and its containers' `ready` say
    `ready` (as the kubelet's status manager writes them), or None when they do already."""
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    want = "True" if ready else "False"
    have = {c["type"]: c.get("status") for c in conditions}
    containers = status.get("containerStatuses") or []
    if (
        have.get("Ready") == want
        and have.get("ContainersReady") == want
        and all(c.get("ready") is ready for c in containers)
    ):
        return None
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kept = [c for c in conditions if c["type"] not in ("Ready", "ContainersReady")]
    changed = [
        {"type": kind, "status": want, "lastTransitionTime": now, **({} if ready else {"reason": "ContainersNotReady"})}
        for kind in ("Ready", "ContainersReady")
    ]
    return {
        "status": {
            "conditions": kept + changed,
            "containerStatuses": [{**c, "ready": ready} for c in containers],
        }
    }


# ---- the supervisor (runs in the namespace) ---------------------------------------------------------------------


BACKOFF_FIRST = 10.0  # the kubelet's container restart back-off: 10 s, doubled, at most 5 minutes
BACKOFF_MAX = 300.0


@dataclass
class Running:
    controller: Controller
    pid: int
    log: Path
    started: float
    folder: Path
    secrets: dict[str, Path]  # Secret name -> local folder
    command: list[str]
    env: dict[str, str]
    restarts: int = 0
    exited_at: float | None = None
    address: str = ""
    services: list[dict[str, Any]] = field(default_factory=list)  # the Services selecting its pods
    container: dict[str, Any] = field(default_factory=dict)  # its Deployment's container
    ready: bool = False  # its readiness as last written to its pods and Endpoints


def backoff(restarts: int) -> float:
    """Seconds before the next start after `restarts` restarts (the kubelet's CrashLoopBackOff)."""
    return min(BACKOFF_FIRST * 2**restarts, BACKOFF_MAX)


def missing_secrets(spec: dict[str, Any], existing: set[str]) -> list[str]:
    """The Secrets a pod mounts (not marked optional) that do not exist: the kubelet starts no container before."""
    return [
        v["secret"]["secretName"]
        for v in spec.get("volumes") or []
        if "secret" in v and not v["secret"].get("optional") and v["secret"]["secretName"] not in existing
    ]


def _get(api: Api, path: str) -> Any:
    try:
        return api.get(path)
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise


def _write(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_volume(folder: Path, files: dict[str, bytes]) -> bool:
    """A Secret volume's files as the kubelet writes them, all at once (kubernetes@v1.35.4
    pkg/volume/util/atomic_writer.go AtomicWriter.Write): the payload in a new hidden folder `..<timestamp>`, the
    `..data` symlink swapped to it by a rename, and each key a symlink `<key> -> ..data/<key>`. A reader never sees
    some keys of the new Secret and others of the old (a certificate beside another certificate's key) or a key
    half written. Whether anything changed."""
    current = folder / "..data"
    if current.is_symlink():
        have = {f.name: f.read_bytes() for f in current.iterdir() if f.is_file()}
        if have == files:
            return False
    elif not files:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    payload = folder / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    payload.mkdir()
    for key, data in files.items():
        (payload / key).write_bytes(data)
    link = folder / "..data_tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(payload.name)
    old = os.readlink(current) if current.is_symlink() else None
    link.replace(current)
    for key in files:
        user = folder / key
        if not user.is_symlink():
            if user.is_dir():
                shutil.rmtree(user)
            user.unlink(missing_ok=True)
            user.symlink_to(f"..data/{key}")
    for entry in folder.iterdir():
        if entry.is_symlink() and not entry.name.startswith("..") and entry.name not in files:
            entry.unlink()  # a key the Secret no longer has
    if old:
        shutil.rmtree(folder / old, ignore_errors=True)
    return True


def sync_secret(api: Api, namespace: str, name: str, folder: Path) -> None:
    """The Secret's current data into its volume folder (write_volume); nothing before the Secret has data."""
    import base64

    secret = _get(api, f"/api/v1/namespaces/{namespace}/secrets/{name}")
    files = {key: base64.b64decode(value) for key, value in ((secret or {}).get("data") or {}).items()}
    write_volume(folder, files)


class Supervisor:
    def __init__(self, stack: str) -> None:
        self.stack = stack
        self.p: Paths = local_cluster.paths(stack)
        self.api = Api(self.p)
        self.running: dict[str, Running] = {}
        self.waiting: dict[str, list[str]] = {}
        self.hosts: dict[str, list[str]] = {}

    def record(self) -> None:
        entries = [
            {
                "name": r.controller.name,
                "pid": r.pid,
                "log": str(r.log),
                "started": r.started,
                "restarts": r.restarts,
                **({"standsInFor": r.controller.stands_in_for} if r.controller.stands_in_for else {}),
            }
            for r in self.running.values()
        ]
        _write(self.p.controllers, (json.dumps(entries, indent=2) + "\n").encode())

    def write_hosts(self) -> None:
        folder = Path("/etc/netns") / local_cluster.netns_name(self.stack)
        lines = ["127.0.0.1 localhost"] + [line for lines in self.hosts.values() for line in lines]
        _write(folder / "hosts", ("\n".join(lines) + "\n").encode())

    def token_kubeconfig(self, folder: Path, namespace: str, account: str) -> Path:
        """A kubeconfig with a token of the ServiceAccount, and the folder the kubelet would mount for it."""
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
            "expirationSeconds": TOKEN_SECONDS}}  # fmt: skip
        token = self.api.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", request)
        path = folder / "kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "local", "cluster": {
                "server": f"https://127.0.0.1:{local_cluster.APISERVER_PORT}",
                "certificate-authority": str(self.p.pki / "ca.crt")}}],
            "users": [{"name": account, "user": {"token": token["status"]["token"]}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": account, "namespace": namespace}}],
            "current-context": "local",
        }  # fmt: skip
        _write(path, yaml.safe_dump(config).encode())
        account_dir = local_path(folder, SERVICE_ACCOUNT_DIR)
        _write(account_dir / "token", token["status"]["token"].encode())
        _write(account_dir / "ca.crt", (self.p.pki / "ca.crt").read_bytes())
        _write(account_dir / "namespace", namespace.encode())
        return path

    def start(self, controller: Controller, deployment: dict[str, Any]) -> None:
        namespace = controller.namespace
        address = address_of(controller)
        folder = self.p.root / "controllers" / controller.name
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ip", "addr", "replace", f"{address}/32", "dev", "lo"], check=True, capture_output=True)
        pod = deployment["spec"]["template"]
        spec, labels = pod["spec"], pod["metadata"].get("labels") or {}
        container = spec["containers"][0]
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        mounts: dict[str, Path] = {}
        secrets: dict[str, Path] = {}
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"], {})
            local = local_path(folder, mount["mountPath"])
            mounts[mount["mountPath"]] = local
            if "configMap" in volume:
                config_map = _get(self.api, f"/api/v1/namespaces/{namespace}/configmaps/{volume['configMap']['name']}")
                data = (config_map or {}).get("data") or {}
                if mount.get("subPath"):
                    text = data.get(mount["subPath"], "")
                    if controller.config_file:
                        text = rewrite_config(text, mounts, address)
                    _write(local, text.encode())
                else:
                    for key, text in data.items():
                        _write(local / key, text.encode())
            elif "secret" in volume:
                local.mkdir(parents=True, exist_ok=True)
                secrets[volume["secret"]["secretName"]] = local
                sync_secret(self.api, namespace, volume["secret"]["secretName"], local)
            else:
                local.mkdir(parents=True, exist_ok=True)
        if controller.config_file:  # the certificate folder's mount may follow the config's in the list
            for mount in container.get("volumeMounts") or []:
                if mount.get("subPath") and "configMap" in volumes.get(mount["name"], {}):
                    local = mounts[mount["mountPath"]]
                    _write(local, rewrite_config(local.read_text(), mounts, address).encode())
        kubeconfig = self.token_kubeconfig(folder, namespace, spec.get("serviceAccountName") or "default")
        if spec.get("automountServiceAccountToken", True):
            mounts[SERVICE_ACCOUNT_DIR] = local_path(folder, SERVICE_ACCOUNT_DIR)
        if controller.binary is None:
            args = rewrite_args(list(container.get("args") or []), mounts, address)
        else:  # a stand-in: only the flags it shares with the image, and its own configuration
            args = kept_args(container, controller.kept_flags)
        config = folder / "stand-in-config.yaml"
        if controller.config_text:
            _write(config, controller.config_text.encode())
        args += [arg.format(address=address, kubeconfig=kubeconfig, config=config) for arg in controller.extra_args]
        services = [s for s in self.api.get(f"/api/v1/namespaces/{namespace}/services")["items"] if selects(s, labels)]
        self.write_endpoints(services, address, container, ready=False)
        self.hosts[controller.name] = hosts_lines(services, address)
        self.write_hosts()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(folder),
            "KUBECONFIG": str(kubeconfig),
            # the kubelet sets these in every container: with the ServiceAccount folder they are the in-cluster
            # configuration (k8s.io/client-go rest.InClusterConfig), which Kueue's visibility server requires
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(local_cluster.APISERVER_PORT),
            # Workload Identity's credentials, stood in (google_credentials)
            "GOOGLE_APPLICATION_CREDENTIALS": str(
                google_credentials(folder, spec.get("serviceAccountName") or "default", namespace)
            ),
            **env_of(container, namespace, f"{controller.deployment}-local", address),
        }
        binary = str(toolchain.binary_path(controller.toolchain_binary))
        command = launch_command(local_cluster.netns_name(self.stack), binary, args, mounts)
        (folder / "command.json").write_text(json.dumps(command, indent=2) + "\n")
        log = self.p.logs / f"{controller.name}.log"
        pid = local_cluster.start(self.p, controller.name, command, cwd=folder, env=env)
        self.running[controller.name] = Running(
            controller,
            pid,
            log,
            time.time(),
            folder,
            secrets,
            command,
            env,
            address=address,
            services=services,
            container=container,
        )
        self.record()
        print(f"started {controller.name} (pid {pid}) at {address} for {namespace}/{controller.deployment}", flush=True)

    def write_endpoints(
        self, services: list[dict[str, Any]], address: str, container: dict[str, Any], ready: bool
    ) -> None:
        for service in services:
            for collection, obj in endpoints_objects(service, address, endpoint_ports(service, container), ready):
                self.api.apply(collection, obj)

    def readiness(self) -> None:
        """The kubelet's readiness probing for the pods of the namespaces local processes stand in for (kwok leaves
        them Running and not Ready there, local_cluster.readiness_stages): a pod of a running controller's Deployment
        is Ready while the process runs and answers probe_targets, and its Services' Endpoints say so; any other pod
        there (nothing runs it) is Ready at once, as kwok makes it elsewhere."""
        by_deployment = {(r.controller.namespace, r.controller.deployment): r for r in self.running.values()}
        stood_in = {(c.namespace, c.deployment) for c in EVERY_CONTROLLER if self.built(c)}
        dialed: dict[tuple[str, str], str | None] | None = (
            None  # read once a step, only while a controller is not yet ready
        )
        for namespace in local_cluster.stand_in_namespaces():
            pods = _get(self.api, f"/api/v1/namespaces/{namespace}/pods")
            for pod in (pods or {}).get("items") or []:
                if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") != "Running":
                    continue
                deployment = (namespace, owner_deployment(pod) or "")
                running = by_deployment.get(deployment)
                ready = True  # nothing runs it here: Ready at once, as kwok makes a pod elsewhere
                if running is None and deployment in stood_in:
                    ready = False  # its process has not started yet (it waits for the Secrets it mounts)
                elif running is not None and local_cluster._pid(self.p, running.controller.name) is None:
                    ready = False  # exited: not ready until it runs and answers again
                elif running is not None and not running.ready:  # once ready, it stays so while it runs
                    if dialed is None:
                        listings = [(where, (_get(self.api, path) or {}).get("items") or []) for path, where in DIALING]
                        dialed = dialed_services(listings)
                    probes = probe_targets(running.container, running.services, dialed)
                    ready = all(answers(running.address, probe) for probe in probes)
                patch = readiness_patch(pod, ready)
                if patch is not None:
                    name = pod["metadata"]["name"]
                    self.api.request(
                        "PATCH",
                        f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                        patch,
                        "application/merge-patch+json",
                    )
                    print(f"pod {namespace}/{name}: Ready {ready}", flush=True)
                if running is not None and running.ready != ready:
                    self.write_endpoints(running.services, running.address, running.container, ready)
                    running.ready = ready

    def stop(self, name: str) -> None:
        local_cluster.stop(self.p, name)
        self.running.pop(name, None)
        self.hosts.pop(name, None)
        self.write_hosts()
        self.record()
        print(f"stopped {name}: its Deployment is gone", flush=True)

    def built(self, controller: Controller) -> bool:
        """The controller's toolchain component is built whole (not a binary go is still writing)."""
        tool = next(t for t in versions.TOOLCHAIN if controller.toolchain_binary in dict(t.binaries))
        return toolchain.is_built(tool) and (toolchain.cache_dir(tool) / "BUILD.json").exists()

    def pod_endpoints(self) -> None:
        """Endpoints for the Services no local controller serves, from their Ready pods (pod_endpoints)."""
        pods = self.api.get("/api/v1/pods")["items"]
        current = {
            (e["metadata"]["namespace"], e["metadata"]["name"]): e for e in self.api.get("/api/v1/endpoints")["items"]
        }
        for service in self.api.get("/api/v1/services")["items"]:
            key = (service["metadata"]["namespace"], service["metadata"]["name"])
            have = current.get(key)
            if have and (have["metadata"].get("labels") or {}).get(local_cluster.LOCAL_LABEL) == "controller":
                continue
            want = pod_endpoints(service, [p for p in pods if p["metadata"]["namespace"] == key[0]])
            if want is None or (have and have.get("subsets", []) == want["subsets"]):
                continue
            self.api.apply(f"/api/v1/namespaces/{key[0]}/endpoints", want)

    def step(self) -> None:
        try:
            self.pod_endpoints()
        except (KeyError, LocalClusterError, urllib.error.URLError) as err:
            print(f"supervisor: pod endpoints: {err}", flush=True)
        try:
            self.readiness()
        except (KeyError, LocalClusterError, urllib.error.URLError) as err:
            print(f"supervisor: readiness: {err}", flush=True)
        for controller in EVERY_CONTROLLER:
            if not self.built(controller):
                continue
            path = f"/apis/apps/v1/namespaces/{controller.namespace}/deployments/{controller.deployment}"
            deployment = _get(self.api, path)
            running = self.running.get(controller.name)
            if deployment is None:
                if running:
                    self.stop(controller.name)
                continue
            if running is None:
                secrets = self.api.get(f"/api/v1/namespaces/{controller.namespace}/secrets")["items"]
                missing = missing_secrets(
                    deployment["spec"]["template"]["spec"], {s["metadata"]["name"] for s in secrets}
                )
                if missing:
                    if self.waiting.get(controller.name) != missing:
                        print(f"{controller.name} waits for Secret {', '.join(missing)} (its volumes)", flush=True)
                    self.waiting[controller.name] = missing
                    continue
                self.waiting.pop(controller.name, None)
                self.start(controller, deployment)
                continue
            for secret, folder in running.secrets.items():
                sync_secret(self.api, controller.namespace, secret, folder)
            if local_cluster._pid(self.p, controller.name) is None:
                self.restart(running)

    def restart(self, running: Running) -> None:
        now = time.time()
        if running.exited_at is None:
            running.exited_at = now
            print(
                f"{running.controller.name} exited (log {running.log}); restart in {backoff(running.restarts):.0f} s",
                flush=True,
            )
            return
        if now - running.exited_at < backoff(running.restarts):
            return
        running.restarts += 1
        running.exited_at = None
        running.pid = local_cluster.start(
            self.p, running.controller.name, running.command, cwd=running.folder, env=running.env, append=True
        )
        running.started = now
        self.record()
        print(f"restarted {running.controller.name} (restart {running.restarts}, pid {running.pid})", flush=True)

    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self.shutdown())
        for controller in EVERY_CONTROLLER:  # left by a supervisor that did not stop cleanly: started afresh
            local_cluster.stop(self.p, controller.name)
        self.record()
        while True:
            try:
                self.step()
            except (OSError, urllib.error.URLError, LocalClusterError, KeyError) as err:
                print(f"supervisor: {err}", flush=True)
            time.sleep(POLL_SECONDS)

    def shutdown(self) -> None:
        """Every controller stopped together: SIGTERM, then SIGKILL after 10 s."""
        pids = {name: local_cluster._pid(self.p, name) for name in self.running}
        for pid in pids.values():
            if pid:
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(local_cluster._pid(self.p, name) for name in pids):
            time.sleep(0.2)
        for name in pids:
            local_cluster.stop(self.p, name, grace=0)
        sys.exit(0)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print("usage: python -m tooling.local.local_controllers STACK", file=sys.stderr)
        return 2
    stack = args[0]
    if not local_cluster.in_netns(stack):
        local_cluster.enter(stack)
    Supervisor(stack).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
