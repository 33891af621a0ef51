"""Local mode's stand-ins for the Google Cloud layer (stacks/model/local_target.py): the same typed facts the in-cluster
layer reads from `components.cluster.Cluster` and `components.bucket.Bucket`, with no Google Cloud resource behind
them. The cluster is the user's own, reached through the kubeconfig `tpu-serving:local.kubeconfig` names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from stacks.model import local_target
from stacks.model.local_target import LocalConfig
from stacks.pieces.bucket import BucketPlan
from stacks.pieces.cluster import ClusterPlan
from stacks.security import bucket_access


def read_kubeconfig(config: LocalConfig, base: Path) -> str:
    """The kubeconfig's text; a clear error naming the path and how to make one when it is missing."""
    path = (base / config.kubeconfig).resolve()
    if not path.is_file():
        raise pulumi.RunError(
            f"tpu-serving:local.kubeconfig: {path} does not exist; start a local cluster for the stack first "
            "(make local-cluster STACK=<stack> writes .cache/local/<stack>/kubeconfig), or name a kubeconfig you have"
        )
    return path.read_text()


def kubeconfig_server(text: str) -> str:
    """The API server the kubeconfig names (its first cluster's `server:`; a local cluster's kubeconfig has one),
    the stand-in for the cluster's endpoint. Read as text: the program parses no YAML of its own."""
    found = re.search(r"\bserver:\s*[\"']?([^\s\"',}]+)", text)
    return found.group(1) if found else ""


class LocalCluster(pulumi.ComponentResource):
    """Stands in for `components.cluster.Cluster`: the plan's name and location, the node service account's email,
    the kubeconfig's server as endpoint, and a Kubernetes provider for the given cluster, configured as the GKE
    cluster's is (server-side apply)."""

    name: pulumi.Output[str]
    location: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    node_service_account: pulumi.Output[str]
    provider: k8s.Provider
    system_pool: pulumi.Resource
    """What controllers wait for: the provider (the local cluster's system nodes exist before the run)."""

    def __init__(
        self,
        name: str,
        *,
        plan: ClusterPlan,
        config: LocalConfig,
        base: Path,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("tpu-serving:local:Cluster", name, None, opts)
        text = read_kubeconfig(config, base)
        self.name = pulumi.Output.from_input(plan.name)
        self.location = pulumi.Output.from_input(plan.location)
        self.endpoint = pulumi.Output.from_input(kubeconfig_server(text))
        self.kubeconfig = pulumi.Output.secret(text)
        self.node_service_account = pulumi.Output.from_input(
            local_target.service_account_email(plan.nodes.account_id, plan.project)
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            k8s.ProviderArgs(kubeconfig=self.kubeconfig, enable_server_side_apply=True),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.system_pool = self.provider
        self.register_outputs({"name": self.name, "location": self.location, "endpoint": self.endpoint})


@dataclass
class StandInBucket:
    """Stands in for `components.bucket.Bucket`: the bucket's planned name, its URL and the bucket-get role's name."""

    name: pulumi.Output[str]
    url: pulumi.Output[str]
    bucket_get_role: pulumi.Output[str]

    @classmethod
    def of(cls, plan: BucketPlan) -> StandInBucket:
        role = local_target.custom_role_name(plan.project, bucket_access.bucket_get_role_id(plan.name))
        return cls(
            name=pulumi.Output.from_input(plan.name),
            url=pulumi.Output.from_input(local_target.bucket_url(plan.name)),
            bucket_get_role=pulumi.Output.from_input(role),
        )
