"""Scan the rendered Kubernetes objects of every example with checkov; fail on any finding without a reason.

    python -m tooling.scan                 # render every example to build/scan/<stack>/ and scan them
    CHECKOV=/path/to/checkov python -m tooling.scan

checkov runs from its own virtualenv (`make scan` creates .venv-scan from requirements-scan.txt): every checkov
release pins `packaging<24`, which pulumi (`packaging>=26`) refuses, so the two cannot share one environment.
An accepted finding carries a `checkov.io/skip<N>: <id>=<reason>` annotation on its object
(stacks/scan_exceptions.py); the scan fails on a failed check, a parsing error, or a skip without a reason.
Checkov's Kubernetes checks cover built-in kinds only: the pods inside JobSets and LeaderWorkerSets are checked
by tests/test_pod_security.py against the Pod Security Standards instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tooling.offline import ROOT
from tooling.render import example_files, render_stack, stack_name, write

SCAN_DIR = ROOT / "build" / "scan"
DEFAULT_CHECKOV = ROOT / ".venv-scan" / "bin" / "checkov"
NO_REASON = "No comment provided"  # checkov's comment for a skip annotation without "=<reason>"


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
    for path in stacks:
        _, _, files = render_stack(path)
        write({rel: text for rel, text in files.items() if rel.startswith("k8s/")}, SCAN_DIR / stack_name(path))
    proc = subprocess.run(checkov_command(SCAN_DIR), capture_output=True, text=True, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        print(proc.stdout[-2000:], proc.stderr[-2000:], sep="\n", file=sys.stderr)
        print("checkov did not produce a JSON report", file=sys.stderr)
        return 2
    counts, problems = summarize(report)
    print(
        f"checkov over {len(stacks)} examples: {counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed, "
        f"{counts.get('skipped', 0)} skipped with a reason on the object"
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
