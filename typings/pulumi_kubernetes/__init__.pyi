# Type-checking view of the provider SDK (mypy_path in pyproject.toml): only the submodules the program uses,
# from the installed, pinned SDK, so mypy reads those instead of all of them (pulumi_gcp's own __init__ imports
# every service module under TYPE_CHECKING). A submodule not listed is an attr-defined error: add a line.
from pulumi_kubernetes import apiextensions as apiextensions
from pulumi_kubernetes import apiregistration as apiregistration
from pulumi_kubernetes import apps as apps
from pulumi_kubernetes import autoscaling as autoscaling
from pulumi_kubernetes import batch as batch
from pulumi_kubernetes import core as core
from pulumi_kubernetes import helm as helm
from pulumi_kubernetes import meta as meta
from pulumi_kubernetes import networking as networking
from pulumi_kubernetes import policy as policy
from pulumi_kubernetes import rbac as rbac
from pulumi_kubernetes import yaml as yaml
from pulumi_kubernetes.provider import Provider as Provider
from pulumi_kubernetes.provider import ProviderArgs as ProviderArgs
