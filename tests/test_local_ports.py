"""Workload commands that run as given (issue 14 item 5): each workload's port-forward gets its own local port,
and the load test is a command that needs nothing but bash, curl and a port-forward."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading

import pytest

from stacks.serving import local_ports
from tests.conftest import EXAMPLES, recorded
from workloads.jetstream import server as common


def test_allocation_keeps_the_port_when_free_and_moves_up_when_taken():
    ports = local_ports.allocate([("a", [8000]), ("b", [8000, 9000]), ("c", [8888]), ("d", [8000, 8001])])
    assert ports == {"a": {8000: 8000}, "b": {8000: 8001, 9000: 9000}, "c": {8888: 8888}, "d": {8000: 8002, 8001: 8003}}
    # adding a workload at the end never changes an earlier workload's ports
    assert local_ports.allocate([("a", [8000]), ("b", [8000, 9000])]) == {k: ports[k] for k in "ab"}


def test_every_workload_of_a_stack_forwards_to_its_own_local_ports():
    rec = recorded(next(p for p in EXAMPLES if p.name == "Pulumi.all-in-one.yaml"), False)
    workloads = rec.outputs["workloads"]
    used: dict[int, str] = {}
    for name, out in workloads.items():
        if "portForward" not in out:
            continue
        pairs = re.findall(r" (\d+):(\d+)", out["portForward"])
        assert pairs, out["portForward"]
        for local, _remote in pairs:
            assert int(local) not in used, f"{name} and {used.get(int(local))} both bind local port {local}"
            used[int(local)] = name
        http_local = pairs[0][0]
        for key in ("curl", "loadTest"):
            if key in out:
                assert f"localhost:{http_local}/" in out[key], (name, key)
    assert len(used) >= 5  # four workloads, gemma with HTTP and gRPC


class _Generate(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        answer = json.dumps({"response": " Python, Java, C, C++ and JavaScript"}).encode()
        self.send_response(200 if self.path == "/generate" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("xargs")), reason="needs curl and xargs")
def test_curl_and_load_test_run_as_given_against_a_generate_endpoint():
    """Run the exact commands the outputs print against a local stand-in for the port-forwarded JetStream HTTP
    server (POST /generate answering {"response": ...}, ai-on-gke single-host-inference README)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Generate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    try:
        one = subprocess.run(["bash", "-c", common.generate_curl(port)], capture_output=True, text=True, timeout=30)
        assert one.returncode == 0 and json.loads(one.stdout)["response"]
        load = subprocess.run(["bash", "-c", common.generate_load(port)], capture_output=True, text=True, timeout=60)
    finally:
        server.shutdown()
    assert load.returncode == 0, load.stderr
    assert load.stdout.split() == ["200", "200"]  # `uniq -c`: 200 requests, all HTTP 200
    assert _Generate.seen[-1] == common.GENERATE_BODY
