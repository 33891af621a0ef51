"""vllm: the GKE tutorial (single-host) and the LeaderWorkerSet example (multi-host) reproduced field by field from
the two examples, differing only where the README's list of deliberate differences says; derivation from the pool,
the token secret, identity scoping, autoscaling for both adapters, and the validation rules.

Upstream facts relied on, each at the pinned image (vllm/vllm-tpu:v0.27.0 = vLLM 0.27.0 + tpu-inference 0.27.0):
- metric names and units: vllm 0.27.0 vllm/v1/metrics/loggers.py (vllm:num_requests_waiting/running,
  vllm:kv_cache_usage_perc "1 means 100 percent usage", vllm:time_to_first_token_seconds,
  vllm:request_time_per_output_token_seconds; no vllm:gpu_cache_usage_perc any more);
- `vllm serve` flags --tensor-parallel-size, --max-model-len, --download-dir, --load-format runai_streamer (gs://),
  --distributed-executor-backend ray: vllm 0.27.0 vllm/engine/arg_utils.py and
  docs/models/extensions/runai_model_streamer.md;
- /health: vllm 0.27.0 vllm/entrypoints/serve/instrumentator/health.py;
- the Ray helper moved to examples/ray_serving/multi-node-serving.sh (vllm 0.27.0; the LWS example still names
  examples/online_serving/), and the image keeps vLLM's tree at /workspace/vllm (tpu-inference@v0.27.0
  docker/Dockerfile);
- devices per chip (the tensor-parallel size is the JAX devices of a slice: tpu-inference@v0.27.0
  tpu_inference/worker/tpu_worker.py takes jax.devices()[:total_devices], as does the pinned engine's 0.32.0
  wheel): one per chip on v5e/v6e and on the
  megacore chips v4/v5p, two on tpu7x (JAX's chip table, jax.experimental.pallas.tpu.ChipVersion,
  https://docs.jax.dev/en/latest/_autosummary/jax.experimental.pallas.tpu.ChipVersion.html: megacore on v4 and
  v5p only); tpu-inference@v0.27.0 examples/offload/gke/benchmarks/single-host/deploy-baseline.yaml runs
  --tensor-parallel-size 8 on 4 tpu7x chips;
- TPU_MULTIHOST_BACKEND=ray: tpu-inference@v0.27.0 tpu_inference/envs.py and its multi-host GKE example.
"""

from __future__ import annotations

import re

import pulumi
import pytest
import yaml

from stacks.facts import catalog, images, versions
from stacks.problems import ConfigError
from stacks.reports import cost
from stacks.serving.workload_plan import LWS_API
from tests.conftest import load_large_yaml, make_config, on_pool, pool, recorded, reference_dir, workload_grants
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT, parse_stack_file
from tooling.oracles.schemas import crd_dir, validate_objects
from workloads.vllm import compile_cache
from workloads.vllm import metrics as vllm_metrics
from workloads.vllm import plan as vllm

TUTORIAL = reference_dir() / "kubernetes-engine-samples/ai-ml/vllm-tpu"
LWS_EXAMPLE = reference_dir() / "lws/docs/examples/vllm/TPU/lws.yaml"
LWS_CRD = reference_dir() / "crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
needs_reference = pytest.mark.skipif(not TUTORIAL.is_dir(), reason=f"reference manifests missing: {TUTORIAL}")
SINGLE = ROOT / "examples/vllm-single-host/Pulumi.vllm-single-host.yaml"
MULTI = ROOT / "examples/vllm-multi-host/Pulumi.vllm-multi-host.yaml"


def objects_of(rec) -> dict:
    return {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects(rec)}


def tutorial(file: str, kind: str) -> dict:
    text = (TUTORIAL / file).read_text().replace("\t", " ")  # the upstream file has a trailing tab YAML refuses
    return next(d for d in yaml.safe_load_all(text) if d and d["kind"] == kind)


def lws_example(kind: str) -> dict:
    return next(d for d in yaml.safe_load_all(LWS_EXAMPLE.read_text()) if d and d["kind"] == kind)


def flags(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in args)


# ---- the GKE tutorial, field by field -----------------------------------------------------------------


@needs_reference
def test_deployment_matches_tutorial():
    ours = objects_of(recorded(SINGLE, False))[("Deployment", "llama70b")]
    theirs = tutorial("vllm-llama3-70b.yaml", "Deployment")
    pod, ref_pod = ours["spec"]["template"]["spec"], theirs["spec"]["template"]["spec"]
    assert "replicas" not in ours["spec"]  # the HPA owns it (the tutorial fixes 1)
    assert pod["nodeSelector"] == on_pool(ref_pod["nodeSelector"], "v6e-2x4")
    # the tutorial's GCS FUSE volume is gone (issue 26): weights stream from gs://, the compile cache is local
    assert "gke-gcsfuse/volumes" in theirs["spec"]["template"]["metadata"]["annotations"]
    assert "annotations" not in ours["spec"]["template"]["metadata"]
    (c, push), (ref_c,) = pod["containers"], ref_pod["containers"]
    assert push["name"] == "compile-cache-push"
    assert c["name"] == ref_c["name"] and c["command"] == ref_c["command"]
    # pinned tag instead of :latest, pulled through the stack's Docker Hub remote repository (stacks/facts/images.py)
    assert images.origin(c["image"]).removeprefix("docker.io/").split(":")[0] == ref_c["image"].split(":")[0]
    assert c["image"] == parse_stack_file(SINGLE).image_mirror.served(versions.IMAGES["vllmTpu"])
    ours_f, theirs_f = flags(c["args"]), flags(ref_c["args"])
    # every tutorial flag, same value, except the download dir (no download: the model is staged into the bucket and
    # streamed from there under its Hugging Face name)
    assert theirs_f.pop("download-dir") == "/data" and "download-dir" not in ours_f
    staged = "gs://my-tpu-project-tpu-serving-vllm-single-host/models/meta-llama/Llama-3.1-70B/main/"
    assert (theirs_f.pop("model"), ours_f.pop("model")) == ("meta-llama/Llama-3.1-70B", staged)
    assert ours_f.pop("served-model-name") == "meta-llama/Llama-3.1-70B"
    assert ours_f.pop("load-format") == "runai_streamer"
    assert ours_f.pop("model-loader-extra-config") == '{"concurrency": 45}'  # the server's 45 vCPUs
    assert ours_f == theirs_f
    assert [p["containerPort"] for p in c["ports"]] == [p["containerPort"] for p in ref_c["ports"]]
    # the tutorial's TPU request and limit, and a quarter of the host's CPU and memory (ct6e-standard-8t: 180 vCPU /
    # 1440 GB), so the pod is not BestEffort
    as_read = {k: str(v) for k, v in ref_c["resources"]["limits"].items()}  # quantities as the API reads them back
    assert c["resources"]["limits"] == as_read
    assert c["resources"]["requests"] == {**as_read, "cpu": "45", "memory": "360G"}
    env, ref_env = {e["name"]: e for e in c["env"]}, {e["name"]: e for e in ref_c["env"]}
    # the compile cache on local disk; VLLM_USE_V1 is gone at vLLM 0.27.0 (V1 is the only engine); no token in
    # the server (only the staging Job reads the Hub), which never calls the Hub
    assert env["VLLM_XLA_CACHE_PATH"]["value"] == compile_cache.XLA_CACHE_DIR and "VLLM_XLA_CACHE_PATH" in ref_env
    assert set(env) == {"VLLM_XLA_CACHE_PATH", "HF_HUB_OFFLINE"} and "VLLM_USE_V1" in ref_env
    # the tutorial's shared memory; the cache an emptyDir (node disk) instead of its FUSE mount
    volumes, ref_volumes = {v["name"]: v for v in pod["volumes"]}, {v["name"]: v for v in ref_pod["volumes"]}
    assert volumes["dshm"] == ref_volumes["dshm"] and volumes["xla-cache"] == {"name": "xla-cache", "emptyDir": {}}
    assert set(volumes) == {"dshm", "xla-cache"} and "gcs-fuse-csi-ephemeral" in ref_volumes
    # probes: the tutorial's TCP readiness probe becomes /health, with a startup probe for the cold start
    assert ref_c["readinessProbe"]["tcpSocket"]["port"] == 8000
    assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000, "scheme": "HTTP"}
    assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] == vllm.COLD_START_S == 3600
    assert c["startupProbe"]["initialDelaySeconds"] == 0
    assert pod["serviceAccountName"].startswith("llama70b-")  # the KSA name carries the stack suffix


@needs_reference
def test_service_podmonitoring_and_hpa_match_tutorial():
    objects = objects_of(recorded(SINGLE, False))
    svc, ref_svc = objects[("Service", "llama70b")], tutorial("vllm-llama3-70b.yaml", "Service")
    assert svc["spec"]["ports"] == ref_svc["spec"]["ports"]
    # the tutorial's `app`, and the serving label a LeaderWorkerSet's leaders carry too (test_vllm_move.py)
    assert svc["spec"]["selector"] == {"app": "llama70b", "role": "leader"}
    assert (svc["spec"]["type"], ref_svc["spec"]["type"]) == ("ClusterIP", "LoadBalancer")  # no public endpoint
    podmon, ref_podmon = objects[("PodMonitoring", "llama70b-vllm")], tutorial("vllm_pod_monitor.yaml", "PodMonitoring")
    (endpoint,), (ref_endpoint,) = podmon["spec"]["endpoints"], ref_podmon["spec"]["endpoints"]
    assert (endpoint["path"], endpoint["interval"]) == (ref_endpoint["path"], ref_endpoint["interval"])
    assert endpoint["port"] == "http" and ref_endpoint["port"] == 8000  # the named container port 8000
    assert podmon["spec"]["selector"] == {"matchLabels": {"app": "llama70b", "role": "leader"}}
    hpa, ref_hpa = (
        objects[("HorizontalPodAutoscaler", "llama70b")],
        tutorial("vllm-hpa.yaml", "HorizontalPodAutoscaler"),
    )
    assert hpa["spec"]["scaleTargetRef"] == {**ref_hpa["spec"]["scaleTargetRef"], "name": "llama70b"}
    for key in ("minReplicas", "maxReplicas"):
        assert hpa["spec"][key] == ref_hpa["spec"][key]
    (metric,), (ref_metric,) = hpa["spec"]["metrics"], ref_hpa["spec"]["metrics"]
    ref_metric["pods"]["target"]["averageValue"] = str(ref_metric["pods"]["target"]["averageValue"])
    assert metric == ref_metric


# ---- the LeaderWorkerSet example, field by field --------------------------------------------------------


@needs_reference
def test_leader_worker_set_matches_lws_example():
    objects = objects_of(recorded(MULTI, False))
    ours, theirs = objects[("LeaderWorkerSet", "llama70b")], lws_example("LeaderWorkerSet")
    assert ours["apiVersion"] == theirs["apiVersion"]
    assert "replicas" not in ours["spec"]  # the HPA's
    # the pool holds the HPA's maximum and no spare slice: a group stops before its replacement starts
    # (stacks/workload_checks.py rollout_room; tests/test_disruption.py test_every_rollout_fits_...)
    assert ours["spec"]["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxSurge": 0, "maxUnavailable": 1},
    }
    tmpl, ref_tmpl = ours["spec"]["leaderWorkerTemplate"], theirs["spec"]["leaderWorkerTemplate"]
    assert (
        (tmpl["size"], tmpl["restartPolicy"])
        == (ref_tmpl["size"], ref_tmpl["restartPolicy"])
        == (4, "RecreateGroupOnPodRestart")
    )
    for role in ("leaderTemplate", "workerTemplate"):
        pod, ref_pod = tmpl[role]["spec"], ref_tmpl[role]["spec"]
        assert pod["nodeSelector"] == on_pool(ref_pod["nodeSelector"], "v5e-4x4")
        c, ref_c = pod["containers"][0], ref_pod["containers"][0]
        assert c["name"] == ref_c["name"]
        assert c["command"][:2] == ref_c["command"][:2] == ["sh", "-c"]
        assert {k: str(v) for k, v in ref_c["resources"]["limits"].items()} == c["resources"]["limits"]
        assert ref_c["volumeMounts"] == [m for m in c["volumeMounts"] if m["name"] == "dshm"]
        assert c["env"][-1] == {"name": "TPU_MULTIHOST_BACKEND", "value": "ray"}
    assert (
        tmpl["leaderTemplate"]["metadata"]["labels"]["role"] == ref_tmpl["leaderTemplate"]["metadata"]["labels"]["role"]
    )
    leader = tmpl["leaderTemplate"]["spec"]["containers"][0]["command"][2]
    ref_leader = ref_tmpl["leaderTemplate"]["spec"]["containers"][0]["command"][2]
    # the Ray head waits for the whole group, then the server starts on it; the script moved in vLLM 0.27.0
    assert "examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE)" in ref_leader
    assert f"{vllm.RAY_SCRIPT} leader --ray_cluster_size=$(LWS_GROUP_SIZE) && exec python3 -m " in leader
    assert "--tensor-parallel-size=16" in ref_leader and "--tensor-parallel-size=16" in leader
    worker = tmpl["workerTemplate"]["spec"]["containers"][0]["command"][2]
    ref_worker = ref_tmpl["workerTemplate"]["spec"]["containers"][0]["command"][2]
    assert ref_worker.replace("examples/online_serving/", "examples/ray_serving/") == worker
    svc, ref_svc = objects[("Service", "llama70b")], lws_example("Service")
    # the LeaderWorkerSet's name, as on a single-host pool: the example leaves subdomainPolicy Shared and so names its
    # Service otherwise (LWS's own headless Service takes the LeaderWorkerSet's name); ours asks for per-group
    # headless Services (UniquePerReplica, tests/test_lws_headless_service.py)
    assert ref_svc["metadata"]["name"] != theirs["metadata"]["name"]
    assert "networkConfig" not in theirs["spec"]
    assert ours["spec"]["networkConfig"] == {"subdomainPolicy": "UniquePerReplica"}
    # the example's leader-only `role: leader`, with the workload's `app` (on the leader template) in place of the
    # LWS name label, which a single-host Deployment's pods lack (test_vllm_move.py)
    assert ref_svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "vllm", "role": "leader"}
    assert svc["spec"]["selector"] == {"app": "llama70b", "role": "leader"}
    assert svc["spec"]["selector"].items() <= tmpl["leaderTemplate"]["metadata"]["labels"].items()
    assert not svc["spec"]["selector"].items() <= tmpl["workerTemplate"]["metadata"]["labels"].items()
    assert svc["spec"]["type"] == ref_svc["spec"]["type"] == "ClusterIP"
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == [8000]  # vLLM's default port, not the example's 8080


@needs_reference
def test_hpa_scales_whole_slices_through_the_lws_scale_subresource():
    objects = objects_of(recorded(MULTI, False))
    hpa = objects[("HorizontalPodAutoscaler", "llama70b")]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": "llama70b"}
    crd = load_large_yaml(LWS_CRD)
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    # the HPA reads leader pods only (lws docs/examples/hpa.md), the pods that export vLLM's metrics
    assert version["subresources"]["scale"]["labelSelectorPath"] == ".status.hpaPodSelector"
    waiting, kv = hpa["spec"]["metrics"]
    assert waiting["pods"]["metric"]["name"] == "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"
    assert kv["pods"]["target"] == {"type": "AverageValue", "averageValue": "800m"}
    podmon = objects[("PodMonitoring", "llama70b-vllm")]
    assert podmon["spec"]["selector"]["matchLabels"] == {"app": "llama70b", "role": "leader"}


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
@pytest.mark.parametrize("path", [SINGLE, MULTI], ids=["single", "multi"])
def test_objects_validate(path):
    report = validate_objects(kubernetes_objects(recorded(path, False)), "1.34")
    assert report.ok and not report.unchecked, report.errors


def test_outputs_for_clients_and_gateways():
    out = recorded(MULTI, False).outputs["workloads"]["llama70b"]
    assert out["servingSelector"] == {"app": "llama70b", "role": "leader"}
    assert (out["namespace"], out["service"], out["httpPort"]) == ("llama70b", "llama70b", 8000)
    assert out["portForward"] == "kubectl -n llama70b port-forward svc/llama70b 8000:8000"
    assert out["curl"].startswith("curl -s localhost:8000/v1/completions -H 'Content-Type: application/json' -d ")
    assert '"model": "gs://my-tpu-project-models/Llama-3.3-70B-Instruct"' in out["curl"]
    assert "/v1/chat/completions" in out["curlChat"] and '"messages"' in out["curlChat"]
    # vllm 0.27.0 vllm/benchmarks/serve.py and datasets/datasets.py flags; the leader of group 0 is <name>-0
    assert out["loadTest"].startswith("kubectl -n llama70b exec pod/llama70b-0 -c vllm-leader -- vllm bench serve ")
    assert out["watchHpa"] == "kubectl -n llama70b get hpa llama70b --watch"
    single = recorded(SINGLE, False).outputs["workloads"]["llama70b"]
    assert single["servingSelector"] == {"app": "llama70b", "role": "leader"}
    assert "exec deploy/llama70b -c vllm-tpu" in single["loadTest"]


def test_dashboard_has_the_vllm_panels_with_the_image_metric_names():
    titles = [t for t, _, _ in vllm_metrics.vllm_panels("c")]
    assert titles == [
        "vLLM running requests",
        "vLLM waiting requests",
        "vLLM KV-cache usage",
        "vLLM time to first token (p90)",
        "vLLM time per output token (p90)",
    ]
    served = versions.IMAGE_RECORDS["vllmTpu"].serves.metrics
    for title, query, _ in vllm_metrics.vllm_panels("c"):
        names = [n for n in served if n in query]
        assert names, query
        # every grouping label is on the series (workloads/vllm/metrics.py SERIES_LABELS)
        for grouping, series in re.findall(r"by \(([^)]*)\) \(?(?:rate\()?([\w:]+)\{", query):
            assert {g.strip() for g in grouping.split(",")} <= vllm_metrics.SERIES_LABELS[series], (title, series)
    board = recorded(SINGLE, False).one("gcp:monitoring/dashboard:Dashboard").inputs["dashboardJson"]
    assert "vllm:num_requests_running" in board
    assert (
        "vllm:"
        not in recorded(ROOT / "examples/gemma-hpa/Pulumi.gemma-hpa.yaml", False)
        .one("gcp:monitoring/dashboard:Dashboard")
        .inputs["dashboardJson"]
    )


# ---- derivation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tpu,topology,devices,hosts",
    [
        ("v6e", "2x4", 8, 1),
        ("v5e", "4x4", 16, 4),
        ("v5p", "2x2x1", 4, 1),  # megacore: 4 chips are 4 JAX devices, not 8 TensorCores
        ("v4", "2x2x2", 8, 2),  # megacore
        ("tpu7x", "2x2x1", 8, 1),  # 2 JAX devices per chip
        ("v6e", "4x8", 32, 8),
    ],
)
def test_tensor_parallel_size_counts_every_device_of_the_slice(tpu, topology, devices, hosts):
    shape = catalog.slice_shape(tpu, topology)
    assert (shape.devices, shape.hosts) == (devices, hosts)


def test_image_record_covers_what_the_stack_asks():
    record = versions.IMAGE_RECORDS["vllmTpu"]
    assert record.ref == versions.IMAGES["vllmTpu"] == "docker.io/vllm/vllm-tpu:v0.32.0"
    assert {m.series for m in vllm_metrics.VLLM_HPA_METRICS.values()} <= record.serves.metrics
    assert {vllm.HEALTH_PATH, vllm.METRICS_PATH, *vllm.API_PATHS} <= record.serves.endpoints
    assert record.serves.tpus <= set(catalog.GENERATIONS)
    # tpu-inference 0.32.0 README (PyPI): "Recommended: v7x, v5e, v6e"
    assert "tpu7x" in record.serves.tpus and catalog.GENERATIONS["tpu7x"].cores_per_chip == 2


def test_user_args_replace_derived_flags_in_place():
    plan_args = vllm_plan(args={"tensor_parallel_size": 4, "--enforce-eager": True, "enable-prefix-caching": False})
    assert plan_args[:3] == ["--host=0.0.0.0", "--port=8000", "--tensor-parallel-size=4"]
    assert plan_args[-2:] == ["--enforce-eager", "--no-enable-prefix-caching"]
    assert "--download-dir=/data/hf" not in vllm_plan(xlaCache=False)


def vllm_plan(**fields) -> list[str]:
    from stacks.config import parse_stack_config
    from workloads.registry import WORKLOAD_TYPES

    cfg = parse_stack_config(
        {"environment": "dev", "tpuPools": POOLS, "workloads": [wl(**fields)]},
        stack="dev",
        pulumi_project="tpu-serving",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=WORKLOAD_TYPES,
    )
    return cfg.workloads[0].serve_args()


# ---- secrets, identity, pause, cost -----------------------------------------------------------------------


def wl(**fields) -> dict:
    base = {"type": "vllm", "name": "llm", "pool": "single", "model": "meta-llama/Llama-3.1-8B"}
    base.update(fields)
    return base


POOLS = [
    pool(name="single", tpu="v6e", topology="2x4", zone="us-east5-b", autoscaling={"minNodes": 0, "maxNodes": 2}),
    pool(name="multi", tpu="v6e", topology="4x4", zone="us-east5-b", slices=2),
    pool(name="small", tpu="v6e", topology="2x2", zone="us-east5-b"),
]
HBM = {"name": "tpu_memory_used_percentage", "target": 0.8}
AUTO = {"minReplicas": 1, "maxReplicas": 2, "metrics": [{"name": "vllm:num_requests_waiting", "target": 5}]}
TOKEN = "hf_not_a_real_token_123"


def test_hf_token_is_a_secret_end_to_end(run):
    config = make_config(tpu_serving__tpuPools=POOLS, tpu_serving__workloads=[wl()], **{"tpu_serving__hfToken": TOKEN})
    rec = run(config, secret_keys=("tpu-serving:hfToken",))
    secret = rec.one("kubernetes:core/v1:Secret", "workload-llm-hf-token")
    assert secret.inputs["metadata"]["name"] == "llm-hf-token"
    # the value stays a Pulumi secret: masked in every render, never in an output
    from tooling.harness.k8s_objects import plain

    assert plain(secret.inputs["stringData"], mask_secrets=True) == "[secret]"
    assert plain(secret.inputs["stringData"]) == {"hf_token": TOKEN}
    assert TOKEN not in str(rec.outputs)
    objects = objects_of(rec)
    # only the staging Job reads the Hub, with the token; the server has none and never calls the Hub
    deployment = objects[("Deployment", "llm")]
    assert not [e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "HF_TOKEN"]
    (job,) = [o for (kind, _), o in objects.items() if kind == "Job"]
    (env,) = [e for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "HF_TOKEN"]
    assert env["valueFrom"] == {"secretKeyRef": {"name": "llm-hf-token", "key": "hf_token"}}
    (job_reg,) = rec.of_type("kubernetes:batch/v1:Job")
    assert secret.urn in job_reg.dependencies
    assert not [w for w in rec.warnings if "without a token" in w]


def test_plain_hf_token_is_refused(run):
    config = make_config(tpu_serving__tpuPools=POOLS, tpu_serving__workloads=[wl()], **{"tpu_serving__hfToken": TOKEN})
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:hfToken: is set in plain text; .*--secret"):
        run(config)


def test_identity_reads_the_weights_prefix_and_writes_its_own_prefix_only(run):
    model = "gs://models-bucket/llama/8b"
    rec = run(make_config(tpu_serving__tpuPools=POOLS, tpu_serving__workloads=[wl(model=model)]))
    grants = {g.inputs["role"]: g.inputs for g in workload_grants(rec)}
    assert set(grants) == {"roles/storage.objectUser", "roles/storage.objectViewer"}
    viewer = grants["roles/storage.objectViewer"]
    # another bucket: the whole of it, unconditioned (grantModelRead; it may lack uniform bucket-level access, which
    # IAM conditions need: https://cloud.google.com/storage/docs/access-control/iam#conditions)
    assert viewer["bucket"] == "models-bucket"
    assert not viewer.get("condition")
    user = grants["roles/storage.objectUser"]
    assert "/objects/compile-cache/llm/" in user["condition"]["expression"]
    assert user["bucket"] == rec.outputs["bucketName"]
    args = objects_of(rec)[("Deployment", "llm")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--model={model}" in args and "--load-format=runai_streamer" in args
    assert not [a for a in args if a.startswith("--download-dir")]
    assert not [w for w in rec.warnings if "without a token" in w]


def test_pause_scales_to_zero_and_drops_the_hpa(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(pool="multi", autoscaling=AUTO)],
        tpu_serving__paused=True,
    )
    objects = objects_of(run(config))
    assert objects[("LeaderWorkerSet", "llm")]["spec"]["replicas"] == 0
    assert ("HorizontalPodAutoscaler", "llm") not in objects


def test_cost_counts_whole_slices_per_replica():
    from stacks.config import parse_stack_config
    from workloads.registry import WORKLOAD_TYPES

    cfg = parse_stack_config(
        {"environment": "dev", "tpuPools": POOLS, "workloads": [wl(pool="multi", autoscaling=AUTO)]},
        stack="dev",
        pulumi_project="tpu-serving",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=WORKLOAD_TYPES,
    )
    assert cfg.workloads[0].chips_at_peak == 2 * 16
    assert cost.estimate(cfg).workloads["llm"] == round(32 * cost.chip_price("v6e", "on-demand"), 4)


# ---- autoscaling through prometheus-adapter ---------------------------------------------------------------


def test_prometheus_adapter_sums_per_workload_series(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(autoscaling={**AUTO, "metrics": [*AUTO["metrics"], HBM]})],
        tpu_serving__monitoring={"adapter": "prometheus-adapter"},
    )
    rec = run(config)
    metric, hbm = objects_of(rec)[("HorizontalPodAutoscaler", "llm")]["spec"]["metrics"]
    # the TPU metrics are the stack's shared ones (stacks.monitoring.metrics.HPA_METRICS), summed per namespace
    assert hbm["external"]["metric"] == {"name": "memory_used_percentage"}
    assert hbm["external"]["target"] == {"type": "AverageValue", "averageValue": "800m"}
    # External + AverageValue: the HPA divides the summed value by the replicas (replica_calculator.go)
    assert metric == {
        "type": "External",
        "external": {
            "metric": {"name": "vllm_num_requests_waiting", "selector": {"matchLabels": {"app": "llm"}}},
            "target": {"type": "AverageValue", "averageValue": "5"},
        },
    }
    config = rec.one("kubernetes:core/v1:ConfigMap", "monitoring-prometheus-adapter-rules").inputs["data"]
    rules = {r["name"]["as"]: r for r in yaml.safe_load(config["config.yaml"])["externalRules"]}
    rule = rules["vllm_num_requests_waiting"]
    assert rule["metricsQuery"].startswith("sum(<<.Series>>{<<.LabelMatchers>>,")
    assert 'namespace=~"llm"' in rule["seriesQuery"]
    podmon = objects_of(rec)[("PodMonitoring", "llm-vllm")]
    # the `app` label the selector matches is copied from the pod onto every series
    assert podmon["spec"]["targetLabels"]["fromPod"] == [{"from": "app", "to": "app"}]


# ---- validation ---------------------------------------------------------------------------------------------

BAD = {
    "missing model": ({"model": None}, "tpu-serving:workloads[0].model: required key is missing"),
    "bad model": ({"model": "llama"}, "tpu-serving:workloads[0].model: 'llama' is neither a Hugging Face model id"),
    "gs bucket only": ({"model": "gs://bucket"}, "tpu-serving:workloads[0].model: 'gs://bucket' is not a gs:// path"),
    "reserved arg": ({"args": {"--port": 9000}}, "tpu-serving:workloads[0].args.--port: derived by the stack"),
    "model arg": ({"args": {"model": "x/y"}}, "tpu-serving:workloads[0].args.model: derived by the stack: set `model`"),
    "bad arg name": ({"args": {"Max Seqs": 1}}, "tpu-serving:workloads[0].args.Max Seqs: is not a `vllm serve` flag"),
    # names are checked whole (fullmatch): a trailing newline is not a flag name, nor part of a model id
    "arg name with a newline": ({"args": {"max-num-seqs\n": 1}}, "is not a `vllm serve` flag"),
    "model id with a newline": ({"model": "x/y\n"}, "is neither a Hugging Face model id"),
    "kv cache as percent": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "vllm:kv_cache_usage_perc", "target": 80}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].target: 80 is above 1: the unit is fraction",
    ),
    "unknown metric": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "vllm:gpu_cache_usage_perc", "target": 0.5}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].name: 'vllm:gpu_cache_usage_perc' is not allowed; allowed: vllm:",
    ),
    "metric the adapter does not serve": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "tpu_memory_used_percentage", "target": 80}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].name: 'tpu_memory_used_percentage' is not served by the "
        "custom-metrics-stackdriver adapter",
    ),
    "more HBM than a replica has": (
        {"autoscaling": {**AUTO, "metrics": [{"name": "tpu_memory_used", "target": 3e11}]}},
        "tpu-serving:workloads[0].autoscaling.metrics[0].target: 3e+11 bytes is more HBM than one replica has",
    ),
    "more replicas than nodes": (
        {"autoscaling": {**AUTO, "maxReplicas": 3}},
        "tpu-serving:workloads[0].autoscaling.maxReplicas: 3 replicas x 8 chips = 24 chips, but pool 'single' holds",
    ),
    "more replicas than slices": (
        {"pool": "multi", "replicas": 3},
        "tpu-serving:workloads[0].replicas: 3 replicas need 3 slices of v6e 4x4 (one per replica), but pool 'multi' has 2",
    ),
    "min above max": (
        {"autoscaling": {**AUTO, "minReplicas": 3, "maxReplicas": 2}},
        "tpu-serving:workloads[0].autoscaling.minReplicas: 3 is above maxReplicas 2",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_vllm_errors(run, case):
    change, expected = BAD[case]
    workload = wl()
    for key, value in change.items():
        if value is None:
            workload.pop(key)
        else:
            workload[key] = value
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__tpuPools=POOLS, tpu_serving__workloads=[workload]))
    assert expected in str(err.value)


def test_hbm_percentage_is_refused_on_multi_host_pools(run):
    auto = {**AUTO, "metrics": [{"name": "tpu_memory_used_percentage", "target": 0.8}]}
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(pool="multi", autoscaling=auto)],
        tpu_serving__monitoring={"adapter": "prometheus-adapter"},
    )
    with pytest.raises(
        pulumi.RunError, match=r"metrics\[0\].name: tpu_memory_used_percentage adds up used/total per node"
    ):
        run(config)


def test_multi_host_needs_the_lws_addon(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(pool="multi")],
        tpu_serving__addons={"lws": {"enabled": False}},
    )
    with pytest.raises(pulumi.RunError, match=r"workloads\[0\].pool: pool 'multi' is multi-host: .*addons.lws"):
        run(config)


def test_sizing_and_head_warnings(run):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[
            wl(name="big", pool="small", model="meta-llama/Llama-3.1-70B"),
            wl(name="odd", model="meta-llama/Llama-3.1-70B", args={"tensor-parallel-size": 6}),
        ],
    )
    warnings = run(config).warnings
    assert any(
        "tpu-serving:workloads[0]: a 70B model at 16-bit needs about 140 GB of HBM" in w
        and "the smallest v6e topology that holds them is 2x4" in w
        for w in warnings
    )
    assert any(
        "tensor-parallel size 6 does not divide meta-llama/Llama-3.1-70B's 64 attention heads" in w for w in warnings
    )
    assert any(
        "tpu-serving:workloads[0].model: 'meta-llama/Llama-3.1-70B' is staged from Hugging Face without a token" in w
        for w in warnings
    )


# ---- tensor-parallel size: the JAX devices of one replica ---------------------------------------------------


@pytest.mark.parametrize("tpu,topology,size", [("v5p", "2x2x1", 4), ("v4", "2x2x1", 4), ("v6e", "2x4", 8)])
def test_tensor_parallel_size_is_the_jax_devices_not_the_tensorcores(run, tpu, topology, size):
    """Megacore v4/v5p chips are one JAX device each (jax.experimental.pallas.tpu.ChipVersion: megacore on v4 and
    v5p); vLLM shards over jax.devices()[:tensor_parallel_size] (tpu-inference@v0.27.0 tpu_inference/worker/
    tpu_worker.py), so 8 on a 4-chip v5p host would ask for devices that are not there."""
    config = make_config(
        tpu_serving__tpuPools=[pool(name="p", tpu=tpu, topology=topology, zone="us-east5-a")],
        tpu_serving__workloads=[wl(pool="p")],
    )
    (deployment,) = [
        o for o in kubernetes_objects(run(config)) if o["kind"] == "Deployment" and o["metadata"]["name"] == "llm"
    ]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--tensor-parallel-size={size}" in args


@pytest.mark.parametrize("value", [16, 0, "eight", True, 2.5])
def test_a_tensor_parallel_size_the_slice_cannot_have_is_refused(run, value):
    config = make_config(
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(args={"tensor_parallel_size": value, "port": 9000})],
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    message = str(err.value)
    assert (
        f"tpu-serving:workloads[0].args.tensor_parallel_size: {value!r} is not a tensor-parallel size pool 'single' "
        "can have; allowed: a whole number from 1 to 8 (the JAX devices of one v6e 2x4 slice: 8 chips x 1 per chip)"
    ) in message
    assert "tpu-serving:workloads[0].args.port: derived by the stack" in message  # every problem at once


@pytest.mark.parametrize("value", [1, 4, 8, "8", 8.0, None])
def test_a_tensor_parallel_size_the_slice_has_is_kept(value):
    """1 to the slice's 8 devices, as a number or a string of digits; null removes the flag (vLLM's default, 1)."""
    args = vllm_plan(args={"--tensor-parallel-size": value})
    tp = [a for a in args if a.startswith("--tensor-parallel-size")]
    assert tp == ([] if value is None else [f"--tensor-parallel-size={int(value)}"])


@pytest.mark.parametrize(
    ("model", "size"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", 70.0),
        # a mixture of experts names its total, then its active parameters: every expert is in HBM and read at start
        ("Qwen/Qwen3-30B-A3B", 30.0),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235.0),
        ("google/gemma-2-27b-it", 27.0),
        ("gs://bucket/models/no-size-here", None),
    ],
)
def test_the_size_read_from_a_models_name_is_its_total_parameters(model, size):
    """params_billion feeds the HBM check and the time-to-serve weights phase; `Qwen3-30B-A3B` is 30B, not 3B."""
    from workloads.vllm.config import VllmWorkload

    workload = VllmWorkload.model_validate({"type": "vllm", "name": "m", "pool": "p", "model": model})
    assert vllm.params_billion(workload) == size


# ---- gated or public: the one fact a token warning asks for (issue 34 item 13) ------------------------------


def _gated(gated, *, token: bool = False, model: str = "Qwen/Qwen3-8B"):
    from tooling.scans import fuzz

    config = make_config(
        tpu_serving__environment="staging",
        tpu_serving__tpuPools=POOLS,
        tpu_serving__workloads=[wl(model=model, **({} if gated is None else {"gated": gated}))],
    )
    if token:
        config["tpu-serving:hfToken"] = {"secure": "v1:abc"}
    return fuzz.parse(config, "staging")


def test_a_public_model_without_a_token_warns_of_nothing():
    assert not [w for w in _gated(False).warnings if "token" in w]
    assert any("for a public one set `gated: false` on this workload" in w for w in _gated(None).warnings)
    assert not [w for w in _gated(None, token=True).warnings if "token" in w]


def test_a_gated_model_without_a_token_is_refused_and_gated_is_only_for_hugging_face_ids():
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.gated: 'Qwen/Qwen3-8B' is gated: set the token first"):
        _gated(True)
    assert _gated(True, token=True).workloads
    with pytest.raises(ConfigError, match=r"workloads\[0\]\.gated: only for a model named by its Hugging Face id"):
        _gated(False, model="gs://weights/qwen3-8b")


def test_multi_host_vllm_off_the_support_matrix_is_warned_naming_its_row():
    """vllm-project/tpu-inference@v0.27.0:support_matrices/release/v6e/vllm/feature_support_matrix.csv:
    `"multi-host",❓ Untested,❓ Untested` (v7x: Passing). The 405B fast path (examples/time-to-serve llama405b-vllm,
    v6e 4x8) is that case: warned, not refused (a deploy confirms it)."""
    path = ROOT / "examples" / "time-to-serve" / "Pulumi.time-to-serve.yaml"
    names = [w["name"] for w in yaml.safe_load(path.read_text())["config"]["tpu-serving:workloads"]]
    parsed = parse_stack_file(path)
    found = [w for w in parsed.warnings if "vLLM multi-host on v6e" in w]
    assert any(f"workloads[{names.index('llama405b-vllm')}].pool" in w for w in found)
    assert all("records row 'multi-host' as Untested" in w and "passing on: tpu7x" in w for w in found)
