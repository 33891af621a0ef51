"""Render and review: offline renders, their summary, graphs and diffs, what recreates what, the preview gate. May import: tooling.oracles, tooling.harness."""
