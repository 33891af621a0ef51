"""saxml: the tutorial's manifests reproduced from the example (differing only where the issue says), and
everything derived from the pool the workload names."""

from __future__ import annotations

import json

import pulumi
import pytest
import yaml

from tests.conftest import (
    STACK_FILES,
    make_config,
    on_pool,
    recorded,
    reference_dir,
    stack_ksa,
    without_scan_skips,
    workload_grants,
)
from tests.conftest import pool as any_pool
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT
from tooling.oracles.schemas import crd_dir, validate_objects
from workloads.saxml import plan as saxml
from workloads.saxml.publication import PUBLISH_SCRIPT


def pool(**fields):
    """A Saxml-capable pool: v5e multi-host unless a test says otherwise (Saxml knows tpuv4 and tpuv5e only)."""
    return any_pool(**{"tpu": "v5e", "topology": "4x8", **fields})


SAX_REF = reference_dir() / "kubernetes-engine-samples/ai-ml/llm-multihost-tpus-saxml"
needs_reference = pytest.mark.skipif(not SAX_REF.is_dir(), reason=f"reference manifests missing: {SAX_REF}")
EXAMPLE = ROOT / "examples" / "saxml-175b" / "Pulumi.saxml-175b.yaml"


def ref(file: str, kind: str) -> dict:
    return next(d for d in yaml.safe_load_all((SAX_REF / file).read_text()) if d and d["kind"] == kind)


def example_objects() -> tuple[dict, dict]:
    rec = recorded(EXAMPLE, False)
    return {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects(rec)}, rec.outputs


def fill(value: str, bucket: str) -> str:
    return value.replace("BUCKET_NAME", bucket)


@needs_reference
def test_model_server_jobset_matches_reference():
    objects, outputs = example_objects()
    bucket = outputs["bucketName"]
    ours, theirs = objects[("JobSet", "sax-model-server")], ref("sax-model-server-set.yaml", "JobSet")
    assert ours["apiVersion"] == theirs["apiVersion"]
    # the reference's annotations, and the checkov findings the JobSet accepts (stacks/security/scan_exceptions.py)
    assert without_scan_skips(ours["metadata"]["annotations"]) == theirs["metadata"]["annotations"]
    # the reference's maxRestarts, plus the rule that keeps a disruption from using it up (issue 36 #9,
    # tests/test_change_safety.py)
    assert {**ours["spec"]["failurePolicy"], "rules": []} == {**theirs["spec"]["failurePolicy"], "rules": []}
    (job,), (ref_job,) = ours["spec"]["replicatedJobs"], theirs["spec"]["replicatedJobs"]
    assert job["name"] == ref_job["name"] and job["replicas"] == ref_job["replicas"] == 2
    for key in ("parallelism", "completions", "backoffLimit"):
        assert job["template"]["spec"][key] == ref_job["template"]["spec"][key], key
    pod, ref_pod = job["template"]["spec"]["template"]["spec"], ref_job["template"]["spec"]["template"]["spec"]
    for key in ("hostNetwork", "dnsPolicy"):
        assert pod[key] == ref_pod[key], key
    assert pod["nodeSelector"] == on_pool(ref_pod["nodeSelector"], "v5e-4x8")
    assert pod["serviceAccountName"] == stack_ksa(
        "sax", "saxml-175b"
    )  # the workload's own Workload Identity KSA (tutorial: sax-sa)
    (container,), (ref_container,) = pod["containers"], ref_pod["containers"]
    for key in ("name", "image", "args", "ports", "securityContext"):
        assert container[key] == ref_container[key], key
    # the reference's TPU request and limit, and a CPU and memory request (a pod without is BestEffort; the
    # reference requests none): a quarter of the host's (ct5lp-hightpu-4t: 112 vCPU / 192 GB)
    as_read = {k: str(v) for k, v in ref_container["resources"]["limits"].items()}  # as the API reads them back
    assert container["resources"] == {
        "requests": {
            **{k: str(v) for k, v in ref_container["resources"]["requests"].items()},
            "cpu": "28",
            "memory": "48G",
        },
        "limits": as_read,
    }
    assert container["env"] == [{"name": e["name"], "value": fill(e["value"], bucket)} for e in ref_container["env"]]


@needs_reference
def test_admin_and_http_servers_match_reference():
    objects, outputs = example_objects()
    bucket = outputs["bucketName"]
    admin, ref_admin = objects[("Deployment", "sax-admin")], ref("sax-admin-server.yaml", "Deployment")
    (c,), (rc,) = admin["spec"]["template"]["spec"]["containers"], ref_admin["spec"]["template"]["spec"]["containers"]
    assert (c["name"], c["image"], c["ports"]) == (rc["name"], rc["image"], rc["ports"])
    assert {"name": "GSBUCKET", "value": bucket} in c["env"]
    assert {"name": "SAX_CELL", "value": "/sax/test"} in c["env"]  # the image's own default, made explicit
    assert not c["securityContext"]["privileged"]  # the tutorial's admin runs privileged; ours does not
    assert admin["spec"]["template"]["spec"]["hostNetwork"] is False

    http, ref_http = objects[("Deployment", "sax-http")], ref("sax-http.yaml", "Deployment")
    (c,), (rc,) = http["spec"]["template"]["spec"]["containers"], ref_http["spec"]["template"]["spec"]["containers"]
    assert (c["name"], c["image"], c["ports"]) == (rc["name"], rc["image"], rc["ports"])
    assert c["env"] == [{"name": "SAX_ROOT", "value": f"gs://{bucket}/sax-root"}]
    assert c["readinessProbe"]["httpGet"] == {"path": "/", "port": 8888}
    assert c["resources"]["requests"]

    svc, ref_svc = objects[("Service", "sax-http")], ref("sax-http.yaml", "Service")
    assert svc["spec"]["ports"] == ref_svc["spec"]["ports"]
    assert svc["spec"]["selector"] == {"app": "sax-http"}
    # the tutorial's public unauthenticated LoadBalancer becomes an internal one by default
    assert svc["spec"]["type"] == "LoadBalancer"
    assert svc["metadata"]["annotations"] == {"networking.gke.io/load-balancer-type": "Internal"}


def sax(**fields) -> dict:
    base = {"type": "saxml", "name": "sax", "pool": "p"}
    base.update(fields)
    return base


def objects_of(rec) -> dict:
    return {(o["kind"], o["metadata"]["name"]): o for o in kubernetes_objects(rec)}


@pytest.mark.parametrize(
    "tpu,topology,slices,replicas,parallelism,chip,chips",
    [
        ("v5e", "4x8", 3, 3, 8, "tpuv5e", 4),
        ("v5e", "4x4", 1, 1, 4, "tpuv5e", 4),
        ("v4", "2x2x2", 2, 2, 2, "tpuv4", 4),
    ],
)
def test_pool_drives_replicas_parallelism_and_platform_chip(
    run, tpu, topology, slices, replicas, parallelism, chip, chips
):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology, slices=slices)], tpu_serving__workloads=[sax()]
        )
    )
    jobset = objects_of(rec)[("JobSet", "sax-model-server")]
    (job,) = jobset["spec"]["replicatedJobs"]
    assert job["replicas"] == replicas
    assert job["template"]["spec"]["parallelism"] == job["template"]["spec"]["completions"] == parallelism
    pod = job["template"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert f"--platform_chip={chip}" in container["args"]
    assert "--sax_cell=/sax/sax" in container["args"]
    assert container["resources"]["limits"]["google.com/tpu"] == str(chips)
    assert pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == topology


def test_privileged_and_host_network_only_on_model_servers(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(slices=2)], tpu_serving__workloads=[sax(models=[])]))
    for (kind, name), obj in objects_of(rec).items():
        spec = obj.get("spec", {})
        templates = []
        if kind in ("Deployment", "Job"):
            templates = [spec["template"]["spec"]]
        elif kind == "JobSet":
            templates = [j["template"]["spec"]["template"]["spec"] for j in spec["replicatedJobs"]]
        for pod in templates:
            privileged = any(c.get("securityContext", {}).get("privileged") for c in pod["containers"])
            host_network = pod.get("hostNetwork", False)
            assert (privileged, host_network) == ((True, True) if kind == "JobSet" else (False, False)), name


@pytest.mark.parametrize(
    "http,service_type,annotations,source_ranges",
    [
        ({}, "ClusterIP", None, None),  # default: /publish has no authentication, so in-cluster only
        ({"exposure": "internal"}, "LoadBalancer", {"networking.gke.io/load-balancer-type": "Internal"}, None),
        # an internal passthrough LB honours loadBalancerSourceRanges (GKE creates the VPC firewall rule from it:
        # https://cloud.google.com/kubernetes-engine/docs/concepts/service-load-balancer-parameters)
        (
            {"exposure": "internal", "sourceRanges": ["10.8.0.0/16"]},
            "LoadBalancer",
            {"networking.gke.io/load-balancer-type": "Internal"},
            ["10.8.0.0/16"],
        ),
        ({"exposure": "external", "sourceRanges": ["0.0.0.0/0"]}, "LoadBalancer", None, ["0.0.0.0/0"]),  # dev only
        ({"exposure": "external", "sourceRanges": ["203.0.113.0/24"]}, "LoadBalancer", None, ["203.0.113.0/24"]),
    ],
)
def test_http_exposure(run, http, service_type, annotations, source_ranges):
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax(http=http)]))
    svc = objects_of(rec)[("Service", "sax-http")]
    assert svc["spec"]["type"] == service_type
    assert svc["metadata"].get("annotations") == annotations
    assert svc["spec"].get("loadBalancerSourceRanges") == source_ranges


def test_admin_and_http_servers_have_identities_of_their_own_limited_to_the_cell(run):
    """What each Saxml server touches in GCS at the pinned images (google/saxml@v1.1.0):
    - the admin server image's entrypoint runs `admin_config --sax_root=gs://$GSBUCKET/sax-root
      --fs_root=gs://$GSBUCKET/sax-fs-root` then `admin_server` (saxml/tools/docker/Dockerfile.admin); admin_config
      creates the cell's directory (METADATA) and writes config.proto there (saxml/bin/admin_config.go,
      saxml/common/config.go Create/Save), the admin server writes location.proto there (saxml/common/addr.go
      SetAddr) and its state under <fs_root>/<cell> (saxml/admin/admin.go Start, saxml/common/state.go Write): it
      writes both prefixes;
    - the HTTP server (GoogleCloudPlatform/ai-on-gke@e997f425:tools/saxml-on-gke/httpserver/http_server.py, the
      Python Sax client) reaches the admin server over gRPC for publish/list/generate and only reads the cell's
      location (saxml/client/go/admin.go getAdminClient -> saxml/common/addr.go FetchAddr: cell.Exists, ReadFile):
      read-only, so an identity of its own;
    - both only ever name objects under RootDir/<cell> (saxml/common/cell.go Path), so the grant is the cell's
      prefix, not all of sax-root/."""
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax()]))
    bindings = {b.name: b.inputs for b in workload_grants(rec)}
    admin = {k.removeprefix("workload-sax-identity-"): v for k, v in bindings.items() if "-sax-identity-" in k}
    http = {k.removeprefix("workload-sax-http-identity-"): v for k, v in bindings.items() if "-http-identity-" in k}
    assert {(v["role"], v["condition"]["title"]) for v in admin.values()} == {
        ("roles/storage.objectUser", "only sax-root/sax/sax/"),
        ("roles/storage.objectUser", "only sax-fs-root/sax/sax/"),
    }
    assert {(v["role"], v["condition"]["title"]) for v in http.values()} == {
        ("roles/storage.objectViewer", "only sax-root/sax/sax/")
    }
    assert all(v["bucket"] == "tpu-test-project-tpu-serving-dev" for v in bindings.values())
    project_roles = [m.inputs["role"] for m in rec.of_type("gcp:projects/iAMMember:IAMMember")]
    assert not [r for r in project_roles if r.startswith("roles/storage")]
    wi = {m.name: m.inputs["member"] for m in rec.of_type("gcp:serviceaccount/iAMMember:IAMMember")}
    assert wi == {
        "workload-sax-identity-wi-user": f"serviceAccount:tpu-test-project.svc.id.goog[sax/{stack_ksa('sax')}]",
        "workload-sax-http-identity-wi-user": (
            f"serviceAccount:tpu-test-project.svc.id.goog[sax/{stack_ksa('sax-http')}]"
        ),
    }
    objects = objects_of(rec)
    pod = {name: objects[("Deployment", name)]["spec"]["template"]["spec"] for name in ("sax-admin", "sax-http")}
    assert pod["sax-admin"]["serviceAccountName"] == stack_ksa("sax")
    assert pod["sax-http"]["serviceAccountName"] == stack_ksa("sax-http")
    http_ksa = rec.one("kubernetes:core/v1:ServiceAccount", "workload-sax-http-identity-ksa")
    assert rec.one("kubernetes:apps/v1:Deployment", "workload-sax-http").dependencies.count(http_ksa.urn) == 1


def test_network_policy_limits_model_server_ports(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax()]))
    policy = objects_of(rec)[("NetworkPolicy", "sax-model-server")]
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app": "sax-model-server"}}
    (rule,) = policy["spec"]["ingress"]
    assert {p["port"] for p in rule["ports"]} == {10001, 8471}
    assert [peer["podSelector"]["matchLabels"]["app"] for peer in rule["from"]] == [
        "sax-http",
        "sax-admin",
        "sax-model-server",
    ]


def test_jobset_depends_on_release_node_pools_and_admin(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool(slices=2)], tpu_serving__workloads=[sax()]))
    jobset = rec.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    for urn in [
        rec.one("kubernetes:helm.sh/v3:Release", "addons-jobset").urn,
        rec.one("kubernetes:apps/v1:Deployment", "workload-sax-admin").urn,
        *[r.urn for r in rec.of_type("gcp:container/nodePool:NodePool") if r.name.startswith("tpu-p-")],
    ]:
        assert urn in jobset.dependencies


def test_model_publication_job(run):
    models = [
        {"model": "lm175b", "modelPath": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test", "replicas": 2}
    ]
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool(tpu="v5e", topology="4x8", slices=2)],
            tpu_serving__workloads=[sax(models=models)],
        )
    )
    (job_reg,) = rec.of_type("kubernetes:batch/v1:Job")
    job = objects_of(rec)[("Job", job_reg.inputs["metadata"]["name"])]
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert json.loads(env["MODELS"]) == [
        {
            "model": "/sax/sax/lm175b",
            "model_path": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test",
            "checkpoint": "None",
            "replicas": 2,
        }
    ]
    assert env["SAX_HTTP"] == "http://sax-http.sax.svc:8888" and env["SAX_CELL"] == "/sax/sax"
    for dependency in ("workload-sax-model-servers", "workload-sax-http", "workload-sax-http-svc"):
        assert any(d.endswith(f"::{dependency}") for d in job_reg.dependencies), dependency
    # the script is valid Python that publishes, unpublishes what is no longer wanted, and waits for loading
    compile(PUBLISH_SCRIPT, "publish", "exec")
    for path in ("/publish", "/unpublish", "/listall", "/listcell"):
        assert path in PUBLISH_SCRIPT
    # a different model list is a different Job (it runs again); the same list is the same Job
    other = run(
        make_config(
            tpu_serving__tpuPools=[pool(tpu="v5e", topology="4x8", slices=2)],
            tpu_serving__workloads=[sax(models=[{**models[0], "replicas": 1}])],
        )
    )
    assert other.of_type("kubernetes:batch/v1:Job")[0].name != job_reg.name
    # no `models` key: the stack does not touch the cell's models
    assert not run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax()])).of_type(
        "kubernetes:batch/v1:Job"
    )


def test_outputs(run):
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax(http={"exposure": "cluster"})]))
    summary = rec.outputs["workloads"]["sax"]
    assert summary["portForward"] == "kubectl -n sax port-forward svc/sax-http 8888:8888"
    assert summary["cell"] == "/sax/sax"
    assert set(summary["examples"]) == {"publish", "listcell", "generate", "unpublish"}
    assert summary["examples"]["generate"].startswith("curl -s -X POST http://localhost:8888/generate")


def test_params_from_model_path():
    assert saxml.params_billion("saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test") == 175
    assert saxml.params_billion("saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd2BTest") == 2
    assert saxml.params_billion("saxml.server.pax.lm.params.custom.MyModel") is None


def test_sizing_warning(run):
    models = [{"model": "lm175b", "modelPath": "saxml.server.pax.lm.params.lm_cloud.LmCloudSpmd175B32Test"}]
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool(tpu="v5e", topology="4x4")], tpu_serving__workloads=[sax(models=models)]
        )
    )
    assert any(
        w.startswith("tpu-serving:workloads[0].models[0]: a 175B model at 16-bit") and "is 4x8" in w
        for w in rec.warnings
    )


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
def test_saxml_objects_validate(run):
    rec = run(
        make_config(
            tpu_serving__tpuPools=[pool(slices=2)],
            tpu_serving__workloads=[sax(models=[], http={"exposure": "external", "sourceRanges": ["10.0.0.0/8"]})],
        )
    )
    report = validate_objects(kubernetes_objects(rec), "1.34")
    assert report.ok and not report.unchecked, report.errors


BAD = {
    "single-host pool": ({"pool": "single"}, "tpu-serving:workloads[0].pool: pool 'single' is single-host (v5e 2x4)"),
    "unknown pool": ({"pool": "nope"}, "tpu-serving:workloads[0].pool: 'nope' is not a TPU pool of this stack"),
    "model replicas above slices": (
        {"models": [{"model": "m", "modelPath": "a.B", "replicas": 2}]},
        "tpu-serving:workloads[0].models[0].replicas: 2 is more than the 1 model server(s) of pool 'p'",
    ),
    "external without source ranges": (
        {"http": {"exposure": "external"}},
        "tpu-serving:workloads[0].http.sourceRanges: required with exposure 'external'",
    ),
    "bad source range": (
        {"http": {"exposure": "external", "sourceRanges": ["0.0.0.0/33"]}},
        "tpu-serving:workloads[0].http.sourceRanges[0]: '0.0.0.0/33' is not a valid CIDR block",
    ),
    "source ranges on a ClusterIP": (
        {"http": {"exposure": "cluster", "sourceRanges": ["10.0.0.0/8"]}},
        "tpu-serving:workloads[0].http.sourceRanges: only used with exposure 'internal' or 'external'",
    ),
    "bad cell": ({"cell": "sax/test"}, "tpu-serving:workloads[0].cell: 'sax/test' is not of the form /sax/<name>"),
    "model outside the cell": (
        {"cell": "/sax/a", "models": [{"model": "/sax/b/m", "modelPath": "x.Y"}]},
        "tpu-serving:workloads[0].models[0].model: '/sax/b/m' is not in the cell /sax/a",
    ),
}


@pytest.mark.parametrize("environment", ["staging", "prod"])
def test_external_refuses_the_whole_internet_outside_dev(run, environment):
    http = {"exposure": "external", "sourceRanges": ["203.0.113.0/24", "0.0.0.0/0"]}
    config = make_config(
        tpu_serving__environment=environment, tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax(http=http)]
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config, stack=environment)
    assert (
        "tpu-serving:workloads[0].http.sourceRanges[1]: '0.0.0.0/0' opens Saxml's unauthenticated HTTP API to the "
        f"whole internet; allowed only in dev (environment is '{environment}')"
    ) in str(err.value)


@pytest.mark.parametrize("tpu,topology", [("v6e", "4x4"), ("v5p", "2x2x2")])
def test_generations_saxml_does_not_know_are_refused(run, tpu, topology):
    # google/saxml@v1.1.0:saxml/server/proto_util.py to_chip_type maps tpuv2/v3/v4/v4i/v5e only, and
    # saxml/server/model_service_base.py raises ValueError('chip type unknown') for anything else (also at v1.2.0)
    config = make_config(tpu_serving__tpuPools=[pool(tpu=tpu, topology=topology)], tpu_serving__workloads=[sax()])
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    assert (
        f"tpu-serving:workloads[0].pool: pool 'p' is {tpu}, but us-docker.pkg.dev/cloud-tpu-images/inference/"
        f"sax-model-server:v1.1.0 does not serve TPU generation {tpu} (it serves: v4, v5e;"
    ) in str(err.value)


@pytest.mark.parametrize("case", list(BAD))
def test_saxml_errors(run, case):
    change, expected = BAD[case]
    config = make_config(
        tpu_serving__tpuPools=[pool(), pool(name="single", topology="2x4")], tpu_serving__workloads=[sax(**change)]
    )
    with pytest.raises(pulumi.RunError) as err:
        run(config)
    assert expected in str(err.value)


def test_jobset_addon_disabled_is_an_error(run):
    config = make_config(
        tpu_serving__tpuPools=[pool()],
        tpu_serving__workloads=[sax()],
        tpu_serving__addons={"jobset": {"enabled": False}},
    )
    with pytest.raises(pulumi.RunError, match=r"tpu-serving:workloads\[0\].type: saxml needs the jobset add-on"):
        run(config)


def test_publish_script_retries_every_call(tmp_path):
    """One early error on any call (here /listall, /publish and /listcell each fail once) must not fail the Job."""
    import http.server
    import os
    import subprocess
    import sys
    import threading

    failures = {"/listall": 1, "/publish": 1, "/listcell": 1}
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self):
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            seen.append(self.path)
            if failures.get(self.path, 0) > 0:
                failures[self.path] -= 1
                self.send_response(503)
                self.end_headers()
                self.wfile.write(b"cell not ready")
                return
            body = {"/": {}, "/listall": ["/sax/sax/old"], "/listcell": {"active_replicas": 1}}.get(self.path, {})
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        do_GET = do_POST = _reply

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            **os.environ,
            "SAX_HTTP": f"http://127.0.0.1:{server.server_address[1]}",
            "SAX_CELL": "/sax/sax",
            "MODELS": json.dumps([{"model": "/sax/sax/m", "model_path": "a.B", "checkpoint": "None", "replicas": 1}]),
            "LOAD_TIMEOUT_SECONDS": "30",
            "RETRY_SECONDS": "0.01",
            "POLL_SECONDS": "0.01",
        }
        done = subprocess.run(
            [sys.executable, "-c", PUBLISH_SCRIPT], env=env, capture_output=True, text=True, timeout=30
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cell in sync" in done.stdout
    assert seen.count("/listall") == 2 and seen.count("/publish") == 2 and "/unpublish" in seen


def test_model_servers_get_a_node_identity_of_their_own_reading_the_cell(run):
    """Host-network pods act as their node's identity: GKE does not apply Workload Identity to them
    (https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity#restrictions: "Pods running on the
    host network (hostNetwork: true) don't use Workload Identity Federation for GKE"). So the Saxml pool's nodes
    run as a service account of the workload's own, whose only storage access is reading the cell's prefix (and the
    models' checkpoints), and the model servers start only after that grant exists. Read-only: a model server
    joins the cell through the location file, which it only reads (google/saxml@v1.1.0:saxml/common/location.go
    Join: cell.Exists, Watch -> ReadCachedFile); it writes there only when it starts an admin server itself
    (--admin_port, saxml/server/model_service_main.py; unset here)."""
    models = [{"model": "m", "modelPath": "a.B", "checkpoint": "gs://tpu-test-project-tpu-serving-dev/ckpt/m"}]
    rec = run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax(models=models)]))
    account = rec.one("gcp:serviceaccount/account:Account", "workload-sax-nodes-sa")
    email = f"{account.inputs['accountId']}@tpu-test-project.iam.gserviceaccount.com"
    pools = {r.name: r for r in rec.of_type("gcp:container/nodePool:NodePool")}
    assert pools["tpu-p-s0"].inputs["nodeConfig"]["serviceAccount"] == email
    assert pools["cluster-system"].inputs["nodeConfig"]["serviceAccount"] != email
    # by what each binds (components/workload_identity.py names a grant by its binding)
    grants = {b.inputs["condition"]["title"]: b for b in workload_grants(rec) if "-nodes-" in b.name}
    cell = grants["only sax-root/sax/sax/"].inputs
    assert cell["role"] == "roles/storage.objectViewer"
    assert (
        'startsWith("projects/_/buckets/tpu-test-project-tpu-serving-dev/objects/sax-root/sax/sax/")'
        in (cell["condition"]["expression"])
    )
    args = objects_of(rec)[("JobSet", "sax-model-server")]["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert "--sax_cell=/sax/sax" in args["template"]["spec"]["containers"][0]["args"]
    checkpoint = grants["only ckpt/m/"].inputs
    assert (
        checkpoint["role"] == "roles/storage.objectViewer"
        and "objects/ckpt/m/" in checkpoint["condition"]["expression"]
    )
    jobset = rec.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    for grant in grants.values():
        assert grant.urn in jobset.dependencies


def test_saxml_pool_serves_saxml_alone(run):
    other = {"type": "pathways-job", "name": "pw", "pool": "p"}
    with pytest.raises(pulumi.RunError) as err:
        run(make_config(tpu_serving__tpuPools=[pool()], tpu_serving__workloads=[sax(), other]))
    assert "so its pool serves it alone" in str(err.value)


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_every_jobset_is_replaced_not_updated_when_its_replicated_jobs_change(path):
    """JobSet's webhook refuses an update of spec.replicatedJobs (kubernetes-sigs/jobset@v0.10.1
    pkg/webhooks/jobset_webhook.go ValidateUpdate, ValidateImmutableField), so every JobSet any workload registers
    replaces on a change there, deleting first (same name); a plain update would fail the whole `pulumi up`."""
    rec = recorded(path, False)
    for jobset in rec.of_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"):
        assert any(f in ("spec", "spec.replicatedJobs") for f in jobset.replace_on_changes), jobset.name
        assert jobset.delete_before_replace, jobset.name
