"""Config the APIs would refuse is refused first, in the stack's words: names the stack derives (checked against
each other, not only against what the config says), GCP and Kubernetes name rules, number bounds, images, ports,
shared namespaces and pools. Each rule cites its source where it is declared."""

from __future__ import annotations

import copy

import pytest

from stacks.config import ConfigError
from tests.conftest import ROOT, STACK_FILES
from tooling.harness.offline import load_stack_file
from tooling.scans.fuzz import parse

ALL_IN_ONE = load_stack_file(ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml")
NS = "tpu-serving:"


def errors(config: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse(config, "all-in-one")
    text = str(err.value)
    assert "Input should be" not in text and "instance of" not in text, text
    return text


def changed(**edits) -> dict:
    """all-in-one with `edits`: {key (without tpu-serving:): function(value) -> new value, or a value}."""
    config = copy.deepcopy(ALL_IN_ONE)
    for key, edit in edits.items():
        full = key if ":" in key else NS + key
        config[full] = edit(config.get(full)) if callable(edit) else edit
    return config


def pools(*edits):
    def apply(value):
        value = copy.deepcopy(value)
        for i, fields in edits:
            if i >= len(value):
                value.append(fields)
            else:
                value[i].update(fields)
        return value

    return apply


def workloads(*edits):
    return pools(*edits)


CASES = {
    "trailing newline in a pool name": (
        changed(tpuPools=pools((3, {"name": "v5e-2x4\n"}))),
        "tpu-serving:tpuPools[3].name: 'v5e-2x4\\n' is not a valid pool name",
    ),
    "trailing newline in a label value": (
        changed(cluster=lambda c: {**c, "labels": {"team": "ml\n"}}),
        "tpu-serving:cluster.labels.team: label team='ml\\n' is invalid",
    ),
    "pool named like the system pool": (
        changed(tpuPools=pools((3, {"name": "system"}))),
        "tpu-serving:tpuPools[3].name: 'system' derives node pool 'system', which is already the name of the "
        "cluster's system pool",
    ),
    "a pool deriving another pool's slice name": (
        changed(tpuPools=pools((3, {"name": "v6e-2x4-s1"}))),
        "tpu-serving:tpuPools[3].name: 'v6e-2x4-s1' derives node pool 'v6e-2x4-s1', which is already the name of a "
        "node pool of tpuPools[1]",
    ),
    "the longest pool name with many slices": (
        changed(tpuPools=pools((2, {"name": "a" * 36, "slices": 101}))),
        f"tpu-serving:tpuPools[2].name: '{'a' * 36}' with 101 slices gives node pool '{'a' * 36}-s100' (41 characters)",
    ),
    "slices without bound": (
        changed(tpuPools=pools((2, {"slices": 2**31}))),
        "tpu-serving:tpuPools[2].slices: 2147483648 is not allowed; must be at most 256",
    ),
    "a number no float64 holds": (
        changed(tpuPools=pools((2, {"slices": 10**30}))),
        "tpu-serving:tpuPools[2].slices: 1000000000000000000000000000000 is too large",
    ),
    "unknown region": (
        changed(**{"gcp:region": "mars-north1"}),
        "gcp:region: 'mars-north1' is not a Google Cloud region",
    ),
    "zone letter that does not exist": (
        changed(tpuPools=pools((0, {"zone": "us-central1-z"}))),
        "tpu-serving:tpuPools[0].zone: 'us-central1-z' is not a zone of gcp:region 'us-central1'",
    ),
    "identical secondary range names": (
        changed(cluster=lambda c: {**c, "network": {"podsRangeName": "r", "servicesRangeName": "r"}}),
        "tpu-serving:cluster.network.servicesRangeName: 'r' is also podsRangeName",
    ),
    "secondary range name over 63 characters": (
        changed(cluster=lambda c: {**c, "network": {"podsRangeName": "p" * 64}}),
        "tpu-serving:cluster.network.podsRangeName: '" + "p" * 64 + "' is not a valid secondary range name",
    ),
    "machine type with spaces": (
        changed(cluster=lambda c: {**c, "systemPool": {"machineType": "e2 standard"}}),
        "tpu-serving:cluster.systemPool.machineType: 'e2 standard' is not a machine type",
    ),
    "empty reservation": (
        changed(tpuPools=pools((0, {"capacity": "reservation", "reservation": "Bad Name"}))),
        "tpu-serving:tpuPools[0].reservation: 'Bad Name' is not a reservation",
    ),
    "namespace with a tab": (
        changed(workloads=workloads((0, {"namespace": "serving\t"}))),
        "tpu-serving:workloads[0].namespace: 'serving\\t' is not a valid namespace",
    ),
    "image reference with a space": (
        changed(workloads=workloads((3, {"images": {"server": "gcr.io/x/server: v1"}}))),
        "tpu-serving:workloads[3].images.server: 'gcr.io/x/server: v1' is not an image reference",
    ),
    "image reference with uppercase path": (
        changed(workloads=workloads((2, {"images": {"http": "gcr.io/Project/sax-http:v1"}}))),
        "tpu-serving:workloads[2].images.http: 'gcr.io/Project/sax-http:v1' is not an image reference",
    ),
    "Service port already the gRPC port": (
        changed(workloads=workloads((3, {"service": {"port": 9000}}))),
        "tpu-serving:workloads[3].service.port: 9000 is already the Service's jetstream-grpc port",
    ),
    "metrics port already a leader port": (
        changed(workloads=workloads((0, {"metricsPort": 8000}))),
        "tpu-serving:workloads[0].metricsPort: 8000 is already the jetstream-http port",
    ),
    "objects of two workloads in one namespace": (
        changed(
            workloads=workloads(
                (
                    4,
                    {
                        "type": "jetstream",
                        "name": "sax-http",
                        "namespace": "sax",
                        "pool": "v5e-2x4",
                        "model": "gemma-7b",
                        "checkpoint": "gs://bkt/items",
                    },
                )
            )
        ),
        "tpu-serving:workloads[4].name: 'sax-http' starts with 'sax-', the prefix of the objects of workloads[2] in "
        "the same namespace 'sax'",
    ),
    "JobSet pod names over 63 characters": (
        changed(workloads=workloads((2, {"name": "s" * 40}))),
        f"tpu-serving:workloads[2].name: '{'s' * 40}' is too long for a Saxml workload on pool 'v5e-4x8': JobSet names "
        f"its model server pods up to '{'s' * 40}-model-server-sax-model-server-1-7-abcde' (80 characters, with the "
        "Job controller's 5 random ones), and JobSet refuses names over 63; use at most 23 characters",
    ),
    "two workloads oversubscribing one pool": (
        changed(
            workloads=workloads(
                (
                    4,
                    {
                        "type": "jetstream",
                        "name": "gemma2",
                        "pool": "v5e-2x4",
                        "model": "gemma-7b",
                        "checkpoint": "gs://bkt/items",
                    },
                )
            )
        ),
        "tpu-serving:workloads[4].pool: pool 'v5e-2x4' has 4 TPU host(s), but its workloads need 5 at most "
        "(workloads[3] 'gemma' 4, workloads[4] 'gemma2' 1)",
    ),
    "HPA behavior with an unknown key": (
        changed(
            workloads=workloads(
                (
                    3,
                    {
                        "autoscaling": {
                            **ALL_IN_ONE[NS + "workloads"][3]["autoscaling"],
                            "behavior": {"scaleDown": {"window": 1}},
                        }
                    },
                )
            )
        ),
        "tpu-serving:workloads[3].autoscaling.behavior.scaleDown.window: unknown key; allowed: "
        "stabilizationWindowSeconds, selectPolicy, policies",
    ),
    "HPA behavior period over 1800 s": (
        changed(
            workloads=workloads(
                (
                    3,
                    {
                        "autoscaling": {
                            **ALL_IN_ONE[NS + "workloads"][3]["autoscaling"],
                            "behavior": {
                                "scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 3600}]}
                            },
                        }
                    },
                )
            )
        ),
        "tpu-serving:workloads[3].autoscaling.behavior.scaleUp.policies[0].periodSeconds: 3600 is not allowed; must "
        "be at most 1800",
    ),
    "maxtext value of the wrong type, said once": (
        changed(workloads=workloads((0, {"maxtext": {"per_device_batch_size": [1]}}))),
        "tpu-serving:workloads[0].maxtext.per_device_batch_size: must be a string, a whole number, a number or true "
        "or false (got [1])",
    ),
    "maxtext value with a newline": (
        changed(workloads=workloads((0, {"maxtext": {"attention": "dot\nproduct"}}))),
        "tpu-serving:workloads[0].maxtext.attention: 'dot\\nproduct' is not allowed: 1-1024 characters without spaces",
    ),
    "pydantic's wording of a wrong type": (
        changed(tpuPools=lambda p: [*p[:3], "v5e"]),
        "tpu-serving:tpuPools[3]: must be a mapping with keys name, tpu, topology, zone",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_refused_in_the_stacks_words(case):
    config, expected = CASES[case]
    text = errors(config)
    assert expected in text, f"{expected!r} not in:\n{text}"


def test_pathways_job_images_are_checked_once_and_whole():
    """`images.*` are checked by the check shared by every workload type, not again by pathways-job's own; tags
    and env names are matched whole."""
    (i,) = [n for n, w in enumerate(ALL_IN_ONE[NS + "workloads"]) if w["type"] == "pathways-job"]
    text = errors(
        changed(
            workloads=workloads((i, {"images": {"server": "gcr.io/x/server: v1"}, "pathwaysVersion": "jax-0.5.3\n"}))
        )
    )
    assert text.count(f"workloads[{i}].images.server:") == 1, text
    assert f"workloads[{i}].pathwaysVersion:" in text, text


def test_a_broken_pool_list_is_the_problem_not_every_workload_pool():
    text = errors(changed(tpuPools=lambda p: [*p[:3], {"name": "v5e-2x4", "tpu": "v5e"}]))
    assert "tpu-serving:tpuPools[3].topology: required key is missing" in text
    assert "workloads[3].pool" not in text and "available: none" not in text


def test_union_branches_never_appear_in_a_key_path():
    text = errors(changed(workloads=workloads((0, {"maxtext": {"x": {"a": 1}}}))))
    for branch in (".str", ".int", ".float", ".bool"):
        assert f"maxtext.x{branch}" not in text


def test_every_shipped_stack_still_parses():
    for path in STACK_FILES:  # the regional stacks (a fleet stack's config: tests/test_fleet.py)
        parse(load_stack_file(path), path.name.removeprefix("Pulumi.").removesuffix(".yaml"))


def test_a_control_character_in_a_value_never_breaks_a_problem_onto_two_lines():
    """Found by the fuzzer: a pool named 'a\nb' split the 'available: ...' list of another problem."""
    text = errors(changed(tpuPools=pools((2, {"name": "v5e-4x8\n"}))))
    assert all(line.startswith("  - ") for line in text.splitlines()[1:]), text
