"""The metrics adapter registry (stacks/metrics_adapters): every entry is complete and matches its upstream, and an
entry added to the registry alone reaches config validation, the workloads' checks, the HPA specs and the
Monitoring component, and the docs table is the registry's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pulumi
import pytest
import yaml

from stacks import naming
from stacks.facts.versions import IMAGES
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics
from stacks.monitoring.adapters import (
    API_OF_METRIC_TYPE,
    METRICS_APIS,
    AdapterBuild,
    AdapterContext,
    Chart,
    Grant,
    MetricsAdapter,
    Part,
    prometheus_adapter,
    stackdriver,
)
from stacks.monitoring.adapters.entry import NAMESPACE, SYSTEM_POOL, api_service, meta
from stacks.security import pod_security
from tests.conftest import make_config, pool, reference_file, stack_ksa
from tooling.generate import json_schema
from tooling.generate.readme_tables import _sample_context, metrics_adapters_table
from workloads.jetstream.server import JETSTREAM_METRICS
from workloads.vllm.metrics import VLLM_HPA_METRICS

ROOT = Path(__file__).resolve().parents[1]
ALL_METRICS = {**JETSTREAM_METRICS, **VLLM_HPA_METRICS, **metrics.GATEWAY_HPA_METRICS}
ENTRIES = list(metrics_adapters.ADAPTERS.values())


def context(entry: MetricsAdapter, **changes) -> AdapterContext:
    ctx = _sample_context(entry)
    return AdapterContext(
        **{
            **ctx.__dict__,
            "hpa_namespaces": ("a",),
            "server_metrics": tuple((m, ("b",)) for m in VLLM_HPA_METRICS.values()),
            **changes,
        }
    )


# ---- every entry is complete ------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_entry_is_complete(entry: MetricsAdapter):
    assert metrics_adapters.ADAPTERS[entry.name] is entry and entry.name != metrics_adapters.NONE
    assert entry.description and entry.apis and set(entry.apis) <= set(METRICS_APIS)
    assert entry.origins and entry.origins <= {"server", "tpu", "gateway"}
    assert 0 < entry.api_port < 65536
    assert naming.DNS1123_LABEL.fullmatch(entry.namespace)
    assert metrics_adapters.served_metrics(entry.name, ALL_METRICS), "an adapter that serves no metric"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_build_is_complete_and_ordered(entry: MetricsAdapter):
    """Keys unique; every `after` names something registered before it; something serves the API; every grant's
    KSA is one of the build's ServiceAccounts; every pod on the system pool; the namespace level is a level."""
    build = entry.build(context(entry))
    known = {NAMESPACE, SYSTEM_POOL}
    for grant in build.grants:
        assert grant.key not in known and grant.role.startswith("roles/")
        known.add(grant.key)
    for part in build.parts:
        assert part.key not in known, f"duplicate key {part.key}"
        assert set(part.after) <= known, f"{part.key} waits for what is registered later: {set(part.after) - known}"
        known.add(part.key)
    assert any(p.serves_api for p in build.parts)
    manifests = [p.body for p in build.parts if not isinstance(p.body, Chart)]
    accounts = {m["metadata"]["name"] for m in manifests if m["kind"] == "ServiceAccount"}
    assert {g.service_account for g in build.grants} <= accounts
    for m in manifests:
        assert m["metadata"]["labels"].items() >= naming.MANAGED_BY_LABELS.items()
        for spec in pod_security.pod_specs(m):
            assert spec["nodeSelector"] == naming.SYSTEM_POOL_SELECTOR
            # restricted, or a declared exception that the namespace level then shows
            assert pod_security.LEVELS.index(pod_security.pod_level(spec)) >= pod_security.LEVELS.index(
                build.namespace_level()
            )
    assert build.namespace_level() in pod_security.LEVELS


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_served_metric_is_named_on_an_api_the_adapter_serves(entry: MetricsAdapter):
    """An HPA reads Pods/Object metrics from custom.metrics.k8s.io and External ones from external.metrics.k8s.io
    (kubernetes pkg/controller/podautoscaler/metrics/client.go): the spec must name an API the adapter serves."""
    for name in metrics_adapters.served_metrics(entry.name, ALL_METRICS):
        spec = metrics_adapters.hpa_metric(entry.name, name, 1, "ns", "c", registry=ALL_METRICS, selector={"app": "x"})
        assert API_OF_METRIC_TYPE[spec["type"]] in entry.apis, (entry.name, name, spec)
        assert spec[spec["type"].lower()]["target"] == {"type": "AverageValue", "averageValue": "1"}
    for name in set(ALL_METRICS) - set(metrics_adapters.served_metrics(entry.name, ALL_METRICS)):
        with pytest.raises(ValueError, match="does not serve"):
            metrics_adapters.hpa_metric(entry.name, name, 1, "ns", "c", registry=ALL_METRICS)


# ---- entries match their upstream ------------------------------------------------------------------------


def test_stackdriver_apis_and_port_are_the_upstream_manifests():
    # k8s-stackdriver custom-metrics-stackdriver-adapter/deploy/production/adapter_new_resource_model.yaml
    path = reference_file("manifests/custom-metrics-stackdriver-adapter/adapter_new_resource_model.yaml")
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    upstream = {
        (d["spec"]["group"], d["spec"]["version"], d["spec"]["versionPriority"])
        for d in docs
        if d["kind"] == "APIService"
    }
    assert set(stackdriver.API_SERVICES) == upstream
    assert set(stackdriver.ADAPTER.apis) == {group for group, _, _ in upstream}
    service = next(d for d in docs if d["kind"] == "Service")
    # the same Service port (an APIService's service port defaults to 443, apiregistration.k8s.io/v1
    # ServiceReference.port); behind it, the adapter listens on an unprivileged --secure-port (upstream: 443 as root)
    assert service["spec"]["ports"][0]["port"] == stackdriver.SERVICE_PORT == 443
    assert service["metadata"]["namespace"] == stackdriver.ADAPTER.namespace


def test_stackdriver_adapter_listens_where_its_service_probe_and_network_policy_point():
    """One port from the flag to every reader: the adapter's --secure-port is its containerPort, its readiness probe's
    port, its Service's targetPort behind port 443, and the port the namespace admits the API server on."""
    build = stackdriver.build(context(stackdriver.ADAPTER))
    manifests = [p.body for p in build.parts if isinstance(p.body, dict)]
    deployment = next(m for m in manifests if m["kind"] == "Deployment")
    service = next(m for m in manifests if m["kind"] == "Service")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    flags = dict(a.removeprefix("--").split("=", 1) for a in container["command"][1:])
    port = int(flags["secure-port"])
    assert port >= 1024 and port == stackdriver.PORT == stackdriver.ADAPTER.api_port
    assert [p["containerPort"] for p in container["ports"]] == [port]
    assert container["readinessProbe"]["httpGet"]["port"] == port
    assert service["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": port}]
    assert flags["cert-dir"] == ""  # the self-signed certificate in memory: nothing written
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_pinned_stackdriver_adapter_takes_the_flags_and_serves_on_them_as_non_root():
    """tests/data/stackdriver_adapter.json, recorded by scripts/record_adapter_run.py from the adapter built at the
    pinned image's commit (its `source`): every flag the stack passes is one `adapter --help` lists; upstream's 443
    is --secure-port's default and its certificate directory a relative path (why upstream ran as root); and with
    the stack's flags, as the pod's UID from `/`, the adapter served /healthz over HTTPS on the port, its certificate
    in memory. A change to the flags, the port or the pinned image needs a new recording."""
    record = json.loads((ROOT / "tests/data/stackdriver_adapter.json").read_text())
    assert record["image"] == IMAGES["customMetricsStackdriverAdapter"], "re-run scripts/record_adapter_run.py"
    known = record["flags"]
    for flag in stackdriver.FLAGS:
        assert flag.removeprefix("--").split("=", 1)[0] in known, flag
    assert known["secure-port"] == {"type": "int", "default": "443"}
    assert known["cert-dir"]["default"] == '"apiserver.local.config/certificates"'
    run = record["run"]
    assert run["flags"] == list(stackdriver.FLAGS), "re-run scripts/record_adapter_run.py"
    assert run["uid"] == pod_security.NON_ROOT_UID and run["workingDirectory"] == "/"
    assert run["healthzStatus"] == 200 and run["certificateInMemory"] and not run["certificateDirectoryWritten"]


def test_prometheus_adapter_port_and_apis_are_the_charts():
    chart = reference_file("manifests/prometheus-adapter-helm-chart-5.3.0")
    # values.yaml `listenPort: 6443`
    assert yaml.safe_load((chart / "values.yaml").read_text())["listenPort"] == prometheus_adapter.ADAPTER.api_port
    # the chart's README "Custom Metrics": served when rules.default is true or rules.custom is populated; "External Metrics":
    # served when rules.external is populated. The stack's values set only external rules.
    readme = (chart / "README.md").read_text()
    assert (
        "Enabled by default when `rules.default` is true, but can be customized by populating `rules.custom`" in readme
    )
    assert "Can be enabled by populating `rules.external`" in readme
    build = prometheus_adapter.build(context(prometheus_adapter.ADAPTER))
    release = next(p.body for p in build.parts if isinstance(p.body, Chart))
    rules = release.values["rules"]
    # the rules are the stack's ConfigMap (`rules.existing`), holding external rules only
    assert rules["default"] is False and rules["custom"] == [] and rules["external"] == []
    configmap = next(p.body for p in build.parts if p.key == "prometheus-adapter-rules")
    assert isinstance(configmap, dict) and configmap["metadata"]["name"] == rules["existing"]
    assert set(yaml.safe_load(configmap["data"]["config.yaml"])) == {"externalRules"}
    assert yaml.safe_load(configmap["data"]["config.yaml"])["externalRules"]
    assert prometheus_adapter.ADAPTER.apis == ("external.metrics.k8s.io",)


def test_prometheus_adapter_chart_renders_no_apiservice_and_reads_the_stacks_rules():
    """`helm template` of prometheus-adapter 5.3.0 (prometheus-community/helm-charts@prometheus-adapter-5.3.0
    charts/prometheus-adapter) with the stack's values: the chart owns no APIService, ConfigMap or external-metrics
    role (the stack does, under the same resources for every adapter), mounts the stack's rules, and serves on the
    Service the stack's APIService names; its pod has requests (the chart default `resources: {}` has none)."""
    from tests.helm_charts import containers, render

    build = prometheus_adapter.build(context(prometheus_adapter.ADAPTER))
    release = next(p.body for p in build.parts if isinstance(p.body, Chart))
    objects = render(release.chart, release.values)
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert not {k for k in kinds if k[0] in ("APIService", "ConfigMap")}, kinds
    assert not {k for k in kinds if "external-metrics" in k[1]}, kinds
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "config", "configMap": {"name": prometheus_adapter.RULES_CONFIGMAP}} in volumes
    api = next(p.body for p in build.parts if p.serves_api)
    assert isinstance(api, dict) and api["kind"] == "APIService"
    service = next(o for o in objects if o["kind"] == "Service")
    assert service["metadata"]["name"] == api["spec"]["service"]["name"]
    assert service["metadata"]["namespace"] == api["spec"]["service"]["namespace"] == release.chart.namespace
    # an APIService's service port defaults to 443 (apiregistration.k8s.io/v1 ServiceReference.port)
    assert [p["port"] for p in service["spec"]["ports"]] == [443]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["https"]
    for where, container in containers(objects):
        assert container["resources"]["requests"].keys() >= {"cpu", "memory"}, where


def test_none_is_not_an_entry_but_a_choice():
    assert metrics_adapters.choices() == (*metrics_adapters.ADAPTERS, "none")
    assert metrics_adapters.get("none") is None
    assert metrics_adapters.DEFAULT in metrics_adapters.ADAPTERS
    assert metrics_adapters.served_metrics("none") == []


def test_docs_table_is_the_registrys():
    table = metrics_adapters_table()
    page = ROOT / "docs" / "addons-and-monitoring.md"
    assert table in page.read_text(), (
        "docs/addons-and-monitoring.md's adapter table is stale: run `python -m tooling.generate.docs`"
    )


def test_schema_enum_is_the_registrys():
    schema = json.loads((ROOT / "schema/stack-config.schema.json").read_text())
    monitoring = json_schema.regional_key(schema, "tpu-serving:monitoring")
    assert monitoring["properties"]["adapter"]["enum"] == list(metrics_adapters.choices())


# ---- an entry added to the registry alone reaches everything ---------------------------------------------------

FAKE_PORT = 8443


def _fake_build(ctx: AdapterContext) -> AdapterBuild:
    ksa = naming.stack_service_account("fake-adapter", ctx.identity_suffix)
    pod = pod_security.secure_pod(
        {
            "serviceAccountName": ksa,
            "nodeSelector": dict(naming.SYSTEM_POOL_SELECTOR),
            "containers": [{"name": "adapter", "image": "example.com/fake-adapter:v1"}],
        },
        pod_security.ContainerSecurity(),
        uses_kubernetes_api=True,
    )
    labels = {"app": "fake-adapter"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta("fake-adapter", ctx.namespace, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
    return AdapterBuild(
        grants=[Grant("fake-viewer", "roles/monitoring.viewer", ksa)],
        parts=[
            Part(
                "fake-sa",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(ksa, ctx.namespace)},
                after=(NAMESPACE,),
            ),
            Part("fake-adapter", deployment, after=("fake-sa", "fake-viewer", SYSTEM_POOL)),
            api_service("external.metrics.k8s.io", "v1beta1", 100, "fake-adapter", ctx.namespace, ("fake-adapter",)),
        ],
    )


FAKE = MetricsAdapter(
    name="fake-adapter",
    description="a test adapter",
    apis=("external.metrics.k8s.io",),
    origins=frozenset({"tpu"}),
    ratios=True,
    api_port=FAKE_PORT,
    metric_spec=lambda metric, goal, ns, cluster, selector: {
        "type": "External",
        "external": {"metric": {"name": f"fake|{metric.series}"}, "target": goal},
    },
    build=_fake_build,
    namespace="fake-metrics",
)
AUTO = {"minReplicas": 1, "maxReplicas": 3, "metrics": [{"name": "tpu_memory_used_percentage", "target": 0.8}]}


def _jetstream(**fields) -> dict:
    return {
        "name": "gemma",
        "type": "jetstream",
        "pool": "single",
        "model": "gemma-7b",
        "checkpoint": "gs://ckpts/gemma",
        "autoscaling": AUTO,
        **fields,
    }


def _config(adapter: str, **workload) -> dict:
    return make_config(
        tpu_serving__tpuPools=[
            pool(
                name="single", tpu="v5e", topology="2x4", zone="us-east5-a", autoscaling={"minNodes": 0, "maxNodes": 3}
            )
        ],
        tpu_serving__workloads=[_jetstream(**workload)],
        tpu_serving__monitoring={"adapter": adapter},
    )


@pytest.fixture
def fake_registry(monkeypatch):
    monkeypatch.setitem(metrics_adapters.ADAPTERS, FAKE.name, FAKE)


def test_unregistered_adapter_is_refused_naming_the_registry(run):
    with pytest.raises(
        pulumi.RunError,
        match=r"monitoring.adapter: 'fake-adapter' is not allowed; allowed: "
        + re.escape(", ".join(metrics_adapters.choices())),
    ):
        run(_config("fake-adapter"))


def test_a_registered_adapter_reaches_validation_checks_hpa_and_component(run, fake_registry):
    assert "fake-adapter" in metrics_adapters.choices()
    rec = run(_config("fake-adapter"))
    ns = rec.one("kubernetes:core/v1:Namespace", "monitoring-adapter-ns").inputs
    assert ns["metadata"]["name"] == "fake-metrics"
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    policy = rec.one("kubernetes:networking.k8s.io/v1:NetworkPolicy", "monitoring-allow-metrics-api-clients").inputs
    assert policy["metadata"]["namespace"] == "fake-metrics"
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [FAKE_PORT]
    grant = rec.one("gcp:projects/iAMMember:IAMMember", "monitoring-fake-viewer")
    assert grant.inputs["role"] == "roles/monitoring.viewer"
    assert grant.inputs["member"].endswith(f"/subject/ns/fake-metrics/sa/{stack_ksa('fake-adapter')}")
    deployment = rec.one("kubernetes:apps/v1:Deployment", "monitoring-fake-adapter")
    assert grant.urn in deployment.dependencies
    api = rec.one("kubernetes:apiregistration.k8s.io/v1:APIService", "monitoring-apiservice-external-v1beta1")
    assert deployment.urn in api.dependencies
    # the workload's HPA names the metric the fake way and waits for what serves the API
    hpa = rec.one("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    assert hpa.inputs["spec"]["metrics"][0]["external"]["metric"] == {"name": "fake|memory_used"}
    assert api.urn in hpa.dependencies
    # nothing of the other adapters
    assert not [r for r in rec.resources if "stackdriver" in r.name or "gmp-frontend" in r.name]


def test_a_registered_adapter_serves_only_what_its_entry_says(run, fake_registry):
    metric = {"name": "jetstream_prefill_backlog_size", "target": 5}
    with pytest.raises(
        pulumi.RunError,
        match=r"'jetstream_prefill_backlog_size' is not served by the fake-adapter "
        r"adapter; it serves: tpu_memory_used, tpu_memory_used_percentage",
    ):
        run(_config("fake-adapter", autoscaling={**AUTO, "metrics": [metric]}))
    with pytest.raises(
        pulumi.RunError,
        match=r"set tpu-serving:monitoring.adapter to " + re.escape(metrics_adapters.one_of()),
    ):
        run(_config("none"))


def _readme_metric_tables() -> list[list[list[str]]]:
    """The docs' tables with a column per adapter (the workloads' metric tables), as rows of cells."""
    tables, current = [], None
    pages = sorted((ROOT / "docs" / "workloads").glob("*.md"))
    for line in "\n\n".join(page.read_text() for page in pages).splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if current is None:
            current = [cells]
            if any(name in cells for name in metrics_adapters.ADAPTERS):
                tables.append(current)
        elif not set(line) <= set("|-"):
            current.append(cells)
    return tables


def test_readme_metric_tables_have_a_column_per_adapter_saying_what_it_serves():
    """Each per-metric table names every adapter once, in registry order, and each cell says `not served` exactly
    where the entry does not serve the metric, else the HPA metric type its spec has."""
    tables = _readme_metric_tables()
    assert len(tables) == 2, "the jetstream and vllm metric tables"
    for header, *rows in tables:
        columns = [i for i, cell in enumerate(header) if cell in metrics_adapters.ADAPTERS]
        assert [header[i] for i in columns] == list(metrics_adapters.ADAPTERS), header
        for row in rows:
            names = [n for n in re.findall(r"`([^`]+)`", row[0]) if n in ALL_METRICS]
            assert names, row
            for name in names:
                for i in columns:
                    adapter = header[i]
                    if not metrics_adapters.adapter_serves(adapter, name, ALL_METRICS):
                        assert row[i].startswith("not served"), (name, adapter, row[i])
                        continue
                    spec = metrics_adapters.hpa_metric(adapter, name, 1, "ns", "c", registry=ALL_METRICS)
                    assert row[i].startswith(f"`{spec['type']}`"), (name, adapter, row[i])


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_no_adapter_chart_installs_an_apiservice_and_every_pod_has_requests(entry: MetricsAdapter):
    """Every chart an adapter installs, rendered by `helm template` with the stack's values and the release's
    post-renderer: it installs no APIService (the stack registers them, under one resource per APIService for every
    adapter, so a switch is an in-place update; KEDA's chart renders one whatever its values and its release
    post-renders it away, entry.DROP_API_SERVICES), and every container requests cpu and memory (a pod without
    requests is the first evicted)."""
    from tests.helm_charts import containers, render

    build = entry.build(context(entry))
    for part in build.parts:
        if not isinstance(part.body, Chart):
            continue
        objects = render(part.body.chart, part.body.values, postrender=part.body.postrender)
        assert not [o for o in objects if o["kind"] == "APIService"], part.key
        for where, container in containers(objects):
            assert container.get("resources", {}).get("requests", {}).keys() >= {"cpu", "memory"}, (part.key, where)


@pytest.mark.parametrize("entry", [*ENTRIES, "fake"], ids=lambda e: getattr(e, "name", e))
def test_every_apiservice_is_a_stack_resource_under_its_shared_key(entry):
    """Each APIService an adapter registers is a manifest part keyed by its group and version only
    (entry.api_service_key), so every adapter registers `v1beta1.external.metrics.k8s.io` as the same resource."""
    from stacks.monitoring.adapters.entry import api_service_key

    entry = FAKE if entry == "fake" else entry
    build = entry.build(context(entry))
    apis = [p for p in build.parts if isinstance(p.body, dict) and p.body["kind"] == "APIService"]
    # every API it serves, whatever its charts render (test_no_adapter_chart_installs_an_apiservice...)
    assert {p.body["spec"]["group"] for p in apis} == set(entry.apis)  # type: ignore[index]
    for part in apis:
        spec = part.body["spec"]  # type: ignore[index]
        assert part.key == api_service_key(spec["group"], spec["version"]) and part.serves_api
