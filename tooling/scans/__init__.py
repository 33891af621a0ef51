"""Scans over every example: checkov with its accepted findings, and the config fuzzer; imports tooling.review and below."""
