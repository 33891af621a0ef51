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
