"""The stack's GKE Inference Gateway, as plain data: which GatewayClass an exposure means, the one Gateway, and the
commands that reach it. The component (components/gateway.py) only registers what these functions return.

How a request flows (docs/gateway.md): client -> the regional Application Load Balancer GKE builds for
the Gateway (its Envoy proxies run in the VPC's proxy-only subnet) -> HTTPRoute of the workload -> the workload's
InferencePool -> the endpoint picker (ext-proc, port 9002) picks one serving pod by queue depth and KV-cache use ->
the pod's HTTP port on a TPU host.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from stacks import naming
from stacks.facts.versions import BODY_BASED_ROUTER, LLM_D_ROUTER, ChartVersion

# GatewayClass per exposure. Both are regional Application Load Balancers whose proxies live in a proxy-only subnet
# (REGIONAL_MANAGED_PROXY) of the cluster's VPC and region:
# - gke-l7-rilb: regional internal Application Load Balancer (GKE "GatewayClass capabilities",
#   https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities);
# - gke-l7-regional-external-managed: regional external Application Load Balancer, reachable from the internet
#   (https://llm-d.ai/docs/resources/gateway/gke "Regional External Application Load Balancer";
#   llm-d/llm-d-router@v0.10.0:config/manifests/gateway/gke/gateway.yaml).
GATEWAY_CLASSES: dict[str, str] = {
    "internal": "gke-l7-rilb",
    "external": "gke-l7-regional-external-managed",
}

GATEWAY_NAME = "inference-gateway"
GATEWAY_NAMESPACE = "inference-gateway"
LISTENER_NAME = "http"
LISTENER_PORT = 80

# The Helm post-renderer the router release runs (a path from the project root, as entry.DROP_API_SERVICES): the
# chart's HTTP HealthCheckPolicy names a port without `portSpecification`, which GKE's HealthCheckPolicy CRD refuses
# (scripts/helm_postrender_health_check_port.py says where); it adds USE_FIXED_PORT, what the chart means.
FIX_HEALTH_CHECK_PORT = "scripts/helm_postrender_health_check_port.py"


def route_namespace_selector(route_namespaces: list[str]) -> dict[str, Any]:
    """Which namespaces may attach HTTPRoutes to the Gateway: exactly the gateway-served workloads' namespaces
    (none: the Gateway's own, which holds no routes), never every namespace of the cluster."""
    if not route_namespaces:
        return {"from": "Same"}
    return {
        "from": "Selector",
        "selector": {
            "matchExpressions": [
                {"key": naming.NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(route_namespaces))}
            ]
        },
    }


def gateway_manifest(exposure: str, route_namespaces: list[str]) -> dict[str, Any]:
    """The one Gateway of the stack: an HTTP listener on port 80 of a regional load balancer."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": GATEWAY_NAMESPACE, "labels": dict(naming.MANAGED_BY_LABELS)},
        "spec": {
            "gatewayClassName": GATEWAY_CLASSES[exposure],
            "listeners": [
                {
                    "name": LISTENER_NAME,
                    "port": LISTENER_PORT,
                    "protocol": "HTTP",
                    "allowedRoutes": {"namespaces": route_namespace_selector(route_namespaces)},
                }
            ],
        },
    }


def address_command() -> str:
    """Prints the Gateway's IP once GKE has programmed the load balancer (status.addresses, Gateway API v1)."""
    return f"kubectl get gateway {GATEWAY_NAME} -n {GATEWAY_NAMESPACE} -o jsonpath='{{.status.addresses[0].value}}'"


def gateway_summary(exposure: str, route_namespaces: list[str]) -> dict[str, Any]:
    """The `gateway` stack output: class, where it is reachable from, and how to get its address."""
    return {
        "name": GATEWAY_NAME,
        "namespace": GATEWAY_NAMESPACE,
        "gatewayClassName": GATEWAY_CLASSES[exposure],
        "exposure": exposure,
        "reachableFrom": "the cluster's VPC (and networks connected to it)"
        if exposure == "internal"
        else "the internet, limited by the stack's Cloud Armor policy",
        "routeNamespaces": sorted(set(route_namespaces)),
        "addressCommand": address_command(),
    }


# ---- per workload: InferencePool, endpoint picker, HTTPRoute --------------------------------------------------

# Model selection: each workload's HTTPRoute matches this header, exactly the served model name (the "model" of
# the OpenAI request body). It is the header the llm-d gateway chart's own HTTPRoute matches for a base model
# (llm-d/llm-d-router@v0.10.0:config/charts/llm-d-router-gateway/templates/httproute.yaml, httpRoute.baseModel),
# and the one the stack's body-based router sets from the body (BBR_NAME below): clients send no header.
MODEL_HEADER = "X-Gateway-Base-Model-Name"
INFERENCE_API = "inference.networking.k8s.io"
# The endpoint picker's ext-proc gRPC port (routerlib values.yaml router.epp.extProcPort) and gRPC health port
# (templates/_gke.yaml: "The GKE gateway controller health-checks the EPP backend on gRPC port 9003 by default").
EPP_EXT_PROC_PORT = 9002
EPP_HEALTH_PORT = 9003
# The picker's metrics port (routerlib templates/_deployment.yaml: container port `metrics` 9090; the picker's
# --metrics-port default, llm-d/llm-d-router@v0.10.0:pkg/epp/server/options.go), scraped by the chart's
# PodMonitoring (templates/_gke.yaml, with router.monitoring.provider gmp and prometheus.enabled).
EPP_METRICS_PORT = 9090
# The picker's configuration file the stack writes (router.epp.pluginsCustomConfig, selected by
# router.epp.pluginsConfigFile): the chart's default-plugins.yaml for an HTTP vLLM pool (routerlib
# templates/_config.yaml: the queue, KV-cache and prefix-cache scorers weighted 2, 2, 3, vLLM's metrics read from
# /metrics) plus the flowControl feature gate, off by default ("the flowControl gate is registered as disabled by
# default", llm-d/llm-d-router@v0.10.0:cmd/epp/runner/feature_gate_test.go; a bare name means =true,
# apix/config/v1alpha1/endpointpickerconfig_types.go FeatureGates). With it the picker holds requests in its
# flow-control queue while the pool is saturated instead of piling them on the servers.
EPP_CONFIG_FILE = "tpu-serving-plugins.yaml"
FLOW_CONTROL_GATE = "flowControl"
# The picker's CPU and memory: the chart's default asks 8 CPUs and 8Gi (routerlib values.yaml), more than a
# system node of the default machine type (e2-standard-4) has; one workload's picker needs far less.
EPP_RESOURCES = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "8Gi"}}


@dataclass(frozen=True)
class GatewayBackend:
    """Where the gateway finds one workload: its serving pods (the leaders of a multi-host LeaderWorkerSet), their
    HTTP port, and the model name they serve."""

    name: str  # the workload's name: the InferencePool and the endpoint picker release are named after it
    namespace: str
    selector: dict[str, str]
    port: int
    model: str
    # `kubectl -n <ns> exec <pod> -c <container>` of a serving container with python3 (vLLM's image), from which
    # a request to an internal gateway leaves from inside the VPC; "" when there is none
    exec_in: str = ""
    # For a workload KEDA scales to zero, how long a request may wait in the picker's queue for the first replica
    # (WorkloadPlan.from_zero_budget_s, set by stacks/pieces/gateway.py); None: the picker's default (`epp_config`).
    queue_ttl_s: int | None = None
    # the serving pods by labels whose keys are letters, digits, `-` and `_` only, as GKE's AutoscalingMetric
    # selector needs them (stacks/fleets/fleet.py G1); None when `selector` is already such
    metric_selector: dict[str, str] | None = None
    # What its workload type says of its servers (workloads/<type>/): the router's `modelServers.type` for them
    # (llm-d/llm-d-router@v0.10.0:config/charts/README.md: vllm, sglang, triton-tensorrt-llm, trtllm-serve, triton),
    # and the KV-cache utilisation gauge (0-1) they export, the signal a fleet's spill-over balances on (stacks/fleets/fleet.py
    # F1); "" when they export none: such a workload cannot be exported to a fleet.
    model_server_type: str = field(kw_only=True)
    kv_cache_metric: str = field(default="", kw_only=True)
    # The LoRA adapters its servers serve beside `model` (the names clients put in `model`): the body-based router
    # maps each to `model`, so a request naming one reaches this workload's pool (`model_config_map`).
    adapters: tuple[str, ...] = field(default=(), kw_only=True)
    # Its InferenceObjectives (name, priority): a request naming one in OBJECTIVE_HEADER is queued at that priority
    # by the pool's picker (`router_values`).
    objectives: tuple[tuple[str, int], ...] = field(default=(), kw_only=True)
    # Prefill/decode disaggregation (`pd_config`): the prefix-based decider's (nonCachedTokens, promptTokens); None:
    # every server prefills and decodes.
    disaggregation: tuple[int, int] | None = field(default=None, kw_only=True)

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every name a request's `model` may carry to reach this workload: its model, then its adapters."""
        return (self.model, *self.adapters)

    # Under a workload's rollout (stacks/serving/release.py): the HTTPRoute it shares with the workload's other server
    # set (the workload's name) and its weight there, in percent; "" and None: a route of its own, no weight.
    route: str = field(default="", kw_only=True)
    weight: int | None = field(default=None, kw_only=True)

    @property
    def route_name(self) -> str:
        return self.route or self.name

    @property
    def metric_labels(self) -> dict[str, str]:
        return dict(self.metric_selector if self.metric_selector is not None else self.selector)


def epp_name(release: str) -> str:
    """The picker's Deployment and Service name (routerlib _helpers.tpl llm-d-router.name: release, lowercased,
    at most 40 characters, + "-epp")."""
    return f"{release.lower().strip()[:40]}-epp"


def epp_pod_labels(release: str) -> dict[str, str]:
    """The labels of the picker's pods (routerlib _helpers.tpl llm-d-router.selectorLabels in gateway mode:
    `llm-d-router-gateway: <picker name>`; templates/_deployment.yaml puts them on the pod template)."""
    return {"llm-d-router-gateway": epp_name(release)}


# How long the GKE load balancer waits for a response from the pool: the chart's GCPBackendPolicy `default.timeoutSec`
# (llm-d/llm-d-router@v0.10.0:config/charts/llm-d-router-gateway/templates/gke.yaml: `timeoutSec: 300`, written in
# the template, no value sets it). A request that waits longer for a replica is cut by the load balancer.
BACKEND_TIMEOUT_S = 300


# Prefill/decode disaggregation in the picker (llm-d/llm-d-router@v0.10.0:docs/disaggregation.md "P/D
# Configuration", "Profile Handler Configuration"): the disagg-profile-handler runs the `decode` profile first (its
# default stageOrder decode-first), then asks the prefix-based-pd-decider whether the prompt's part not cached on
# the chosen decode server is long enough to prefill elsewhere; if so the `prefill` profile picks a prefill server
# and the decode server's routing sidecar receives it in x-prefiller-host-port. prefill-filter and decode-filter keep
# the pods labelled llm-d.ai/role prefill / decode (pkg/epp/framework/plugins/scheduling/filter/bylabel/roles.go);
# the approximate prefix producer the decider and the prefix scorer read is registered as the default producer of
# their data (cmd/epp/runner/runner.go RegisterAsDefaultProducer(ApproxPrefixCachePluginType ...)), as in the
# single-profile configuration. Plugin types: prefill-filter, decode-filter (roles.go), max-score-picker
# (scheduling/picker/maxscore/picker.go), prefix-based-pd-decider and disagg-profile-handler
# (scheduling/profilehandler/disagg/).
PD_PLUGINS = (
    "prefill-filter",
    "decode-filter",
    "max-score-picker",
    "prefix-based-pd-decider",
    "disagg-profile-handler",
)


def pd_config(config: dict[str, Any], non_cached_tokens: int, prompt_tokens: int) -> dict[str, Any]:
    """`config` with the prefill and decode profiles in place of its default one, each keeping its scorers."""
    scorers = config["schedulingProfiles"][0]["plugins"]
    return {
        **config,
        "plugins": [
            *config["plugins"],
            {"type": "prefill-filter"},
            {"type": "decode-filter"},
            {"type": "max-score-picker"},
            {
                "type": "prefix-based-pd-decider",
                "parameters": {"nonCachedTokens": non_cached_tokens, "promptTokens": prompt_tokens},
            },
            {
                "type": "disagg-profile-handler",
                "parameters": {
                    "profiles": {"prefill": "prefill", "decode": "decode"},
                    "deciders": {"prefill": "prefix-based-pd-decider"},
                },
            },
        ],
        "schedulingProfiles": [
            {
                "name": role,
                "plugins": [{"pluginRef": f"{role}-filter"}, {"pluginRef": "max-score-picker"}, *scorers],
            }
            for role in ("prefill", "decode")
        ],
    }


# Adapter-aware routing for a workload whose servers serve LoRA adapters (`GatewayBackend.adapters`): the picker's
# lora-affinity-scorer (llm-d/llm-d-router@v0.10.0:pkg/epp/framework/plugins/scheduling/scorer/loraaffinity/
# lora_affinity.go:29, LoraAffinityScorerType; its factory reads no parameters) scores a server 1.0 when the request's
# adapter is active there, 0.8 when it has room to load one more, 0.6 when the adapter waits to load, else 0. It reads
# the active and waiting adapter sets the core-metrics-extractor parses from vLLM's `vllm:lora_requests_info` gauge
# (pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go:95), the extractor every picker config here
# already runs. Weight 1 beside the load scorers' 2, 2 and 3 (the stack's choice, no upstream default): affinity moves a
# request towards a server holding its adapter without outweighing a full queue or KV cache there.
LORA_AFFINITY_SCORER = "lora-affinity-scorer"
LORA_AFFINITY_WEIGHT = 1


def epp_config(
    queue_ttl_s: int | None = None, disaggregation: tuple[int, int] | None = None, *, lora: bool = False
) -> str:
    """The endpoint picker's configuration (EndpointPickerConfig, llm-d.ai/v1alpha1): see EPP_CONFIG_FILE. With
    `queue_ttl_s` (a workload KEDA scales to zero), the flow-control queue keeps a request that long: the picker
    sheds a request still queued after `flowControl.defaultRequestTTL`, 60 s unless set, a metav1.Duration
    (llm-d/llm-d-router@v0.10.0:apix/config/v1alpha1/endpointpickerconfig_types.go EndpointPickerConfig.FlowControl,
    FlowControlConfig.DefaultRequestTTL; pkg/epp/flowcontrol/controller/config.go defaultRequestTTL = 60s,
    NewConfigFromAPI), far less than a replica's start from zero; a shed request also empties the queue KEDA
    reads, leaving the starting replica to its cooldown. With `lora` (servers serving adapters) the default profile
    also runs LORA_AFFINITY_SCORER."""
    config: dict[str, Any] = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "featureGates": [FLOW_CONTROL_GATE],
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }
    if lora:
        config["plugins"].insert(3, {"type": LORA_AFFINITY_SCORER})
        config["schedulingProfiles"][0]["plugins"].append(
            {"pluginRef": LORA_AFFINITY_SCORER, "weight": LORA_AFFINITY_WEIGHT}
        )
    if queue_ttl_s is not None:
        config["flowControl"] = {"defaultRequestTTL": f"{queue_ttl_s}s"}
    if disaggregation is not None:
        config = pd_config(config, *disaggregation)
    return json.dumps(config, indent=2)


def chart_image(chart: ChartVersion) -> dict[str, str]:
    """A chart's `image` values for its pinned image, which the chart joins as <registry>/<repository>:<tag>."""
    registry, repository = chart.image_repository.rsplit("/", 1)
    return {"registry": registry, "repository": repository, "tag": chart.image_tag, "pullPolicy": "IfNotPresent"}


def router_values(backend: GatewayBackend, system_selector: dict[str, str]) -> dict[str, Any]:
    """Values of the llm-d-router-gateway chart for one workload (every key exists in the chart's values.yaml or
    its routerlib's, a test checks): the chart creates the InferencePool (named after the release) selecting the
    serving pods on their port, the endpoint picker for it, and with provider gke the HealthCheckPolicy (HTTP
    /health on the pods' port) and GCPBackendPolicy GKE's load balancer reads."""
    values: dict[str, Any] = {
        "provider": {"name": "gke"},
        "router": {
            "modelServers": {
                "matchLabels": dict(backend.selector),
                "targetPorts": [{"number": backend.port}],
                "type": backend.model_server_type,
                "protocol": "http",
            },
            # create: the picker runs with --pool-name (routerlib templates/_deployment.yaml), the mode in which it
            # discovers the optional InferenceObjective CRD and skips it when absent (docs/gateway.md, a test
            # cites llm-d/llm-d-router@v0.10.0:pkg/epp/server/controller_config.go); no router.inferenceObjectives,
            # so the chart renders no InferenceObjective and needs no CRD GKE does not install
            "inferencePool": {"create": True, "failureMode": "FailOpen"},
            # the chart's PodMonitoring for Managed Prometheus, reading /metrics with a service account token it
            # creates (and lets GMP's collector read): routerlib templates/_gke.yaml
            "monitoring": {"provider": {"name": "gmp"}, "prometheus": {"enabled": True}},
            "epp": {
                "replicas": 1,
                "pluginsConfigFile": EPP_CONFIG_FILE,
                "pluginsCustomConfig": {
                    EPP_CONFIG_FILE: epp_config(
                        backend.queue_ttl_s, backend.disaggregation, lora=bool(backend.adapters)
                    )
                },
                # the chart joins <registry>/<repository>:<tag> (routerlib templates/_deployment.yaml)
                "image": chart_image(LLM_D_ROUTER),
                "resources": EPP_RESOURCES,
                # the picker is a CPU pod: the system pool, never a TPU node
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": k, "operator": "In", "values": [v]}
                                        for k, v in sorted(system_selector.items())
                                    ]
                                }
                            ]
                        }
                    }
                },
            },
        },
    }
    if backend.objectives:
        # the chart renders one InferenceObjective per entry, poolRef the release's pool (routerlib
        # templates/_inferenceobjective.yaml); its CRD is the stack's (versions.INFERENCE_OBJECTIVE_CRDS)
        values["router"]["inferenceObjectives"] = [{"name": n, "priority": p} for n, p in backend.objectives]
    return values


def inference_pool_manifest(backend: GatewayBackend) -> dict[str, Any]:
    """The InferencePool the chart renders from `router_values` (routerlib templates/_inferencepool.yaml at
    v0.10.0): shown in the render and validated against the CRD; the chart, not the stack, applies it."""
    return {
        "apiVersion": f"{INFERENCE_API}/v1",
        "kind": "InferencePool",
        "metadata": {"name": backend.name, "namespace": backend.namespace},
        "spec": {
            "targetPorts": [{"number": backend.port}],
            "appProtocol": "http",
            "selector": {"matchLabels": dict(backend.selector)},
            "endpointPickerRef": {
                "name": epp_name(backend.name),
                "port": {"number": EPP_EXT_PROC_PORT},
                "failureMode": "FailOpen",
            },
        },
    }


def routes(backends: Sequence[GatewayBackend]) -> dict[str, list[GatewayBackend]]:
    """The backends by the HTTPRoute they are served under, in order: one each, or a rollout's two sets under their
    workload's name."""
    out: dict[str, list[GatewayBackend]] = {}
    for b in backends:
        out.setdefault(b.route_name, []).append(b)
    return out


def pool_ref(backend: GatewayBackend) -> dict[str, str]:
    """The backend's InferencePool as a reference (group, kind, name): what its HTTPRoute sends to and what the
    router chart's GCPBackendPolicy (named after the release) targets (llm-d-router v0.10.0
    config/charts/llm-d-router-gateway/templates/gke.yaml; a test renders the chart)."""
    return {"group": INFERENCE_API, "kind": "InferencePool", "name": backend.name}


def backend_ref(backend: GatewayBackend) -> dict[str, Any]:
    """An HTTPRoute backendRef to the backend's InferencePool, with its weight under a rollout (Gateway API v1
    HTTPBackendRef.weight: the share weight/(sum of the list's weights), 0 to 1000000, 0 forwarding nothing:
    kubernetes-sigs/gateway-api@v1.6.1 config/crd/standard/gateway.networking.k8s.io_httproutes.yaml)."""
    ref: dict[str, Any] = dict(pool_ref(backend))
    if backend.weight is not None:
        ref["weight"] = backend.weight
    return ref


def http_route_manifest(backend: GatewayBackend, *more: GatewayBackend) -> dict[str, Any]:
    """The workload's route: requests to the stack's Gateway whose model header names this workload's model go to
    its InferencePool (the endpoint picker chooses the pod); under a rollout, to its two sets' InferencePools by
    their weights (`more`: the other set)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": backend.route_name,
            "namespace": backend.namespace,
            "labels": dict(naming.MANAGED_BY_LABELS),
        },
        "spec": {
            "parentRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "Gateway",
                    "name": GATEWAY_NAME,
                    "namespace": GATEWAY_NAMESPACE,
                    "sectionName": LISTENER_NAME,
                }
            ],
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/"},
                            "headers": [{"type": "Exact", "name": MODEL_HEADER, "value": backend.model}],
                        }
                    ],
                    "backendRefs": [backend_ref(b) for b in (backend, *more)],
                }
            ],
        },
    }


def curl_command(backend: GatewayBackend) -> str:
    """One completion through the Gateway (from where the Gateway is reachable): a plain OpenAI request, the model
    named in its body only (the body-based router sets the header the route matches)."""
    body = json.dumps({"model": backend.model, "prompt": "What is a TPU?", "max_tokens": 64})
    return (
        f'curl -s "http://$({address_command()})/v1/completions" -H "Content-Type: application/json" '
        f"-d {shlex.quote(body)}"
    )


def in_cluster_command(backend: GatewayBackend) -> str | None:
    """The same completion sent from inside the VPC (a serving container, with the Python its image has): an
    internal gateway's address answers only there, not on an operator's machine. kubectl reads the Gateway's address
    locally and hands it to the request as an argument."""
    if not backend.exec_in:
        return None
    body = json.dumps({"model": backend.model, "prompt": "What is a TPU?", "max_tokens": 64})
    # string literals written as JSON strings (valid Python), so the shell's single quotes hold the script whole
    script = (
        'import sys, urllib.request as u; r = u.Request("http://" + sys.argv[1] + "/v1/completions", '
        f'data={json.dumps(body)}.encode(), headers={{"Content-Type": "application/json"}}); '
        "print(u.urlopen(r, timeout=300).read().decode())"
    )
    return f'ADDRESS=$({address_command()}) && {backend.exec_in} -- python3 -c {shlex.quote(script)} "$ADDRESS"'


# The header naming a request's InferenceObjective (llm-d/llm-d-router@v0.10.0 pkg/epp/metadata/consts.go
# ObjectiveKey; the picker gives a request without one, or naming none of the pool's, priority 0:
# pkg/epp/requestcontrol/director.go getInferenceObjective). Flow control (FLOW_CONTROL_GATE, on) serves higher
# priorities first while the pool is saturated (the CRD's spec.priority).
OBJECTIVE_HEADER = "x-llm-d-inference-objective"


# ---- body-based routing: one endpoint, the model read from the request body ------------------------------------

# The body-based router (BODY_BASED_ROUTER, gateway-api-inference-extension@v1.5.0:config/charts/body-based-routing),
# one per stack in the Gateway's namespace: the chart's GCPRoutingExtension (templates/gke.yaml, with provider gke)
# puts it in front of the Gateway's routing (targetRefs the Gateway `inferenceGateway.name`, a local reference, so
# the release lives in the Gateway's namespace), sending it each request's headers and body (supportedEvents
# RequestHeaders, RequestBody). Its two plugins (values.yaml bbr.plugins, the runner's defaults):
# - body-field-to-header: the body's `model` into X-Gateway-Model-Name (pkg/bbr/plugins/bodyfieldtoheader);
# - base-model-to-header: X-Gateway-Base-Model-Name set to the base model of that name: the name itself for a base
#   model, the `baseModel` of the ConfigMap listing it under `adapters` for an adapter, "" for a name no ConfigMap
#   names (pkg/bbr/plugins/basemodelextractor/base_model_to_header.go ProcessRequest, adapters_store.go
#   getBaseModel). It reads the ConfigMaps labelled inference.networking.k8s.io/bbr-managed: "true"
#   (configmap_reconciler.go bbrManagedLabel) in its own namespace (bbr.multiNamespace false: templates/bbr.yaml
#   sets NAMESPACE and a namespaced Role).
# The router overwrites X-Gateway-Base-Model-Name whatever the client sent, so each workload's HTTPRoute keeps
# matching that header (http_route_manifest) and clients send no header at all.
BBR_NAME = "body-based-router"  # values.yaml bbr.name: the Deployment, Service and GCPRoutingExtension
BBR_PORT = 9004  # values.yaml bbr.port: ext_proc (gRPC)
BBR_HEALTH_PORT = 9005  # values.yaml bbr.healthCheckPort: the chart's HealthCheckPolicy (GRPC, USE_FIXED_PORT)
BBR_MANAGED_LABEL = "inference.networking.k8s.io/bbr-managed"
MODEL_NAME_HEADER = "X-Gateway-Model-Name"
BBR_PLUGINS = (
    {
        "type": "body-field-to-header",
        "name": "model-extractor",
        "json": {"fieldName": "model", "headerName": MODEL_NAME_HEADER},
    },
    {"type": "base-model-to-header", "name": "base-model-mapper"},
)


def body_router_values() -> dict[str, Any]:
    """Values of the body-based-routing chart (every key exists in its values.yaml, a test checks)."""
    return {
        "provider": {"name": "gke"},
        "inferenceGateway": {"name": GATEWAY_NAME},
        "bbr": {
            "name": BBR_NAME,
            "replicas": 1,
            # templates/bbr.yaml joins <registry>/<repository>:<tag>
            "image": chart_image(BODY_BASED_ROUTER),
            "port": BBR_PORT,
            "healthCheckPort": BBR_HEALTH_PORT,
            "multiNamespace": False,
            "plugins": [dict(p) for p in BBR_PLUGINS],
        },
    }


def body_router_pod_labels() -> dict[str, str]:
    """The router's pod labels (templates/bbr.yaml: `app: <bbr.name>`)."""
    return {"app": BBR_NAME}


def model_config_map(backend: GatewayBackend) -> dict[str, Any]:
    """The ConfigMap that tells the body-based router a workload's base model and its adapters (adapters_store.go
    parseConfigMap: `baseModel`, and `adapters` a YAML list of names), in the router's namespace. Its name carries
    the workload's namespace: two workloads of one name in two namespaces get two ConfigMaps."""
    name = naming.fit(f"{backend.namespace}-{backend.name}-models", naming.LABEL_MAX)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": GATEWAY_NAMESPACE,
            "labels": {**naming.MANAGED_BY_LABELS, BBR_MANAGED_LABEL: "true"},
        },
        "data": {"baseModel": backend.model, "adapters": json.dumps(list(backend.adapters))},
    }


@dataclass(frozen=True)
class ModelRoute:
    """Where a request naming `name` in its body goes: the header the router sets, the route and pool."""

    name: str
    base_model: str
    adapter: bool
    route: str  # <namespace>/<HTTPRoute name>
    pool: str  # <namespace>/<InferencePool name>


def model_routes(backends: tuple[GatewayBackend, ...] | list[GatewayBackend]) -> list[ModelRoute]:
    """Each model and adapter name of the served workloads, and the pool a request naming it reaches."""
    return sorted(
        (
            ModelRoute(
                name,
                b.model,
                name != b.model,
                f"{b.namespace}/{b.name}",
                f"{b.namespace}/{b.name}",
            )
            for b in backends
            for name in b.model_names
        ),
        key=lambda r: r.name,
    )
