"""What every serving workload component exposes to the stack: where it runs and how to reach it."""

from __future__ import annotations

from typing import Any

import pulumi


class ServingWorkload(pulumi.ComponentResource):
    namespace: str
    """Kubernetes namespace of the workload."""
    service_name: str
    """The Service clients use."""
    commands: dict[str, Any]
    """Ready-to-run commands (port-forward, curl, ...), for the stack outputs."""
