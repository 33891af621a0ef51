"""Scans over every example: checkov with its accepted findings, and the config fuzzer. May import: tooling.generate, tooling.review and below."""
