"""Serving workloads: per type, a config model, validation against the pool it names, and manifest builders.

Everything here is pure (no Pulumi), so the manifests are tested field by field against the references.
"""
