"""The render diff posted on pull requests."""

from tooling import render_diff


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
