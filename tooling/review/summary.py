"""summary.md of a render: what a reviewer checks first, in one page, in that order (SECTIONS).

Every warning, the estimated cost, every IAM grant, every network exposure, the protection of each stateful
resource, workloads, TPU pools, time to serve; then the stack outputs as `pulumi stack output --json` prints them,
every image and its pinned version, the Helm releases, what GKE manages, resources by type, and the resource graph
last.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from stacks.config import StackConfig
from stacks.facts import gke_managed, versions
from tooling.harness.k8s_objects import is_object, kubernetes_objects, plain
from tooling.harness.offline import UNKNOWN, Recording, Registration
from tooling.oracles import chart_objects
from tooling.review import model_routing
from tooling.review.graph import (
    MERMAID_MAX_EDGES,
    MERMAID_MAX_TEXT,
    component_graph,
    fits_github,
    full_graph,
    short_type,
)

SECRET = "[secret]"  # what `pulumi stack output` prints for a secret without --show-secrets
STATEFUL = ("gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool", "gcp:storage/bucket:Bucket")


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out.extend("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows)
    return out


def code(text: Any) -> str:
    return f"`{text}`"


# ---- stack outputs -----------------------------------------------------------------------------------------


def stack_outputs(recording: Recording) -> str:
    """The outputs as `pulumi stack output --json` prints them: a JSON object with sorted keys, indented by two
    spaces, each secret output replaced by "[secret]" (pulumi/pulumi pkg/cmd/pulumi/stack/stack_output.go:
    display.MassageSecrets, then ui.FprintJSON; Go's encoding/json sorts map keys). Values the cloud computes
    print as "(known after apply)": the render is a first preview."""
    shown = {k: (SECRET if k in recording.secret_outputs else v) for k, v in recording.outputs.items()}
    return json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False)


# ---- IAM ---------------------------------------------------------------------------------------------------


def _account_email(account: Registration, project: str) -> str:
    # a service account's email is <accountId>@<project>.iam.gserviceaccount.com
    # (https://cloud.google.com/iam/docs/service-account-overview)
    return f"{account.inputs.get('accountId')}@{account.inputs.get('project') or project}.iam.gserviceaccount.com"


def iam_grants(recording: Recording, project: str) -> list[list[str]]:
    by_urn = {r.urn: r for r in recording.resources}
    rows = []
    for reg in recording.resources:
        if not reg.type.startswith("gcp:") or not reg.type.endswith(("IAMMember", "IAMBinding")):
            continue
        inputs = plain(reg.inputs, mask_secrets=True)
        accounts = [
            by_urn[d]
            for d in reg.dependencies
            if d in by_urn and by_urn[d].type == "gcp:serviceaccount/account:Account"
        ]
        email = _account_email(accounts[0], project) if len(accounts) == 1 else None
        members = inputs.get("members") or [inputs.get("member")]
        members = [f"serviceAccount:{email}" if m == UNKNOWN and email else m for m in members]
        module = reg.type.split(":")[1].split("/")[0]
        if module == "storage":
            # a prefix-scoped grant shows its prefix (the condition's title, stacks/security/bucket_access.py)
            condition = inputs.get("condition") or {}
            on = f"bucket {code(inputs.get('bucket'))}" + (f", {condition['title']}" if condition.get("title") else "")
        elif module == "kms":
            on = f"key {code(inputs.get('cryptoKeyId'))}"
        elif module == "serviceaccount":
            target = inputs.get("serviceAccountId")
            on = f"service account {code(email if target == UNKNOWN and email else target)}"
        elif module == "projects":
            on = f"project {code(inputs.get('project') or project)}"
        else:
            on = f"{module} {code(inputs.get('name') or inputs.get('resource') or reg.name)}"
        for member in members:
            rows.append([code(member), code(inputs.get("role")), on, f"{short_type(reg.type)} {reg.name}"])
    return sorted(rows)


# ---- images ------------------------------------------------------------------------------------------------


def _containers(spec: Any, path: str = ""):
    """(container name, image) of every container and initContainer anywhere in an object."""
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                for c in value:
                    if isinstance(c, dict) and "image" in c:
                        yield c.get("name", "?"), c["image"]
            else:
                yield from _containers(value)
    elif isinstance(spec, list):
        for value in spec:
            yield from _containers(value)


def _chart_images(values: Any):
    """Images a Helm chart's values pin: dicts with `repository` and `tag`, and a `registry` when the chart joins
    `<registry>/<repository>:<tag>` (llm-d-router's routerlib templates/_deployment.yaml)."""
    if isinstance(values, dict):
        if isinstance(values.get("repository"), str) and values.get("tag"):
            registry = values.get("registry")
            repository = (
                f"{registry}/{values['repository']}" if isinstance(registry, str) and registry else values["repository"]
            )
            yield f"{repository}:{values['tag']}"
        for value in values.values():
            yield from _chart_images(value)
    elif isinstance(values, list):
        for value in values:
            yield from _chart_images(value)


def pinned(image: str) -> bool:
    if "@sha256:" in image:
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest", "main")


def images(recording: Recording) -> list[list[str]]:
    matrix = {image: f"`IMAGES[{key!r}]`" for key, image in versions.IMAGES.items()}
    for chart, releases in versions.CHARTS.items():
        for version, release in releases.items():
            matrix[f"{release.image_repository}:{release.image_tag}"] = f"`CHARTS[{chart!r}][{version!r}]`"
    matrix[f"{versions.LLM_D_ROUTER.image_repository}:{versions.LLM_D_ROUTER.image_tag}"] = "`LLM_D_ROUTER`"
    users: dict[str, set[str]] = {}
    for reg in recording.resources:
        if not reg.type.startswith("kubernetes:") or not reg.custom:
            continue
        inputs = plain(reg.inputs, mask_secrets=True)
        if is_object(reg):
            meta = inputs.get("metadata", {})
            where = (
                f"{inputs.get('kind')} {meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta.get('name')}"
            )
            for container, image in _containers(inputs.get("spec")):
                users.setdefault(image, set()).add(f"{where} ({container})")
        elif reg.type.startswith("kubernetes:helm.sh/"):
            for image in _chart_images(inputs.get("values")):
                users.setdefault(image, set()).add(
                    f"Helm release {inputs.get('name')} ({inputs.get('chart')} {inputs.get('version')})"
                )
    rows = []
    for image, users_of in sorted(users.items()):
        source = matrix.get(image, "")
        rows.append([code(image), "yes" if pinned(image) else "**no**", source, "<br/>".join(sorted(users_of))])
    return rows


# ---- network exposure --------------------------------------------------------------------------------------


def _ports(spec: dict[str, Any]) -> str:
    return ", ".join(
        f"{p.get('port')}/{p.get('protocol', 'TCP')}" + (f" ({p['name']})" if p.get("name") else "")
        for p in spec.get("ports", [])
    )


# What each GatewayClass the stack uses builds (GKE "GatewayClass capabilities",
# https://cloud.google.com/kubernetes-engine/docs/how-to/gatewayclass-capabilities; stacks/serving/gateway.py GATEWAY_CLASSES):
# the load balancer and where it answers from.
GATEWAY_SCHEMES: dict[str, tuple[str, str]] = {
    "gke-l7-rilb": ("regional internal Application Load Balancer", "the VPC"),
    "gke-l7-regional-external-managed": ("**regional external Application Load Balancer**", "**the internet**"),
}


def _armor_rules(recording: Recording) -> dict[str, list[str]]:
    """Cloud Armor policy name -> the source ranges its allow rules let through (the stack's own policies)."""
    out: dict[str, list[str]] = {}
    for reg in recording.of_type("gcp:compute/regionSecurityPolicy:RegionSecurityPolicy"):
        inputs = plain(reg.inputs, mask_secrets=True)
        out[str(inputs.get("name"))] = [
            r
            for rule in inputs.get("rules") or []
            if rule.get("action") == "allow"
            for r in ((rule.get("match") or {}).get("config") or {}).get("srcIpRanges") or []
        ]
    return out


def _objects(recording: Recording, kind_: str) -> list[dict[str, Any]]:
    return [
        plain(r.inputs, mask_secrets=True)
        for r in recording.resources
        if r.type.startswith("kubernetes:") and r.type.endswith(f":{kind_}") and r.custom
    ]


def _guarded_by(route: dict[str, Any], recording: Recording) -> str:
    """Who may call one HTTPRoute's backends: the Cloud Armor policy of their GCPBackendPolicy, and its ranges."""
    namespace = route["metadata"].get("namespace")
    backends = {b.get("name") for rule in route["spec"].get("rules", []) for b in rule.get("backendRefs", [])}
    policies = sorted(
        {
            str(((patch.get("spec") or {}).get("default") or {}).get("securityPolicy"))
            for patch in _objects(recording, "GCPBackendPolicyPatch") + _objects(recording, "GCPBackendPolicy")
            if patch["metadata"].get("namespace") == namespace
            and patch["metadata"].get("name") in backends
            and ((patch.get("spec") or {}).get("default") or {}).get("securityPolicy")
        }
    )
    if not policies:
        return "no Cloud Armor policy"
    rules = _armor_rules(recording)
    return "; ".join(
        f"Cloud Armor `{p}` allows only " + ", ".join(code(r) for r in rules[p]) + " (others 403)"
        if p in rules
        else f"Cloud Armor `{p}` (an existing policy, not in this stack)"
        for p in policies
    )


def gateways(recording: Recording) -> list[list[str]]:
    """One row per Gateway: its GatewayClass and the load balancer it makes, listeners, where it answers from, and
    per attached HTTPRoute the header it matches and the Cloud Armor policy in front of its backends."""
    rows = []
    routes = _objects(recording, "HTTPRoute")
    for gw in _objects(recording, "Gateway"):
        meta, spec = gw["metadata"], gw["spec"]
        cls = spec.get("gatewayClassName")
        scheme, where = GATEWAY_SCHEMES.get(cls, (f"GatewayClass `{cls}` (load balancer not known to the review)", "?"))
        ports = ", ".join(
            f"{li.get('port')}/{li.get('protocol')} ({li.get('name')})" for li in spec.get("listeners", [])
        )
        attached = [
            r
            for r in routes
            if any(
                p.get("name") == meta.get("name")
                and p.get("namespace", r["metadata"].get("namespace")) == meta.get("namespace")
                for p in r["spec"].get("parentRefs", [])
            )
        ]
        parts = [where]
        for route in sorted(attached, key=lambda r: (r["metadata"].get("namespace"), r["metadata"].get("name"))):
            headers = [
                f"{h.get('name')}: {h.get('value')}"
                for rule in route["spec"].get("rules", [])
                for m in rule.get("matches", [])
                for h in m.get("headers", [])
            ]
            guard = _guarded_by(route, recording)
            if where == GATEWAY_SCHEMES["gke-l7-regional-external-managed"][1] and guard == "no Cloud Armor policy":
                guard = "**any source** (no Cloud Armor policy)"
            parts.append(
                f"route {code(route['metadata'].get('namespace') + '/' + route['metadata'].get('name'))}"
                + (" (header " + ", ".join(code(h) for h in headers) + ")" if headers else "")
                + f": {guard}"
            )
        if not attached:
            parts.append("no routes")
        rows.append(
            [
                f"Gateway {code(meta.get('namespace') + '/' + meta.get('name'))}",
                f"{scheme} (GatewayClass `{cls}`)",
                ports,
                "; ".join(parts),
            ]
        )
    return sorted(rows)


def body_router_namespace(recording: Recording) -> str | None:
    """The namespace of the stack's body-based router release, if it has one."""
    return next(
        (str(r.get("namespace")) for r in _releases(recording) if r.get("chart") == versions.BODY_BASED_ROUTER.chart),
        None,
    )


def model_routes(recording: Recording) -> list[model_routing.Route]:
    """Per model and adapter name: the pool a request naming it in its body reaches (tooling/review/model_routing.py)."""
    return model_routing.routes(kubernetes_objects(recording), body_router_namespace(recording))


def pd_paths(recording: Recording) -> list[model_routing.PdPath]:
    """Per pool that splits prefill from decode: its servers of each role and the path between them."""
    return model_routing.pd_paths(kubernetes_objects(recording), _releases(recording))


def pool_scorers(recording: Recording) -> dict[str, dict[str, Any]]:
    return model_routing.pool_scorers(_releases(recording))


def model_routing_lines(recording: Recording) -> list[str]:
    found = model_routes(recording)
    paths = pd_paths(recording)
    scorers = pool_scorers(recording)
    issues = (
        model_routing.problems(found) + model_routing.lora_problems(found, scorers) + model_routing.pd_problems(paths)
    )
    return (
        model_routing.lines(found, body_router_namespace(recording))
        + model_routing.lora_lines(found, scorers)
        + model_routing.pd_lines(paths)
        + (["", *(f"- **{line}**" for line in issues)] if issues else [])
    )


def _releases(recording: Recording) -> list[dict[str, Any]]:
    return sorted(
        (plain(r.inputs, mask_secrets=True) for r in recording.of_type(chart_objects.RELEASE_TYPE)),
        key=lambda i: (str(i.get("namespace")), str(i.get("name"))),
    )


def release_objects(inputs: dict[str, Any]) -> list[dict[str, Any]] | None:
    return chart_objects.installed(
        str(inputs.get("chart")), str(inputs.get("version")), str(inputs.get("name")), str(inputs.get("namespace"))
    )


def helm_releases(recording: Recording) -> list[str]:
    """Per Helm release, what it installs at its pinned version (tooling/data/chart_objects.json, rendered by Helm
    from the chart at its tag with the values the stack passes): kind, name, namespace, cluster-scoped ones first."""
    lines: list[str] = []
    for inputs in _releases(recording):
        where = f"`{inputs.get('name')}` in `{inputs.get('namespace')}`: {inputs.get('chart')} {inputs.get('version')}"
        objects = release_objects(inputs)
        if objects is None:
            lines += [
                f"### {where}",
                "",
                "**Not recorded**: run `make helm chart-objects` (Helm and the chart sources at their tags).",
                "",
            ]
            continue
        record = chart_objects.load()[chart_objects.key(str(inputs.get("chart")), str(inputs.get("version")))]
        scoped = sum(1 for o in objects if o["clusterScoped"])
        lines += [
            f"### {where}",
            "",
            f"{len(objects)} objects, {scoped} cluster-scoped, from `{record['source']}`"
            + (" (CRDs under `crds/` skipped: the stack applies them)" if inputs.get("skipCrds") else "")
            + ":",
            "",
        ]
        lines += table(
            ["kind", "name", "namespace", "scope"],
            [
                [
                    o["kind"],
                    code(o["name"]),
                    code(o["namespace"]) if o["namespace"] else "",
                    "**cluster**" if o["clusterScoped"] else "namespace",
                ]
                for o in objects
            ],
        )
        lines.append("")
    return lines or ["None.", ""]


def _release_services(recording: Recording) -> list[list[str]]:
    rows = []
    for inputs in _releases(recording):
        for obj in release_objects(inputs) or []:
            if obj["kind"] != "Service":
                continue
            kind_ = obj.get("type", "ClusterIP")
            reach = "inside the cluster (ClusterIP)" if kind_ == "ClusterIP" else f"**{kind_}** (see the chart)"
            rows.append(
                [
                    f"Service {code(obj['namespace'] + '/' + obj['name'])} (Helm release `{inputs.get('name')}`)",
                    kind_,
                    _ports(obj),
                    reach,
                ]
            )
    return rows


def exposure(recording: Recording) -> list[list[str]]:
    rows: list[list[str]] = []
    for reg in recording.of_type("gcp:container/cluster:Cluster"):
        inputs = plain(reg.inputs, mask_secrets=True)
        private = (inputs.get("privateClusterConfig") or {}).get("enablePrivateEndpoint")
        cidrs = [c.get("cidrBlock") for c in (inputs.get("masterAuthorizedNetworksConfig") or {}).get("cidrBlocks", [])]
        if private:
            reach = "IP endpoint: the VPC only (private endpoint)"
        elif inputs.get("masterAuthorizedNetworksConfig") is not None and cidrs:
            reach = "IP endpoint: authorized networks " + ", ".join(code(c) for c in cidrs)
        elif inputs.get("masterAuthorizedNetworksConfig") is not None:
            reach = "IP endpoint: closed to the internet (authorized networks, none listed)"
        else:
            reach = "**public IP endpoint, any address** (set cluster.masterAuthorizedNetworks)"
        dns = ((inputs.get("controlPlaneEndpointsConfig") or {}).get("dnsEndpointConfig") or {}).get(
            "allowExternalTraffic"
        )
        if dns:
            reach = "DNS endpoint (IAM: container.clusters.connect); " + reach
        nodes = (
            "private nodes (no public IPs)"
            if (inputs.get("privateClusterConfig") or {}).get("enablePrivateNodes")
            else "**nodes with public IPs**"
        )
        rows.append([f"GKE control plane {code(inputs.get('name'))}", "Kubernetes API", "443/TCP", f"{reach}; {nodes}"])
    rows += gateways(recording)
    clusters = len(rows)
    for reg in recording.of_type("kubernetes:core/v1:Service"):
        inputs = plain(reg.inputs, mask_secrets=True)
        meta, spec = inputs.get("metadata", {}), inputs.get("spec", {})
        kind = spec.get("type", "ClusterIP")
        annotations = meta.get("annotations") or {}
        internal = annotations.get("networking.gke.io/load-balancer-type") == "Internal"
        ranges = spec.get("loadBalancerSourceRanges") or []
        if kind == "LoadBalancer":
            lb = "internal passthrough load balancer" if internal else "**external load balancer**"
            where = "the VPC" if internal else "the internet"
            reach = f"{lb}: {where}" + (
                ", source ranges " + ", ".join(code(r) for r in ranges) if ranges else ", any source"
            )
        elif kind == "NodePort":
            reach = "**every node's IP** (NodePort)"
        else:
            reach = "inside the cluster (ClusterIP)"
        rows.append(
            [
                f"Service {code(meta.get('namespace', 'default') + '/' + meta.get('name', '?'))}",
                kind,
                _ports(spec),
                reach,
            ]
        )
    rows += _release_services(recording)
    return rows[:clusters] + sorted(rows[clusters:])


# ---- protection --------------------------------------------------------------------------------------------


def protection(recording: Recording) -> list[list[str]]:
    rows = []
    for reg in recording.resources:
        inputs = reg.inputs if reg.type.startswith("gcp:") else {}
        deletion = inputs.get("deletionProtection")
        force = inputs.get("forceDestroy")
        if reg.type in STATEFUL or reg.protect or reg.retain_on_delete or deletion:
            rows.append(
                [
                    f"{short_type(reg.type)} {reg.name}",
                    "yes" if reg.protect else "no",
                    "yes" if reg.retain_on_delete else "no",
                    {True: "yes", False: "no", None: ""}.get(deletion, str(deletion)),
                    {True: "yes", False: "no", None: ""}.get(force, str(force)),
                ]
            )
    return sorted(rows)


# ---- what GKE manages ---------------------------------------------------------------------------------------


def gke_managed_lines(cfg: StackConfig, recording: Recording) -> list[str]:
    """The decision on objects GKE manages (stacks/facts/gke_managed.py), what this stack relies on, and the cluster's
    maintenance policy as sent."""
    floor = cfg.cluster.min_master_version
    lines = [
        "GKE installs and owns its Gateway API CRDs and GatewayClasses, its Gateway policy CRDs, the InferencePool "
        f"CRD (from {gke_managed.INFERENCE_POOL_SINCE}), the Managed Prometheus CRDs and namespaces and the "
        'ComputeClass CRD (docs/operations.md "What GKE manages"). The stack creates none of them at any version: the cluster '
        "version is a floor GKE raises by itself, so no version exempts an object.",
        "",
        f"- cluster version floor: {code(floor) if floor else 'unset (the release channel default, unknown offline)'}",
    ]
    settings = gke_managed.stack_settings(cfg.gateway.enabled)
    if cfg.gateway.enabled:
        need = gke_managed.installed_from(gke_managed.CRD, gke_managed.INFERENCE_POOL_CRD, settings)
        lines.append(
            f"- relies on GKE's {code(gke_managed.INFERENCE_POOL_CRD)}, installed from {need} (floor at or above it)"
        )
    for reg in recording.of_type("gcp:container/cluster:Cluster"):
        policy = plain(reg.inputs, mask_secrets=True).get("maintenancePolicy")
        if not policy:
            lines.append("- maintenance: no policy (GKE may upgrade at any time)")
            continue
        window = policy.get("recurringWindow") or {}
        exclusions = [e.get("exclusionName") for e in policy.get("maintenanceExclusions") or []]
        lines.append(
            f"- maintenance window {code(window.get('recurrence'))} from {code(window.get('startTime'))} to "
            f"{code(window.get('endTime'))}; exclusions: {', '.join(code(e) for e in exclusions) or 'none'}"
        )
    return lines


# ---- the page ----------------------------------------------------------------------------------------------


def graph_section(recording: Recording) -> list[str]:
    small, full = component_graph(recording), full_graph(recording)
    lines = ["```mermaid", small.rstrip("\n"), "```", ""]
    count = sum(1 for r in recording.resources)
    if fits_github(full):
        lines += [
            f"<details><summary>Expand: every resource ({count})</summary>",
            "",
            "```mermaid",
            full.rstrip("\n"),
            "```",
            "</details>",
        ]
    else:
        lines.append(
            f"Every resource ({count}): `graph-full.mmd` (beyond GitHub's Mermaid limits of {MERMAID_MAX_TEXT} "
            f"characters or {MERMAID_MAX_EDGES} edges)."
        )
    return lines


# The order of summary.md's sections: what a reviewer must read first (warnings, cost, IAM, exposure), the resource
# graph last (it is long, and graph.mmd holds it too).
SECTIONS = (
    "Warnings",
    "Estimated cost",
    "IAM grants",
    "Network exposure",
    "Model routing",
    "Protection",
    "Workloads",
    "TPU pools",
    "Time to serve",
    "Stack outputs",
    "Images",
    "Helm releases",
    "What GKE manages",
    "Resources by type",
    "Graph",
)


def summary(cfg: StackConfig, recording: Recording) -> str:
    body = _sections(cfg, recording)
    assert tuple(body) == SECTIONS, tuple(body)
    lines = [
        f"# Stack `{cfg.stack}` ({cfg.environment})",
        "",
        f"- project `{cfg.gcp_project}`, region `{cfg.region}`",
        f"- cluster `{cfg.cluster_name}` in `{cfg.cluster_location}` ({'regional' if cfg.regional else 'zonal'}), "
        f"release channel {cfg.cluster.release_channel}",
        f"- bucket `{cfg.bucket_name}`",
        f"- metrics adapter `{cfg.monitoring.adapter}`",
    ]
    for title in SECTIONS:
        section = body[title]
        while section and section[-1] == "":
            section = section[:-1]
        lines += ["", f"## {title}", "", *section]
    return "\n".join(lines) + "\n"


def _sections(cfg: StackConfig, recording: Recording) -> dict[str, list[str]]:
    """Each section's lines (after its heading), by title."""
    from stacks.reports import cost, time_to_serve

    grants = iam_grants(recording, cfg.gcp_project)
    found = images(recording)
    counts = Counter(r.type for r in recording.resources)
    return {
        "Warnings": [f"- {w}" for w in sorted(set(recording.warnings))] or ["None."],
        "Estimated cost": cost.summary_lines(cost.estimate(cfg)),
        "IAM grants": table(["member", "role", "on", "resource"], grants) if grants else ["None."],
        "Network exposure": table(["what", "type", "ports", "reachable from"], exposure(recording)),
        "Model routing": model_routing_lines(recording),
        "Protection": [
            "Pulumi `protect` and `retainOnDelete`, and GCP's own `deletionProtection` / `forceDestroy`:",
            "",
            *table(
                ["resource", "protect", "retainOnDelete", "deletionProtection", "forceDestroy"], protection(recording)
            ),
        ],
        "Workloads": table(
            ["workload", "type", "pool", "namespace"],
            [[w.name, w.workload.type, w.pool.name, w.namespace] for w in cfg.workloads],
        )
        if cfg.workloads
        else ["No workloads."],
        "TPU pools": _pool_lines(cfg),
        "Time to serve": time_to_serve.summary_lines(time_to_serve.estimates(cfg)),
        "Stack outputs": [
            "As `pulumi stack output --json` prints them after `up` (secrets as `[secret]`); "
            f"`{UNKNOWN}` marks what only the cloud knows.",
            "",
            "```json",
            stack_outputs(recording),
            "```",
        ],
        "Images": table(["image", "pinned", "pinned in", "used by"], found) if found else ["None."],
        "Helm releases": [
            "What each release installs at its pinned version (rendered by Helm from the chart at its tag with the "
            "stack's values; `tooling/data/chart_objects.json`):",
            "",
            *helm_releases(recording),
        ],
        "What GKE manages": gke_managed_lines(cfg, recording),
        "Resources by type": [
            *table(["type", "count"], [[f"`{t}`", n] for t, n in sorted(counts.items())]),
            "",
            f"{sum(counts.values())} resources.",
        ],
        "Graph": [
            "One node per component, in layers from the network and cluster down to the workloads; an edge only where "
            "no longer path implies it (the transitive reduction: the cluster reaches a workload through its "
            "namespaces). `-->` a dependency, `-.->|provider|` Kubernetes objects through the cluster's provider, "
            '`-.->|uses|` a resource naming the stack bucket. Every resource and edge under "Expand".',
            "",
            *graph_section(recording),
        ],
    }


def _pool_lines(cfg: StackConfig) -> list[str]:
    if not cfg.pools:
        return ["No TPU pools."]
    rows = [
        [
            p.name,
            p.shape.generation.name,
            p.shape.topology,
            p.shape.machine_type,
            p.shape.hosts,
            p.shape.chips_per_host,
            p.shape.chips,
            p.slices,
            p.total_chips,
            p.config.capacity,
            p.config.zone,
            ", ".join(p.node_pool_names),
        ]
        for p in cfg.pools
    ]
    header = ["pool", "tpu", "topology", "machine type", "hosts/slice", "chips/host", "chips/slice", "slices"]
    return table([*header, "chips", "capacity", "zone", "node pools"], rows)
