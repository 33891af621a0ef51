"""The WorkloadIdentity component: one KSA, one GSA, workloadIdentityUser for exactly that KSA, bucket-scoped roles."""

import pytest

from components.workload_identity import WorkloadIdentity
from stacks.security.bucket_access import Grant
from tests.conftest import make_config, workload_grants
from tooling.harness.offline import ROOT, run_program

PROGRAM = ROOT / "tests" / "programs" / "workload_identity.py"


@pytest.fixture(scope="module")
def rec():
    return run_program(make_config(), program=PROGRAM)


def test_gsa_and_ksa(rec):
    gsa = rec.one("gcp:serviceaccount/account:Account", "jetstream-gsa")
    account_id = gsa.inputs["accountId"]
    assert len(account_id) <= 30 and account_id.startswith("dev-jetstream-")
    email = f"{account_id}@tpu-test-project.iam.gserviceaccount.com"
    ksa = rec.one("kubernetes:core/v1:ServiceAccount", "jetstream-ksa")
    assert ksa.inputs["metadata"]["name"] == "jetstream"
    assert ksa.inputs["metadata"]["namespace"] == "serving"
    assert ksa.inputs["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": email}
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    assert ksa.provider.startswith(provider.urn)
    namespace = rec.one("kubernetes:core/v1:Namespace", "serving-ns")
    assert namespace.urn in ksa.dependencies


def test_workload_identity_user_is_for_exactly_that_ksa(rec):
    member = rec.one("gcp:serviceaccount/iAMMember:IAMMember")
    assert member.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert member.inputs["member"] == "serviceAccount:tpu-test-project.svc.id.goog[serving/jetstream]"
    assert member.inputs["serviceAccountId"].startswith("projects/tpu-test-project/serviceAccounts/dev-jetstream-")


def test_bucket_roles_are_prefix_scoped_members(rec):
    (binding,) = workload_grants(rec)
    assert binding.inputs["bucket"] == "tpu-test-project-tpu-serving-dev"
    assert binding.inputs["role"] == "roles/storage.objectViewer"
    assert binding.inputs["condition"]["title"] == "only ckpt/"
    assert binding.inputs["bucket"] == rec.outputs["bucketName"]
    assert binding.inputs["member"].startswith("serviceAccount:dev-jetstream-")
    assert not rec.of_type("gcp:projects/iAMMember:IAMMember") or all(
        m.inputs["role"] not in ("roles/storage.admin", "roles/storage.objectViewer", "roles/storage.objectUser")
        for m in rec.of_type("gcp:projects/iAMMember:IAMMember")
    )


@pytest.mark.parametrize(
    "grant,message",
    [
        (
            Grant("x", "b", "roles/storage.admin", "p/"),
            "not allowed; allowed: roles/storage.objectUser, roles/storage.objectViewer",
        ),
        (Grant("all", "b", "roles/storage.objectViewer", None), r"grants \['all'\] would cover the whole stack bucket"),
    ],
)
def test_broader_grants_are_refused_before_anything_is_registered(grant, message):
    with pytest.raises(ValueError, match=message):
        WorkloadIdentity(
            "x",
            namespace="n",
            service_account_name="s",
            project="p",
            stack="dev",
            stack_bucket_name="b",
            stack_bucket="b",
            bucket_get_role="projects/p/roles/r",
            grants=[grant],
            provider=None,
        )
