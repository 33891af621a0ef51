"""The render diff posted on pull requests."""

from tooling.review import render_diff


def test_diff_and_comment(tmp_path):
    base, head = tmp_path / "base", tmp_path / "head"
    (base / "dev" / "gcp").mkdir(parents=True)
    (head / "dev" / "gcp").mkdir(parents=True)
    (base / "dev" / "gcp" / "a.yaml").write_text("nodeCount: 4\n")
    (head / "dev" / "gcp" / "a.yaml").write_text("nodeCount: 8\n")
    (head / "dev" / "gcp" / "b.yaml").write_text("new: true\n")
    diff = render_diff.diff_trees(base, head)
    assert "-nodeCount: 4\n+nodeCount: 8\n" in diff
    assert "--- /dev/null\n+++ head/dev/gcp/b.yaml" in diff
    text = render_diff.comment(diff, ["dev"], "origin/main")
    assert text.startswith(render_diff.MARKER) and "```diff" in text and "(stacks: dev)" in text
    assert "No change" in render_diff.comment("", ["dev"], "origin/main")


def test_long_diffs_are_truncated():
    text = render_diff.comment("+x\n" * 40000, ["dev"], "origin/main")
    assert len(text) < 65536 and "truncated" in text


def test_an_unrenderable_base_is_said():
    text = render_diff.comment(
        "+++ head/dev/x\n", ["dev"], "origin/main", "The base `origin/main` could not be rendered (x)"
    )
    assert "> The base `origin/main` could not be rendered (x)" in text


def test_changed_stacks_show_their_graph_within_the_comment_limit():
    """GitHub draws ```mermaid blocks in comments; the diff is cut so that the comment stays under 65536."""
    graph = 'flowchart LR\n  Cluster_cluster["cluster"]\n'
    text = render_diff.comment(
        "+++ head/dev/x\n" + "+x\n" * 40000, ["dev", "prod"], "origin/main", graphs={"dev": graph, "prod": graph}
    )
    assert (
        f"**dev** (one node per component, in layers; only the edges no longer path implies):\n\n```mermaid\n{graph}```"
        in text
    )
    assert "**prod**" not in text  # unchanged stacks are not drawn
    assert len(text) < 65536 and "truncated" in text


# ---- what a reviewer reads first (issue 34 item 15) ------------------------------------------------------------


def _summary(tmp_path, stack, baseline, peak):
    import json

    outputs = {"estimatedHourlyCost": {"total": {"baseline": baseline, "peak": peak}}}
    page = f"# Stack\n\n## Stack outputs\n\nAs ...\n\n```json\n{json.dumps(outputs, indent=2)}\n```\n\n## Graph\n"
    (tmp_path / stack).mkdir(parents=True, exist_ok=True)
    (tmp_path / stack / "summary.md").write_text(page)
    return render_diff.hourly_cost(tmp_path / stack)


def test_the_comment_leads_with_the_change_count_and_cost_and_ends_with_the_graph(tmp_path):
    diff = (
        "--- base/dev/gcp/a.yaml\n+++ head/dev/gcp/a.yaml\n-x: 1\n+x: 2\n"
        "--- /dev/null\n+++ head/dev/gcp/b.yaml\n+y: 1\n"
        "--- base/dev/gcp/c.yaml\n+++ /dev/null\n-z: 1\n"
    )
    costs = {"dev": (_summary(tmp_path / "b", "dev", 1.0, 20.0), _summary(tmp_path / "h", "dev", 1.5, 10.0))}
    assert costs["dev"] == ({"baseline": 1.0, "peak": 20.0}, {"baseline": 1.5, "peak": 10.0})
    graph = 'flowchart LR\n  Cluster_cluster["cluster"]\n'
    text = render_diff.comment(
        diff, ["dev"], "main", recreated=["dev: NodePool p: replaced"], graphs={"dev": graph}, costs=costs
    )
    body = text.split("### Offline render diff\n\n", 1)[1]
    assert body.startswith("**3 rendered file(s) change in 1 stack(s)** against `main`.")
    assert "| dev | 1 | 1 | 1 | 1.00 → 1.50 (+0.50) | 20.00 → 10.00 (-10.00) |" in body
    order = [body.index(s) for s in ("rendered file(s) change", "| dev |", "recreate resources", "```diff", "mermaid")]
    assert order == sorted(order), order
    assert "```mermaid" in body.rsplit("</details>", 1)[1]  # the graph comes after the diff, last


def test_a_cost_change_alone_is_said(tmp_path):
    costs = {"dev": ({"baseline": 1.0, "peak": 2.0}, {"baseline": 1.0, "peak": 3.0})}
    text = render_diff.comment("", ["dev"], "main", costs=costs)
    assert "No change to the rendered infrastructure" in text and "2.00 → 3.00 (+1.00)" in text


def test_make_diff_is_the_local_form_of_the_pull_request_job():
    import subprocess

    from tooling.harness.offline import ROOT

    done = subprocess.run(["make", "-n", "diff", "BASE=main", "STACK=dev"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "-m tooling.review.render_diff --base main --stack dev" in done.stdout
    assert "make diff BASE=main STACK=" in (ROOT / "docs" / "review.md").read_text()
