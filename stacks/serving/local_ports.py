"""Local ports for the `kubectl port-forward` commands of a stack's workloads: each workload gets its own, so the
port-forwards of two workloads run side by side (two JetStream servers both listen on 8000 in their pods).

A workload keeps the remote port locally when no earlier workload took it, else the next free one above it;
workloads are served in config order, so adding a workload at the end never changes another's commands.
"""

from __future__ import annotations

from collections.abc import Sequence

from stacks.model.config_model import PORT_MAX


def allocate(requests: Sequence[tuple[str, Sequence[int]]]) -> dict[str, dict[int, int]]:
    """[(workload, remote ports it forwards)] -> {workload: {remote port: local port}}, unique local ports."""
    taken: set[int] = set()
    out: dict[str, dict[int, int]] = {}
    for name, remotes in requests:
        mine: dict[int, int] = {}
        for remote in remotes:
            local = remote
            while local in taken:
                local += 1
            if local > PORT_MAX:
                raise ValueError(f"no free local port at or above {remote} for workload {name!r}")
            taken.add(local)
            mine[remote] = local
        out[name] = mine
    return out
