"""Scan every example with checkov: its Kubernetes objects, what its chart releases render, and its Google Cloud
resources; fail on any finding without a reason and on any accepted finding that no longer fails.

    python -m tooling.scans.scan                 # render every example to build/scan/ and scan it
    CHECKOV=/path/to/checkov python -m tooling.scans.scan

checkov runs from its own virtualenv (`make scan` creates .venv-scan from requirements-scan.txt): every checkov
release pins `packaging<24`, which pulumi (`packaging>=26`) refuses, so the two cannot share one environment.

Kubernetes (build/scan/k8s/<stack>/): checkov's Kubernetes checks read the pods of built-in kinds only
(POD_KINDS); they never look inside a custom resource. So every pod template of every other object (LeaderWorkerSet
leader and worker templates, JobSet replicated jobs, a PathwaysJob's user template) is written out as the Pod its
controller creates from it (`expanded_pods`). Each chart release an example registers is rendered by the pinned
Helm from the chart's source with the example's values (tooling/oracles/chart_objects.py), and so is each release only
another add-on version would register (`variant_chart_targets`); without Helm or the chart sources the scan says so
and goes on without them. An accepted finding of the stack's own objects is a `checkov.io/skip<N>: <id>=<reason>`
annotation (stacks/security/scan_exceptions.py) on the object, or on the pod template it concerns (a Pod inherits its
object's and its template's); of a chart's objects, an entry of tooling/scans/scan_accepted.py CHART_ACCEPTED.

checkov runs over the files with every skip annotation removed (`strip_skips`), and `evaluate` compares: each failure
must be accepted in that file, and each skip must match a failure of that check in that file (else it is stale: a
skip a Pod inherits but does not need is one). A custom resource's own skips are checked through its Pods.

Google Cloud (build/scan/gcp/<stack>/): the rendered gcp/*.yaml resources as Terraform JSON (`terraform_json`),
which checkov 3.3.30 reads only with `--framework terraform_json` (the `terraform` framework's directory walk skips
`.tf.json`: checkov/terraform/tf_parser.py); accepted findings are tooling/scans/scan_accepted.py GCP_ACCEPTED.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stacks.security.pod_security import pod_templates
from tooling.harness.k8s_objects import manifest
from tooling.harness.offline import ROOT
from tooling.oracles import provider_schema
from tooling.review.render import dump, example_files, render_stack, stack_name, write
from tooling.scans.scan_accepted import CHART_ACCEPTED, GCP_ACCEPTED

SCAN_DIR = ROOT / "build" / "scan"
DEFAULT_CHECKOV = ROOT / ".venv-scan" / "bin" / "checkov"
NO_REASON = "No comment provided"  # checkov's comment for a skip annotation without "=<reason>"
SKIP_PREFIX = "checkov.io/skip"  # checkov 3.3.30 kubernetes/kubernetes_utils.py get_skipped_checks
# The kinds whose pods checkov 3.3.30 checks itself: kubernetes/kubernetes_utils.py SUPPORTED_POD_CONTAINERS_TYPES
# and checks/resource/base_container_check.py SUPPORTED_ENTITIES (Pod, PodTemplate, CronJob).
POD_KINDS = frozenset(
    {
        "Pod",
        "PodTemplate",
        "CronJob",
        "Deployment",
        "DeploymentConfig",
        "DaemonSet",
        "Job",
        "ReplicaSet",
        "ReplicationController",
        "StatefulSet",
    }
)
PODS_DIR = "pods"  # build/scan/<stack>/pods/<namespace>/Pod-<name>.yaml: the pods expanded from custom resources


def checkov_command(target: Path, framework: str = "kubernetes") -> list[str]:
    checkov = os.environ.get("CHECKOV") or str(DEFAULT_CHECKOV)
    # --skip-download: no network (checkov otherwise fetches guideline links from its vendor)
    return [
        checkov,
        "-d",
        str(target),
        "--framework",
        framework,
        "--quiet",
        "--compact",
        "--skip-download",
        "-o",
        "json",
    ]


def _skips(annotations: Mapping[str, str] | None) -> list[str]:
    """The values of `checkov.io/skip<N>` annotations, in the order of N."""
    skips = {k.removeprefix(SKIP_PREFIX): v for k, v in (annotations or {}).items() if k.startswith(SKIP_PREFIX)}
    return [skips[n] for n in sorted(skips, key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n))]


def expanded_pods(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Pods a custom resource's controller creates from its pod templates, one per template, each with the
    resource's skip annotations (then the template's own); [] for a kind whose pods checkov reads itself."""
    if obj.get("kind") in POD_KINDS:
        return []
    meta = obj.get("metadata") or {}
    pods = []
    for where, template, spec in pod_templates(obj.get("spec") or {}, "spec"):
        annotations = {k: v for k, v in (template.get("annotations") or {}).items() if not k.startswith(SKIP_PREFIX)}
        skips = [*_skips(meta.get("annotations")), *_skips(template.get("annotations"))]
        annotations.update({f"{SKIP_PREFIX}{i}": v for i, v in enumerate(skips, 1)})
        name = f"{obj['kind']}-{meta['name']}-" + re.sub(r"[^a-z0-9]+", "-", where.lower()).strip("-")
        pod_meta = {"name": name, "labels": dict(template.get("labels") or {}), "annotations": annotations}
        if meta.get("namespace"):
            pod_meta["namespace"] = meta["namespace"]
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": dict(spec)})
    return pods


def scan_files(rendered: Mapping[str, str]) -> dict[str, str]:
    """The rendered Kubernetes files, and a file per Pod expanded from each custom resource's templates."""
    # the object as a manifest: the options block the render writes beside it (tooling/harness/k8s_objects.py) is not one
    files = {rel: dump(manifest(yaml.safe_load(text))[0]) for rel, text in rendered.items() if rel.startswith("k8s/")}
    for text in [files[rel] for rel in sorted(files)]:
        obj = yaml.safe_load(text)
        for pod in expanded_pods(obj if isinstance(obj, dict) else {}):
            meta = pod["metadata"]
            files[f"{PODS_DIR}/{meta.get('namespace', '_cluster')}/Pod-{meta['name']}.yaml"] = yaml.safe_dump(
                pod, sort_keys=True, width=120
            )
    return files


# ---- what the scan evaluates ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One file checkov scans, with its skip annotations removed, and the findings the stack accepts in it."""

    text: str
    skips: dict[str, str]  # check id -> reason
    stale_checked: bool = True  # each skip must match a failure of that check in this file
    chart: str = ""  # the chart it was rendered from ("" for the stack's own objects)


def parse_skips(values: list[str]) -> dict[str, str]:
    """check id -> reason of `checkov.io/skip<N>` values (checkov splits `<id>=<reason>` on "="; a value without
    one is a skip without a reason, kept with an empty reason)."""
    out: dict[str, str] = {}
    for value in values:
        check, _, reason = value.partition("=")
        out.setdefault(check.strip(), reason.strip())
    return out


def strip_skips(node: Any) -> Any:
    """`node` without any `checkov.io/skip<N>` annotation (the object's and its pod templates')."""
    if isinstance(node, list):
        return [strip_skips(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        if k == "annotations" and isinstance(v, dict):
            v = {a: b for a, b in v.items() if not str(a).startswith(SKIP_PREFIX)}
        out[k] = strip_skips(v)
    return out


def _dump(obj: Any) -> str:
    return yaml.safe_dump(obj, sort_keys=True, width=120)


def targets_of(
    files: Mapping[str, str], chart: str = "", accepted: Mapping[str, str] | None = None
) -> dict[str, Target]:
    """The scan's targets for `files` (scan_files' output). A stack object's accepted findings are its skip
    annotations; a custom resource's are checked through the Pods expanded from it (each with the skips it inherits
    and its template's own), so a skip no template needs is stale there. A chart's objects accept `accepted`."""
    out = {}
    for rel, text in files.items():
        obj = yaml.safe_load(text)
        if not isinstance(obj, dict):
            continue
        meta = obj.get("metadata") or {}
        has_pods = bool(pod_templates(obj.get("spec") or {}, "spec"))
        own = parse_skips(_skips(meta.get("annotations")))
        custom = obj.get("kind") not in POD_KINDS and has_pods
        skips = dict(accepted or {}) if chart else own
        out[rel] = Target(_dump(strip_skips(obj)), skips, stale_checked=not custom and not chart, chart=chart)
    return out


def evaluate(targets: Mapping[str, Target], failures: Mapping[str, set[str]], where: str) -> list[str]:
    """The problems: a failure nothing accepts, a skip without a reason, a skip its file does not fail (stale)."""
    problems = []
    for rel in sorted(targets):
        target, failed = targets[rel], failures.get(rel, set())
        for check in sorted(failed - set(target.skips)):
            problems.append(f"FAILED {check} in {where}/{rel}")
        for check, reason in sorted(target.skips.items()):
            if not reason or reason == NO_REASON:
                problems.append(f"SKIPPED WITHOUT REASON {check} in {where}/{rel}")
            if target.stale_checked and check not in failed:
                problems.append(f"STALE SKIP {check} in {where}/{rel}: the file passes it without the skip")
    return problems


def report_failures(report: Any) -> tuple[dict[str, int], dict[str, set[str]], list[str]]:
    """Counts, failed check ids by file (relative to the scanned folder), and parsing problems, of a checkov JSON
    report (one framework's object, or a list of them)."""
    reports = report if isinstance(report, list) else [report]
    counts: Counter[str] = Counter()
    failures: dict[str, set[str]] = {}
    for r in reports:
        for key in ("passed", "failed", "parsing_errors"):
            counts[key] += int(r.get("summary", {}).get(key, 0))
        for f in r.get("results", {}).get("failed_checks", []):
            failures.setdefault(str(f["file_path"]).lstrip("/"), set()).add(f["check_id"])
    problems = [f"{counts['parsing_errors']} file(s) checkov could not parse"] if counts["parsing_errors"] else []
    return dict(counts), failures, problems


# ---- Helm charts ------------------------------------------------------------------------------------------------


def chart_renderer(unscanned: set[str] | None = None) -> tuple[Any, str]:
    """(a function rendering a release's objects, or None; a sentence saying what the scan does with charts). A
    release whose chart source is not at hand renders nothing and is added to `unscanned` (chart@version)."""
    from tooling.oracles import chart_objects

    helm, charts = chart_objects.find_helm(), chart_objects.charts_root()
    if helm is None:
        return None, "Helm charts NOT scanned: no helm (set HELM, put it on PATH, or run `make helm`)"
    if not any(root.is_dir() for root in chart_objects.roots(charts)):
        where = " or ".join(str(root) for root in chart_objects.roots(charts))
        return None, f"Helm charts NOT scanned: no chart sources at {where} (../shared/reference beside the clone)"
    cache: dict[str, list[dict[str, Any]]] = {}

    def render(release: Any) -> list[dict[str, Any]]:
        if not chart_objects.has_source(charts, release):
            # A chart the reference folder does not carry : nothing to render, so nothing scanned; the
            # scan's last line names it (`unscanned`), and its record (tooling/data/chart_objects.json) stays as made
            # where the source was.
            if unscanned is not None:
                unscanned.add(f"{chart_objects.chart_name(release.chart)}@{release.version}")
            return []
        k = json.dumps(
            [release.chart, release.version, release.name, release.namespace, release.values, release.postrender],
            sort_keys=True,
        )
        if k not in cache:
            cache[k] = chart_objects.helm_template(helm, charts, release)
        return cache[k]

    return render, f"Helm charts rendered with {helm} from {' and '.join(map(str, chart_objects.roots(charts)))}"


def chart_files(recording: Any, render: Any, scanned: set[str] | None = None) -> dict[str, dict[str, Target]]:
    """chart name -> the targets of every chart release the stack registers, rendered with the stack's values; a
    release whose chart and version is in `scanned` is left out (then added to it)."""
    from tooling.oracles.chart_objects import CLUSTER_SCOPED_KINDS, chart_name, releases_of

    out: dict[str, dict[str, Target]] = {}
    for release in releases_of(recording):
        if scanned is not None and release.key in scanned:
            continue
        if scanned is not None:
            scanned.add(release.key)
        chart = chart_name(release.chart)
        files: dict[str, str] = {}
        for obj in render(release):
            meta = obj.setdefault("metadata", {})
            if obj["kind"] not in CLUSTER_SCOPED_KINDS:
                meta.setdefault("namespace", release.namespace)  # Helm installs it into the release's namespace
            base = f"charts/{chart}-{release.version}/{release.name}/{obj['kind']}-{meta.get('name')}"
            files[f"{base}.yaml"] = _dump(obj)
            for pod in expanded_pods(obj):
                files[f"{base}-{pod['metadata']['name']}.yaml"] = _dump(pod)
        out.setdefault(chart, {}).update(targets_of(files, chart, CHART_ACCEPTED.get(chart, {})))
    return out


def stale_chart_exceptions(targets: Mapping[str, Target], failures: Mapping[str, set[str]]) -> list[str]:
    """A chart exception that no object of that chart fails, over every example scanned."""
    seen: dict[str, set[str]] = {}
    for rel, target in targets.items():
        if target.chart:
            seen.setdefault(target.chart, set()).update(failures.get(rel, set()))
    return [
        f"STALE CHART EXCEPTION {check} for {chart}: no object it renders fails it"
        for chart in sorted(seen)
        for check in sorted(set(CHART_ACCEPTED.get(chart, {})) - seen[chart])
    ]


# ---- Google Cloud resources as Terraform JSON ----------------------------------------------------------------------


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def terraform_inputs(pulumi_type: str, inputs: Any, path: str = "") -> Any:
    """A resource's Pulumi inputs (camelCase, blocks under their plural) under the provider's own names, as
    Terraform JSON gives them (tooling/oracles/provider_schema.py: the names Pulumi derives from the schema). Keys of a map
    field (labels, metadata) are data and stay as they are."""
    fields = provider_schema.rules()["resources"][pulumi_type]["fields"]
    names = provider_schema.pulumi_names(pulumi_type)
    if isinstance(inputs, list):
        return [terraform_inputs(pulumi_type, v, path) for v in inputs]
    if not isinstance(inputs, dict):
        return inputs
    out = {}
    for key, value in inputs.items():
        camel_path = f"{path}.{key}" if path else key
        tf_path = names.get(camel_path)
        leaf = tf_path.rsplit(".", 1)[-1] if tf_path else snake(key)
        is_map = bool(tf_path) and fields[tf_path].get("type") == "TypeMap"
        out[leaf] = value if is_map else terraform_inputs(pulumi_type, value, camel_path)
    return out


def terraform_json(rendered: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The stack's Google Cloud resources (render's gcp/*.yaml) as one Terraform JSON document, and the types that
    have no Terraform name (reported, not scanned)."""
    resources: dict[str, dict[str, Any]] = {}
    unknown = []
    for rel in sorted(r for r in rendered if r.startswith("gcp/")):
        doc = yaml.safe_load(rendered[rel])
        tf_type = provider_schema.RESOURCES.get(doc["type"])
        if tf_type is None:
            unknown.append(
                f"{doc['type']} {doc['name']}: no Terraform type (tooling/oracles/provider_schema.py RESOURCES)"
            )
            continue
        name = re.sub(r"[^A-Za-z0-9_-]", "_", doc["name"])
        resources.setdefault(tf_type, {})[name] = terraform_inputs(doc["type"], doc.get("inputs") or {})
    return {"resource": resources}, unknown


def gcp_problems(report: Any) -> tuple[dict[str, int], list[str]]:
    """The failed Google Cloud checks no GCP_ACCEPTED entry explains, and the entries nothing fails (stale)."""
    reports = report if isinstance(report, list) else [report]
    counts: Counter[str] = Counter()
    problems, used = [], set()
    for r in reports:
        for key in ("passed", "failed", "parsing_errors"):
            counts[key] += int(r.get("summary", {}).get(key, 0))
        for f in r.get("results", {}).get("failed_checks", []):
            resource = str(f["resource"]).rsplit(".", 1)[-1]
            match = [a for a in GCP_ACCEPTED if a.check == f["check_id"] and re.fullmatch(a.resource, resource)]
            used.update(match)
            if not match:
                problems.append(f"FAILED {f['check_id']} {resource} in gcp/{str(f['file_path']).lstrip('/')}")
    problems += [
        f"STALE GCP EXCEPTION {a.check} on {a.resource}: nothing fails it" for a in GCP_ACCEPTED if a not in used
    ]
    if counts["parsing_errors"]:
        problems.append(f"{counts['parsing_errors']} Terraform JSON file(s) checkov could not parse")
    return dict(counts), problems


# ---- the run -------------------------------------------------------------------------------------------------------


def run_checkov(procs: dict[str, subprocess.Popen[str]]) -> dict[str, Any]:
    reports = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate()
        try:
            reports[name] = json.loads(stdout)
        except json.JSONDecodeError:
            print(stdout[-2000:], stderr[-2000:], sep="\n", file=sys.stderr)
            raise SystemExit(f"checkov ({name}) did not produce a JSON report") from None
    return reports


def render_examples(render_chart: Any) -> tuple[dict[str, Target], int]:
    """Every example's targets under <stack>/ (written to SCAN_DIR/k8s), and its Terraform JSON to SCAN_DIR/gcp."""
    from tooling.oracles.chart_objects import releases_of

    targets: dict[str, Target] = {}
    expanded = 0
    scanned: set[str] = set()  # the chart releases (chart@version) some example registers
    for path in example_files():
        _, recording, rendered = render_stack(path)
        scanned.update(release.key for release in releases_of(recording))
        stack = stack_name(path)
        files = scan_files(rendered)
        expanded += sum(rel.startswith(f"{PODS_DIR}/") for rel in files)
        mine = targets_of(files)
        if render_chart is not None:
            for chart_targets in chart_files(recording, render_chart).values():
                mine.update(chart_targets)
        targets.update({f"{stack}/{rel}": t for rel, t in mine.items()})
        document, unknown = terraform_json(rendered)
        for line in unknown:
            print(f"  not scanned: {line}", file=sys.stderr)
        write({f"{stack}.tf.json": json.dumps(document, indent=1, sort_keys=True)}, SCAN_DIR / "gcp" / stack)
    if render_chart is not None:
        targets.update(variant_chart_targets(render_chart, scanned))
    write({rel: t.text for rel, t in targets.items()}, SCAN_DIR / "k8s")
    return targets, expanded


def variant_chart_targets(render_chart: Any, scanned: set[str]) -> dict[str, Target]:
    """The chart releases no example registers (another supported add-on version, an add-on no example enables, such
    as Kueue): all-in-one with each (tooling/oracles/chart_objects.py variant_configs, as the chart-objects record)."""
    from tooling.harness.offline import run_program
    from tooling.oracles.chart_objects import variant_configs

    out: dict[str, Target] = {}
    for stack, cfg in variant_configs():
        recording = run_program(cfg, preview=True, stack=stack)
        for chart_targets in chart_files(recording, render_chart, scanned).values():
            out.update({f"variants/{rel}": t for rel, t in chart_targets.items()})
    return out


def main(argv: list[str] | None = None) -> int:
    shutil.rmtree(SCAN_DIR, ignore_errors=True)
    unscanned: set[str] = set()  # chart releases whose source is not at hand: not scanned
    render_chart, charts_note = chart_renderer(unscanned)
    targets, expanded = render_examples(render_chart)
    procs = {
        name: subprocess.Popen(
            checkov_command(SCAN_DIR / name, framework), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, framework in (("k8s", "kubernetes"), ("gcp", "terraform_json"))
    }
    reports = run_checkov(procs)
    counts, failures, problems = report_failures(reports["k8s"])
    problems += evaluate(targets, failures, "k8s") + stale_chart_exceptions(targets, failures)
    gcp_counts, gcp = gcp_problems(reports["gcp"])
    charts = sum(1 for t in targets.values() if t.chart)
    accepted = sum(len(set(t.skips) & failures.get(rel, set())) for rel, t in targets.items())
    print(
        f"checkov over {len(example_files())} examples, skip annotations removed: Kubernetes {counts.get('passed', 0)} "
        f"passed, {counts.get('failed', 0)} failed of which {accepted} accepted with a reason ({expanded} pods expanded "
        f"from custom resources, {charts} chart objects); Google Cloud (Terraform JSON) {gcp_counts.get('passed', 0)} "
        f"passed, {gcp_counts.get('failed', 0)} failed, each accepted with a reason unless listed below"
    )
    print(charts_note, file=sys.stderr if render_chart is None else sys.stdout)
    if unscanned:
        print(f"Helm charts NOT scanned (no chart source under the reference folder): {', '.join(sorted(unscanned))}")
    for problem in problems + gcp:
        print(problem, file=sys.stderr)
    return 1 if problems or gcp else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
