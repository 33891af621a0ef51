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


# ---- 429: a just-created CRD's storage is "(re)initializing" ---------------------------------------------------------


class _Resp:
    def __init__(self, body: bytes):
        self.body = body

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self) -> bytes:
        return self.body


def _kube(tmp_path: Path) -> local_stack.Kube:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    return local_stack.Kube(config)


def _http_error(code: int):
    import email.message
    import io
    import urllib.error

    headers = email.message.Message()
    headers["Retry-After"] = "0"
    body = io.BytesIO(b'{"message": "storage is (re)initializing"}')
    return urllib.error.HTTPError("https://127.0.0.1:6443/x", code, "Too Many Requests", headers, body)


def test_a_429_is_retried_as_client_go_does(tmp_path, monkeypatch):
    # The API server answers 429 with Retry-After while a CRD it just accepted is set up (the e2e's first snapshot
    # after the harness installed the ComputeClass stand-in failed so); client-go retries it (rest/request.go checkWait).
    answers = [_http_error(429), _http_error(429), _Resp(b'{"items": [{"metadata": {"name": "a"}}]}')]

    def urlopen(req, **kwargs):
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(local_stack.urllib.request, "urlopen", urlopen)
    assert [o["metadata"]["name"] for o in _kube(tmp_path).items("/apis/cloud.google.com/v1/computeclasses")] == ["a"]


def test_other_errors_are_not_retried(tmp_path, monkeypatch):
    calls = []

    def urlopen(req, **kwargs):
        calls.append(req)
        raise _http_error(404)

    monkeypatch.setattr(local_stack.urllib.request, "urlopen", urlopen)
    with pytest.raises(local_stack.KubeError, match="HTTP 404"):
        _kube(tmp_path).get("/x")
    assert len(calls) == 1
