"""The offline render of every environment stack, diffed between the base branch and this checkout.

    python -m tooling.render_diff --base origin/main --diff render.diff --comment comment.md

Renders each `Pulumi.<stack>.yaml` at the repository root here and in a worktree of the base revision, and
writes a unified diff plus a Markdown comment for the pull request. Needs no credentials.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tempfile
from pathlib import Path

from tooling.graph import fits_github
from tooling.offline import ROOT
from tooling.recreate import review

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


def comment(
    diff: str,
    stacks: list[str],
    base: str,
    note: str | None = None,
    recreated: list[str] | None = None,
    graphs: dict[str, str] | None = None,
    full_graphs: dict[str, str] | None = None,
) -> str:
    """The pull-request comment; `graphs` (stack -> its graph.mmd at the head) are drawn for every changed stack,
    so a reviewer sees the shape of what changed, not a file; `full_graphs` (graph-full.mmd) behind "Expand" where
    GitHub can draw them and the comment has room."""
    files = sorted(
        {
            line.split(" ", 1)[1].split("/")[1]  # "+++ head/<stack>/..." -> <stack>
            for line in diff.splitlines()
            if line.startswith(("+++ head/", "--- base/"))
        }
    )
    if not diff:
        body = f"No change to the rendered infrastructure of {', '.join(stacks) or 'any stack'} against `{base}`."
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
        body = (
            f"Rendered infrastructure changes against `{base}` (stacks: {', '.join(files)}):{pictures}\n\n"
            f"<details><summary>{diff.count(chr(10))} lines of diff</summary>\n\n```diff\n{shown}```\n</details>"
        )
    if recreated:
        listed = "\n".join(f"- {line}" for line in recreated)
        body = (
            "**Changes that recreate resources** (a TPU pool is a whole slice; the cluster is everything in it), what "
            f"each protected one needs, and ComputeClass changes:\n\n{listed}\n\n{body}"
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
        [python, "-m", "tooling.render", "--out", str(out), *present], cwd=repo, capture_output=True, text=True
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
    args = parser.parse_args(argv)
    stacks = sorted(ROOT.glob("Pulumi.*.yaml"))
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
    args.diff.write_text(diff)
    note = f"The base `{args.base}` {base_problem}: every file shows as added." if base_problem else None
    names = [s.name.removeprefix("Pulumi.").removesuffix(".yaml") for s in stacks]
    args.comment.write_text(comment(diff, names, args.base, note, recreated, graphs, full_graphs))
    print(f"{len(diff.splitlines())} lines of render diff -> {args.diff}, comment -> {args.comment}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
