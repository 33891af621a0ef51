"""Metrics, the dashboard and alerts as plain data, and the registry of metrics adapters (adapters/); imports stacks.facts, stacks.security and below."""
