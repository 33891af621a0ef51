"""Bad input fails before any resource is registered, with a RunError naming the key, the value and what is allowed."""

import pulumi
import pytest

from tests.conftest import make_config, pool
from tooling.harness.offline import Recording

CASES = {
    "unknown generation": (
        make_config(tpu_serving__tpuPools=[pool(tpu="v7")]),
        ["tpu-serving:tpuPools[0].tpu: unknown TPU generation 'v7'; allowed: v4, v5e, v5p, v6e"],
    ),
    "topology not valid for generation": (
        make_config(tpu_serving__tpuPools=[pool(tpu="v5e", topology="2x2x1")]),
        ["tpu-serving:tpuPools[0].topology: topology '2x2x1' is not valid for v5e; allowed: 1x1, 2x2, 2x4, 4x4"],
    ),
    "machine type does not fit topology": (
        make_config(tpu_serving__tpuPools=[pool(topology="4x4", machineType="ct6e-standard-8t")]),
        [
            "tpu-serving:tpuPools[0].machineType: machine type 'ct6e-standard-8t' does not fit v6e 4x4; allowed: ct6e-standard-4t"
        ],
    ),
    "zone outside region": (
        make_config(tpu_serving__tpuPools=[pool(zone="us-central1-a")]),
        ["tpu-serving:tpuPools[0].zone: 'us-central1-a' is not a zone of gcp:region 'us-east5'"],
    ),
    "duplicate pool names": (
        make_config(tpu_serving__tpuPools=[pool(name="a"), pool(name="a", topology="4x8")]),
        ["tpu-serving:tpuPools[1].name: 'a' is already the name of tpuPools[0]"],
    ),
    "slices below one": (
        make_config(tpu_serving__tpuPools=[pool(slices=0)]),
        ["tpu-serving:tpuPools[0].slices: 0 is not allowed; a pool has at least 1 slice"],
    ),
    "slices on single-host": (
        make_config(tpu_serving__tpuPools=[pool(topology="2x4", slices=2)]),
        [
            "tpu-serving:tpuPools[0].slices: 2 slices on single-host v6e 2x4 (ct6e-standard-8t) is not allowed: "
            # the tutorial's "two v6e-8 slices": 2x4 on ct6e-standard-4t is 2 VMs x 4 chips (gke-tpu-facts.md, v6e
            # slice table: "2x4 8 chips, 1 host, 2 VMs (ct6e-standard-4t), GKE API only")
            "multislice needs multi-host slices; for 2 multi-host slices of 2x4 set machineType: ct6e-standard-4t "
            "(2 hosts x 4 chips per slice), or use autoscaling.maxNodes"
        ],
    ),
    "slices on a topology with no multi-host machine type": (
        make_config(tpu_serving__tpuPools=[pool(topology="1x1", slices=2)]),
        [
            "tpu-serving:tpuPools[0].slices: 2 slices on single-host v6e 1x1 (ct6e-standard-1t) is not allowed: "
            "multislice needs multi-host slices; use autoscaling.maxNodes"
        ],
    ),
    "reservation missing": (
        make_config(tpu_serving__tpuPools=[pool(capacity="reservation")]),
        ["tpu-serving:tpuPools[0].reservation: required with capacity 'reservation'"],
    ),
    "reservation without capacity reservation": (
        make_config(tpu_serving__tpuPools=[pool(reservation="r1")]),
        ["tpu-serving:tpuPools[0].reservation: given with capacity 'on-demand': set capacity: reservation"],
    ),
    "spot with reservation": (
        make_config(tpu_serving__tpuPools=[pool(capacity="spot", reservation="r1")]),
        ["tpu-serving:tpuPools[0].reservation: given with capacity 'spot': spot VMs cannot consume a reservation"],
    ),
    "partial autoscaling of a multi-host slice": (
        make_config(tpu_serving__tpuPools=[pool(autoscaling={"minNodes": 1, "maxNodes": 4})]),
        [
            "tpu-serving:tpuPools[0].autoscaling: {minNodes: 1, maxNodes: 4} is not allowed on a multi-host 4x4 slice: "
            "slices are atomic, so minNodes is 0 or 4 and maxNodes is 4"
        ],
    ),
    "autoscaling beyond the slice": (
        make_config(tpu_serving__tpuPools=[pool(autoscaling={"minNodes": 0, "maxNodes": 8})]),
        ["tpu-serving:tpuPools[0].autoscaling: {minNodes: 0, maxNodes: 8} is not allowed"],
    ),
    "invalid bucket name": (
        make_config(tpu_serving__bucket={"name": "My_Bucket.example"}),
        ["tpu-serving:bucket.name: 'My_Bucket.example' is not a valid bucket name"],
    ),
    "bucket name with google": (
        make_config(tpu_serving__bucket={"name": "my-google-bucket"}),
        ["tpu-serving:bucket.name: 'my-google-bucket' is not a valid bucket name: it may not start with 'goog'"],
    ),
    "invalid environment": (
        make_config(tpu_serving__environment="production"),
        ["tpu-serving:environment: 'production' is not allowed; allowed: dev, staging, prod"],
    ),
    "missing environment": (
        make_config(tpu_serving__environment=None),
        ["tpu-serving:environment: required: one of dev, staging, prod"],
    ),
    "missing project": (make_config(gcp__project=None), ["gcp:project: required"]),
    "missing region": (make_config(gcp__region=None), ["gcp:region: required"]),
    "authorized network CIDR does not parse": (
        make_config(tpu_serving__cluster={"masterAuthorizedNetworks": [{"cidrBlock": "10.0.0.300/24"}]}),
        ["tpu-serving:cluster.masterAuthorizedNetworks[0].cidrBlock: '10.0.0.300/24' is not a valid IPv4 CIDR block"],
    ),
    "network CIDR with host bits": (
        make_config(tpu_serving__cluster={"network": {"podsCidr": "10.16.0.1/14"}}),
        ["tpu-serving:cluster.network.podsCidr: '10.16.0.1/14' is not a valid IPv4 CIDR block"],
    ),
    "overlapping ranges": (
        make_config(tpu_serving__cluster={"network": {"servicesCidr": "10.0.4.0/24"}}),
        ["tpu-serving:cluster.network.servicesCidr: 10.0.4.0/24 overlaps nodesCidr 10.0.0.0/20"],
    ),
    "existing network without names": (
        make_config(tpu_serving__cluster={"network": {"create": False}}),
        [
            "tpu-serving:cluster.network.network: required when network.create is false",
            "tpu-serving:cluster.network.subnetwork: required when network.create is false",
        ],
    ),
    "cluster location in another region": (
        make_config(tpu_serving__cluster={"location": "europe-west4-a"}),
        [
            "tpu-serving:cluster.location: 'europe-west4-a' must be gcp:region ('us-east5', a regional cluster) or a zone in it"
        ],
    ),
    "invalid cluster name": (
        make_config(tpu_serving__cluster={"name": "My Cluster"}),
        ["tpu-serving:cluster.name: 'My Cluster' is not a valid GKE cluster name"],
    ),
    "unknown key in an object": (
        make_config(tpu_serving__cluster={"releaseChanel": "RAPID"}),
        ["tpu-serving:cluster.releaseChanel: unknown key; allowed: name, location, releaseChannel"],
    ),
    "unknown key in a pool": (
        make_config(tpu_serving__tpuPools=[pool(topolgy="4x4")]),
        ["tpu-serving:tpuPools[0].topolgy: unknown key; allowed: name, tpu, topology, zone, slices"],
    ),
    "unknown top-level key": (
        {**make_config(), "tpu-serving:tpuPool": []},
        ["tpu-serving:tpuPool: unknown key; allowed: environment, cluster, bucket, tpuPools"],
    ),
    "bad capacity value": (
        make_config(tpu_serving__tpuPools=[pool(capacity="preemptible")]),
        [
            "tpu-serving:tpuPools[0].capacity: 'preemptible' is not allowed; allowed: on-demand, spot, reservation, flex-start"
        ],
    ),
    "capacity list with a repeat or an unknown entry": (
        make_config(
            tpu_serving__tpuPools=[
                pool(name="a", capacity=["spot", "spot"]),
                pool(name="b", capacity=["spot", "preemptible"]),
                pool(name="c", capacity=[]),
            ]
        ),
        [
            "tpu-serving:tpuPools[0].capacity: a capacity list names each of 'on-demand', 'spot', 'reservation' or "
            '\'flex-start\' at most once, at least one (got ["spot", "spot"])',
            "tpu-serving:tpuPools[1].capacity: a capacity list names each of",
            "tpu-serving:tpuPools[2].capacity: a capacity list names each of",
        ],
    ),
    "capacity list: reservation, minNodes and version": (
        make_config(
            tpu_serving__tpuPools=[
                pool(capacity=["reservation", "spot"], autoscaling={"minNodes": 4, "maxNodes": 4}),
                pool(name="q", capacity=["spot", "on-demand"], reservation="r1"),
            ]
        ),
        [
            "tpu-serving:tpuPools[0].reservation: required with capacity 'reservation'",
            "tpu-serving:tpuPools[0].autoscaling.minNodes: 4 with a capacity list: GKE creates this pool's node pools",
            'tpu-serving:tpuPools[1].reservation: given with capacity ["spot", "on-demand"]: add reservation to '
            "the capacity list, or remove the reservation",
        ],
    ),
    "pathways-job on a capacity-list pool": (
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.2201000"},
            tpu_serving__addons={"pathwaysJob": {"enabled": True}},
            tpu_serving__tpuPools=[pool(name="v6e", capacity=["spot", "on-demand"])],
            tpu_serving__workloads=[{"type": "pathways-job", "name": "pw", "pool": "v6e"}],
        ),
        [
            "tpu-serving:workloads[0].pool: pathways-job cannot run on pool 'v6e', whose capacity is a list "
            "(ComputeClass tpu-v6e): the PathwaysJob controller writes the TPU pods' node selectors itself"
        ],
    ),
    "capacity list without a recent enough GKE version": (
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.33.1-gke.1000000"},
            tpu_serving__tpuPools=[pool(capacity=["spot", "on-demand"])],
        ),
        [
            "tpu-serving:cluster.minMasterVersion: '1.33.1-gke.1000000' is below 1.33.3-gke.1136000, the minimum GKE "
            "version for a capacity list (ComputeClass node pool auto-creation) (pool 'p')"
        ],
    ),
    "bad release channel": (
        make_config(tpu_serving__cluster={"releaseChannel": "regular"}),
        ["tpu-serving:cluster.releaseChannel: 'regular' is not allowed; allowed: RAPID, REGULAR, STABLE, EXTENDED"],
    ),
    "pools not a list": (
        make_config(tpu_serving__tpuPools={"name": "x"}),
        ['tpu-serving:tpuPools: must be a list of pools (got {"name": "x"})'],
    ),
    "required pool key missing": (
        make_config(tpu_serving__tpuPools=[{"name": "x", "tpu": "v6e", "topology": "4x4"}]),
        ["tpu-serving:tpuPools[0].zone: required key is missing"],
    ),
    "min master version below what the TPU needs": (
        make_config(tpu_serving__cluster={"minMasterVersion": "1.30.5-gke.1000"}),
        [
            "tpu-serving:cluster.minMasterVersion: '1.30.5-gke.1000' is below 1.31.2-gke.1115000, the minimum GKE version for v6e"
        ],
    ),
    # S7 https://docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood: Standard 1.34.0-gke.2201000+
    "tpu7x below its minimum GKE version": (
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.1000"},
            tpu_serving__tpuPools=[pool(tpu="tpu7x", topology="2x2x2")],
        ),
        [
            "tpu-serving:cluster.minMasterVersion: '1.34.0-gke.1000' is below 1.34.0-gke.2201000, the minimum GKE "
            "version for tpu7x (pool 'p')"
        ],
    ),
    "tpu7x without a minimum version": (
        make_config(tpu_serving__tpuPools=[pool(tpu="tpu7x", topology="2x2x1")]),
        [
            "tpu-serving:cluster.minMasterVersion: required with pool 'p': set it to 1.34.0-gke.2201000 or later "
            "(the minimum GKE version for tpu7x), a version the REGULAR channel offers"
        ],
    ),
    "workload type whose images do not serve tpu7x": (
        make_config(
            tpu_serving__cluster={"minMasterVersion": "1.34.0-gke.2201000"},
            tpu_serving__tpuPools=[pool(name="iw", tpu="tpu7x", topology="4x4x4")],
            tpu_serving__workloads=[
                {
                    "type": "jetstream-pathways",
                    "name": "llama",
                    "pool": "iw",
                    "model": "llama3.1-405b",
                    "checkpoint": "gs://b/ckpt",
                }
            ],
        ),
        [
            "tpu-serving:workloads[0].pool: jetstream-pathways cannot run on tpu7x (pool 'iw'): its pinned images do "
            "not support tpu7x; workload types that do: vllm"  # tpu-inference@v0.27.0 README: v7x recommended
        ],
    ),
    "system pool min above max": (
        make_config(tpu_serving__cluster={"systemPool": {"minNodes": 4, "maxNodes": 2}}),
        ["tpu-serving:cluster.systemPool.minNodes: 4 is above maxNodes 2"],
    ),
    "flex-start starting above zero": (
        make_config(
            tpu_serving__tpuPools=[
                pool(topology="2x4", capacity="flex-start", autoscaling={"minNodes": 1, "maxNodes": 2})
            ]
        ),
        ["tpu-serving:tpuPools[0].autoscaling.minNodes: 1 with flex-start: flex-start pools start at 0"],
    ),
    "invalid label": (
        make_config(tpu_serving__cluster={"labels": {"Team": "ML"}}),
        ["tpu-serving:cluster.labels.Team: label Team='ML' is invalid"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_fails_naming_the_key_and_registers_nothing(run, case):
    config, expected = CASES[case]
    recording = Recording()
    with pytest.raises(pulumi.RunError) as err:
        run(config, recording=recording)
    message = str(err.value)
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in:\n{message}"
    assert recording.resources == [], "resources were registered before the config error"


def test_every_problem_is_reported_at_once(run):
    config = make_config(
        tpu_serving__environment="qa",
        tpu_serving__bucket={"name": "UPPER"},
        tpu_serving__tpuPools=[pool(tpu="v9"), pool(name="b", topology="3x3"), pool(name="c", zone="us-west1-a")],
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    message = str(err.value)
    assert "(5 problems)" in message
    for key in (
        "tpu-serving:environment",
        "tpu-serving:bucket.name",
        "tpu-serving:tpuPools[0].tpu",
        "tpu-serving:tpuPools[1].topology",
        "tpu-serving:tpuPools[2].zone",
    ):
        assert f"  - {key}:" in message


def test_non_json_structured_value_is_reported_at_its_key(run):
    config = make_config()
    config["tpu-serving:cluster"] = "not-an-object"
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:cluster: must be a mapping with keys name, location"):
        run(config)


def test_unknown_key_from_the_cli_config_bag_is_reported(run, monkeypatch):
    """A real `pulumi up` passes config in PULUMI_CONFIG, not in-process: typos there are caught too."""
    import json

    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"tpu-serving:tpuPool": "[]"}))
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:tpuPool: unknown key; allowed: environment"):
        run(make_config())


def test_duplicate_resource_names_are_detected(tmp_path):
    """The recorder catches what Pulumi's mocks do not: two resources with one URN."""
    from tooling.harness.offline import run_program

    program = tmp_path / "dup.py"
    program.write_text("import pulumi_gcp as gcp\nfor _ in range(2):\n    gcp.storage.Bucket('same', location='US')\n")
    rec = run_program(make_config(), program=program)
    assert len(rec.duplicate_urns) == 1


def test_a_broken_pool_is_reported_once_not_again_by_every_workload_naming_it(run):
    """Issue 14: a misspelt key in a pool used to add "'v5e-2x4' is not a TPU pool ...; available: none" per workload."""
    from tests.conftest import EXAMPLES
    from tooling.harness.offline import load_stack_file

    config = load_stack_file(next(p for p in EXAMPLES if p.name == "Pulumi.all-in-one.yaml"))
    pools = config["tpu-serving:tpuPools"]
    broken = next(p for p in pools if p["name"] == "v5e-2x4")
    broken["autoscalling"] = broken.pop("autoscaling")
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    message = str(err.value)
    assert "(1 problem)" in message, message
    assert f"tpu-serving:tpuPools[{pools.index(broken)}].autoscalling" in message
    assert "is not a TPU pool" not in message
