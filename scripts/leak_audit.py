"""After `pulumi destroy`: list what GKE created outside Pulumi state for this stack, and fail if anything remains.

    make leak-audit STACK=dev
    python scripts/leak_audit.py dev [--from-dir DIR]

GKE creates cloud resources for Kubernetes objects (load balancer forwarding rules, target pools, backend
services, health checks, firewall rules, network endpoint groups, persistent disks, addresses) that Pulumi never
sees. They are deleted when their Kubernetes objects are deleted while the cluster is still there; this audit
checks that nothing was left behind, and also looks for the stack's own service accounts. A resource belongs to
the stack when its name, description or labels name the stack's cluster, when it sits in the VPC the stack
created, or (service accounts) when tpu-serving created it for this stack.

--from-dir reads `<kind>.json` files (recorded `gcloud ... --format=json` output) instead of calling gcloud.
Exit status: 0 nothing left, 1 leftovers found, 2 gcloud failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stacks import naming  # noqa: E402
from tooling.harness.offline import parse_stack_file  # noqa: E402

# kind -> gcloud command (without --project/--format)
KINDS: dict[str, list[str]] = {
    "forwarding-rules": ["compute", "forwarding-rules", "list"],
    "target-pools": ["compute", "target-pools", "list"],
    "backend-services": ["compute", "backend-services", "list"],
    "health-checks": ["compute", "health-checks", "list"],
    "firewall-rules": ["compute", "firewall-rules", "list"],
    "network-endpoint-groups": ["compute", "network-endpoint-groups", "list"],
    "disks": ["compute", "disks", "list"],
    "addresses": ["compute", "addresses", "list"],
    "service-accounts": ["iam", "service-accounts", "list"],
}
GKE_CLUSTER_LABEL = "goog-k8s-cluster-name"


@dataclass(frozen=True)
class StackIdentity:
    project: str
    stack: str
    cluster: str
    network: str | None  # the VPC the stack created, if it did
    node_service_account: str

    def owns(self, kind: str, item: dict[str, Any]) -> bool:
        if kind == "service-accounts":
            email = item.get("email", "")
            description = item.get("description", "")
            return email.startswith(f"{self.node_service_account}@") or (
                description.startswith("tpu-serving:") and item.get("displayName", "").endswith(f"({self.stack})")
            )
        text = f"{item.get('name', '')} {item.get('description', '')}"
        labels = item.get("labels") or {}
        network = item.get("network", "")
        return (
            self.cluster in text
            or labels.get(GKE_CLUSTER_LABEL) == self.cluster
            or (labels.get("app") == "tpu-serving" and labels.get("stack") == naming.label_value(self.stack))
            or bool(self.network and network.rstrip("/").endswith(f"/networks/{self.network}"))
        )


def identity(stack_file: Path) -> StackIdentity:
    cfg = parse_stack_file(stack_file)
    created = cfg.cluster.network.create
    return StackIdentity(
        project=cfg.gcp_project,
        stack=cfg.stack,
        cluster=cfg.cluster_name,
        network=(cfg.cluster.network.network or cfg.cluster_name) if created else None,
        node_service_account=naming.node_service_account_id(cfg.cluster_name),
    )


Lister = Callable[[str, str], list[dict[str, Any]]]


def gcloud_lister(kind: str, project: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        ["gcloud", *KINDS[kind], f"--project={project}", "--format=json"], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"gcloud {' '.join(KINDS[kind])}: {result.stderr.strip()}")
    return json.loads(result.stdout or "[]")


def directory_lister(directory: Path) -> Lister:
    def lister(kind: str, project: str) -> list[dict[str, Any]]:
        path = directory / f"{kind}.json"
        return json.loads(path.read_text()) if path.exists() else []

    return lister


def audit(ident: StackIdentity, lister: Lister) -> list[str]:
    leftovers = []
    for kind in KINDS:
        for item in lister(kind, ident.project):
            if ident.owns(kind, item):
                leftovers.append(f"{kind}: {item.get('email') or item.get('name')}")
    return leftovers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("stack", help="stack name (Pulumi.<stack>.yaml) or a stack file")
    parser.add_argument("--from-dir", type=Path, help="read recorded gcloud JSON from <kind>.json files")
    args = parser.parse_args(argv)
    path = Path(args.stack) if args.stack.endswith((".yaml", ".yml")) else ROOT / f"Pulumi.{args.stack}.yaml"
    ident = identity(path)
    lister = directory_lister(args.from_dir) if args.from_dir else gcloud_lister
    try:
        leftovers = audit(ident, lister)
    except RuntimeError as err:
        print(f"leak audit could not list resources: {err}", file=sys.stderr)
        return 2
    print(f"leak audit of stack {ident.stack} (cluster {ident.cluster}, project {ident.project}):")
    for line in leftovers:
        print(f"  LEFT BEHIND {line}")
    print(f"  {len(leftovers)} resource(s) left behind" if leftovers else "  nothing left behind")
    return 1 if leftovers else 0


if __name__ == "__main__":
    sys.exit(main())
