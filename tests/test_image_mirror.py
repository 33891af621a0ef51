"""Issue 26 lever 1: the pinned public images are served from an Artifact Registry remote repository in the stack's
project and region (stacks/facts/images.py), derived from the version matrix; the node identities read it at repository
level.

Sources: hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/artifactregistry/
resource_artifact_registry_repository.go (tooling/data/provider_rules.json, read from it);
https://cloud.google.com/artifact-registry/docs/repositories/remote-repo (pull path of a Docker Hub remote);
https://cloud.google.com/kubernetes-engine/docs/how-to/image-streaming (images in standard or remote repositories)."""

from __future__ import annotations

import json

import pytest

from stacks.facts import images, versions
from tests.conftest import STACK_FILES, make_config, recorded
from tooling.harness.k8s_objects import kubernetes_objects
from tooling.harness.offline import parse_stack_file
from tooling.oracles import provider_schema as ps

REPOSITORY = "gcp:artifactregistry/repository:Repository"
REPOSITORY_READER = "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
ACCOUNT = "gcp:serviceaccount/account:Account"


def fields(resource: str) -> dict:
    return json.loads(ps.DATA.read_text())["resources"][resource]["fields"]


def test_the_provider_rules_of_a_docker_hub_remote_repository():
    """format Required; mode enum with REMOTE_REPOSITORY; docker_repository one of the formats' blocks;
    public_repository enum DOCKER_HUB, conflicting with custom_repository; all ForceNew."""
    rules = fields(REPOSITORY)
    assert rules["format"]["required"] and rules["repository_id"]["required"]
    assert "REMOTE_REPOSITORY" in rules["mode"]["enum"]
    docker = rules["remote_repository_config.docker_repository"]
    assert "remote_repository_config.docker_repository" in docker["exactly_one_of"]
    public = rules["remote_repository_config.docker_repository.public_repository"]
    assert "DOCKER_HUB" in public["enum"]
    assert public["conflicts_with"] == ["remote_repository_config.docker_repository.custom_repository"]
    assert all(rules[f].get("force_new") for f in ("format", "mode", "location", "remote_repository_config"))
    # every remote the stack knows names a value the provider allows
    assert {r.public_repository for r in images.REMOTES.values()} <= set(public["enum"])


def test_every_registry_the_matrix_pins_is_googles_or_served_by_a_remote():
    assert images.unmirrored_registries(versions.IMAGES.values()) == []
    # a new image from a registry the stack does not serve is caught here, not at pull time
    assert images.unmirrored_registries([*versions.IMAGES.values(), "registry.example.com/x/y:1"]) == [
        "registry.example.com"
    ]


@pytest.mark.parametrize("key", sorted(versions.IMAGES))
def test_every_pinned_image_is_served_from_the_stacks_region_or_googles_registry(key):
    mirror = images.plan(True, "my-project", "us-east5", versions.IMAGES.values())
    ref = versions.IMAGES[key]
    served = mirror.served(ref)
    assert images.origin(served) == ref and versions.image_record(served).pinned == ref
    if images.registry_of(ref) in images.REMOTES:
        assert served == f"us-east5-docker.pkg.dev/my-project/docker-hub/{ref.removeprefix('docker.io/')}"
    else:
        registry = images.registry_of(ref)
        assert served == ref and (images.GOOGLE_REGISTRIES.fullmatch(registry) or registry in images.DIRECT)


def test_docker_hub_names_resolve_as_docker_does():
    mirror = images.plan(True, "my-project", "europe-west4", ["docker.io/vllm/vllm-tpu:1"])
    assert mirror.served("nginx:1") == "europe-west4-docker.pkg.dev/my-project/docker-hub/library/nginx:1"
    assert mirror.served("vllm/vllm-tpu:1") == "europe-west4-docker.pkg.dev/my-project/docker-hub/vllm/vllm-tpu:1"
    assert images.origin(mirror.served("nginx:1")) == "docker.io/nginx:1"
    assert mirror.served("registry.example.com:5000/a:1") == "registry.example.com:5000/a:1"
    assert (
        images.plan(False, "my-project", "europe-west4", ["docker.io/a:1"]).served("docker.io/a:1") == "docker.io/a:1"
    )


def pod_images(rec) -> set[str]:
    out = set()
    for obj in kubernetes_objects(rec):
        text = json.dumps(obj)
        for part in text.split('"image": "')[1:]:
            out.add(part.split('"', 1)[0])
    return out


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.parent.name or p.name)
def test_every_shipped_stack_pulls_no_pinned_image_from_a_public_registry(path):
    """Every pod image of every workload: a pinned public image only through the stack's own remote repository."""
    rec, cfg = recorded(path, False), parse_stack_file(path)
    prefix = f"{cfg.region}-docker.pkg.dev/{cfg.gcp_project}/docker-hub/"
    pinned = set(versions.IMAGES.values())
    for image in pod_images(rec):
        if image in pinned:
            assert images.registry_of(image) not in images.REMOTES, image
        elif images.origin(image) in pinned:
            assert image.startswith(prefix), image


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.parent.name or p.name)
def test_every_node_identity_reads_every_repository_and_not_the_project(path):
    rec = recorded(path, False)
    (repository,) = rec.of_type(REPOSITORY)
    cfg = parse_stack_file(path)
    assert repository.inputs["format"] == "DOCKER" and repository.inputs["mode"] == "REMOTE_REPOSITORY"
    assert repository.inputs["location"] == cfg.region and repository.inputs["project"] == cfg.gcp_project
    assert repository.inputs["remoteRepositoryConfig"]["dockerRepository"] == {"publicRepository": "DOCKER_HUB"}
    node_accounts = {  # the accounts of every NodeServiceAccount: the cluster's and each host-network workload's
        f"serviceAccount:{a.inputs['accountId']}@{cfg.gcp_project}.iam.gserviceaccount.com"
        for a in rec.of_type(ACCOUNT)
        if "NodeServiceAccount$" in a.urn
    }
    assert node_accounts
    readers = {r.inputs["member"] for r in rec.of_type(REPOSITORY_READER)}
    for r in rec.of_type(REPOSITORY_READER):
        assert r.inputs["repository"] == "docker-hub" and r.inputs["role"] == images.READER_ROLE
        assert repository.urn in r.dependencies or r.inputs["repository"] == repository.inputs["repositoryId"]
    assert node_accounts <= readers
    project_roles = {m.inputs["role"] for m in rec.of_type(PROJECT_MEMBER)}
    assert images.READER_ROLE not in project_roles


def test_with_the_mirror_off_images_are_pulled_as_pinned_with_project_level_reader(run):
    from tests.test_images_and_autoscaling import VLLM_POOLS, vllm

    config = make_config(
        tpu_serving__cluster={"images": {"mirror": False}},
        tpu_serving__tpuPools=VLLM_POOLS,
        tpu_serving__workloads=[vllm("single")],
    )
    rec = run(config)
    assert not rec.of_type(REPOSITORY) and not rec.of_type(REPOSITORY_READER)
    assert images.READER_ROLE in {m.inputs["role"] for m in rec.of_type(PROJECT_MEMBER)}
    assert versions.IMAGES["vllmTpu"] in pod_images(rec)


def test_an_image_the_user_sets_is_used_as_given(run):
    from tests.test_images_and_autoscaling import VLLM_POOLS, vllm

    own = "docker.io/someone/vllm-tpu:custom"
    rec = run(make_config(tpu_serving__tpuPools=VLLM_POOLS, tpu_serving__workloads=[{**vllm("single"), "image": own}]))
    assert own in pod_images(rec)


def test_a_type_added_to_the_registry_serves_its_pinned_image_through_the_mirror():
    """WorkloadPlan.served, which every type's default images go through, for a plan of a type the test makes."""
    from dataclasses import dataclass

    from stacks.serving.workload_plan import WorkloadPlan
    from stacks.serving.workload_type import WorkloadContext
    from tests.test_workload_registry import EchoPlan, EchoWorkload

    @dataclass(frozen=True)
    class Pinned(EchoPlan):
        @property
        def image(self) -> str:
            return self.served(versions.IMAGES["vllmTpu"])

    cfg = parse_stack_file(STACK_FILES[0])
    mirror = cfg.image_mirror
    ctx = WorkloadContext(adapter="none", min_master_version=None, scrape_interval="15s", image_mirror=mirror)
    plan = Pinned.on(EchoWorkload(type="echo", name="e", pool=cfg.pools[0].name), cfg.pools[0], "e", ctx)
    assert isinstance(plan, WorkloadPlan)
    assert plan.image == mirror.served(versions.IMAGES["vllmTpu"]) != versions.IMAGES["vllmTpu"]
