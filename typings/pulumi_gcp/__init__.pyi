# Type-checking view of the provider SDK (mypy_path in pyproject.toml): only the submodules the program uses,
# from the installed, pinned SDK, so mypy reads those instead of all of them (pulumi_gcp's own __init__ imports
# every service module under TYPE_CHECKING). A submodule not listed is an attr-defined error: add a line.
from pulumi_gcp import artifactregistry as artifactregistry
from pulumi_gcp import billing as billing
from pulumi_gcp import compute as compute
from pulumi_gcp import container as container
from pulumi_gcp import gkehub as gkehub
from pulumi_gcp import kms as kms
from pulumi_gcp import logging as logging
from pulumi_gcp import monitoring as monitoring
from pulumi_gcp import organizations as organizations
from pulumi_gcp import projects as projects
from pulumi_gcp import serviceaccount as serviceaccount
from pulumi_gcp import storage as storage
from pulumi_gcp.provider import Provider as Provider
from pulumi_gcp.provider import ProviderArgs as ProviderArgs
