"""The stack's Artifact Registry remote repositories (stacks/facts/images.py): one per public registry the version
matrix's images come from, in the stack's project and region, so GKE can stream those images and caches them near
the nodes. Node identities get reader access on each (repository-level IAM, components/node_identity.py)."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from stacks.facts.images import ImageMirror, Remote


def repository_args(mirror: ImageMirror, remote: Remote) -> gcp.artifactregistry.RepositoryArgs:
    """A Docker remote repository of `remote`'s public registry (stacks/facts/images.py I3: format DOCKER, mode
    REMOTE_REPOSITORY, remote_repository_config.docker_repository.public_repository)."""
    return gcp.artifactregistry.RepositoryArgs(
        project=mirror.project,
        location=mirror.region,
        repository_id=remote.repository_id,
        format="DOCKER",
        mode="REMOTE_REPOSITORY",
        description=f"tpu-serving: {remote.registry} images the version matrix pins, cached for the stack's nodes",
        labels=mirror.labels,
        remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(
            description=remote.registry,
            docker_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(
                public_repository=remote.public_repository
            ),
        ),
    )


class ImageRepositories(pulumi.ComponentResource):
    repositories: dict[str, gcp.artifactregistry.Repository]
    """By repository id."""

    def __init__(
        self,
        name: str,
        *,
        plan: ImageMirror,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """A remote repository for each registry in `plan`; it depends on nothing else the stack builds."""
        super().__init__("tpu-serving:images:ImageRepositories", name, None, opts)
        self.repositories = {
            remote.repository_id: gcp.artifactregistry.Repository(
                f"{name}-{remote.repository_id}",
                repository_args(plan, remote),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for remote in plan.remotes
        }
        self.register_outputs({"repositories": [r.id for r in self.repositories.values()]})
