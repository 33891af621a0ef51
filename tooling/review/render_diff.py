"""The offline render of every environment stack, diffed between the base branch and this checkout.

    make diff BASE=main STACK=dev        # a reviewer's local diff: build/diff/render.diff and build/diff/comment.md
    python -m tooling.review.render_diff --base origin/main --diff render.diff --comment comment.md   # the PR job

Renders each `Pulumi.<stack>.yaml` at the repository root (or the `--stack` ones) here and in a worktree of the base
revision, and writes a unified diff plus the Markdown comment the pull request gets: the number of rendered files
added, changed and removed per stack and the estimated hourly cost before and after first, then what recreates
resources, the diff, and the graph of each changed stack last. Prints the first part. Needs no credentials.
"""

from __future__ import annotations

import argparse
import difflib
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tooling.harness.offline import ROOT
from tooling.review.graph import fits_github
from tooling.review.recreate import review
from tooling.review.summary import table

MARKER = "<!-- tpu-serving-render-diff -->"
COMMENT_LIMIT = 60000  # GitHub comments hold 65536 characters
DIFF_ROOM = 10000  # what the full graphs leave the diff (the whole diff is an artifact of the run)


def read_tree(root: Path) -> dict[str, str]:
    return (
        {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
        if root.exists()
        else {}
    )


def diff_trees(base: Path, head: Path) -> str:
    old, new = read_tree(base), read_tree(head)
    chunks: list[str] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name, ""), new.get(name, "")
        if a != b:
            chunks.extend(
                difflib.unified_diff(
                    a.splitlines(True),
                    b.splitlines(True),
                    f"base/{name}" if name in old else "/dev/null",
                    f"head/{name}" if name in new else "/dev/null",
                )
            )
    return "".join(chunks)


def changes(diff: str) -> dict[str, Counter[str]]:
    """Per stack, its rendered files added, changed and removed, read from the diff's file headers."""
    found: dict[str, Counter[str]] = {}
    lines = diff.splitlines()
    for i, new in enumerate(lines):
        if not new.startswith("+++ "):
            continue
        old = lines[i - 1] if i and lines[i - 1].startswith("--- ") else ""
        name = new[4:] if new != "+++ /dev/null" else old[4:]
        stack = name.split("/")[1]
        kind = "added" if old == "--- /dev/null" else "removed" if new == "+++ /dev/null" else "changed"
        found.setdefault(stack, Counter())[kind] += 1
    return found


Cost = dict[str, float]  # {"baseline": ..., "peak": ...}: estimatedHourlyCost.total, USD per hour


def hourly_cost(stack_dir: Path) -> Cost | None:
    """The estimated hourly cost of a rendered stack: the `estimatedHourlyCost` stack output its summary.md lists
    under "Stack outputs" (tooling/review/summary.py), or None when the stack was not rendered."""
    page = stack_dir / "summary.md"
    if not page.is_file():
        return None
    block = page.read_text().split("\n## Stack outputs\n", 1)[-1].split("```json\n", 1)[-1].split("\n```", 1)[0]
    try:
        total = json.loads(block)["estimatedHourlyCost"]["total"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return None
    return {"baseline": float(total["baseline"]), "peak": float(total["peak"])}


def _at(cost: Cost | None, level: str) -> float | None:
    return None if cost is None else cost[level]


def _money(old: float | None, new: float | None) -> str:
    if old is None and new is None:
        return ""
    if old is None or new is None:
        return f"{'-' if old is None else f'{old:.2f}'} → {'-' if new is None else f'{new:.2f}'}"
    return f"{old:.2f} → {new:.2f} ({new - old:+.2f})"


def headline(diff: str, base: str, costs: dict[str, tuple[Cost | None, Cost | None]] | None = None) -> list[str]:
    """What a reviewer reads first: how many rendered files change per stack, and the estimated cost before and
    after (USD per hour, at baseline and at peak)."""
    per_stack = changes(diff)
    total = sum(sum(c.values()) for c in per_stack.values())
    lines = [f"**{total} rendered file(s) change in {len(per_stack)} stack(s)** against `{base}`.", ""]
    rows = []
    for stack in sorted(set(per_stack) | {s for s, (a, b) in (costs or {}).items() if a != b}):
        count = per_stack.get(stack, Counter())
        old, new = (costs or {}).get(stack, (None, None))
        rows.append(
            [
                stack,
                count["added"],
                count["changed"],
                count["removed"],
                _money(_at(old, "baseline"), _at(new, "baseline")),
                _money(_at(old, "peak"), _at(new, "peak")),
            ]
        )
    if rows:
        header = ["stack", "added", "changed", "removed", "cost/hour, baseline", "cost/hour, peak"]
        lines += [*table(header, rows), ""]
    return lines


def comment(
    diff: str,
    stacks: list[str],
    base: str,
    note: str | None = None,
    recreated: list[str] | None = None,
    graphs: dict[str, str] | None = None,
    full_graphs: dict[str, str] | None = None,
    costs: dict[str, tuple[Cost | None, Cost | None]] | None = None,
) -> str:
    """The pull-request comment, in the order a reviewer reads it: the change count and the cost before and after
    first (`costs`: per stack, base and head), then what recreates resources, the diff, and last the graph of each
    changed stack (`graphs`: stack -> its graph.mmd at the head; `full_graphs`, graph-full.mmd, behind "Expand" where
    GitHub can draw them and the comment has room): the graph is the whole stack, mostly unchanged."""
    files = sorted(changes(diff))
    if not diff:
        body = f"No change to the rendered infrastructure of {', '.join(stacks) or 'any stack'} against `{base}`."
        if costs and any(a != b for a, b in costs.values()):
            body += "\n\n" + "\n".join(headline(diff, base, costs))
    else:
        pictures = ""
        for stack in (s for s in files if s in (graphs or {})):
            pictures += (
                f"\n\n**{stack}** (one node per component, in layers; only the edges no longer path implies):\n\n"
                f"```mermaid\n{(graphs or {})[stack]}```"
            )
            pictures += _expanded(stack, (full_graphs or {}).get(stack), COMMENT_LIMIT - DIFF_ROOM - len(pictures))
        limit = COMMENT_LIMIT - len(pictures)
        shown = (
            diff
            if len(diff) <= limit
            else diff[:limit] + "\n... (truncated; the full diff is an artifact of this run)\n"
        )
        recreate = ""
        if recreated:
            listed = "\n".join(f"- {line}" for line in recreated)
            recreate = (
                "**Changes that recreate resources** (a TPU pool is a whole slice; the cluster is everything in it), "
                f"what each protected one needs, and ComputeClass changes:\n\n{listed}\n\n"
            )
        body = (
            "\n".join(headline(diff, base, costs))
            + f"\n{recreate}Rendered infrastructure changes (stacks: {', '.join(files)}):\n\n"
            f"<details><summary>{diff.count(chr(10))} lines of diff</summary>\n\n```diff\n{shown}```\n</details>"
            + (f"\n\n#### The graph of each changed stack{pictures}" if pictures else "")
        )
    if note:
        body = f"> {note}\n\n{body}"
    return f"{MARKER}\n### Offline render diff\n\n{body}\n"


def _expanded(stack: str, full: str | None, room: int) -> str:
    """graph-full.mmd behind "Expand" when GitHub draws it and the comment has `room` for it."""
    if full is None or not fits_github(full) or len(full) + 200 > room:
        return f"\n\nEvery resource and edge: `make render STACK={stack}` writes `graph-full.mmd`."
    return (
        f"\n\n<details><summary>Expand: every resource and edge of {stack}</summary>\n\n"
        f"```mermaid\n{full}```\n</details>"
    )


def render_into(repo: Path, out: Path, stacks: list[Path], python: str) -> str | None:
    """Render the stacks that exist in `repo`; the reason when it cannot (e.g. an old base), else None."""
    present = [s.name for s in stacks if (repo / s.name).exists()]
    if not present:
        return None
    result = subprocess.run(
        [python, "-m", "tooling.review.render", "--out", str(out), *present], cwd=repo, capture_output=True, text=True
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
        return f"could not be rendered ({last})"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="git revision to compare against, e.g. origin/main")
    parser.add_argument("--diff", type=Path, default=Path("render.diff"))
    parser.add_argument("--comment", type=Path, default=Path("render-comment.md"))
    parser.add_argument(
        "--stack", action="append", help="only this stack (Pulumi.<stack>.yaml at the root); repeat for more"
    )
    args = parser.parse_args(argv)
    stacks = sorted(ROOT.glob("Pulumi.*.yaml"))
    if args.stack:
        wanted = {f"Pulumi.{name}.yaml" for name in args.stack}
        missing = sorted(wanted - {s.name for s in stacks})
        if missing:
            print(f"no {', '.join(missing)} at the repository root", file=sys.stderr)
            return 2
        stacks = [s for s in stacks if s.name in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        problem = render_into(ROOT, work / "head", stacks, sys.executable)
        if problem:
            print(f"this checkout {problem}", file=sys.stderr)
            return 1
        subprocess.run(["git", "worktree", "add", "--detach", str(work / "src"), args.base], cwd=ROOT, check=True)
        try:
            base_problem = render_into(work / "src", work / "base", stacks, sys.executable)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "src")], cwd=ROOT, check=False)
        diff = diff_trees(work / "base", work / "head")
        graphs, full_graphs = (
            {stack.name: (stack / file).read_text() for stack in (work / "head").iterdir() if (stack / file).is_file()}
            for file in ("graph.mmd", "graph-full.mmd")
        )
        recreated = [
            f"{stack.name}: {line}"
            for stack in sorted((work / "head").iterdir())
            if (work / "base" / stack.name / "gcp").is_dir()
            for line in review(work / "base" / stack.name, stack)
        ]
        names = [s.name.removeprefix("Pulumi.").removesuffix(".yaml") for s in stacks]
        costs = {name: (hourly_cost(work / "base" / name), hourly_cost(work / "head" / name)) for name in names}
    args.diff.parent.mkdir(parents=True, exist_ok=True)
    args.comment.parent.mkdir(parents=True, exist_ok=True)
    args.diff.write_text(diff)
    note = f"The base `{args.base}` {base_problem}: every file shows as added." if base_problem else None
    args.comment.write_text(comment(diff, names, args.base, note, recreated, graphs, full_graphs, costs))
    print("\n".join(headline(diff, args.base, costs)))
    print(f"{len(diff.splitlines())} lines of render diff -> {args.diff}, comment -> {args.comment}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
