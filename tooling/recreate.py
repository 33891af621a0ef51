"""Which differences between two renders recreate the cluster, a TPU pool, the bucket or the network.

Google Cloud cannot change these fields in place: Pulumi replaces the resource (for a TPU pool, the whole slice;
for the cluster, everything in it). `python -m tooling.render --compare <old render>` names every such field, so
a pull request shows a recreation before anyone runs `pulumi up`. Deleted resources are named too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

# Input paths (camelCase, dotted) whose change forces replacement, per resource type: the ForceNew fields of the
# Google provider that this stack sets.
REPLACE_FIELDS: dict[str, tuple[str, ...]] = {
    "gcp:container/cluster:Cluster": (
        "name",
        "location",
        "project",
        "network",
        "subnetwork",
        "networkingMode",
        "datapathProvider",
        "ipAllocationPolicy",
        "privateClusterConfig.enablePrivateEndpoint",
    ),
    "gcp:container/nodePool:NodePool": (
        "name",
        "cluster",
        "location",
        "project",
        "nodeLocations",
        "placementPolicy",
        "nodeConfig.machineType",
        "nodeConfig.spot",
        "nodeConfig.flexStart",
        "nodeConfig.reservationAffinity",
        "nodeConfig.serviceAccount",
        "nodeConfig.oauthScopes",
        "nodeConfig.diskSizeGb",
        "nodeConfig.diskType",
        "nodeConfig.shieldedInstanceConfig",
    ),
    "gcp:storage/bucket:Bucket": ("name", "location", "project"),
    "gcp:compute/network:Network": ("name", "project", "autoCreateSubnetworks", "routingMode"),
    "gcp:compute/subnetwork:Subnetwork": ("name", "project", "region", "network"),
}
MISSING = object()


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return MISSING
        data = data[part]
    return data


def _show(value: Any) -> str:
    if value is MISSING:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


Resources = dict[str, dict[str, Any]]


class NotARender(ValueError):
    """A directory that is not an offline render of one stack."""


def read_render(render: Path) -> Resources:
    """The resources of a render whose replacement fields we compare; NotARender when `render` is not one.

    A missing or empty directory is an error, never "no changes": comparing against nothing proves nothing.
    """
    files = sorted((render / "gcp").glob("*.yaml")) if (render / "gcp").is_dir() else []
    if not files:
        raise NotARender(f"{render} is not an offline render (no gcp/*.yaml in it)")
    out = {}
    for path in files:
        body = yaml.safe_load(path.read_text())
        if not isinstance(body, dict) or "type" not in body or "name" not in body:
            raise NotARender(f"{path} is not a rendered resource (no type and name)")
        if body["type"] in REPLACE_FIELDS:
            out[f"{body['type']} {body['name']}"] = body
    return out


def recreations(old_render: Path | Resources, new_render: Path | Resources) -> list[str]:
    """One line per field that forces a replacement, and per protected-kind resource that disappears.

    Either side is a render directory or what `read_render` read from one (to compare against a render that is
    about to be overwritten)."""
    old = old_render if isinstance(old_render, dict) else read_render(old_render)
    new = new_render if isinstance(new_render, dict) else read_render(new_render)
    lines = []
    for key in sorted(old):
        if key not in new:
            lines.append(f"{key}: deleted")
            continue
        type_ = old[key]["type"]
        for field in REPLACE_FIELDS[type_]:
            before, after = _get(old[key]["inputs"], field), _get(new[key]["inputs"], field)
            if before != after:
                lines.append(f"{key}: {field} {_show(before)} -> {_show(after)} (replaces it)")
    return lines
