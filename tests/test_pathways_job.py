"""pathways-job: a PathwaysJob whose every value comes from the pool, checked against what the PathwaysJob
controller does with it at the pinned release.

Upstream sources (pinned release v0.1.4 of github.com/google/pathways-job, mirrored and read with
`git show v0.1.4:<path>`):
- CTRL = google/pathways-job@v0.1.4:internal/controller/pathwaysjob_controller.go
- TYPES = google/pathways-job@v0.1.4:api/v1/pathwaysjob_types.go
- CRD = ../shared/reference/crds/pathways-job.pathways.domain_pathwaysjobs.yaml (= config/crd/bases at v0.1.4)
"""

from __future__ import annotations

import functools

import pulumi
import pytest

from stacks.config import ConfigError, parse_stack_config
from stacks.facts import catalog, cpu_machines
from stacks.reports import cost
from stacks.security import bucket_access
from tests.conftest import load_large_yaml, make_config, pool, recorded, reference_dir, workload_grants
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import ROOT
from tooling.oracles.schemas import crd_dir, validate_objects
from workloads.pathways_job import checks as pj_checks
from workloads.pathways_job import commands as pj_commands
from workloads.pathways_job import manifests as pj_manifests
from workloads.pathways_job import plan as pj
from workloads.registry import WORKLOAD_TYPES

EXAMPLE = ROOT / "examples" / "pathways-job" / "Pulumi.pathways-job.yaml"
CRD_FILE = reference_dir() / "crds" / "pathways-job.pathways.domain_pathwaysjobs.yaml"
JOB_TYPE = "kubernetes:pathways-job.pathways.domain/v1:PathwaysJob"
NODE_POOL = "gcp:container/nodePool:NodePool"
ADDONS = {"pathwaysJob": {"enabled": True}}


def workload(**fields):
    return {"type": "pathways-job", "name": "pw", "pool": "p", **fields}


def raw(pools=None, workloads=None, addons=None, **extra):
    return {
        "environment": "dev",
        "tpuPools": pools if pools is not None else [pool()],
        "workloads": workloads if workloads is not None else [workload()],
        "addons": ADDONS if addons is None else addons,
        **extra,
    }


def parse(**kw):
    return parse_stack_config(
        raw(**kw),
        stack="dev",
        pulumi_project="tpu-serving",
        gcp_project="tpu-test-project",
        region="us-east5",
        workload_types=WORKLOAD_TYPES,
    )


def problems(**kw) -> str:
    with pytest.raises(ConfigError) as err:
        parse(**kw)
    return str(err.value)


def config(**kw):
    r = raw(**kw)
    return make_config(
        tpu_serving__tpuPools=r["tpuPools"], tpu_serving__workloads=r["workloads"], tpu_serving__addons=r["addons"]
    )


@functools.cache
def minimal_run():
    from tooling.harness.offline import run_program

    return run_program(config(), stack="dev", preview=False)


def job_of(rec, name="pw") -> dict:
    return next(o for o in kubernetes_objects(rec) if o["kind"] == "PathwaysJob" and o["metadata"]["name"] == name)


# ---- the minimal workload ------------------------------------------------------------------------------------


def test_minimal_workload_renders_an_interactive_pathways_job():
    rec = minimal_run()
    job = job_of(rec)
    bucket = rec.outputs["bucketName"]
    assert job["apiVersion"] == "pathways-job.pathways.domain/v1" and job["metadata"]["namespace"] == "pw"
    spec = job["spec"]
    # derived from pool p (v6e 4x4): the machine type, topology and slice count
    # the controller adds the TPU selectors to workers[0].nodeSelector (CTRL makeTPUNodeSelector): the job's pool
    assert spec["workers"] == [
        {"type": "ct6e-standard-4t", "topology": "4x4", "numSlices": 1, "nodeSelector": {"tpu-serving/pool": "p"}}
    ]
    assert spec["pathwaysDir"] == f"gs://{bucket}/pathways/pw/tmp"
    # CTRL makeImageTagUsingPathwaysVersion: without pathwaysVersion the images are `:latest`; we pin the matrix tag
    assert spec["pathwaysVersion"] == pj.default_pathways_version() == "jax-0.5.3"
    # CTRL isUserPodProvided: no controller.template = headless (interactive) mode
    assert "template" not in spec["controller"] and spec["controller"]["deploymentMode"] == "default"
    # restarts for a head eviction (google/pathways-job@v0.1.4: head backoffLimit 0, JobSet maxRestarts the spec's)
    assert spec["maxRestarts"] == 3 and "customComponents" not in spec


def test_matrix_pins_one_pathways_version_for_server_and_proxy():
    # CTRL MakeComponentImage: default images are <repo>/server:<pathwaysVersion> and <repo>/proxy_server:<same tag>
    from stacks.facts.versions import IMAGES

    assert (
        IMAGES["pathwaysServer"]
        == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:{pj.default_pathways_version()}"
    )
    assert (
        IMAGES["pathwaysProxy"]
        == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:{pj.default_pathways_version()}"
    )


@pytest.mark.skipif(crd_dir() is None, reason="no CRDs")
def test_rendered_jobs_validate_against_the_crd():
    for rec in (minimal_run(), recorded(EXAMPLE, False)):
        report = validate_objects(kubernetes_objects(rec), "1.34")
        assert report.ok and not report.unchecked, (report.errors, report.unchecked)


# ---- what the controller derives, mirrored ---------------------------------------------------------------------


@pytest.mark.parametrize("tpu", ["v4", "v5e", "v5p", "v6e"])
def test_controller_derives_the_same_workers_as_the_catalog(tpu):
    # CTRL calculateVMsFromMachineTypeAndTopology: VMs = chips / 4 (8 for ct6e-standard-8t, ct5lp-hightpu-8t);
    # MakeWorkerJob: parallelism = completions = VMs, google.com/tpu = chips per VM; ValidTpuTopologiesMap
    gen = catalog.generation(tpu)
    for topology in gen.multi_host_topologies:
        shape = catalog.slice_shape(tpu, topology)
        assert topology in pj_checks.CONTROLLER_TOPOLOGIES[shape.machine_type]
        assert pj_checks.controller_workers(shape.machine_type, topology) == (shape.hosts, shape.chips_per_host)
    assert pj_checks.controller_workers("ct6e-standard-8t", "2x4") == (1, 8)


def test_head_is_sized_from_the_controller_requests():
    # CTRL MakeResourceManagerContainer: limits cpu 8, memory 32000000000; MakeProxyContainer: cpu 16,
    # memory 100000000000. Limits without requests become the requests
    # (https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/).
    assert (pj.HEAD_CPU, pj.HEAD_MEMORY_BYTES) == (24, 132_000_000_000)
    # GKE reservations (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes): a 128 GiB
    # n2-standard-32 leaves 118.6 GiB, too little; n2-highmem-32 is the cheapest candidate that holds the head.
    small = cpu_machines.CANDIDATES[0]
    assert small.name == "n2-standard-32" and not small.fits(pj.HEAD_CPU, pj.HEAD_MEMORY_BYTES)
    assert round(small.allocatable_memory_bytes / cpu_machines.GIB, 2) == 118.58
    assert cpu_machines.smallest_fitting(pj.HEAD_CPU, pj.HEAD_MEMORY_BYTES).name == "n2-highmem-32"
    # the doc's bands and 100 MiB eviction applied to 150 GiB leave 140.1423 GiB (the worked example of
    # github.com/hatemosphere/gke-node-allocatable-memory-calculator, which implements that page)
    assert round(cpu_machines.CpuMachine("x", 4, 150).allocatable_memory_bytes / cpu_machines.GIB, 4) == 140.1423
    assert round(cpu_machines.CpuMachine("x", 32, 1).allocatable_cpu, 2) == 31.85
    prices = [cost.CPU_MACHINE_HOUR[m.name] for m in cpu_machines.CANDIDATES]
    assert prices == sorted(prices)  # candidates are cheapest first


def test_head_pool_provisioned_in_default_mode():
    rec = minimal_run()
    head = rec.one(NODE_POOL, "workload-pw-head")
    node_config = head.inputs["nodeConfig"]
    assert head.inputs["name"] == "pw-head" and node_config["machineType"] == "n2-highmem-32"
    assert head.inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 1}
    assert head.inputs["nodeLocations"] == ["us-east5-b"]
    assert node_config["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert "taints" not in node_config  # the headless head pod carries no toleration (CTRL MakePathwaysHeadPodSpec)


def test_batch_job_template():
    env = {"STEPS": "10"}
    parsed = parse(
        workloads=[workload(job={"image": "python:3.12", "command": ["python"], "args": ["x.py"], "env": env})]
    )
    job = pj_manifests.pathways_job(parsed.workloads[0])
    template = job["spec"]["controller"]["template"]
    (main,) = template["spec"]["containers"]
    # CTRL injectJAXBackendTargetIntoMainContainer: the container named mainContainerName gets the proxy address
    assert main["name"] == job["spec"]["controller"]["mainContainerName"] == "main"
    assert (main["image"], main["command"], main["args"]) == ("python:3.12", ["python"], ["x.py"])
    assert main["env"] == [{"name": "STEPS", "value": "10"}]
    # the head goes to its own pool: the selector is the head pool's node labels
    assert template["spec"]["nodeSelector"] == parsed.workloads[0].head_selector


def test_colocated_batch_job_tolerates_tpu_nodes_and_has_no_head_pool(run):
    job = {"image": "python:3.12"}
    rec = run(config(workloads=[workload(deploymentMode="colocate_head_with_workers", job=job)]))
    spec = job_of(rec)["spec"]
    assert spec["controller"]["deploymentMode"] == "colocate_head_with_workers"
    # CTRL MakePathwaysHeadJobForColocateHeadWithWorkersDeployment sets the TPU node selector; TPU nodes are tainted
    assert spec["controller"]["template"]["spec"]["tolerations"] == [
        {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert not [r for r in rec.of_type(NODE_POOL) if r.name.endswith("-head")]


def test_image_overrides_become_custom_components():
    parsed = parse(workloads=[workload(images={"proxy": "example.com/proxy:1", "worker": "example.com/w:1"})])
    # TYPES PathwaysComponentType: pathways_server, proxy_server, worker
    assert pj_manifests.pathways_job(parsed.workloads[0])["spec"]["customComponents"] == [
        {"componentType": "proxy_server", "image": "example.com/proxy:1"},
        {"componentType": "worker", "image": "example.com/w:1"},
    ]


# ---- identity ------------------------------------------------------------------------------------------------


def test_pools_run_as_the_workloads_own_identity_limited_to_its_prefix():
    # CTRL MakePathwaysHeadPodSpec / MakeWorkerJob: HostNetwork true on every pod; "Pods running on the host
    # network (hostNetwork: true) don't use Workload Identity Federation for GKE. GKE automatically routes requests
    # from these Pods to the Compute Engine metadata server."
    # (https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity#restrictions)
    rec = minimal_run()
    account = rec.one("gcp:serviceaccount/account:Account", "workload-pw-nodes-sa")
    email = f"{account.inputs['accountId']}@tpu-test-project.iam.gserviceaccount.com"
    assert account.inputs["accountId"].startswith("dev-pw-nodes-")
    pools = {r.name: r for r in rec.of_type(NODE_POOL)}
    assert pools["tpu-p-s0"].inputs["nodeConfig"]["serviceAccount"] == email
    assert pools["workload-pw-head"].inputs["nodeConfig"]["serviceAccount"] == email
    assert pools["cluster-system"].inputs["nodeConfig"]["serviceAccount"] != email  # other pools keep the stack's
    grants = [r for r in workload_grants(rec) if email in str(r.inputs["member"])]
    (grant,) = grants  # besides the storage.buckets.get binding every identity holds (tests/test_bucket_get.py)
    bucket = rec.outputs["bucketName"]
    assert grant.inputs["role"] == "roles/storage.objectUser"
    # IAM Conditions on Cloud Storage: objects are projects/_/buckets/<b>/objects/<name>; a list request is
    # checked on the bucket with its prefix in the storage.googleapis.com/objectListPrefix API attribute
    # (https://cloud.google.com/storage/docs/access-control/iam#conditions,
    # https://cloud.google.com/iam/docs/conditions-attribute-reference)
    assert grant.inputs["condition"]["expression"] == (
        f'resource.name.startsWith("projects/_/buckets/{bucket}/objects/pathways/pw/") || '
        f'resource.name == "projects/_/buckets/{bucket}/objects/pathways/pw" || '
        'api.getAttribute("storage.googleapis.com/objectListPrefix", "").startsWith("pathways/pw/")'
    )
    roles = {
        r.inputs["role"] for r in rec.of_type("gcp:projects/iAMMember:IAMMember") if email in str(r.inputs["member"])
    }
    assert roles == {"roles/container.defaultNodeServiceAccount"}  # Artifact Registry reader: on the repositories
    reads = rec.of_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert {r.inputs["role"] for r in reads if email in str(r.inputs["member"])} == {"roles/artifactregistry.reader"}


def test_job_depends_on_controller_nodes_and_grant_and_is_replaced_on_change():
    rec = minimal_run()
    job = rec.one(JOB_TYPE)
    needed = [
        rec.one("kubernetes:yaml/v2:ConfigFile").urn,
        rec.one(NODE_POOL, "tpu-p-s0").urn,
        rec.one(NODE_POOL, "workload-pw-head").urn,
        *(
            g.urn
            for g in rec.of_type("gcp:storage/bucketIAMMember:BucketIAMMember")
            if g.name.startswith("workload-pw-")
        ),
        rec.one("kubernetes:core/v1:Namespace", "namespaces-pw").urn,
    ]
    assert set(needed) <= set(job.dependencies)
    assert job.delete_before_replace and job.replace_on_changes[0] == "spec"


@pytest.mark.skipif(not CRD_FILE.is_file(), reason="no CRD")
def test_crd_makes_the_spec_immutable():
    # CRD: x-kubernetes-validations `self == oldSelf` on these fields, so an update of any fails and the job is
    # replaced instead (replace_on_changes=["spec"] with delete_before_replace: same name)
    crd = load_large_yaml(CRD_FILE)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for key in ("maxRestarts", "pathwaysDir", "pathwaysVersion", "workers", "customComponents"):
        assert [v["rule"] for v in spec[key]["x-kubernetes-validations"]] == ["self == oldSelf"], key
    enum = spec["workers"]["items"]["properties"]["type"]["enum"]
    assert set(pj_checks.CONTROLLER_TOPOLOGIES) <= set(enum)


def test_prefix_condition_matches_only_the_prefix():
    # the condition must end the prefix with "/": "pathways/pw" would also match "pathways/pw2/..."
    expression = bucket_access.prefix_expression("b", "pathways/pw/")
    assert '"projects/_/buckets/b/objects/pathways/pw/"' in expression
    with pytest.raises(ValueError, match="must end with '/'"):
        bucket_access.prefix_expression("b", "pathways/pw")


def test_controller_pods_are_host_network():
    # CTRL MakePathwaysHeadPodSpec: HostNetwork true, DNSClusterFirstWithHostNet (head, both modes);
    # MakeWorkerJob: the same, plus a hostPath /tmp volume (DirectoryOrCreate). Pod Security Standards baseline
    # forbids both (https://kubernetes.io/docs/concepts/security/pod-security-standards/ "Host Namespaces",
    # "HostPath Volumes"), so the namespace of a PathwaysJob can only enforce `privileged`.
    for mode in ({}, {"job": {"image": "python:3.12"}}):
        pods = parse(workloads=[workload(**mode)]).workloads[0].pod_manifests()
        head, worker = (p["spec"] for p in pods)
        assert head["hostNetwork"] and worker["hostNetwork"]
        assert worker["volumes"] == [{"name": "shared-tmp", "hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}}]
        names = [c["name"] for c in head["containers"]]
        assert names[-2:] == ["pathways-rm", "pathways-proxy"] and (names[0] == "main") == bool(mode)


# ---- pause, outputs, cost ------------------------------------------------------------------------------------


def test_paused_stack_has_no_job_and_costs_nothing(run):
    rec = run({**config(), "tpu-serving:paused": True})
    assert not rec.of_type(JOB_TYPE)  # the controller's JobSet and pods are garbage-collected with it
    assert rec.one(NODE_POOL, "workload-pw-head").inputs["autoscaling"]["minNodeCount"] == 0
    assert rec.outputs["estimatedHourlyCost"]["items"]["Pathways head pool pw"]["peak"] == 0


def test_outputs_say_how_to_follow_the_job():
    out = minimal_run().outputs["workloads"]["pw"]
    assert out["type"] == "pathways-job" and out["namespace"] == "pw"
    assert out["status"] == "kubectl -n pw get pathwaysjob pw --watch"
    # JobSet labels every pod with its JobSet and replicated job: kubernetes-sigs/jobset pod webhook genLeaderPodName
    # reads pod.Labels[JobSetNameKey] and pod.Labels[ReplicatedJobNameKey] ("jobset.sigs.k8s.io/jobset-name",
    # "jobset.sigs.k8s.io/replicatedjob-name"); CTRL MakePodAffinityRules selects pods on the first
    head = "jobset.sigs.k8s.io/jobset-name=pw,jobset.sigs.k8s.io/replicatedjob-name=pathways-head"
    assert out["portForward"] == f"kubectl -n pw port-forward $(kubectl -n pw get pods -l {head} -o name) 29000:29000"
    # CTRL PathwaysProxyPort 29000; the samples' client env JAX_PLATFORMS=proxy, JAX_BACKEND_TARGET=grpc://...:29000
    assert "JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://localhost:29000" in out["connect"]
    assert out["workerLogs"].endswith("--max-log-requests=4")
    batch = pj_commands.commands(parse(workloads=[workload(job={"image": "python:3.12"})]).workloads[0], {})
    assert "portForward" not in batch and batch["headLogs"].endswith("-c main")


def test_two_interactive_jobs_forward_to_local_ports_of_their_own():
    parsed = parse(pools=[pool(), pool(name="q")], workloads=[workload(), workload(name="pw2", pool="q")])
    first, second = (pj_commands.commands(p, parsed.local_ports[p.name]) for p in parsed.workloads)
    assert first["portForward"].endswith(" 29000:29000") and "grpc://localhost:29000 " in first["connect"]
    assert second["portForward"].endswith(" 29001:29000") and "grpc://localhost:29001 " in second["connect"]


def test_cost_counts_the_pool_and_the_head():
    est = cost.estimate(parse())
    assert est.workloads["pw"] == round(16 * cost.chip_price("v6e", "on-demand"), 4)
    head = next(line for line in est.lines if line.item == "Pathways head pool pw")
    assert (head.baseline, head.peak) == (0.0, cost.CPU_MACHINE_HOUR["n2-highmem-32"])


# ---- errors --------------------------------------------------------------------------------------------------


def test_every_problem_at_once():
    text = problems(
        pools=[pool(), pool(name="single", topology="2x4")],
        workloads=[
            workload(pool="single", pathwaysVersion="bad tag"),
            workload(name="b", job={"image": "python:3.12", "env": {"JAX_BACKEND_TARGET": "x", "1A": "y"}}),
            workload(name="c", type="jetstream-pathways", model="llama2-70b", checkpoint="gs://b/c"),
        ],
    )
    assert (
        "tpu-serving:workloads[0].pool: a PathwaysJob needs a multi-host pool; 'single' is single-host "
        "(v6e 2x4 on ct6e-standard-8t)" in text
    )
    assert "tpu-serving:workloads[0].pathwaysVersion: 'bad tag' is not an image tag, e.g. jax-0.5.3" in text
    assert "tpu-serving:workloads[1].job.env.JAX_BACKEND_TARGET: set by the PathwaysJob controller" in text
    assert "tpu-serving:workloads[1].job.env.1A: not a valid environment variable name" in text
    assert "tpu-serving:workloads[1].pool: pool 'p' is also used by workloads[2]" in text


def test_addon_and_jobset_are_required():
    assert (
        "tpu-serving:workloads[0].type: pathways-job needs the pathwaysJob add-on: enable tpu-serving:addons.pathwaysJob"
        in problems(addons={})
    )
    # README of pathways-job v0.1.4: "JobSet version v0.8.0+ installed on the cluster"
    assert "the PathwaysJob controller needs JobSet: enable addons.jobset" in problems(
        addons={**ADDONS, "jobset": {"enabled": False}}
    )


def test_head_pool_name_collision():
    text = problems(pools=[pool(), pool(name="pw-head", topology="2x4")])
    assert "tpu-serving:workloads[0].name: its head node pool 'pw-head' would collide" in text


def test_interactive_colocated_warns():
    parsed = parse(workloads=[workload(deploymentMode="colocate_head_with_workers")])
    assert any("no toleration" in w for w in parsed.warnings)


def test_errors_surface_as_run_error(run):
    with pytest.raises(pulumi.RunError, match=r"needs the pathwaysJob add-on"):
        run(config(addons={}))
