"""Metrics, the dashboard and alerts as plain data, and the registry of metrics adapters (adapters/). May import: stacks.facts, stacks.security, stacks.naming, stacks.problems."""
