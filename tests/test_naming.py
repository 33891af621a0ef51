"""Derived names meet Google Cloud's limits and stay unique."""

import re

from stacks import naming
from stacks.pieces.bucket import check_bucket_name


def test_cluster_name_default_and_limit():
    assert naming.default_cluster_name("tpu-serving", "dev") == "tpu-serving-dev"
    long = naming.default_cluster_name("tpu-serving", "a-very-long-stack-name-for-a-feature-branch")
    assert len(long) <= 40 and naming.RFC1035.match(long)
    other = naming.default_cluster_name("tpu-serving", "a-very-long-stack-name-for-a-feature-brancX")
    assert long != other


def test_bucket_name_default_is_valid():
    name = naming.default_bucket_name("my-proj", "tpu-serving", "dev")
    assert name == "my-proj-tpu-serving-dev" and check_bucket_name(name) is None
    long = naming.default_bucket_name("a-thirty-character-project-id1", "tpu-serving", "feature-branch-stack-x")
    assert len(long) <= 63 and check_bucket_name(long) is None


def test_workload_service_account_ids_fit_and_differ():
    ids = {
        naming.workload_service_account_id(stack, ns, ksa)
        for stack in ("dev", "prod", "a-very-long-stack-name-for-testing")
        for ns in ("llama", "saxml", "gemma")
        for ksa in ("jetstream", "jetstream-pathways-with-a-long-name", "sax")
    }
    assert len(ids) == 27
    for account_id in ids:
        assert 6 <= len(account_id) <= 30 and re.match(r"^[a-z][-a-z0-9]*[a-z0-9]$", account_id), account_id


def test_node_service_account_id_fits():
    assert naming.node_service_account_id("tpu-serving-dev") == "tpu-serving-dev-nodes"
    assert len(naming.node_service_account_id("x" * 40)) <= 30


def test_multi_host_node_pools_are_named_per_slice_even_with_one_slice():
    assert naming.slice_node_pool_names("v6e", 1, True) == ["v6e-s0"]
    assert naming.slice_node_pool_names("v6e", 3, True) == ["v6e-s0", "v6e-s1", "v6e-s2"]
    assert naming.slice_node_pool_names("v5e", 1, False) == ["v5e"]


def test_workload_identity_member():
    assert naming.workload_identity_member("p", "ns", "ksa") == "serviceAccount:p.svc.id.goog[ns/ksa]"


def test_bucket_name_never_names_google():
    for stack in ("google-demo", "googly"):
        name = naming.default_bucket_name("goog-project-1", "tpu-serving", stack)
        assert check_bucket_name(name) is None, name
