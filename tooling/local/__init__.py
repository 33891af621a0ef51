"""Trying a stack on this machine: the toolchain built from the registries, a local control plane with nodes
mirroring the stack's pools, and the stack applied to it by the real engine. May import harness, oracles and review."""
