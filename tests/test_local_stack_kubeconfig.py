"""The kubeconfig a local run uses is the one its process can reach (tooling/local/local_stack.py LocalStack).

The local cluster writes two (tooling/local/local_cluster.py Paths): `kubeconfig`, whose server is the forwarder's
port on this machine's loopback, and `kubeconfig-netns`, the API server's own port inside the cluster's network
namespace. The e2e and `make local-up` enter that namespace before running Pulumi (enter_cluster_network), where the
forwarder's port does not exist: the first e2e run failed there with "Connection refused".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling.local import local_cluster, local_stack


@pytest.fixture
def local(tmp_path: Path) -> local_stack.LocalStack:
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "kubeconfig").write_text("outer\n")
    (folder / "kubeconfig-netns").write_text("inner\n")
    return local_stack.LocalStack("dev", tmp_path)


def test_inside_the_clusters_namespace_the_inner_kubeconfig(local, monkeypatch):
    monkeypatch.setattr(local_cluster, "in_netns", lambda stack: stack == "dev")
    assert local.kubeconfig.name == "kubeconfig-netns"


def test_from_this_machine_the_forwarders_kubeconfig(local, monkeypatch):
    monkeypatch.setattr(local_cluster, "in_netns", lambda stack: False)
    assert local.kubeconfig.name == "kubeconfig"


def test_without_a_namespace_kubeconfig_the_outer_one(local, monkeypatch):
    monkeypatch.setattr(local_cluster, "in_netns", lambda stack: True)
    (local.folder / "kubeconfig-netns").unlink()
    assert local.kubeconfig.name == "kubeconfig"
