"""`make maintenance` (scripts/maintenance.py, tooling/operations/host_maintenance.py) on recorded `gcloud compute instances
list` JSON (tests/data/maintenance/instances.json).

Sources: compute v1 `Instance.resourceStatus.upcomingMaintenance` = `UpcomingMaintenance` {type, maintenanceStatus,
windowStartTime, windowEndTime, latestWindowStartTime, canReschedule, maintenanceReasons} (google-api-python-client
2.202.0 googleapiclient/discovery_cache/documents/compute.v1.json, kept in tooling/data/api_schemas.json; the
fields https://cloud.google.com/tpu/docs/view-maintenance-notifications lists); GKE's VM labels
goog-k8s-cluster-name and goog-k8s-node-pool-name (https://cloud.google.com/kubernetes-engine/docs/how-to/cost-allocations);
a host event on one VM of a TPU slice interrupts the whole slice
(https://cloud.google.com/kubernetes-engine/docs/concepts/handle-disruption-gpu-tpu).
"""

from __future__ import annotations

import datetime
import json
import sys

from tooling.harness.offline import ROOT, parse_stack_file
from tooling.operations import host_maintenance
from tooling.operations.preflight import GcloudError
from tooling.oracles import api_schemas

sys.path.insert(0, str(ROOT / "scripts"))
import maintenance as script  # noqa: E402

INSTANCES = ROOT / "tests" / "data" / "maintenance" / "instances.json"
ALL_IN_ONE = ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml"
NOW = datetime.datetime(2026, 11, 26, 12, 0, tzinfo=datetime.UTC)


def recorded(args: list[str]):
    assert args[:3] == ["compute", "instances", "list"]
    return json.loads(INSTANCES.read_text())


def test_the_recording_follows_the_compute_instance_schema():
    errors: list[str] = []
    for item in json.loads(INSTANCES.read_text()):
        api_schemas.validate("compute.v1", {"$ref": "Instance"}, item, "", errors)
    assert errors == []


def test_the_command_lists_the_clusters_vms():
    cfg = parse_stack_file(ALL_IN_ONE)
    assert host_maintenance.instances_command(cfg) == [
        "compute",
        "instances",
        "list",
        "--project=my-tpu-project",
        "--filter=labels.goog-k8s-cluster-name=tpu-serving-all-in-one",
    ]


def test_every_node_pool_of_every_pool_is_listed_with_its_earliest_window():
    cfg = parse_stack_file(ALL_IN_ONE)
    found = host_maintenance.slices(cfg, recorded(["compute", "instances", "list"]))
    planned = [(p.name, n) for p in cfg.pools for n in p.node_pool_names]
    assert [(s.pool, s.node_pool) for s in found] == [*planned, ("", "nap-ct5lp-hightpu-8t-1f2a3b4c")]
    by_pool = {s.node_pool: s for s in found}
    assert by_pool["v6e-4x4-s0"].first.start == "2026-11-27T03:00:00Z"
    assert by_pool["v5e-4x8-s0"].windows == [] and len(by_pool["v5e-4x8-s0"].hosts) == 8
    assert by_pool["v6e-2x4-s1"].hosts == []
    assert "system" not in by_pool  # not a TPU node pool


def test_the_listing_flags_a_slice_within_a_day(capsys):
    assert script.main([str(ALL_IN_ONE)], run=recorded, now=NOW) == 0
    out = capsys.readouterr().out
    assert (
        "pool v6e-4x4 node pool v6e-4x4-s0: 4 host(s); WITHIN A DAY: SCHEDULED maintenance PENDING "
        "2026-11-27T03:00:00Z to 2026-11-27T07:00:00Z (latest start 2026-12-03T03:00:00Z) on 1 host(s): "
        "gke-tpu-serving-all-in-one-v6e-4x4-s0-7c1e4a2b-2; the whole slice stops; can be started early" in out
    )
    assert "pool v5e-2x4 node pool v5e-2x4: 2 host(s); SCHEDULED maintenance PENDING 2026-12-03T10:00:00Z" in out
    assert (
        "v5e-2x4: 2 host(s); SCHEDULED maintenance PENDING 2026-12-03T10:00:00Z to 2026-12-03T14:00:00Z (latest start 2026-12-03T10:00:00Z) on 1 host(s): gke-tpu-serving-all-in-one-v5e-2x4-0b9f3e11-1\n"
        in out
    )
    assert "pool v6e-2x4 node pool v6e-2x4-s0: 0 host(s), no hosts (scaled to zero)" in out
    assert "pool v5e-4x8 node pool v5e-4x8-s0: 8 host(s), no maintenance scheduled" in out


def test_a_gcloud_failure_exits_2(capsys):
    def failing(args):
        raise GcloudError("ERROR: (gcloud.compute.instances.list) PERMISSION_DENIED")

    assert script.main([str(ALL_IN_ONE)], run=failing, now=NOW) == 2
    assert "PERMISSION_DENIED" in capsys.readouterr().err
