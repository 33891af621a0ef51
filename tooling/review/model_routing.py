"""Which pool a request reaches for each model and adapter name, read from what the stack registers (the review's
"Model routing" section and its check).

It replays, over the recorded objects, the two steps a request takes behind the stack's Gateway:
1. the body-based router (gateway-api-inference-extension@v1.5.0 pkg/bbr/plugins/basemodelextractor) sets
   X-Gateway-Base-Model-Name from the body's `model`: the `baseModel` of the ConfigMap listing the name under
   `adapters`, else the name itself when a ConfigMap names it as `baseModel`, else "" (adapters_store.go
   getBaseModel; it reads the ConfigMaps labelled inference.networking.k8s.io/bbr-managed: "true" in its own
   namespace, configmap_reconciler.go, templates/bbr.yaml NAMESPACE);
2. the Gateway picks the HTTPRoute rule whose header matches all equal the request's headers (Gateway API v1
   HTTPRouteMatch: "Multiple match values are ANDed together") and sends it to the rule's InferencePool.
A name that reaches no pool, or more than one, is a finding (`problems`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from stacks.serving import gateway
from workloads.vllm.plan import ROLE_LABEL, SIDECAR_CONTAINER  # the role label and sidecar the vLLM type renders

POOL_KIND = "InferencePool"


@dataclass(frozen=True)
class Route:
    name: str
    kind: str  # "base model" or "adapter of <base>"
    header: str  # the X-Gateway-Base-Model-Name the router sets
    pools: tuple[str, ...]  # <namespace>/<InferencePool> the Gateway sends it to (with its weight in a split)
    rules: int = 1  # the route rules that match it: one rule's several backendRefs are a weighted split, not a choice


def _config_maps(objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    return [
        o
        for o in objects
        if o.get("kind") == "ConfigMap"
        and (o.get("metadata") or {}).get("namespace") == namespace
        and ((o.get("metadata") or {}).get("labels") or {}).get(gateway.BBR_MANAGED_LABEL) == "true"
    ]


def adapters_store(objects: list[dict[str, Any]], namespace: str) -> tuple[dict[str, str], set[str]]:
    """adapter -> base model, and the base models, as the router builds them from its ConfigMaps."""
    adapters: dict[str, str] = {}
    bases: set[str] = set()
    for cm in _config_maps(objects, namespace):
        data = cm.get("data") or {}
        base = str(data.get("baseModel") or "").strip()
        if not base:
            continue  # parseBaseModelFromConfigMap: "missing or empty baseModel in configmap", skipped
        bases.add(base)
        listed = yaml.safe_load(data.get("adapters") or "[]") or []
        for name in listed:
            if str(name).strip():
                adapters[str(name).strip()] = base
    return adapters, bases


def base_model_header(name: str, adapters: dict[str, str], bases: set[str]) -> str:
    name = name.strip()
    if name in adapters:
        return adapters[name]
    return name if name in bases else ""


def _pools_for(headers: dict[str, str], routes: list[dict[str, Any]]) -> tuple[tuple[str, ...], int]:
    """The pools a request with `headers` reaches, and how many route rules match it. One rule with several
    backendRefs splits its requests by their weights (Gateway API HTTPRoute backendRefs.weight: a share of the sum, 1
    when unset; gateway-api@v1.6.1 config/crd/standard/gateway.networking.k8s.io_httproutes.yaml), so its pools
    carry their weight; several matching rules are an ambiguity."""
    found, rules = [], 0
    for route in routes:
        namespace = route["metadata"].get("namespace")
        for rule in route["spec"].get("rules", []):
            for match in rule.get("matches", [{}]):
                wanted = match.get("headers") or []
                if all(h.get("type", "Exact") == "Exact" and headers.get(h["name"]) == h["value"] for h in wanted):
                    refs = [b for b in rule.get("backendRefs", []) if b.get("kind") == POOL_KIND]
                    split = len(refs) > 1
                    found += [
                        f"{namespace}/{b['name']}" + (f" (weight {b.get('weight', 1)})" if split else "") for b in refs
                    ]
                    rules += 1
                    break
    return tuple(sorted(set(found))), rules


def routes(objects: list[dict[str, Any]], router_namespace: str | None) -> list[Route]:
    """Every model and adapter name the router knows, and every model a route matches, with the pools a request
    naming it in its body reaches. No router (`router_namespace` None): the client's header picks the route."""
    http_routes = [o for o in objects if o.get("kind") == "HTTPRoute"]
    route_models = {
        h["value"]
        for r in http_routes
        for rule in r["spec"].get("rules", [])
        for m in rule.get("matches", [])
        for h in m.get("headers") or []
        if h.get("name") == gateway.MODEL_HEADER
    }
    if router_namespace is None:
        return [
            Route(m, "base model (client-sent header)", m, *_pools_for({gateway.MODEL_HEADER: m}, http_routes))
            for m in sorted(route_models)
        ]
    adapters, bases = adapters_store(objects, router_namespace)
    out = []
    for name in sorted(bases | set(adapters) | route_models):
        header = base_model_header(name, adapters, bases)
        kind = f"adapter of `{adapters[name]}`" if name in adapters else "base model"
        headers = {gateway.MODEL_NAME_HEADER: name, gateway.MODEL_HEADER: header}
        out.append(Route(name, kind, header, *_pools_for(headers, http_routes)))
    return out


def problems(found: list[Route]) -> list[str]:
    """A name no pool or several pools answer."""
    out = []
    for r in found:
        if not r.pools:
            why = (
                "no ConfigMap of the body-based router names it, so the router sets an empty header no route matches"
                if not r.header
                else "no HTTPRoute matches it"
            )
            out.append(f"model {r.name!r} reaches no InferencePool: {why}")
        elif r.rules > 1:
            out.append(f"model {r.name!r} matches the routes of several pools: {', '.join(r.pools)}")
    return out


def lines(found: list[Route], router_namespace: str | None) -> list[str]:
    if not found:
        return ["No model is routed through a gateway."]
    intro = (
        f"A request names its model in the body only: the body-based router (`{router_namespace}/{gateway.BBR_NAME}`) "
        f"sets `{gateway.MODEL_HEADER}` from it and the Gateway's HTTPRoutes match that header."
        if router_namespace
        else f"Clients send `{gateway.MODEL_HEADER}` themselves (no body-based router)."
    )
    rows = [
        f"| `{r.name}` | {r.kind} | `{json.dumps(r.header)}` | "
        + (", ".join(f"`{p}`" for p in r.pools) or "**none**")
        + " |"
        for r in found
    ]
    return [
        intro,
        "",
        f"| `model` in the body | what it is | `{gateway.MODEL_HEADER}` set | InferencePool reached |",
        "| --- | --- | --- | --- |",
        *rows,
    ]


# ---- adapter-aware picking: inside the pool an adapter reaches ------------------------------------------------------


def pool_scorers(releases: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """<namespace>/<pool> -> {scorer: weight} of its picker's first scheduling profile (`default`, or `decode` under
    prefill/decode disaggregation: the profile that picks the server a request is answered by)."""
    out = {}
    for release in releases:
        values = release.get("values") or {}
        if not (values.get("router") or {}).get("modelServers"):
            continue
        profiles = {p.get("name"): p for p in _picker_config(values).get("schedulingProfiles") or []}
        profile = profiles.get("default") or profiles.get("decode") or {}
        out[f"{release.get('namespace')}/{release.get('name')}"] = {
            p.get("pluginRef"): p.get("weight", 1) for p in profile.get("plugins") or []
        }
    return out


def adapter_pools(found: list[Route]) -> list[str]:
    """The pools (without a split's weight) some adapter name reaches."""
    return sorted({p.split(" ")[0] for r in found if r.kind.startswith("adapter") for p in r.pools})


def lora_problems(found: list[Route], scorers: dict[str, dict[str, Any]]) -> list[str]:
    """A pool an adapter reaches whose picker does not score adapter affinity: it would pick a server regardless of
    whether the adapter is loaded there (gateway.LORA_AFFINITY_SCORER)."""
    return [
        f"pool {pool}: adapters reach it, but its picker runs no {gateway.LORA_AFFINITY_SCORER}"
        for pool in adapter_pools(found)
        if pool in scorers and gateway.LORA_AFFINITY_SCORER not in scorers[pool]
    ]


def lora_lines(found: list[Route], scorers: dict[str, dict[str, Any]]) -> list[str]:
    rows = [
        f"- `{pool}`: " + ", ".join(f"`{name}` (weight {weight})" for name, weight in scorers.get(pool, {}).items())
        for pool in adapter_pools(found)
    ]
    if not rows:
        return []
    return [
        "",
        f"Inside a pool adapters reach, the picker's scorers (`{gateway.LORA_AFFINITY_SCORER}` prefers a server with "
        "the request's adapter loaded, read from vLLM's `vllm:lora_requests_info`):",
        "",
        *rows,
    ]


# ---- prefill/decode disaggregation: the path a request takes inside a pool -----------------------------------------
# The picker's disagg-profile-handler picks a decode server, then (prefix-based-pd-decider) a prefill server; the
# decode server's routing sidecar sends the prefill there first and the decode server pulls its KV cache
# (stacks/serving/gateway.py PD_PLUGINS, workloads/vllm/manifests.py routing_sidecar). Read here from the recorded
# router releases' picker configuration and the Deployments their pools select.


@dataclass(frozen=True)
class PdPath:
    pool: str  # <namespace>/<InferencePool>
    prefill: tuple[str, ...]  # "<Deployment> (N replicas, <kv_role>)"
    decode: tuple[str, ...]
    handler: bool  # the pool's picker runs the disagg-profile-handler
    decider: dict[str, Any]  # its prefix-based-pd-decider parameters
    sidecars: bool  # every decode server has the routing sidecar


def _picker_config(values: dict[str, Any]) -> dict[str, Any]:
    epp = (values.get("router") or {}).get("epp") or {}
    text = str((epp.get("pluginsCustomConfig") or {}).get(epp.get("pluginsConfigFile") or "") or "")
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text) or {}


def _kv_role(container: dict[str, Any]) -> str:
    for arg in container.get("args") or []:
        if str(arg).startswith("--kv-transfer-config="):
            try:
                return str(json.loads(str(arg).split("=", 1)[1]).get("kv_role", "?"))
            except ValueError:
                return "?"
    return "no KV connector"


def pd_paths(objects: list[dict[str, Any]], releases: list[dict[str, Any]]) -> list[PdPath]:
    """Per router release whose pool selects pods labelled with the router's role label (or whose picker splits
    prefill from decode): the Deployments of each role and what carries the request between them."""
    out = []
    for release in releases:
        values = release.get("values") or {}
        servers = (values.get("router") or {}).get("modelServers")
        if not servers:
            continue
        namespace, selector = release.get("namespace"), servers.get("matchLabels") or {}
        config = _picker_config(values)
        types = {p.get("type"): p for p in config.get("plugins") or []}
        roles: dict[str, list[str]] = {"prefill": [], "decode": []}
        sidecars = True
        for d in objects:
            if d.get("kind") != "Deployment" or d["metadata"].get("namespace") != namespace:
                continue
            template = d["spec"]["template"]
            labels = (template.get("metadata") or {}).get("labels") or {}
            role = labels.get(ROLE_LABEL)
            if role not in roles or any(labels.get(k) != v for k, v in selector.items()):
                continue
            containers = template["spec"]["containers"]
            server = next((c for c in containers if c["name"] != SIDECAR_CONTAINER), containers[0])
            roles[role].append(
                f"`{d['metadata']['name']}` ({d['spec'].get('replicas', '?')} replicas, {_kv_role(server)})"
            )
            if role == "decode" and all(c["name"] != SIDECAR_CONTAINER for c in containers):
                sidecars = False
        handler = "disagg-profile-handler" in types
        if handler or roles["prefill"] or roles["decode"]:
            decider = (types.get("prefix-based-pd-decider") or {}).get("parameters") or {}
            pool = f"{namespace}/{release.get('name')}"
            out.append(PdPath(pool, tuple(roles["prefill"]), tuple(roles["decode"]), handler, decider, sidecars))
    return out


def pd_problems(paths: list[PdPath]) -> list[str]:
    """A pool whose picker and servers disagree on prefill/decode: a request could never reach a role, or no decode
    server could send a prefill anywhere."""
    out = []
    for p in paths:
        if not p.handler:
            out.append(f"pool {p.pool}: servers labelled prefill/decode, but its picker runs no disagg-profile-handler")
        if not p.prefill or not p.decode:
            missing = "prefill" if not p.prefill else "decode"
            out.append(f"pool {p.pool}: its picker splits prefill from decode, but no {missing} server is in the pool")
        if not p.sidecars:
            out.append(f"pool {p.pool}: a decode server has no routing sidecar to send the prefill with")
    return out


def pd_lines(paths: list[PdPath]) -> list[str]:
    if not paths:
        return []
    rows = []
    for p in paths:
        threshold = p.decider.get("nonCachedTokens", "?")
        gate = p.decider.get("promptTokens", 0)
        rows.append(
            f"- `{p.pool}`: Gateway -> picker `decode` profile -> decode server {', '.join(p.decode) or '**none**'}, "
            f"whose routing sidecar (:8000) -> when at least {threshold} prompt tokens are not cached there"
            + (f" and the prompt has at least {gate} tokens" if gate else "")
            + f", picker `prefill` profile -> prefill server {', '.join(p.prefill) or '**none**'} (max_tokens 1) -> "
            "KV cache pulled by the decode server over the TPU connector (:9100, side channel :9600) -> decode "
            "server (:8200) generates; otherwise the decode server prefills itself."
        )
    return ["", "Prefill/decode disaggregation, the path of a request inside its pool:", "", *rows]
