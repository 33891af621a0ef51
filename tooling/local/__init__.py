"""A stack tried on this machine: the toolchain, a local control plane, the real engine. May import: tooling.review and below.

What it holds: the toolchain built from the registries (toolchain), a local control plane with nodes mirroring the
stack's pools and the chart controllers as local processes (local_cluster, local_controllers), and the stack applied
to it by the real engine (local_stack)."""
