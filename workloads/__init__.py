"""Serving workload types: one package per type (its config schema, presets, plan and manifests, component, and
its registry entry in `__init__.py`), listed once in `workloads/registry.py`."""
