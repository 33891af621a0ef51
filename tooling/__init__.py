"""Offline tooling: harness, render, review gates, schema generation, validation. `pulumi up` never imports it."""
