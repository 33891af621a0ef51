"""What the deployer's project must have for the Google Cloud resources a stack registers: one table, from which
`make preflight` (tooling/operations/preflight.py) takes the APIs and roles it checks for a stack and docs/deploying.md
"Prerequisites" its generated list (tooling/generate/docs.py).

TYPES maps every Pulumi `gcp:` resource type the program can register (tests/test_gcp_requirements.py runs every
shipped stack and fleet stack under mocks, and every `gcp.*` resource class the program constructs, against it) to
the API that serves it and the least predefined role that can create, update and delete it, with where that role is
granted. Roles, from Google's IAM roles reference (https://cloud.google.com/iam/docs/roles-permissions/<service>#<role>,
one page per service; `Role.source`). Read for this table: the artifactregistry page (roles/artifactregistry.admin:
`artifactregistry.*`) and the monitoring page (roles/monitoring.servicesEditor: `monitoring.services.*` and
`monitoring.slos.*`; monitoring.alertPolicies.create in roles/monitoring.alertPolicyEditor). The others follow
their service's page as linked (docs/deploying.md); only a real `pulumi up` as a deployer holding no more proves
them:

- roles/artifactregistry.admin: `artifactregistry.*`, with repositories.create and repositories.setIamPolicy
  (roles/artifactregistry.repoAdmin manages a repository's contents, not the repository or its IAM).
- roles/compute.networkAdmin: networks, subnetworks (the GLOBAL_MANAGED_PROXY subnet too), routers and Cloud NAT.
- roles/compute.securityAdmin: (region) security policies, which roles/compute.networkAdmin excludes.
- roles/compute.instanceAdmin.v1: compute.resourcePolicies.* (the TPU7x workload policy).
- roles/container.admin: clusters and node pools; roles/iam.serviceAccountUser: actAs the node service account they
  run as.
- roles/iam.serviceAccountAdmin: service accounts and their IAM policy (iam.serviceAccounts.setIamPolicy).
- roles/resourcemanager.projectIamAdmin: resourcemanager.projects.setIamPolicy (member-level project grants).
- roles/storage.admin: buckets and their IAM (storage.buckets.create, setIamPolicy), and objects.
- roles/iam.roleAdmin: iam.roles.* (the stack's custom role holding storage.buckets.get).
- roles/monitoring.dashboardEditor: monitoring.dashboards.*; roles/monitoring.alertPolicyEditor:
  monitoring.alertPolicies.*; roles/monitoring.notificationChannelEditor: monitoring.notificationChannels.*;
  roles/monitoring.servicesEditor: monitoring.services.* and monitoring.slos.*.
- roles/gkehub.admin: gkehub.memberships.* and gkehub.features.*.
- roles/logging.configWriter: logging.logMetrics.* (the release gate's log-based metrics).
- roles/cloudkms.admin on the key (cloudkms.cryptoKeys.getIamPolicy/setIamPolicy), not the project.
- roles/billing.costsManager on the billing account (billing.budgets.*), not the project; with it
  roles/serviceusage.serviceUsageConsumer (serviceusage.services.use) on the project the Budget's calls bill.

APIs: each type's own service endpoint (the provider's `*_custom_endpoint` base path); besides it, GKE image
streaming needs containerfilesystem.googleapis.com (https://cloud.google.com/kubernetes-engine/docs/how-to/image-
streaming "Before you begin"), Workload Identity iamcredentials.googleapis.com (tokens for the Google service account
a pod acts as), and the multi-cluster Gateway feature the APIs its setup page enables
(https://cloud.google.com/kubernetes-engine/docs/how-to/enabling-multi-cluster-gateways).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stacks.fleets import fleet

IAM_ROLES = "https://cloud.google.com/iam/docs/roles-permissions/{service}"

PROJECT, BILLING_ACCOUNT, KMS_KEY = "project", "billing account", "KMS key"


@dataclass(frozen=True)
class Role:
    name: str
    scope: str = PROJECT  # where it is granted: the stack's project, the billing account, the KMS key

    @property
    def source(self) -> str:
        role = self.name.removeprefix("roles/")
        return IAM_ROLES.format(service=role.split(".")[0]) + f"#{role}"


@dataclass(frozen=True)
class Needs:
    feature: str  # what in the stack registers the type, as the docs name it
    apis: tuple[str, ...]
    roles: tuple[Role, ...]
    # (API, feature, when): an API the resource needs only when its inputs (camelCase, as registered) say so
    conditional: tuple[tuple[str, str, Callable[[Mapping[str, Any]], bool]], ...] = ()


def _dig(inputs: Mapping[str, Any], *path: str) -> Any:
    value: Any = inputs
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _cluster_streams(inputs: Mapping[str, Any]) -> bool:
    return bool(_dig(inputs, "nodePoolDefaults", "nodeConfigDefaults", "gcfsConfig", "enabled"))


def _pool_streams(inputs: Mapping[str, Any]) -> bool:
    return bool(_dig(inputs, "nodeConfig", "gcfsConfig", "enabled"))


def _workload_identity(inputs: Mapping[str, Any]) -> bool:
    return bool(_dig(inputs, "workloadIdentityConfig", "workloadPool"))


COMPUTE, CONTAINER = "compute.googleapis.com", "container.googleapis.com"
IAM, CRM = "iam.googleapis.com", "cloudresourcemanager.googleapis.com"
MONITORING = "monitoring.googleapis.com"
STREAMING_API = "containerfilesystem.googleapis.com"
STREAMING = "image streaming (cluster.images.streaming)"
NETWORK_ADMIN = Role("roles/compute.networkAdmin")
SA_ADMIN = Role("roles/iam.serviceAccountAdmin")
SA_USER = Role("roles/iam.serviceAccountUser")
STORAGE_ADMIN = Role("roles/storage.admin")
AR_ADMIN = Role("roles/artifactregistry.admin")
GKEHUB_ADMIN = Role("roles/gkehub.admin")
# What the fleet's multi-cluster Gateway needs enabled (GKE's guides, stacks/fleets/fleet.py REQUIRED_APIS F1/F3), less
# what every stack needs already.
MULTI_CLUSTER_GATEWAY_APIS = tuple(
    api for api in fleet.REQUIRED_APIS if api not in ("compute.googleapis.com", "container.googleapis.com")
)

TYPES: dict[str, Needs] = {
    "gcp:artifactregistry/repository:Repository": Needs(
        "image mirror (cluster.images.mirror)", ("artifactregistry.googleapis.com",), (AR_ADMIN,)
    ),
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": Needs(
        "image mirror (cluster.images.mirror)", ("artifactregistry.googleapis.com",), (AR_ADMIN,)
    ),
    "gcp:billing/budget:Budget": Needs(
        "budget (cost.budget)",
        ("billingbudgets.googleapis.com",),
        # The Budget goes through a provider with billing_project and user_project_override (the Pulumi registry
        # page of gcp.billing.Budget: else the Billing Budgets API answers 403 to user credentials), which bills the
        # call to the stack's project: serviceusage.services.use there (roles/serviceusage.serviceUsageConsumer).
        (Role("roles/billing.costsManager", BILLING_ACCOUNT), Role("roles/serviceusage.serviceUsageConsumer")),
    ),
    "gcp:compute/network:Network": Needs("network", (COMPUTE,), (NETWORK_ADMIN,)),
    "gcp:compute/subnetwork:Subnetwork": Needs("network", (COMPUTE,), (NETWORK_ADMIN,)),
    "gcp:compute/router:Router": Needs("network (Cloud NAT)", (COMPUTE,), (NETWORK_ADMIN,)),
    "gcp:compute/routerNat:RouterNat": Needs("network (Cloud NAT)", (COMPUTE,), (NETWORK_ADMIN,)),
    "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy": Needs(
        "gateway source ranges (Cloud Armor)", (COMPUTE,), (Role("roles/compute.securityAdmin"),)
    ),
    "gcp:compute/resourcePolicy:ResourcePolicy": Needs(
        "TPU7x workload policy", (COMPUTE,), (Role("roles/compute.instanceAdmin.v1"),)
    ),
    "gcp:container/cluster:Cluster": Needs(
        "cluster",
        (CONTAINER,),
        (Role("roles/container.admin"), SA_USER),
        (
            (STREAMING_API, STREAMING, _cluster_streams),
            ("iamcredentials.googleapis.com", "Workload Identity (a pod's Google service account)", _workload_identity),
        ),
    ),
    "gcp:container/nodePool:NodePool": Needs(
        "TPU and CPU node pools",
        (CONTAINER,),
        (Role("roles/container.admin"), SA_USER),
        ((STREAMING_API, STREAMING, _pool_streams),),
    ),
    "gcp:gkehub/membership:Membership": Needs("fleet (tpu-serving:fleet)", ("gkehub.googleapis.com",), (GKEHUB_ADMIN,)),
    "gcp:gkehub/feature:Feature": Needs("fleet multi-cluster Gateway", MULTI_CLUSTER_GATEWAY_APIS, (GKEHUB_ADMIN,)),
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": Needs(
        "customer-managed keys (bucket.kmsKeyName, cluster.secretsEncryptionKey)",
        ("cloudkms.googleapis.com",),
        (Role("roles/cloudkms.admin", KMS_KEY),),
    ),
    "gcp:monitoring/dashboard:Dashboard": Needs(
        "dashboard", (MONITORING,), (Role("roles/monitoring.dashboardEditor"),)
    ),
    # logging.logMetrics.create/update/delete: roles/logging.configWriter ("read and write the configurations of
    # logs-based metrics and sinks", https://cloud.google.com/iam/docs/roles-permissions/logging#logging.configWriter)
    "gcp:logging/metric:Metric": Needs(
        "release gate log-based metrics (a workload's rollout)",
        ("logging.googleapis.com",),
        (Role("roles/logging.configWriter"),),
    ),
    "gcp:monitoring/alertPolicy:AlertPolicy": Needs(
        "alert policies (alerts)", (MONITORING,), (Role("roles/monitoring.alertPolicyEditor"),)
    ),
    "gcp:monitoring/notificationChannel:NotificationChannel": Needs(
        "alert notification channels (alerts)", (MONITORING,), (Role("roles/monitoring.notificationChannelEditor"),)
    ),
    "gcp:monitoring/customService:CustomService": Needs(
        "SLOs (alerts)", (MONITORING,), (Role("roles/monitoring.servicesEditor"),)
    ),
    "gcp:monitoring/slo:Slo": Needs("SLOs (alerts)", (MONITORING,), (Role("roles/monitoring.servicesEditor"),)),
    "gcp:projects/iAMMember:IAMMember": Needs(
        "project grants (node and adapter service accounts)",
        (CRM,),
        (Role("roles/resourcemanager.projectIamAdmin"),),
    ),
    "gcp:serviceaccount/account:Account": Needs("service accounts", (IAM,), (SA_ADMIN,)),
    "gcp:serviceaccount/iAMMember:IAMMember": Needs("Workload Identity grants", (IAM,), (SA_ADMIN,)),
    "gcp:storage/bucket:Bucket": Needs("model bucket", ("storage.googleapis.com",), (STORAGE_ADMIN,)),
    "gcp:storage/bucketIAMMember:BucketIAMMember": Needs(
        "model bucket grants", ("storage.googleapis.com",), (STORAGE_ADMIN,)
    ),
    "gcp:storage/bucketObject:BucketObject": Needs(
        "compile-cache placeholders", ("storage.googleapis.com",), (STORAGE_ADMIN,)
    ),
    # iam.roles.create/update/delete/undelete on the project: roles/iam.roleAdmin
    # (https://cloud.google.com/iam/docs/roles-permissions/iam#iam.roleAdmin)
    "gcp:projects/iAMCustomRole:IAMCustomRole": Needs(
        "the bucket metadata role (storage.buckets.get)", (IAM,), (Role("roles/iam.roleAdmin"),)
    ),
}


# Every role the program grants on the project (gcp:projects/iAMMember) -> to whom: what the deployer's
# roles/resourcemanager.projectIamAdmin may be limited to (docs/deploying.md "Prerequisites": its generated condition).
# tests/test_gcp_requirements.py runs every shipped stack, every fleet stack and the settings that add a grant, and
# holds this table (and the page's condition) equal to what they grant.
PROJECT_GRANTS: dict[str, str] = {
    "roles/container.defaultNodeServiceAccount": "the node service account",
    "roles/artifactregistry.reader": "the node service account, only with `cluster.images.mirror: false` (otherwise "
    "it reads the stack's own repository, granted there)",
    "roles/monitoring.viewer": "the metrics adapter's Kubernetes ServiceAccount (Workload Identity principal)",
    fleet.INGRESS_AGENT_ROLE: "the fleet stack's Multi Cluster Ingress service agent (only a fleet stack)",
}
# https://cloud.google.com/iam/docs/setting-limits-on-granting-roles: a condition on the role-granting role
CONDITION = "api.getAttribute('iam.googleapis.com/modifiedGrantsByRole', []).hasOnly([{roles}])"


def least_privilege_block() -> str:
    """docs/deploying.md's least-privilege condition on roles/resourcemanager.projectIamAdmin: every role of
    PROJECT_GRANTS, and to whom each is granted."""
    condition = CONDITION.format(roles=", ".join(f"'{role}'" for role in PROJECT_GRANTS))
    lines = [
        "Least privilege: grant `roles/resourcemanager.projectIamAdmin` with an IAM condition that limits it to the",
        "roles the program grants on the project",
        "([setting limits on granting roles](https://cloud.google.com/iam/docs/setting-limits-on-granting-roles)):",
        "",
        "```text",
        condition,
        "```",
        "",
        "| role granted on the project | to |",
        "|---|---|",
    ]
    lines += [f"| `{role}` | {whom} |" for role, whom in PROJECT_GRANTS.items()]
    lines += [
        "",
        "A deployer of regional stacks only may leave out the fleet's role; `roles/artifactregistry.reader` on a",
        "repository of the stack (`cluster.images.mirror`, the default) needs `roles/artifactregistry.admin` there.",
    ]
    return "\n".join(lines)


class UnknownType(KeyError):
    """A `gcp:` type without a TYPES entry: nothing says what it needs."""


@dataclass(frozen=True)
class Requirements:
    apis: dict[str, list[str]]  # API -> the features needing it, in the order first met
    roles: dict[Role, list[str]]


def _add(into: dict[Any, list[str]], key: Any, feature: str) -> None:
    features = into.setdefault(key, [])
    if feature not in features:
        features.append(feature)


def requirements(resources: Iterable[tuple[str, Mapping[str, Any]]]) -> Requirements:
    """The APIs and roles for registered (type, inputs): only `gcp:` types count; one without an entry raises."""
    apis: dict[str, list[str]] = {}
    roles: dict[Role, list[str]] = {}
    for type_, inputs in resources:
        if not type_.startswith("gcp:"):
            continue
        if type_ not in TYPES:
            raise UnknownType(f"{type_} has no entry in tooling/oracles/gcp_requirements.py TYPES")
        needs = TYPES[type_]
        for api in needs.apis:
            _add(apis, api, needs.feature)
        for api, feature, when in needs.conditional:
            if when(inputs):
                _add(apis, api, feature)
        for role in needs.roles:
            _add(roles, role, needs.feature)
    return Requirements(apis, roles)


def everything() -> Requirements:
    """Every API and role any stack can need (each conditional API counted): the docs' list."""
    apis: dict[str, list[str]] = {}
    roles: dict[Role, list[str]] = {}
    for needs in TYPES.values():
        for api in needs.apis:
            _add(apis, api, needs.feature)
        for api, feature, _ in needs.conditional:
            _add(apis, api, feature)
        for role in needs.roles:
            _add(roles, role, needs.feature)
    return Requirements(apis, roles)


def prerequisites_block() -> str:
    """docs/deploying.md's generated Prerequisites: the project's APIs as one command, then each API and role with
    the features that need it (a stack that registers none of them does not need it)."""
    every = everything()
    project_apis = list(every.apis)
    lines = ["- APIs enabled in the project (`make preflight` checks those the stack's resources need):", "  ```bash"]
    lines.append("  gcloud services enable \\")
    for i, api in enumerate(project_apis):
        lines.append(f"    {api}" + (" \\" if i < len(project_apis) - 1 else ""))
    lines += ["  ```", "", "  | API | needed by |", "  |---|---|"]
    lines += [f"  | `{api}` | {', '.join(features)} |" for api, features in every.apis.items()]
    lines += [
        "",
        "- Roles for whoever runs `pulumi up`, the least predefined role for each resource type the stack registers",
        "  (`make preflight` checks those on the project):",
        "",
        "  | role | granted on | needed by |",
        "  |---|---|---|",
    ]
    lines += [
        f"  | [`{role.name}`]({role.source}) | {role.scope} | {', '.join(features)} |"
        for role, features in every.roles.items()
    ]
    return "\n".join(lines)
