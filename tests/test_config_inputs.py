"""Issue 22 item 15: bad input the config fuzzer found accepted, each refused now with a problem naming the key path,
the bad value and what is allowed (before anything is registered). Each rule's source is cited where it is declared:
stacks/pieces/ (network.py subnet ranges and range names, bucket.py location, each piece's namespaces),
stacks/workload_checks.py (workload namespaces), stacks/monitoring/metrics.py (HPA target),
stacks/naming.py (JobSet's derived names), workloads/saxml/checks.py (models), stacks/facts/storage_locations.py."""

from __future__ import annotations

import copy
import dataclasses

import pulumi
import pytest

from stacks import addons, naming
from stacks.config import ConfigError
from stacks.facts import storage_locations
from stacks.facts.versions import ManifestVersion
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics
from stacks.workload_checks import stack_namespaces
from tests.conftest import ROOT, make_config, pool
from tests.test_addon_registry import FAKE
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import Recording, load_stack_file, parse_config
from tooling.oracles import api_rules
from workloads.jetstream.server import JETSTREAM_METRICS
from workloads.saxml import checks as saxml_checks
from workloads.vllm.metrics import VLLM_METRICS

ALL_IN_ONE = load_stack_file(ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml")
VLLM = load_stack_file(ROOT / "examples" / "vllm-multi-host" / "Pulumi.vllm-multi-host.yaml")
NS = "tpu-serving:"
SAX, GEMMA = 2, 3  # all-in-one's workloads: the Saxml one, the autoscaled JetStream one


def problems(config: dict, stack: str = "all-in-one") -> list[str]:
    """The problem lines of the config error (none when the config is accepted)."""
    try:
        parse_config(config, stack)
    except ConfigError as err:
        return str(err).splitlines()[1:]
    return []


def edited(base: dict, key: str, edit) -> dict:
    config = copy.deepcopy(base)
    edit(config[NS + key] if NS + key in config else config.setdefault(NS + key, {}))
    return config


def workload(i: int, **fields):
    return lambda workloads: workloads[i].update(fields)


def network(**fields):
    return lambda cluster: cluster.setdefault("network", {}).update(fields)


# ---- a workload in a namespace the stack creates for something else ------------------------------------------


def test_every_stack_namespace_is_refused_for_a_workload():
    """Over every entry of the add-on and adapter registries and the gateway: each namespace the stack creates for
    them is refused as a workload's namespace, named with what it belongs to."""
    reserved = stack_namespaces()
    expected = {r.namespace for a in addons.ADDONS for r in a.releases.values()}
    expected |= {a.namespace for a in metrics_adapters.ADAPTERS.values()} | {"inference-gateway"}
    assert set(reserved) == expected and "custom-metrics" in reserved
    for namespace, owners in reserved.items():
        lines = problems(edited(ALL_IN_ONE, "workloads", workload(GEMMA, namespace=namespace)))
        assert lines == [
            f"  - {NS}workloads[{GEMMA}].namespace: {namespace!r} is the namespace the stack creates for "
            f"{' and '.join(owners)}; a workload needs a namespace of its own, not one of "
            f"{', '.join(sorted(reserved))}"
        ], namespace


def test_a_workload_named_like_a_stack_namespace_is_refused_at_its_name():
    lines = problems(edited(ALL_IN_ONE, "workloads", workload(GEMMA, name="custom-metrics")))
    assert lines[0].startswith(
        f"  - {NS}workloads[{GEMMA}].name: 'custom-metrics' (the default namespace) is the namespace the stack "
        "creates for the metrics adapter custom-metrics-stackdriver and the metrics adapter keda and the metrics "
        "adapter prometheus-adapter"
    )


def test_a_registry_entry_added_later_reserves_its_namespace(monkeypatch):
    monkeypatch.setattr(addons, "ADDONS", (*addons.ADDONS, FAKE))
    other = dataclasses.replace(metrics_adapters.ADAPTERS["prometheus-adapter"], name="other", namespace="other-m")
    monkeypatch.setitem(metrics_adapters.ADAPTERS, "other", other)
    for namespace, owner in (("fake-system", "the Fake add-on"), ("other-m", "the metrics adapter other")):
        (line,) = problems(edited(ALL_IN_ONE, "workloads", workload(GEMMA, namespace=namespace)))
        assert f"{namespace!r} is the namespace the stack creates for {owner};" in line


def test_the_reserved_namespaces_are_those_the_program_creates(run):
    """What stack_namespaces() says is what the program registers: every Namespace it creates that is not a
    workload's (every add-on on, the gateway on) is reserved, and the PathwaysJob manifest's own namespace too."""
    config = copy.deepcopy(VLLM)
    config[NS + "addons"] = {key: {"enabled": True} for key in ("lws", "jobset", "kueue", "pathwaysJob")}
    recording = run(config, preview=True, stack="vllm-multi-host")
    created = {r.inputs["metadata"]["name"] for r in recording.of_type("kubernetes:core/v1:Namespace")}
    workloads = {w.get("namespace") or w["name"] for w in config[NS + "workloads"]}
    reserved = set(stack_namespaces())
    assert created - workloads <= reserved
    manifests = {r.namespace for a in addons.ADDONS for r in a.releases.values() if isinstance(r, ManifestVersion)}
    assert (created - workloads) | manifests == reserved


def test_before_anything_is_registered(run):
    config = make_config(
        tpu_serving__tpuPools=[pool(name="v5e", tpu="v5e", topology="2x4", zone="us-east5-a")],
        tpu_serving__workloads=[
            {
                "type": "jetstream",
                "name": "gemma",
                "pool": "v5e",
                "namespace": "custom-metrics",
                "model": "gemma-7b",
                "checkpoint": "gs://bkt/items",
            }
        ],
    )
    recording = Recording()
    with pytest.raises(pulumi.RunError, match=r"workloads\[0\]\.namespace: 'custom-metrics' is the namespace"):
        run(config, recording=recording)
    assert recording.resources == []


# ---- an autoscaling target that is sent as 0 ------------------------------------------------------------------


@pytest.mark.parametrize("target", [0.0001, 0.0004, 1e-9])
def test_a_target_rounding_to_zero_is_refused(target):
    def set_target(workloads):
        workloads[GEMMA]["autoscaling"]["metrics"][0]["target"] = target

    assert metrics.quantity(target) == "0m"
    (line,) = problems(edited(ALL_IN_ONE, "workloads", set_target))
    assert line == (
        f"  - {NS}workloads[{GEMMA}].autoscaling.metrics[0].target: {target:g} is sent as the HPA target "
        "averageValue '0m' (Kubernetes quantities go down to thousandths), which Kubernetes refuses: it must be "
        "positive; the smallest target is 0.001"
    )


def test_every_metric_of_every_type_refuses_a_zero_quantity():
    """The rule is the unit's, so it holds for every HPA metric of every workload type that autoscales (JetStream
    and vLLM registries), including the bounded fractions."""
    for registry in (JETSTREAM_METRICS, VLLM_METRICS):
        for name, metric in registry.items():
            assert "'0m'" in (metric.unit.target_problem(0.0004) or ""), name
            assert metric.unit.target_problem(0.001) is None, name


def test_a_vllm_target_rounding_to_zero_is_refused():
    def set_target(workloads):
        workloads[0]["autoscaling"]["metrics"][1]["target"] = 0.0002

    (line,) = problems(edited(VLLM, "workloads", set_target), "vllm-multi-host")
    assert line.startswith(f"  - {NS}workloads[0].autoscaling.metrics[1].target: 0.0002 is sent as")


def test_the_smallest_target_renders_a_positive_quantity(run):
    config = edited(ALL_IN_ONE, "workloads", lambda w: w[GEMMA]["autoscaling"]["metrics"][0].update(target=0.001))
    recording = run(config, preview=True, stack="all-in-one")
    (hpa,) = [o for o in kubernetes_objects(recording) if o["kind"] == "HorizontalPodAutoscaler"]
    target = hpa["spec"]["metrics"][0][hpa["spec"]["metrics"][0]["type"].lower()]["target"]
    assert target["averageValue"] == "1m"
    assert api_rules.kubernetes_errors([hpa]) == []


# ---- Saxml models and names -------------------------------------------------------------------------------------


def _models(*models):
    return workload(SAX, models=list(models))


LM = {"model": "lm175b", "modelPath": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test", "replicas": 1}


@pytest.mark.parametrize("path", ["", " ", "saxml..Lm", "saxml.server.lm cloud", "1abc.Lm", "saxml.Lm\n"])
def test_a_saxml_model_path_that_is_no_class_is_refused(path):
    (line,) = problems(edited(ALL_IN_ONE, "workloads", _models({**LM, "modelPath": path})))
    assert line == (
        f"  - {NS}workloads[{SAX}].models[0].modelPath: {path!r} is not a Saxml model class: Python identifiers "
        "joined by dots, e.g. saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test"
    )


@pytest.mark.parametrize("path", ["LmCloudSpmd175B32Test", "lm_cloud.LmCloudSpmd175B32Test", LM["modelPath"]])
def test_a_model_class_by_full_name_or_registry_alias_is_accepted(path):
    assert problems(edited(ALL_IN_ONE, "workloads", _models({**LM, "modelPath": path}))) == []


@pytest.mark.parametrize("again", ["lm175b", "/sax/sax/lm175b"])
def test_two_saxml_models_of_one_name_are_refused(again):
    lines = problems(edited(ALL_IN_ONE, "workloads", _models(LM, {**LM, "model": again})))
    assert lines == [
        f"  - {NS}workloads[{SAX}].models[1].model: {again!r} is the model /sax/sax/lm175b of models[0] again; a "
        "cell publishes each model once (give it another name)"
    ]


@pytest.mark.parametrize("name", ["", "LM", "1lm", "lm.175b"])
def test_a_saxml_model_name_sax_refuses_is_refused(name):
    (line,) = problems(edited(ALL_IN_ONE, "workloads", _models({**LM, "model": name})))
    assert line.startswith(f"  - {NS}workloads[{SAX}].models[0].model: {name!r} is not a Sax model name")


def test_jobset_names_as_its_webhook_checks_them():
    """kubernetes-sigs/jobset@v0.10.1 pkg/webhooks/jobset_webhook.go: GenJobName(js, rj, replicas-1) and
    GenPodName(js, rj, replicas-1, completions-1) + "-abcde" (pkg/util/placement/placement.go)."""
    assert naming.jobset_longest_names("js", "rj", 3, 8) == ("js-rj-2", "js-rj-2-7-abcde")
    assert saxml_checks.longest_pod_name("sax", 2, 8) == "sax-model-server-sax-model-server-1-7-abcde"


@pytest.mark.parametrize("length", [24, 29])
def test_a_saxml_name_whose_pod_names_with_their_suffix_exceed_63_is_refused(length):
    """Accepted before at up to 29 characters on all-in-one's 2 slices of 8 hosts: the webhook counts the Job
    controller's random suffix too, so 23 is the longest."""
    name = "s" * length
    (line,) = problems(edited(ALL_IN_ONE, "workloads", workload(SAX, name=name)))
    longest = f"{name}-model-server-sax-model-server-1-7-abcde"
    assert line == (
        f"  - {NS}workloads[{SAX}].name: {name!r} is too long for a Saxml workload on pool 'v5e-4x8': JobSet names "
        f"its model server pods up to {longest!r} ({len(longest)} characters, with the Job controller's 5 random "
        "ones), and JobSet refuses names over 63; use at most 23 characters"
    )


def test_the_longest_saxml_name_renders_a_jobset_the_webhook_admits(run):
    config = edited(ALL_IN_ONE, "workloads", workload(SAX, name="s" * 23))
    (jobset,) = [o for o in kubernetes_objects(run(config, preview=True, stack="all-in-one")) if o["kind"] == "JobSet"]
    assert api_rules.kubernetes_errors([jobset]) == []
    rj = jobset["spec"]["replicatedJobs"][0]
    _, pod = naming.jobset_longest_names(jobset["metadata"]["name"], rj["name"], rj["replicas"], 8)
    assert len(pod) == 63 and rj["template"]["spec"]["completions"] == 8
    # one character more is what the webhook refuses, and the API rules say so
    longer = {**jobset, "metadata": {**jobset["metadata"], "name": "s" + jobset["metadata"]["name"]}}
    assert any("derived pod" in e for e in api_rules.kubernetes_errors([longer]))


# ---- the created subnet's ranges --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("nodesCidr", "10.0.0.0", "has no prefix length: write the range as <address>/<length>, e.g. 10.0.0.0/20"),
        ("servicesCidr", "10.20.0.0", "has no prefix length"),
        ("nodesCidr", "10.0.0.0/30", "is a /30; allowed: /8 to /29 (Compute Engine's smallest subnet range is a /29"),
        ("nodesCidr", "10.0.0.0/32", "is a /32; allowed: /8 to /29"),
        ("podsCidr", "10.16.0.0/25", "is a /25; allowed: /8 to /24 (GKE gives each node a /24 of the Pod range"),
        ("nodesCidr", "0.0.0.0/7", "is a /7; allowed: /8 to /29"),
    ],
)
def test_a_subnet_range_that_is_no_subnet_range_is_refused(key, value, why):
    lines = problems(edited(ALL_IN_ONE, "cluster", network(**{key: value})))
    assert lines and lines[0].startswith(f"  - {NS}cluster.network.{key}: {value!r} {why}"), lines


def test_the_smallest_ranges_are_accepted():
    ranges = network(nodesCidr="10.0.0.0/29", podsCidr="10.16.0.0/24", servicesCidr="10.20.0.0/29")
    assert problems(edited(ALL_IN_ONE, "cluster", ranges)) == []


def test_range_names_clash_is_reported_at_the_key_the_user_set():
    lines = problems(edited(ALL_IN_ONE, "cluster", network(podsRangeName="services")))
    assert lines == [
        f"  - {NS}cluster.network.podsRangeName: 'services' is also servicesRangeName (its default); a subnet's "
        "secondary ranges need distinct names"
    ]
    (line,) = problems(edited(ALL_IN_ONE, "cluster", network(servicesRangeName="pods")))
    assert line.startswith(f"  - {NS}cluster.network.servicesRangeName: 'pods' is also podsRangeName (its default)")
    (line,) = problems(edited(ALL_IN_ONE, "cluster", network(podsRangeName="r", servicesRangeName="r")))
    assert line.startswith(f"  - {NS}cluster.network.servicesRangeName: 'r' is also podsRangeName;")


# ---- the bucket location -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "close"),
    [
        ("mars", ""),
        ("us-east5-b", "did you mean us-east5? "),
        ("US-EAST", "did you mean us-east5 or us-east4 or us-east1? "),
        ("europe", ""),
        ("NAM9", ""),
        ("us_east5", "did you mean us-east5? "),
        ("mars-north1", ""),  # written like a region, listed nowhere: refused too (Google's list is the source)
    ],
)
def test_a_bucket_location_cloud_storage_does_not_have_is_refused(location, close):
    (line,) = problems(edited(ALL_IN_ONE, "bucket", lambda b: b.update(location=location)))
    assert line == (
        f"  - {NS}bucket.location: {location!r} is not a Cloud Storage location; {close}allowed: one of its "
        f"{len(storage_locations.REGIONS)} regions (e.g. us-east5, europe-west4; all at "
        "https://cloud.google.com/storage/docs/locations), a dual-region (ASIA1, EUR4, EUR5, EUR7, EUR8, NAM4) or a "
        "multi-region (ASIA, EU, US)"
    )


@pytest.mark.parametrize("location", ["us-east5", "US-EAST5", "US", "eu", "NAM4", "asia1", "asia-southeast3"])
def test_cloud_storage_locations_in_any_case_are_accepted(location):
    assert problems(edited(ALL_IN_ONE, "bucket", lambda b: b.update(location=location))) == []


def test_every_shipped_stack_region_is_a_bucket_location():
    """The default bucket location is gcp:region: every shipped stack's region has Cloud Storage."""
    from tests.conftest import STACK_FILES

    regions = {load_stack_file(path)["gcp:region"] for path in STACK_FILES}
    assert regions and all(storage_locations.is_location(r) for r in regions), sorted(regions)


# ---- scalars the Pulumi CLI reads as strings -------------------------------------------------------------------


def test_unquoted_maintenance_times_are_read_as_the_strings_the_cli_passes(tmp_path):
    """yaml.v3 decodes a timestamp-like plain scalar into an interface{} as its string (go-yaml/yaml@v3.0.1 decode.go
    decoder.scalar, "for backward compatibility"), so `pulumi up` passes `2025-01-04T03:00:00Z` as text; the offline
    loader must too (PyYAML made it a datetime, and the render failed: "datetime is not JSON serializable")."""
    text = (
        (ROOT / "Pulumi.dev.yaml")
        .read_text()
        .replace(
            "  tpu-serving:cluster:\n",
            "  tpu-serving:cluster:\n    maintenance:\n      window:\n        start: 2025-01-04T03:00:00Z\n"
            "        end: 2025-01-04T11:00:00Z\n        recurrence: FREQ=WEEKLY;BYDAY=SA,SU\n",
            1,
        )
    )
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text)
    window = load_stack_file(path)["tpu-serving:cluster"]["maintenance"]["window"]
    assert window["start"] == "2025-01-04T03:00:00Z" and window["end"] == "2025-01-04T11:00:00Z"
    assert problems(load_stack_file(path), stack="dev") == []


def test_a_saxml_cell_starts_with_a_letter():
    """google/saxml@v1.1.0:saxml/common/naming.go validates cell names with ^[a-z]+[a-z0-9-_]*$."""
    assert not saxml_checks.CELL_RE.fullmatch("/sax/1test")
    assert saxml_checks.CELL_RE.fullmatch("/sax/test-1")
