"""Record what the pinned custom-metrics-stackdriver-adapter does with the stack's flags, into
tests/data/stackdriver_adapter.json (tests/test_metrics_adapters.py reads it; `make test` needs neither Go nor this).

    python3 scripts/record_adapter_run.py <adapter binary>

The binary is the adapter built at the commit of the pinned image (stacks/facts/versions.py customMetricsStackdriverAdapter,
v0.16.9-gke.0: GoogleCloudPlatform/k8s-stackdriver@673c7dd8, the commit that sets that image in
custom-metrics-stackdriver-adapter/deploy/production/adapter_new_resource_model.yaml):

(the binary is not built by this project: `make test` reads only the recorded JSON). It records:
- `flags`: every flag `adapter --help` lists, with its type and default (the adapter's own, adapter.go main, and
  those its library adds: kubernetes-sigs/custom-metrics-apiserver pkg/cmd/builder.go InstallFlags);
- `run`: the adapter started with stacks.monitoring.adapters.stackdriver.FLAGS as UID 65532 (the pod's user) from `/`
  (distroless' working directory), against loopback stand-ins for what it reads at start (a Kubernetes API answering
  discovery, the GCE metadata server, Cloud Monitoring's API with no metric): whether it served /healthz over HTTPS
  on --secure-port, whether it kept its certificate in memory, and whether it wrote the default certificate
  directory. Every address is 127.0.0.1; the adapter is given --bind-address=127.0.0.1 and --stackdriver-endpoint
  on loopback, which the pod does not set. Run as root (to drop to UID 65532 with setpriv).
"""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stacks.monitoring.adapters import stackdriver  # noqa: E402
from stacks.security.pod_security import NON_ROOT_UID  # noqa: E402

OUT = ROOT / "tests" / "data" / "stackdriver_adapter.json"
SOURCE = (
    "GoogleCloudPlatform/k8s-stackdriver@673c7dd872a7d8b7c1a26c2af7cca7c33549efa0:custom-metrics-stackdriver-adapter"
)
KUBE, METADATA, MONITORING = 18080, 18081, 18082
FLAG = re.compile(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9_-]*)(?: (\S+))?\s{2,}(.*)$")


def help_flags(adapter: str) -> dict[str, dict[str, str | None]]:
    text = subprocess.run([adapter, "--help"], capture_output=True, text=True, check=False).stderr
    out: dict[str, dict[str, str | None]] = {}
    for line in text.splitlines():
        m = FLAG.match(line)
        if m:
            default = re.search(r"\(default (.*)\)\s*$", m.group(3))
            out[m.group(1)] = {"type": m.group(2) or "bool", "default": default.group(1) if default else None}
    return out


def _server(port: int, answer) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            code, headers, body = answer(self.path.split("?")[0])
            self.send_response(code)
            for k, v in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _kube(path: str) -> tuple[int, dict[str, str], bytes]:
    resources = [
        {"name": n, "singularName": n[:-1], "namespaced": ns, "kind": k, "verbs": ["get", "list", "watch"]}
        for n, ns, k in (("pods", True, "Pod"), ("nodes", False, "Node"), ("namespaces", False, "Namespace"))
    ]
    known = {
        "/version": {"major": "1", "minor": "35", "gitVersion": "v1.35.0"},
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
        "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
        "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": resources},
    }
    body = known.get(
        path, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}
    )
    return (200 if path in known else 404), {"Content-Type": "application/json"}, json.dumps(body).encode()


def _metadata(path: str) -> tuple[int, dict[str, str], bytes]:
    base = "/computeMetadata/v1/"
    known = {
        "project/project-id": "p",
        "instance/attributes/cluster-location": "us-east5",
        "instance/attributes/cluster-name": "c",
        "instance/hostname": "h",
        "instance/zone": "projects/1/zones/us-east5-b",
        "instance/service-accounts/default/token": '{"access_token": "x", "expires_in": 3600, "token_type": "Bearer"}',
    }
    value = known.get(path.removeprefix(base))
    return (200 if value is not None else 404), {"Metadata-Flavor": "Google"}, (value or "").encode()


def _monitoring(path: str) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, b"{}"


def run(adapter: str) -> dict[str, object]:
    servers = [_server(KUBE, _kube), _server(METADATA, _metadata), _server(MONITORING, _monitoring)]
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "l", "cluster": {"server": f"http://127.0.0.1:{KUBE}"}}],
                    "users": [{"name": "l", "user": {}}],
                    "contexts": [{"name": "l", "context": {"cluster": "l", "user": "l"}}],
                    "current-context": "l",
                }
            )
        )
        os.chmod(tmp, 0o755)
        kubeconfig.chmod(0o644)
        loopback = [
            "--bind-address=127.0.0.1",
            f"--stackdriver-endpoint=http://127.0.0.1:{MONITORING}/",
            *(f"--{k}-kubeconfig={kubeconfig}" for k in ("lister", "authentication", "authorization")),
            "--authentication-tolerate-lookup-failure",
        ]
        user = [f"--reuid={NON_ROOT_UID}", f"--regid={NON_ROOT_UID}", "--clear-groups"]
        command = ["setpriv", *user, adapter, *stackdriver.FLAGS, *loopback]
        env = {"PATH": os.environ.get("PATH", ""), "GCE_METADATA_HOST": f"127.0.0.1:{METADATA}"}
        log = Path(tmp) / "adapter.log"
        with log.open("w") as sink:
            proc = subprocess.Popen(command, cwd="/", env=env, stdout=sink, stderr=subprocess.STDOUT)  # noqa: S603
            status = None
            context = ssl.create_default_context()
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # its self-signed certificate
            try:
                for _ in range(120):
                    time.sleep(1)
                    try:
                        url = f"https://127.0.0.1:{stackdriver.PORT}/healthz"
                        with urllib.request.urlopen(url, context=context, timeout=2) as reply:  # noqa: S310
                            status = reply.status
                            break
                    except OSError:
                        if proc.poll() is not None:
                            break
            finally:
                proc.terminate()
                proc.wait(timeout=30)
        text = log.read_text()
    for server in servers:
        server.shutdown()
    default_dir = help_flags(adapter)["cert-dir"]["default"] or ""
    return {
        "flags": list(stackdriver.FLAGS),
        "uid": NON_ROOT_UID,
        "workingDirectory": "/",
        "healthzStatus": status,
        "certificateInMemory": "Generated self-signed cert in-memory" in text,
        "certificateDirectoryWritten": (Path("/") / default_dir.strip('"')).exists(),
    }


def main() -> int:
    adapter = sys.argv[1]
    outcome = run(adapter)
    record: dict[str, object] = {
        "source": SOURCE,
        "image": stackdriver.IMAGES["customMetricsStackdriverAdapter"],
        "flags": help_flags(adapter),
        "run": outcome,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: healthz {outcome['healthzStatus']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
