"""Try a stack's Kubernetes layer on a local cluster (docs/local.md): `make local-up STACK=<stack>`.

The stack's config (Pulumi.<stack>.yaml here, or an example's) is copied, with `tpu-serving:local` added, into a
Pulumi project of its own under .cache/local/<stack>/project/ (its Pulumi.yaml runs this repository's program: `main`
points back here), whose state is a local file backend beside it and whose secrets use a passphrase. So a local run
never reads or writes the stack's real state, and a `destroy` there can never touch Google Cloud.

Before the program runs, the harness installs into the local cluster what GKE itself would have installed there and
the stack relies on (stacks/facts/gke_managed.py MANAGED: the Gateway API and InferencePool CRDs, GKE's Gateway policy
CRDs, Managed Prometheus's CRDs and namespaces, the ComputeClass CRD, the GKE GatewayClasses), from the reference
copies of their upstream files (../shared/reference: crds/, gke-crds/, manifests/prometheus-engine-v<version>/).
GKE publishes no ComputeClass CRD file: a stand-in CRD that accepts any spec is installed, and says so.

    python -m tooling.local.local_stack up|preview|destroy|refresh STACK [-- pulumi args]
    python -m tooling.local.local_stack gke-objects STACK     only install what GKE would have installed

The cluster itself comes from `make local-cluster STACK=<stack>` (.cache/local/<stack>/kubeconfig). Every request
goes to the kubeconfig's server, which must be on loopback.
"""

from __future__ import annotations

import argparse
import base64
import copy
import ipaddress
import json
import os
import shutil
import ssl
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stacks.facts import gke_managed, versions
from stacks.model.local_target import DEFAULT_SOURCES
from tooling.harness.offline import ROOT, read_stack_yaml
from tooling.local import local_cluster
from tooling.oracles import go_module_charts

# The root of the charts `make bbr-chart` takes from the Go module proxy (tooling/oracles/go_module_charts.py CACHE is
# its charts/ folder).
CHART_CACHE_ROOT = go_module_charts.CACHE.parent
LOCAL = local_cluster.STATE  # one folder per stack, laid out by local_cluster.Paths
TOOLCHAIN_BIN = ROOT / ".cache" / "toolchain" / "bin"
# The passphrase of every local stack's secrets: they protect nothing but a throwaway local state (override with
# PULUMI_CONFIG_PASSPHRASE).
LOCAL_PASSPHRASE = "tpu-serving-local"
FIELD_MANAGER = "tpu-serving-local"
COMPUTE_CLASS_CRD = "computeclasses.cloud.google.com"
# GKE's GatewayClasses are served by the GKE Gateway controller (gke_managed G1); the local cluster has none.
GKE_GATEWAY_CONTROLLER = "networking.gke.io/gateway"


def stack_file(stack: str) -> Path:
    """The stack file `make local-cluster STACK=<stack>` started the cluster for, found the same way
    (local_cluster.stack_file: Pulumi.<stack>.yaml here, else the example of that name); a clear exit otherwise."""
    try:
        return local_cluster.stack_file(stack)
    except local_cluster.LocalClusterError as err:
        raise SystemExit(str(err)) from None


def reference_dir() -> Path:
    return Path(os.environ.get("TPU_SERVING_REFERENCE") or ROOT / DEFAULT_SOURCES[0]).resolve()


@dataclass(frozen=True)
class LocalStack:
    """Where one stack's local run lives."""

    stack: str
    root: Path = LOCAL

    @property
    def folder(self) -> Path:
        return self.root / self.stack

    @property
    def kubeconfig(self) -> Path:
        """The cluster's kubeconfig as this process reaches it: from this machine, `kubeconfig` (its server is the
        forwarder's port on this machine's loopback); from inside the cluster's network namespace (the e2e and
        `make local-up` enter it, enter_cluster_network), `kubeconfig-netns` (the API server's own port there: the
        forwarder's port does not exist in the namespace). tooling/local/local_cluster.py Paths writes both."""
        files = local_cluster.Paths(self.folder)
        if files.inner_kubeconfig.exists() and local_cluster.in_netns(self.stack):
            return files.inner_kubeconfig
        return files.kubeconfig

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def state(self) -> Path:
        return self.folder / "state"

    @property
    def config_file(self) -> Path:
        return self.project / f"Pulumi.{self.stack}.yaml"


def project_file(project_dir: Path) -> dict[str, Any]:
    """The local project's Pulumi.yaml: this repository's, with `main` pointing back at the program and the
    virtualenv given absolutely (the program runs with the repository as its working directory)."""
    own = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    runtime = copy.deepcopy(own["runtime"])
    runtime.setdefault("options", {})["virtualenv"] = str(ROOT / runtime["options"].get("virtualenv", ".venv"))
    return {
        "name": own["name"],
        "description": f"{own.get('description', '')} (local run: .cache/local, docs/local.md)",
        "runtime": runtime,
        "main": os.path.relpath(ROOT, project_dir),
    }


def local_config(source: Path, kubeconfig: Path, sources: Sequence[Path]) -> dict[str, Any]:
    """The stack file's config with tpu-serving:local added (paths absolute). Encrypted values (`secure:`) were
    encrypted for the real stack and cannot be read here: they are left out, and named."""
    config = dict((read_stack_yaml(source) or {}).get("config") or {})
    dropped = [k for k, v in config.items() if isinstance(v, dict) and "secure" in v]
    for key in dropped:
        print(f"local run: {key} is encrypted for the real stack; left out here (set it with pulumi config --secret)")
        config.pop(key)
    config["tpu-serving:local"] = {"kubeconfig": str(kubeconfig), "sources": [str(s) for s in sources]}
    return config


# A sources folder (laid out as ../shared/reference) holding the charts whose Chart.yaml names a `file://` dependency,
# with it vendored, as their registry publishes them: llm-d-router-gateway's `router` (file://../routerlib) is packaged
# into the chart at ghcr.io, while its source folder holds only Chart.yaml's reference, which Helm refuses ("found in
# Chart.yaml, but missing in charts/ directory"). Looked in first; made from the sources on every write_project, in the
# stack's folder (.cache/local/<stack>/vendored-sources).


def vendor_chart_dependencies(sources: Sequence[Path], out: Path) -> Path:
    """`out`: every chart of `sources` (charts/ and charts-staged/) with `file://` dependencies, copied with each
    dependency's folder under the copy's charts/<dependency chart name>/, as `helm dependency build` vendors it (a
    folder, not its .tgz: Helm's chart loader reads both, helm.sh/helm/v3 pkg/chart/loader/load.go `charts/`)."""
    from stacks.model.local_target import CHART_FOLDERS

    shutil.rmtree(out, ignore_errors=True)
    for root in sources:
        for top in CHART_FOLDERS:
            for chart_file in sorted((root / top).glob("*/**/Chart.yaml")) if (root / top).is_dir() else []:
                chart = chart_file.parent
                if chart.parent.name == "charts" and (chart.parent.parent / "Chart.yaml").exists():
                    continue  # a chart vendored inside another already
                meta = yaml.safe_load(chart_file.read_text()) or {}
                deps = meta.get("dependencies") or []
                local_deps = [d for d in deps if str(d.get("repository", "")).startswith("file://")]
                target = out / chart.relative_to(root)
                if not local_deps or target.exists():
                    continue
                shutil.copytree(chart, target)
                for dep in local_deps:
                    dep_dir = (chart / dep["repository"].removeprefix("file://")).resolve()
                    dep_name = (yaml.safe_load((dep_dir / "Chart.yaml").read_text()) or {})["name"]
                    shutil.copytree(dep_dir, target / "charts" / dep_name, dirs_exist_ok=True)
    return out


def write_project(local: LocalStack, source: Path, sources: Sequence[Path]) -> None:
    """The local project and stack config; an existing stack file keeps its encryption salt. The sources are looked
    in after the charts with vendored dependencies (vendor_chart_dependencies), and before the cache of charts taken
    from the Go module proxy (`make bbr-chart`: .cache/charts/, laid out as the reference's charts/), which holds the
    body-based router's chart that ../shared/reference does not."""
    sources = [vendor_chart_dependencies(sources, local.folder / "vendored-sources"), *sources]
    if CHART_CACHE_ROOT not in sources:
        sources.append(CHART_CACHE_ROOT)
    local.project.mkdir(parents=True, exist_ok=True)
    (local.project / "Pulumi.yaml").write_text(yaml.safe_dump(project_file(local.project), sort_keys=False))
    kept = {}
    if local.config_file.exists():
        old = yaml.safe_load(local.config_file.read_text()) or {}
        kept = {k: v for k, v in old.items() if k in ("encryptionsalt", "secretsprovider")}
    body = {**kept, "config": local_config(source, local.kubeconfig, sources)}
    local.config_file.write_text(yaml.safe_dump(body, sort_keys=False))


# ---- a minimal Kubernetes API client (loopback only) ------------------------------------------------------------


# How long a request answered 429 ("come back later") is retried, at the Retry-After the server gives (1 s if none).
RETRY_429_SECONDS = 60.0


def _retry_after(value: str | None) -> float:
    try:
        return min(max(float(value or 1), 0.1), 10.0)
    except ValueError:
        return 1.0


class KubeError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def on_loopback(server: str) -> bool:
    host = urllib.parse.urlsplit(server).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Kube:
    """Requests to the API server of a kubeconfig's current context: client certificates or a bearer token."""

    def __init__(self, kubeconfig: Path, timeout: float = 30.0):
        data = yaml.safe_load(kubeconfig.read_text())
        contexts = {c["name"]: c["context"] for c in data["contexts"]}
        context = contexts[data["current-context"]]
        cluster = next(c["cluster"] for c in data["clusters"] if c["name"] == context["cluster"])
        user: dict[str, Any] = next(
            (u["user"] for u in data.get("users") or [] if u["name"] == context.get("user")), {}
        )
        self.server = cluster["server"].rstrip("/")
        if not on_loopback(self.server):
            raise SystemExit(f"{kubeconfig}: server {self.server} is not on loopback; local runs stay on loopback")
        self.timeout = timeout
        self._files = tempfile.TemporaryDirectory(prefix="tpu-serving-kube-")
        self.context = ssl.create_default_context(cafile=self._file(cluster, "certificate-authority"))
        if cluster.get("insecure-skip-tls-verify"):
            self.context.check_hostname = False
            self.context.verify_mode = ssl.CERT_NONE
        cert, key = self._file(user, "client-certificate"), self._file(user, "client-key")
        if cert and key:
            self.context.load_cert_chain(cert, key)
        self.token = user.get("token")

    def _file(self, section: dict[str, Any], name: str) -> str | None:
        if section.get(f"{name}-data"):
            path = Path(self._files.name) / name
            path.write_bytes(base64.b64decode(section[f"{name}-data"]))
            return str(path)
        return section.get(name)

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        deadline = time.monotonic() + RETRY_429_SECONDS
        while True:
            req = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, context=self.context, timeout=self.timeout) as resp:
                    text = resp.read()
                return json.loads(text) if text else None
            except urllib.error.HTTPError as err:
                detail = err.read().decode(errors="replace")
                try:
                    detail = json.loads(detail).get("message", detail)
                except ValueError:
                    pass
                # 429 with Retry-After: the server asks to come back (a just-created CRD's storage
                # "(re)initializing"); client-go retries these (k8s.io/client-go rest/request.go checkWait)
                if err.code == 429 and time.monotonic() < deadline:
                    time.sleep(_retry_after(err.headers.get("Retry-After")))
                    continue
                raise KubeError(err.code, detail) from None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def exists(self, path: str) -> bool:
        try:
            self.get(path)
            return True
        except KubeError as err:
            if err.status == 404:
                return False
            raise

    def items(self, path: str) -> list[dict[str, Any]]:
        return list(self.get(path).get("items") or [])

    def apply(self, obj: dict[str, Any]) -> Any:
        """Server-side apply of a cluster-scoped object whose kind `path_of` knows."""
        path = f"{path_of(obj)}?fieldManager={FIELD_MANAGER}&force=true"
        return self.request("PATCH", path, obj, "application/apply-patch+yaml")


# Cluster-scoped kinds the harness applies: (API path prefix, plural).
_PATHS = {
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions"),
    "Namespace": ("/api/v1", "namespaces"),
    "GatewayClass": ("/apis/gateway.networking.k8s.io/v1", "gatewayclasses"),
}


def path_of(obj: dict[str, Any]) -> str:
    prefix, plural = _PATHS[obj["kind"]]
    return f"{prefix}/{plural}/{obj['metadata']['name']}"


# ---- what GKE would have installed --------------------------------------------------------------------------------


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for doc in yaml.load_all(path.read_text(), Loader=loader):
        if isinstance(doc, dict):
            yield doc


def reference_crds(reference: Path) -> dict[str, tuple[dict[str, Any], str]]:
    """metadata.name -> (CRD, the file it came from) over the reference's copies of what GKE installs: the upstream
    CRDs (crds/), GKE's networking CRDs (gke-crds/) and Managed Prometheus's setup.yaml at the matrix's version."""
    prometheus = next(iter(versions.CRDS["prometheusEngine"]))
    files = [
        *sorted((reference / "crds").glob("*.yaml")),
        *sorted((reference / "gke-crds").glob("*.yaml")),
        reference / "manifests" / f"prometheus-engine-v{prometheus}" / "setup.yaml",
    ]
    out: dict[str, tuple[dict[str, Any], str]] = {}
    for path in files:
        if not path.exists():
            continue
        for doc in _documents(path):
            if doc.get("kind") == "CustomResourceDefinition":
                out.setdefault(doc["metadata"]["name"], (doc, str(path.relative_to(reference))))
    return out


@dataclass(frozen=True)
class StandInCrd:
    """A CRD GKE installs and publishes no file for, stood in by one that accepts any spec: the local cluster
    shows that the stack's objects of that kind apply and in what order, never that GKE accepts their fields."""

    group: str
    version: str
    kind: str
    plural: str
    scope: str  # "Cluster" or "Namespaced"
    why: str  # where the project records that no file is published

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name, "annotations": {"tpu-serving.dev/stand-in": self.why}},
            "spec": {
                "group": self.group,
                "scope": self.scope,
                "names": {
                    "kind": self.kind,
                    "plural": self.plural,
                    "singular": self.kind.lower(),
                    "listKind": f"{self.kind}List",
                },
                "versions": [
                    {
                        "name": self.version,
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "properties": {
                                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                },
                            }
                        },
                        "subresources": {"status": {}},
                    }
                ],
            },
        }


STAND_IN_CRDS: dict[str, StandInCrd] = {
    crd.name: crd
    for crd in (
        # stacks/serving/compute_class.py: "the ComputeClass CRD is not published as a file"
        StandInCrd(
            "cloud.google.com",
            "v1",
            "ComputeClass",
            "computeclasses",
            "Cluster",
            "GKE publishes no ComputeClass CRD; any spec is accepted",
        ),
        # stacks/facts/gke_managed.py G7: GKE's pages apply an AutoscalingMetric and publish no CRD
        StandInCrd(
            "autoscaling.gke.io",
            "v1beta1",
            "AutoscalingMetric",
            "autoscalingmetrics",
            "Namespaced",
            "GKE publishes no AutoscalingMetric CRD; any spec is accepted",
        ),
    )
}
assert COMPUTE_CLASS_CRD in STAND_IN_CRDS and gke_managed.AUTOSCALING_METRIC_CRD in STAND_IN_CRDS


@dataclass(frozen=True)
class GkeObjects:
    objects: list[dict[str, Any]]
    origins: dict[str, str]  # "<kind>/<name>" -> where it came from
    missing: list[str]  # CRDs GKE installs that the reference holds no file for (not installed)


def gke_objects(reference: Path) -> GkeObjects:
    """Every object of stacks/gke_managed.MANAGED a GKE cluster of this stack would have (every setting on: a local
    cluster serves any stack), from the reference; the CRDs GKE publishes no file for as stand-ins (STAND_IN_CRDS)."""
    crds = reference_crds(reference)
    objects, origins, missing = [], {}, []
    for row in gke_managed.MANAGED:
        if row.when == gke_managed.MULTI_CLUSTER_GATEWAY:
            continue  # a fleet's, not a regional cluster's
        for name in row.names:
            key = f"{row.kind}/{name}"
            if key in origins:
                continue
            if row.kind == gke_managed.CRD and name in STAND_IN_CRDS:
                objects.append(STAND_IN_CRDS[name].manifest())
                origins[key] = "stand-in (tooling/local/local_stack.py STAND_IN_CRDS)"
            elif row.kind == gke_managed.CRD and name in crds:
                objects.append(crds[name][0])
                origins[key] = crds[name][1]
            elif row.kind == gke_managed.CRD:
                missing.append(name) if name not in missing else None
            elif row.kind == "Namespace":
                objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
                origins[key] = "gke_managed (Managed Prometheus)"
            elif row.kind == "GatewayClass":
                objects.append(
                    {
                        "apiVersion": "gateway.networking.k8s.io/v1",
                        "kind": "GatewayClass",
                        "metadata": {"name": name},
                        "spec": {"controllerName": GKE_GATEWAY_CONTROLLER},
                    }
                )
                origins[key] = "gke_managed (GKE GatewayClass, no controller here)"
    # CRDs first: a GatewayClass needs its CRD established
    objects.sort(key=lambda o: o["kind"] != "CustomResourceDefinition")
    return GkeObjects(objects, origins, missing)


def install_gke_objects(kube: Kube, reference: Path, timeout: float = 60.0) -> GkeObjects:
    import time

    found = gke_objects(reference)
    for obj in found.objects:
        if obj["kind"] == "GatewayClass":
            _wait_established(kube, "gatewayclasses.gateway.networking.k8s.io", time.monotonic() + timeout)
        body = {k: v for k, v in obj.items() if k != "status"}
        kube.apply(body)
    for name in found.missing:
        print(f"local cluster: GKE installs CRD {name}; the reference holds no file for it (not installed)")
    return found


def _wait_established(kube: Kube, crd: str, deadline: float) -> None:
    import time

    while time.monotonic() < deadline:
        conditions = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}").get("status", {})
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions.get("conditions", [])):
            return
        time.sleep(0.5)
    raise TimeoutError(f"CRD {crd} not established")


# ---- the Pulumi CLI, through the Automation API ----------------------------------------------------------------
# The program runs in this process as an inline program (runpy of this repository's __main__.py, the very program
# `pulumi up` runs) served to the real Pulumi CLI, which runs the engine and the Kubernetes provider plugin: no
# Python language host binary is needed (the Go module proxy does not serve it: stacks/facts/versions.py
# TOOLCHAIN_UNBUILDABLE).


def pulumi_root() -> str | None:
    """The toolchain's Pulumi (.cache/toolchain/bin/pulumi: PulumiCommand wants its parent's parent), else None to
    use one on PATH."""
    if (TOOLCHAIN_BIN / "pulumi").exists():
        return str(TOOLCHAIN_BIN.parent)
    if shutil.which("pulumi") is None:
        raise SystemExit("no Pulumi CLI: run `make toolchain` (builds it into .cache/toolchain/bin) or install one")
    return None


def pulumi_env(local: LocalStack) -> dict[str, str]:
    path = os.environ.get("PATH", "")
    return {
        "PULUMI_BACKEND_URL": f"file://{local.state}",
        "PULUMI_CONFIG_PASSPHRASE": os.environ.get("PULUMI_CONFIG_PASSPHRASE", LOCAL_PASSPHRASE),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        # plugins come from the toolchain (on PATH, "ambient"), never from a download
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PATH": f"{TOOLCHAIN_BIN}{os.pathsep}{path}",
    }


def program() -> None:
    """This repository's program, as `pulumi up` runs it."""
    import runpy

    runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")


def stack_of(local: LocalStack):  # -> pulumi.automation.Stack
    """The local stack (created on first use with the passphrase secrets provider), reading the config file
    `write_project` wrote."""
    from pulumi import automation as auto

    local.state.mkdir(parents=True, exist_ok=True)
    root = pulumi_root()
    os.environ.update(pulumi_env(local))  # the inline program's process reads PATH and the backend too
    workspace = auto.LocalWorkspaceOptions(
        work_dir=str(local.project),
        pulumi_home=str(local.root / "pulumi-home"),
        env_vars=pulumi_env(local),
        secrets_provider="passphrase",
        pulumi_command=auto.PulumiCommand(root=root, skip_version_check=True) if root else None,
        project_settings=auto.ProjectSettings(name=project_file(local.project)["name"], runtime="python"),
    )
    return auto.create_or_select_stack(local.stack, project_name="tpu-serving", program=program, opts=workspace)


def prepare(stack: str, *, root: Path = LOCAL, source: Path | None = None, reference: Path | None = None) -> LocalStack:
    """The local project and stack config, and GKE's objects in the stack's local cluster (which must be running)."""
    local = LocalStack(stack, root)
    if not local.kubeconfig.exists():
        raise SystemExit(
            f"{local.kubeconfig} does not exist: start the local cluster first (make local-cluster STACK={stack})"
        )
    reference = reference or reference_dir()
    if not (reference / "gke-crds").is_dir():
        raise SystemExit(
            f"{reference}: no reference folder (gke-crds/, crds/, charts/): a local cluster gets GKE's own CRDs and "
            "the pinned charts from it (docs/local.md); set TPU_SERVING_REFERENCE to a copy laid out as "
            "../shared/reference"
        )
    write_project(local, source or stack_file(stack), [reference])
    install_gke_objects(Kube(local.kubeconfig), reference)
    return local


def run(local: LocalStack, command: str, *, on_output=print, **kwargs: Any) -> Any:
    """up, preview, refresh or destroy of the local stack; the result (pulumi.automation's)."""
    stack = stack_of(local)
    operation = {"up": stack.up, "preview": stack.preview, "refresh": stack.refresh, "destroy": stack.destroy}[command]
    if command == "preview":
        kwargs.setdefault("diff", True)
    return operation(on_output=on_output, color="never", **kwargs)


def enter_cluster_network(stack: str) -> None:
    """Join the stack's local cluster in its network namespace (tooling/local/local_cluster.py runs each cluster in one of
    its own, whose loopback serves the API server), before any thread starts; nothing to do without one."""
    if Path(f"/run/netns/{local_cluster.netns_name(stack)}").exists() and not local_cluster.in_netns(stack):
        local_cluster.enter(stack)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.local.local_stack", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "preview", "refresh", "destroy", "gke-objects"])
    parser.add_argument("stack")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    enter_cluster_network(args.stack)
    local = prepare(args.stack)
    if args.command == "gke-objects":
        return 0
    from pulumi import automation as auto

    try:
        run(local, args.command)
    except auto.errors.CommandError as err:
        print(f"pulumi {args.command} failed: {str(err)[-2000:]}", file=sys.stderr)
        return 1
    if args.command == "destroy":
        print(f"destroyed; the local stack's state stays in {local.state} (rm -rf {local.folder} to forget it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
