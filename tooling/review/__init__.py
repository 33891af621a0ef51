"""Render and review: offline renders, their summary, graphs and diffs, what recreates what, the preview gate; imports tooling.oracles and tooling.harness."""
