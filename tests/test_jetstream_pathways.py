"""jetstream-pathways: the two reference deployments reproduced from example configs, field by field, and
everything derived from the pool the workload names."""

from __future__ import annotations

import copy

import pulumi
import pytest
import yaml

from stacks.serving import disruption
from tests.conftest import (
    make_config,
    on_pool,
    pool,
    recorded,
    reference_dir,
    stack_ksa,
    without_scan_skips,
    workload_grants,
)
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT
from tooling.oracles.schemas import crd_dir, validate_objects

PATHWAYS_REF = reference_dir() / "kubernetes-engine-samples/ai-ml/llm-serving-tpus-jetstream/pathways"
needs_reference = pytest.mark.skipif(not PATHWAYS_REF.is_dir(), reason=f"reference manifests missing: {PATHWAYS_REF}")

EXAMPLES = {
    "llama3-405b-pathways": ("jetstream-pathways-llama-3-1-405b-4x4.yaml", "llama3-405b"),
    "llama2-70b-disaggregated": ("jetstream-pathways-disagg-llama-2-70b-2-2x4.yaml", "llama2-70b"),
}
EXAMPLE_POOLS = {"llama3-405b-pathways": "v6e-4x4", "llama2-70b-disaggregated": "v6e-2x4"}
TUTORIAL_SCRATCH = ("PATHWAYS_BUCKET", "gs://cloud-pathways-staging/tmp")


def reference(file: str) -> tuple[dict, dict]:
    docs = [d for d in yaml.safe_load_all((PATHWAYS_REF / file).read_text()) if d]
    return next(d for d in docs if d["kind"] == "LeaderWorkerSet"), next(d for d in docs if d["kind"] == "Service")


def ours(example: str, name: str) -> tuple[dict, dict, dict]:
    path = ROOT / "examples" / example / f"Pulumi.{example}.yaml"
    rec = recorded(path, False)
    objects = kubernetes_objects(rec)
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet" and o["metadata"]["name"] == name)
    svc = next(o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == f"{name}-svc")
    return lws, svc, rec.outputs


def substitute(args: list[str] | None, scratch: str, checkpoint: str) -> list[str]:
    """The reference's args with the tutorial's placeholders replaced by what our stack derives."""
    out = []
    for arg in [str(a).strip() for a in args or []]:
        for placeholder in TUTORIAL_SCRATCH:
            arg = arg.replace(f"--gcs_scratch_location={placeholder}", f"--gcs_scratch_location={scratch}")
        out.append(arg.replace("load_parameters_path=CHECKPOINT_PATH", f"load_parameters_path={checkpoint}"))
    return out


@needs_reference
@pytest.mark.parametrize("example", list(EXAMPLES))
def test_reference_deployment_reproduced_field_by_field(example):
    ref_file, name = EXAMPLES[example]
    ref_lws, ref_svc = reference(ref_file)
    lws, svc, outputs = ours(example, name)
    bucket = outputs["bucketName"]
    scratch = f"gs://{bucket}/pathways/{name}/tmp"
    checkpoint = next(
        a.split("=", 1)[1]
        for a in lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][2]["args"]
        if a.startswith("load_parameters_path=")
    )

    assert lws["apiVersion"] == ref_lws["apiVersion"] and lws["kind"] == ref_lws["kind"]
    # and `up` awaits it until every group is ready (tests/test_server_await.py)
    assert without_scan_skips(lws["metadata"]["annotations"]) == {
        **ref_lws["metadata"]["annotations"],
        "pulumi.com/waitFor": "condition=Available",
    }
    assert lws["spec"]["replicas"] == ref_lws["spec"]["replicas"]
    ours_t, ref_t = lws["spec"]["leaderWorkerTemplate"], ref_lws["spec"]["leaderWorkerTemplate"]
    assert ours_t["size"] == ref_t["size"]
    assert ours_t.get("subGroupPolicy") == ref_t.get("subGroupPolicy")
    assert ours_t["leaderTemplate"]["metadata"]["labels"] == {"app": name}  # the reference's label, our name

    for role in ("leaderTemplate", "workerTemplate"):
        ours_pod, ref_pod = ours_t[role]["spec"], ref_t[role]["spec"]
        assert ours_pod["nodeSelector"] == on_pool(ref_pod["nodeSelector"], EXAMPLE_POOLS[example])
        # we always tolerate the TPU taint (the disaggregated reference's workers rely on GKE adding it)
        assert ours_pod["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
        if "tolerations" in ref_pod:
            assert ours_pod["tolerations"] == ref_pod["tolerations"]
        # Workload Identity, unique per stack; the reference uses the node's identity
        assert ours_pod["serviceAccountName"] == stack_ksa(name, example)
        assert [c["name"] for c in ours_pod["containers"]] == [c["name"] for c in ref_pod["containers"]]
        for mine, theirs in zip(ours_pod["containers"], ref_pod["containers"], strict=True):
            assert mine["image"] == theirs["image"], mine["name"]
            expected_args = substitute(theirs.get("args"), scratch, checkpoint)
            if mine["name"] == "pathways-proxy" and not expected_args:
                # the interleaved sample leaves the proxy's `args:` empty; the proxy always gets its connection
                # arguments, as the PathwaysJob controller passes them
                # (google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go, MakeProxyContainer)
                expected_args = [
                    "--resource_manager_address=$(LWS_LEADER_ADDRESS):38677",
                    "--server_port=38681",
                    f"--gcs_scratch_location={scratch}",
                ]
            if mine["name"] == "jax-tpu":
                # the argument we add: server metrics; no jax_cache_dir (pathwaysutils turns JAX's compile cache off
                # under Pathways: AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py)
                expected_args += ["prometheus_port=9100"]
            assert mine.get("args", []) == expected_args, mine["name"]
            assert mine.get("env") == theirs.get("env"), mine["name"]
            if role == "workerTemplate":  # the reference's TPU limit, and a share of the host (see below)
                assert mine["resources"]["limits"] == theirs["resources"]["limits"], mine["name"]
            else:  # the reference's leader requests nothing; ours requests CPU and memory (see below)
                assert "resources" not in theirs and set(mine["resources"]) == {"requests"}, mine["name"]
            # the reference's added capabilities kept, everything else hardened (stacks/security/pod_security.py)
            added = ((theirs.get("securityContext") or {}).get("capabilities") or {}).get("add", [])
            assert mine["securityContext"]["capabilities"] == {"drop": ["ALL"], **({"add": added} if added else {})}
            assert mine["securityContext"]["allowPrivilegeEscalation"] is False, mine["name"]
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if mine["name"] == "jetstream-http" and probe == "readinessProbe":
                    # the reference probes jetstream-http only through jax-tpu's /healthcheck; ours has its own
                    # readiness (tests/test_scan.py test_jetstream_http_is_probed_on_its_own_root_in_every_workload_that_runs_it)
                    # and, as the reference, no liveness (a restart recreates the group: tests/test_change_safety.py)
                    assert theirs.get(probe) is None and mine[probe]["httpGet"]["path"] == "/"
                    continue
                if probe == "startupProbe" and theirs.get(probe):
                    # no fixed delay (issue 26): probed from the start for the reference's whole window
                    ref = theirs[probe]
                    window = ref["initialDelaySeconds"] + ref["failureThreshold"] * ref["periodSeconds"]
                    assert mine[probe]["initialDelaySeconds"] == 0 and mine[probe]["httpGet"] == ref["httpGet"]
                    assert mine[probe]["periodSeconds"] * mine[probe]["failureThreshold"] == window
                    continue
                if probe != "readinessProbe" and theirs.get(probe):
                    # a killing probe's own short grace (stacks/serving/disruption.py PROBE_KILL_GRACE_SECONDS), else as theirs
                    own = {k: v for k, v in mine[probe].items() if k != "terminationGracePeriodSeconds"}
                    assert mine[probe]["terminationGracePeriodSeconds"] == disruption.PROBE_KILL_GRACE_SECONDS
                    assert own == theirs[probe], (mine["name"], probe)
                    continue
                assert mine.get(probe) == theirs.get(probe), (mine["name"], probe)
            ref_ports = theirs["ports"]
            assert mine["ports"][: len(ref_ports)] == ref_ports, mine["name"]
            assert mine["imagePullPolicy"] == "IfNotPresent"  # pinned tags; the reference pulls Always

    assert svc["spec"]["selector"] == {"app": name}
    assert svc["spec"]["ports"] == ref_svc["spec"]["ports"]
    assert svc["spec"]["type"] == "ClusterIP"


@needs_reference
def test_tpu_request_per_worker_matches_reference():
    lws, _, _ = ours("llama3-405b-pathways", "llama3-405b")
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    # and a quarter of the host's CPU and memory (ct6e-standard-4t: 180 vCPU / 720 GB), so it is not BestEffort
    assert worker["resources"] == {"limits": {"google.com/tpu": "4"}, "requests": {"cpu": "45", "memory": "180G"}}
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    assert all("google.com/tpu" not in str(c["resources"]) for c in leader)  # the leader takes no TPU


@pytest.mark.parametrize("tpu,topology", [("v6e", "4x4"), ("v5e", "4x8"), ("v5p", "2x2x2"), ("v4", "2x2x2")])
def test_leader_requests_fit_half_the_host(tpu, topology):
    """The leader shares a TPU host with a worker: its containers request CPU and memory (else they are evicted
    first), at most the PathwaysJob controller's figures (google/pathways-job@v0.1.4 pathwaysjob_controller.go:
    RM 8 CPU / 32 GB, proxy 16 CPU / 100 GB) and together at most half the host (catalog host_resources)."""
    from stacks.facts import catalog
    from workloads.jetstream_pathways import manifests as jp

    shape = catalog.slice_shape(tpu, topology)
    requests = jp.leader_requests(shape)
    assert set(requests) == {"pathways-proxy", "pathways-rm", "jax-tpu", "jetstream-http"}

    def cpu(q: str) -> float:
        return float(q[:-1]) / 1000 if q.endswith("m") else float(q)

    def gb(q: str) -> float:
        return float(q[:-1]) / 1000

    vcpus, memory = shape.host_resources
    assert sum(cpu(r["cpu"]) for r in requests.values()) <= vcpus / 2
    assert sum(gb(r["memory"]) for r in requests.values()) <= memory / 2
    assert cpu(requests["pathways-rm"]["cpu"]) <= 8 and gb(requests["pathways-rm"]["memory"]) <= 32
    assert cpu(requests["pathways-proxy"]["cpu"]) <= 16 and gb(requests["pathways-proxy"]["memory"]) <= 100
    if (tpu, topology) == ("v5e", "4x8"):  # 112 vCPU / 192 GB: memory scaled to fit 96 GB
        assert gb(requests["pathways-proxy"]["memory"]) < 100


# ---- derived from the pool ------------------------------------------------------------------------------


def workload(**fields):
    base = {
        "type": "jetstream-pathways",
        "name": "llm",
        "pool": "p",
        "model": "llama2-70b",
        "checkpoint": "gs://ckpts/llama2-70b/checkpoint",
        "maxtext": {"ici_tensor_parallelism": -1},
    }
    base.update(fields)
    return base


def lws_of(rec, name="llm"):
    return next(o for o in kubernetes_objects(rec) if o["kind"] == "LeaderWorkerSet" and o["metadata"]["name"] == name)


@pytest.mark.parametrize(
    "tpu,topology,machine_type,slices,size,chips,instance_type,accelerator",
    [
        ("v6e", "2x4", "ct6e-standard-4t", 1, 3, 4, "tpuv6e:2x4", "tpu-v6e-slice"),
        ("v6e", "4x4", None, 1, 5, 4, "tpuv6e:4x4", "tpu-v6e-slice"),
        ("v6e", "4x8", None, 1, 9, 4, "tpuv6e:4x8", "tpu-v6e-slice"),
        ("v6e", "4x8", None, 3, 25, 4, "tpuv6e:4x8", "tpu-v6e-slice"),
        ("v5e", "4x8", None, 1, 9, 4, "tpuv5e:4x8", "tpu-v5-lite-podslice"),
        ("v6e", "2x4", None, 1, 2, 8, "tpuv6e:2x4", "tpu-v6e-slice"),  # single-host: one 8-chip worker
    ],
)
def test_topology_drives_size_chips_instance_type_and_selectors(
    run, tpu, topology, machine_type, slices, size, chips, instance_type, accelerator
):
    extra = {"machineType": machine_type} if machine_type else {}
    config = make_config(
        tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology, slices=slices, zone="us-east5-b", **extra)],
        tpu_serving__workloads=[workload()],
    )
    lws = lws_of(run(config))
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == size
    worker = template["workerTemplate"]["spec"]
    assert worker["containers"][0]["resources"]["limits"]["google.com/tpu"] == str(chips)
    selector = {"cloud.google.com/gke-tpu-accelerator": accelerator, "cloud.google.com/gke-tpu-topology": topology}
    selector = on_pool(selector, "p")
    assert worker["nodeSelector"] == selector
    assert template["leaderTemplate"]["spec"]["nodeSelector"] == selector
    rm = template["leaderTemplate"]["spec"]["containers"][1]
    assert f"--instance_type={instance_type}" in rm["args"]
    assert f"--instance_count={slices}" in rm["args"]


def test_disaggregated_subgroups_follow_hosts_per_slice(run):
    config = make_config(
        tpu_serving__tpuPools=[pool(tpu="v6e", topology="4x4", slices=2)],
        tpu_serving__workloads=[workload(mode="disaggregated")],
    )
    lws = lws_of(run(config))
    assert without_scan_skips(lws["metadata"]["annotations"]) == {
        "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "cloud.google.com/gke-nodepool",
        "pulumi.com/waitFor": "condition=Available",
    }
    assert lws["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] == {"subGroupSize": 4}
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 9


def test_identity_scratch_and_checkpoint_access(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload()]))
    lws = lws_of(rec)
    scratch = "gs://tpu-test-project-tpu-serving-dev/pathways/llm/tmp"
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    assert f"--gcs_scratch_location={scratch}" in leader[1]["args"]
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert f"--gcs_scratch_location={scratch}" in worker["args"]
    bindings = {
        (b.inputs["bucket"], b.inputs["role"], (b.inputs.get("condition") or {}).get("title"))
        for b in workload_grants(rec)
    }
    # the scratch's parent prefix, read-write; the checkpoint in another bucket, read-only on that bucket
    assert bindings == {
        ("tpu-test-project-tpu-serving-dev", "roles/storage.objectUser", "only pathways/llm/"),
        ("ckpts", "roles/storage.objectViewer", None),
    }
    ksa = rec.one("kubernetes:core/v1:ServiceAccount", "workload-llm-identity-ksa")
    assert ksa.inputs["metadata"]["namespace"] == "llm"
    assert rec.one("kubernetes:core/v1:Namespace", "namespaces-llm").inputs["metadata"]["name"] == "llm"


def test_checkpoint_grant_is_its_prefix_in_the_stack_bucket_and_none_when_opted_out(run):
    expected = {
        "gs://tpu-test-project-tpu-serving-dev/ckpt/7b": [
            ("objectUser", "only pathways/llm/"),
            ("objectViewer", "only ckpt/7b/"),
        ],
        "gs://ckpts/x": [("objectUser", "only pathways/llm/")],
    }
    for checkpoint, grants in expected.items():
        wl = workload(checkpoint=checkpoint, grantCheckpointRead=False)
        rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[wl]))
        bindings = workload_grants(rec)
        assert sorted((b.inputs["role"].split(".")[-1], b.inputs["condition"]["title"]) for b in bindings) == grants


def test_lws_depends_on_its_release_and_node_pools(run):
    rec = run(
        make_config(tpu_serving__tpuPools=[pool(slices=2)], tpu_serving__workloads=[workload(mode="disaggregated")])
    )
    lws = rec.one("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet")
    release = rec.one("kubernetes:helm.sh/v3:Release", "addons-lws")
    node_pools = [r.urn for r in rec.of_type("gcp:container/nodePool:NodePool") if r.name.startswith("tpu-p-")]
    assert len(node_pools) == 2
    for urn in [release.urn, *node_pools]:
        assert urn in lws.dependencies
    assert lws.provider.startswith(rec.one("pulumi:providers:kubernetes", "cluster-k8s").urn)


def test_service_podmonitoring_and_outputs(run):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool()],
            tpu_serving__workloads=[workload(namespace="serving", service={"type": "LoadBalancer", "port": 80})],
        )
    )
    objects = {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects(rec)}
    svc = objects[("Service", "llm-svc")]
    assert svc["metadata"]["annotations"] == {"networking.gke.io/load-balancer-type": "Internal"}
    assert svc["spec"]["ports"] == [{"protocol": "TCP", "name": "jetstream-http", "port": 80, "targetPort": 8000}]
    podmon = objects[("PodMonitoring", "llm-jetstream")]
    assert podmon["metadata"]["namespace"] == "serving"
    assert podmon["spec"]["selector"] == {"matchLabels": {"app": "llm"}}
    assert podmon["spec"]["endpoints"] == [{"port": "metrics", "interval": "15s", "path": "/"}]
    jax = objects[("LeaderWorkerSet", "llm")]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][2]
    assert {"containerPort": 9100, "name": "metrics"} in jax["ports"]
    assert "prometheus_port=9100" in jax["args"]
    summary = rec.outputs["workloads"]["llm"]
    assert summary["portForward"] == "kubectl -n serving port-forward svc/llm-svc 80:80"
    assert summary["curl"].startswith("curl -s -X POST localhost:80/generate")
    assert summary["namespace"] == "serving" and summary["pool"] == "p"


def test_maxtext_overrides_keep_order_and_replace_in_place(run):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool()],
            tpu_serving__workloads=[
                workload(maxtext={"ici_tensor_parallelism": -1, "per_device_batch_size": 8, "new_flag": True})
            ],
        )
    )
    args = lws_of(rec)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][2]["args"]
    assert args[0] == "MaxText/configs/base.yml"
    assert args.index("per_device_batch_size=8") == 11  # where the preset had 27
    assert args[-1] == "new_flag=true"


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
def test_workload_objects_validate(run):
    config = make_config(
        tpu_serving__tpuPools=[pool(slices=2)], tpu_serving__workloads=[workload(mode="disaggregated")]
    )
    report = validate_objects(kubernetes_objects(run(config)), "1.34")
    assert report.ok and not report.unchecked, report.errors


def test_sizing_warning_when_weights_do_not_fit(run):
    config = make_config(
        tpu_serving__tpuPools=[pool(topology="2x4", machineType="ct6e-standard-4t")],
        tpu_serving__workloads=[workload(model="llama3.1-405b", maxtext={"ici_tensor_parallelism": 4})],
    )
    rec = run(config)
    assert any(
        w.startswith("tpu-serving:workloads[0]: a 405B model at 8-bit needs about 405 GB") and "is 4x4 (16 chips)" in w
        for w in rec.warnings
    ), rec.warnings


# ---- validation -----------------------------------------------------------------------------------------

BAD = {
    "unknown pool": (
        {"pool": "nope"},
        "tpu-serving:workloads[0].pool: 'nope' is not a TPU pool of this stack; available: p",
    ),
    "disaggregated without two slices": (
        {"mode": "disaggregated"},
        "tpu-serving:workloads[0].pool: disaggregated serving needs a pool with 2 slices (prefill and decode); pool 'p' has 1",
    ),
    "interleaved slices mismatch the preset": (
        {"model": "llama3.1-405b", "maxtext": {}, "pool": "p3"},
        "tpu-serving:workloads[0].pool: preset 'llama3.1-405b' serves interleaved on 1 slice(s); pool 'p3' has 3",
    ),
    "missing checkpoint": ({"checkpoint": None}, "tpu-serving:workloads[0].checkpoint: required key is missing"),
    "non-gs checkpoint": (
        {"checkpoint": "s3://bucket/ckpt"},
        "tpu-serving:workloads[0].checkpoint: 's3://bucket/ckpt' is not a gs:// path",
    ),
    "parallelism mismatch": (
        {"maxtext": {"ici_tensor_parallelism": 8}},
        "tpu-serving:workloads[0].maxtext: the ICI axes (ici_tensor_parallelism=8) multiply to 8, but the slice has 16 chips",
    ),
    "two rest axes": (
        {"maxtext": {"ici_tensor_parallelism": -1, "ici_fsdp_parallelism": -1}},
        "only one ICI axis may be -1",
    ),
    "unknown preset": (
        {"model": "gpt-5"},
        "tpu-serving:workloads[0].model: 'gpt-5' is not a known preset; allowed: llama3.1-405b, llama2-70b",
    ),
    "checkpoint through maxtext": (
        {"maxtext": {"ici_tensor_parallelism": -1, "load_parameters_path": "gs://x/y"}},
        "tpu-serving:workloads[0].maxtext.load_parameters_path: derived by the stack: set `checkpoint` instead",
    ),
    "bad name": ({"name": "LLM_1"}, "tpu-serving:workloads[0].name: 'LLM_1' is not a valid workload name"),
    "system namespace": ({"namespace": "kube-system"}, "tpu-serving:workloads[0].namespace: 'kube-system' is reserved"),
    "unknown type": (
        {"type": "tgi"},
        "tpu-serving:workloads[0].type: 'tgi' is not a workload type; allowed: jetstream-pathways",
    ),
    "bad mode": (
        {"mode": "split"},
        "tpu-serving:workloads[0].mode: 'split' is not allowed; allowed: interleaved, disaggregated",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_workload_errors(run, case):
    change, expected = BAD[case]
    wl = workload()
    for key, value in change.items():
        if value is None:
            wl.pop(key)
        else:
            wl[key] = value
    config = make_config(
        tpu_serving__tpuPools=[pool(), pool(name="p3", topology="2x4", machineType="ct6e-standard-4t", slices=3)],
        tpu_serving__workloads=[wl],
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    assert expected in str(err.value)


def test_lws_addon_disabled_is_an_error(run):
    config = make_config(
        tpu_serving__tpuPools=[pool()],
        tpu_serving__workloads=[workload()],
        tpu_serving__addons={"lws": {"enabled": False}},
    )
    with pytest.raises(
        pulumi.RunError, match=r"tpu-serving:workloads\[0\].type: jetstream-pathways needs the lws add-on"
    ):
        run(config)


def test_duplicate_workload_names(run):
    config = make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload(), copy.deepcopy(workload())])
    with pytest.raises(pulumi.RunError, match=r"workloads\[1\].name: 'llm' is already the name of workloads\[0\]"):
        run(config)


def test_http_image_without_healthcheck_is_refused(run):
    # ai-on-gke .../jetstream/http-server/http_server.py gained /healthcheck in 707c3e38, after jetstream-http:v0.2.2
    config = make_config(
        tpu_serving__tpuPools=[pool(topology="4x4")],
        tpu_serving__workloads=[
            {
                "type": "jetstream-pathways",
                "name": "llama",
                "pool": "p",
                "model": "llama3.1-405b",
                "checkpoint": "gs://my-ckpts/llama/ckpt",
                "images": {"http": "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2"},
            }
        ],
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    assert (
        "tpu-serving:workloads[0].images.http: us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.2 "
        "does not serve endpoint /healthcheck" in str(err.value)
    )


def test_no_compile_cache_under_pathways(run):
    """pathwaysutils sets jax_enable_compilation_cache False on the Pathways backend (AI-Hypercomputer/pathways-utils
    @v0.1.9 pathwaysutils/_initialize.py): no jax_cache_dir, no compile-cache grant, and a user's is refused."""
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload()]))
    jax = next(
        c
        for c in lws_of(rec)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
        if c["name"] == "jax-tpu"
    )
    assert not any(a.startswith("jax_cache_dir=") for a in jax["args"])
    assert not any("compile-cache" in str(b.inputs.get("condition")) for b in workload_grants(rec))
    with pytest.raises(Exception, match=r"maxtext.jax_cache_dir"):
        run(
            make_config(
                tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload(maxtext={"jax_cache_dir": "gs://x/y"})]
            )
        )


def test_pathways_persistence_is_opt_in_and_needs_a_checkpoint_without_ocdbt(run):
    """ENABLE_PATHWAYS_PERSISTENCE=1 on the JAX client registers pathwaysutils' Orbax handlers, which refuse OCDBT
    ("OCDBT not supported for Pathways.": AI-Hypercomputer/pathways-utils@v0.1.9 pathwaysutils/_initialize.py
    `_is_persistence_enabled`, persistence/orbax_handler.py); MaxText restores load_parameters_path with
    checkpoint_storage_use_ocdbt / checkpoint_storage_use_zarr3 (AI-Hypercomputer/maxtext configs/base.yml,
    maxtext_utils.setup_decode_state)."""
    with pytest.raises(Exception, match=r"workloads\[0\]\.pathwaysPersistence: true needs checkpointWithoutOcdbt"):
        run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload(pathwaysPersistence=True)]))
    on = workload(pathwaysPersistence=True, checkpointWithoutOcdbt=True)
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[on]))
    leader = lws_of(rec)["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    jax = next(c for c in leader if c["name"] == "jax-tpu")
    assert {"name": "ENABLE_PATHWAYS_PERSISTENCE", "value": "1"} in jax["env"]
    assert "checkpoint_storage_use_ocdbt=false" in jax["args"] and "checkpoint_storage_use_zarr3=false" in jax["args"]
    assert all("ENABLE_PATHWAYS_PERSISTENCE" not in str(c.get("env")) for c in leader if c["name"] != "jax-tpu")
    off = lws_of(run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[workload()])))
    assert "ENABLE_PATHWAYS_PERSISTENCE" not in str(off)
