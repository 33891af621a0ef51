"""Scan the rendered Kubernetes objects of every example with checkov; fail on any finding without a reason.

    python -m tooling.scan                 # render every example to build/scan/<stack>/ and scan them
    CHECKOV=/path/to/checkov python -m tooling.scan

checkov runs from its own virtualenv (`make scan` creates .venv-scan from requirements-scan.txt): every checkov
release pins `packaging<24`, which pulumi (`packaging>=26`) refuses, so the two cannot share one environment.
An accepted finding carries a `checkov.io/skip<N>: <id>=<reason>` annotation on its object
(stacks/scan_exceptions.py); the scan fails on a failed check, a parsing error, or a skip without a reason.

Checkov's Kubernetes checks read the pods of built-in kinds only (POD_KINDS); they never look inside a custom
resource. So every pod template of every other object (LeaderWorkerSet leader and worker templates, JobSet
replicated jobs, a PathwaysJob's user template) is written out as the Pod its controller creates from it
(`expanded_pods`), carrying the custom resource's skip annotations, and checkov scans those Pods too.
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
from pathlib import Path
from typing import Any

import yaml

from stacks.pod_security import pod_templates
from tooling.offline import ROOT
from tooling.render import example_files, render_stack, stack_name, write

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


def checkov_command(target: Path) -> list[str]:
    checkov = os.environ.get("CHECKOV") or str(DEFAULT_CHECKOV)
    # --skip-download: no network (checkov otherwise fetches guideline links from its vendor)
    return [
        checkov,
        "-d",
        str(target),
        "--framework",
        "kubernetes",
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
    files = {rel: text for rel, text in rendered.items() if rel.startswith("k8s/")}
    for text in [files[rel] for rel in sorted(files)]:
        obj = yaml.safe_load(text)
        for pod in expanded_pods(obj if isinstance(obj, dict) else {}):
            meta = pod["metadata"]
            files[f"{PODS_DIR}/{meta.get('namespace', '_cluster')}/Pod-{meta['name']}.yaml"] = yaml.safe_dump(
                pod, sort_keys=True, width=120
            )
    return files


def summarize(report: Any) -> tuple[dict[str, int], list[str]]:
    """Counts and the problems (failed checks, skips without a reason) of a checkov JSON report."""
    reports = report if isinstance(report, list) else [report]
    counts: Counter[str] = Counter()
    problems = []
    for r in reports:
        for key in ("passed", "failed", "skipped", "parsing_errors"):
            counts[key] += int(r.get("summary", {}).get(key, 0))
        results = r.get("results", {})
        for f in results.get("failed_checks", []):
            problems.append(f"FAILED {f['check_id']} {f['resource']} ({f.get('file_path')}): {f.get('check_name')}")
        for f in results.get("skipped_checks", []):
            comment = (f.get("check_result") or {}).get("suppress_comment", "")
            if not comment or comment == NO_REASON:
                problems.append(f"SKIPPED WITHOUT REASON {f['check_id']} {f['resource']} ({f.get('file_path')})")
    if counts["parsing_errors"]:
        problems.append(f"{counts['parsing_errors']} file(s) checkov could not parse")
    return dict(counts), problems


def main(argv: list[str] | None = None) -> int:
    shutil.rmtree(SCAN_DIR, ignore_errors=True)
    stacks = example_files()
    expanded = 0
    for path in stacks:
        _, _, rendered = render_stack(path)
        files = scan_files(rendered)
        expanded += sum(rel.startswith(f"{PODS_DIR}/") for rel in files)
        write(files, SCAN_DIR / stack_name(path))
    proc = subprocess.run(checkov_command(SCAN_DIR), capture_output=True, text=True, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n", file=sys.stderr)
        print("checkov did not produce a JSON report", file=sys.stderr)
        return 2
    counts, problems = summarize(report)
    print(
        f"checkov over {len(stacks)} examples ({expanded} pods expanded from custom resources): {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
        f"{counts.get('skipped', 0)} skipped with a reason on the object"
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
