"""The stack config schema: what a user may write under `tpu-serving:` in `Pulumi.<stack>.yaml`.

Keys are camelCase (the field name in camelCase is the key). Unknown keys are errors, so a typo never falls
back to a default silently. Cross-field rules (catalog, region, names) live in each piece (`stacks/pieces/`) and
`stacks.config`, which reports every problem at once with its key path.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from stacks import naming
from stacks.facts import catalog, gke_managed
from stacks.monitoring import adapters as metrics_adapters
from stacks.monitoring import metrics

# Upper bounds. GKE: 1,000 nodes per node pool per zone and 15,000 per cluster
# (https://cloud.google.com/kubernetes-engine/quotas); Persistent Disk: 64 TB (65,536 GB) per disk
# (https://cloud.google.com/compute/docs/disks#pdspecs). Replica counts and the like are Kubernetes int32 fields;
# the stack's own bounds (SLICES_MAX, REPLICAS_MAX, DAYS_MAX) keep an evaluation short and a typo visible.
NODES_MAX = 1000
DISK_GB_MAX = 65536
SLICES_MAX = 256
REPLICAS_MAX = 10000
PORT_MAX = 65535  # TCP port numbers are 16-bit
DAYS_MAX = 36500


class CamelModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class SystemPoolConfig(CamelModel):
    """The CPU pool for system pods and the platform's controllers (LWS, JobSet, adapters); never TPU."""

    machine_type: str = Field("e2-standard-4", description="Compute Engine machine type of the system nodes.")
    min_nodes: int = Field(1, ge=0, le=NODES_MAX, description="Autoscaling minimum, in total over the cluster's zones.")
    max_nodes: int = Field(3, ge=1, le=NODES_MAX, description="Autoscaling maximum, in total over the cluster's zones.")
    disk_size_gb: int = Field(100, ge=10, le=DISK_GB_MAX, description="Boot disk size of each system node.")


class AuthorizedNetworkConfig(CamelModel):
    cidr_block: str = Field(description="A CIDR allowed to reach the control plane, e.g. 203.0.113.0/24.")
    display_name: str = Field("", description="A label for the range in the console.")


class NetworkConfig(CamelModel):
    """Create a VPC, subnet (with Pod/Service secondary ranges) and Cloud NAT, or name existing ones."""

    create: bool = Field(True, description="false: use `network`/`subnetwork` that already exist.")
    network: str | None = Field(None, description="VPC name (or path); default derived from the cluster name.")
    subnetwork: str | None = Field(None, description="Subnet name (or path); default derived from the cluster name.")
    nodes_cidr: str = Field(
        "10.0.0.0/20",
        description="Primary range of the created subnet (nodes), written <address>/<length>. The three ranges must "
        "be disjoint, each /8 to /29 (Compute Engine's smallest subnet range).",
    )
    pods_cidr: str = Field(
        "10.16.0.0/14",
        description="Secondary range for Pods in the created subnet; /24 or larger (GKE gives each node a /24 of it).",
    )
    services_cidr: str = Field("10.20.0.0/20", description="Secondary range for Services in the created subnet.")
    pods_range_name: str = Field("pods", description="Name of the Pods secondary range (existing or created).")
    services_range_name: str = Field("services", description="Name of the Services secondary range.")
    flow_logs: bool | None = Field(
        None,
        description="VPC flow logs on the created subnet (5 s aggregation, half the flows sampled, all metadata); "
        "default true in prod, false elsewhere; only with create: true.",
    )
    nat: bool | None = Field(
        None,
        description="Create a Cloud Router + NAT for the cluster's subnet (also on an existing network) so private "
        "nodes reach the internet (they need it to pull public images); default true for a created network, required "
        "with create: false (false when that network already has NAT for the subnet).",
    )


class MaintenanceWindowConfig(CamelModel):
    """A recurring window in which GKE may start automatic upgrades (GKE recurring maintenance window)."""

    start: str = Field(description="Start of the first window, RFC 3339, e.g. 2025-01-04T03:00:00Z.")
    end: str = Field(description="End of the first window, RFC 3339; each recurrence lasts as long.")
    recurrence: str = Field(
        "FREQ=WEEKLY;BYDAY=SA,SU",
        description="RFC 5545 RRULE of the window, e.g. FREQ=WEEKLY;BYDAY=SA,SU: FREQ=DAILY, WEEKLY or MONTHLY with "
        "INTERVAL, BYDAY (MO..SU; 1SA under MONTHLY), BYMONTHDAY and BYSETPOS. The window must leave what GKE "
        "requires: at least 48 h in any 32 days, counting only contiguous blocks of 4 h or more (checked before "
        "anything is registered).",
    )


# The window a cluster gets when it holds upgrades and none is configured: the provider sends a maintenance policy
# only with exactly one window (components/cluster.py maintenance_policy). Weekly, Saturday and Sunday 03:00-11:00
# UTC: 16 hours a week in 8-hour windows.
DEFAULT_MAINTENANCE_WINDOW = MaintenanceWindowConfig(
    start="2025-01-04T03:00:00Z", end="2025-01-04T11:00:00Z", recurrence="FREQ=WEEKLY;BYDAY=SA,SU"
)


class MaintenanceConfig(CamelModel):
    """When GKE may upgrade the cluster by itself, and what it must leave alone until an operator upgrades."""

    window: MaintenanceWindowConfig | None = Field(
        None,
        description="When automatic upgrades may start; default: any time (GKE's default), or with "
        "holdMinorAndNodeUpgrades on, Saturday and Sunday 03:00-11:00 UTC every week: a maintenance policy carrying "
        "the hold's exclusion must also carry exactly one window (the provider refuses it otherwise, before any call "
        "to Google). Automatic upgrades start only inside it.",
    )
    hold_minor_and_node_upgrades: bool | None = Field(
        None,
        description="Hold GKE's automatic upgrades until the end of support of the running version: the cluster "
        "gets a NO_MINOR_OR_NODE_UPGRADES exclusion (a node upgrade recreates a multi-host slice whole), which holds "
        "every node pool, GKE's for a capacity list included, and is updated in place when this changes; control "
        "plane patches still apply, the system pool is patched by hand. Default true in staging and prod, false in "
        'dev. See docs/operations.md "GKE upgrades".',
    )
    hold_start: str = Field(
        "2025-01-01T00:00:00Z", description="Start of that exclusion, RFC 3339 (fixed, so previews stay clean)."
    )


class ImagesConfig(CamelModel):
    """How nodes get the images the version matrix pins (stacks/facts/images.py)."""

    streaming: bool = Field(
        True,
        description="GKE image streaming (gcfsConfig) on every TPU node pool and as the cluster's default for node "
        "pools GKE creates: a node starts a container before its whole image is pulled. Streams only images in "
        "Artifact Registry (hence `mirror`); needs the Container File System API (containerfilesystem.googleapis.com).",
    )
    mirror: bool = Field(
        True,
        description="An Artifact Registry remote repository in the stack's project and region for each public "
        "registry a pinned server image comes from (Docker Hub for vLLM); pods pull the pinned images through it (so "
        "they stream, and nodes need no internet egress for them). The node identities read it (repository-level "
        "IAM). Needs artifactregistry.googleapis.com. Images in Google's Artifact Registry projects are pulled as "
        "they are; an image a workload sets itself is used as given.",
    )


class ClusterConfig(CamelModel):
    """The GKE Standard cluster: location, version, system pool, network, control plane access, upgrades."""

    name: str | None = Field(
        None,
        description=f"GKE cluster name ({naming.CLUSTER_NAME_MAX} characters at most); default "
        "`<pulumi project>-<stack>`.",
    )
    location: str | None = Field(
        None, description="A region (regional cluster) or a zone of gcp:region (zonal cluster); default gcp:region."
    )
    release_channel: Literal["RAPID", "REGULAR", "STABLE", "EXTENDED"] = Field(
        "REGULAR", description="GKE release channel."
    )
    min_master_version: str | None = Field(
        None,
        description="Minimum control plane version; must not be below the minimum GKE version of any pool's TPU "
        "generation, nor what a capacity list (ComputeClass) needs; with gateway.enabled, required and at least "
        f"{gke_managed.INFERENCE_POOL_SINCE} (GKE installs the InferencePool CRD from there: docs/operations.md "
        '"What GKE manages"). A problem names the highest of these at once.',
    )
    system_pool: SystemPoolConfig = Field(
        default_factory=SystemPoolConfig,
        description="The CPU pool for system pods and controllers. minNodes/maxNodes are totals over the cluster's "
        "zones (GKE's total limits): a regional cluster creates the pool with one node in each of its 3 zones, then "
        "the autoscaler keeps the total between them (maxNodes is at least 3 there).",
    )
    private_nodes: bool = Field(True, description="Nodes get internal IPs only (egress through Cloud NAT).")
    control_plane_endpoint: Literal["dns", "ip"] = Field(
        "dns",
        description="How kubectl and the Kubernetes provider reach the control plane. dns (default): GKE's "
        "DNS-based endpoint, gated by IAM (container.clusters.connect), with the IP endpoint closed to the internet "
        "unless masterAuthorizedNetworks lists CIDRs; CI reaches it the same way. ip: the public IP endpoint (dev "
        "only, refused elsewhere; open to any address, with a warning, unless masterAuthorizedNetworks lists CIDRs).",
    )
    master_authorized_networks: list[AuthorizedNetworkConfig] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public IP endpoint; none: the IP endpoint is closed to the internet "
        "(controlPlaneEndpoint dns; with private nodes the public IP endpoint is off) or open to any address (ip, dev "
        "only).",
    )
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    intranode_visibility: bool | None = Field(
        None,
        description="Pod-to-pod traffic on one node goes through the VPC (seen by flow logs and firewall rules); "
        "default true in prod, false elsewhere.",
    )
    binary_authorization: bool = Field(
        False,
        description="Enforce the project's Binary Authorization policy (PROJECT_SINGLETON_POLICY_ENFORCE); the policy "
        "must admit every pinned image (stacks/facts/versions.py) or their pods are refused.",
    )
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    secrets_encryption_key: str | None = Field(
        None,
        description="Cloud KMS key for application-layer encryption of Kubernetes Secrets "
        "(projects/P/locations/L/keyRings/R/cryptoKeys/K, in gcp:region, the cluster's region); GKE's service agent "
        "gets cryptoKeyEncrypterDecrypter on it before the cluster. Unset: Secrets are encrypted by Google's keys only.",
    )
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Extra labels on GCP resources, added to the stack's own (app, stack, environment).",
    )
    images: ImagesConfig = Field(
        default_factory=ImagesConfig,
        description='Where nodes get container images from and how (docs/deploying.md "Container images").',
    )
    hpa_profile: Literal["PERFORMANCE", "NONE"] | None = Field(
        "PERFORMANCE",
        description="GKE's HPA profile (pod_autoscaling.hpa_profile): PERFORMANCE (faster metrics collection and "
        "scaling decisions for the HPAs of autoscaled workloads), NONE (opt out), or null to leave GKE's default.",
    )


class BucketConfig(CamelModel):
    """The stack bucket: checkpoints, Saxml roots, caches and Pathways scratch, each workload on its own prefixes."""

    name: str | None = Field(
        None, description='GCS bucket name (no dots, no "google"); default `<gcp project>-<pulumi project>-<stack>`.'
    )
    location: str | None = Field(
        None,
        description="Bucket location: a Cloud Storage region, predefined dual-region or multi-region, any case "
        "(stacks/facts/storage_locations.py, from https://cloud.google.com/storage/docs/locations); default gcp:region "
        "(same as the TPUs).",
    )
    force_destroy: bool | None = Field(
        None,
        description="Override the environment profile: delete objects on destroy (dev: true, else false; an override "
        "is reported as a warning).",
    )
    versioning: bool = Field(True, description="Keep noncurrent object versions (expired after noncurrentVersionDays).")
    noncurrent_version_days: int = Field(30, ge=1, le=DAYS_MAX, description="Days a noncurrent version is kept.")
    scratch_ttl_days: int = Field(
        7, ge=1, le=DAYS_MAX, description="Days Pathways scratch objects (pathways/) are kept."
    )
    access_logs: bool = Field(
        True,
        description="The bucket's hourly usage and daily storage logs, into a log bucket of its own (`<bucket>-logs`). "
        "Cloud Storage writes them as group:cloud-storage-analytics@google.com, which gets "
        "roles/storage.objectCreator on the log bucket, and the bucket waits for that grant: an organization that "
        "restricts IAM members to its own domains (constraints/iam.allowedPolicyMemberDomains; `make preflight` "
        "reads it) refuses it and the first `pulumi up` stops there. false: no log bucket, no grant, no access logs.",
    )
    access_log_days: int = Field(
        90,
        ge=1,
        le=DAYS_MAX,
        description="Days the bucket's hourly usage and daily storage logs are kept in its log bucket "
        "(`<bucket>-logs`, created with it; with accessLogs).",
    )
    kms_key_name: str | None = Field(
        None,
        description="Cloud KMS key new objects are encrypted with by default (CMEK): "
        "projects/P/locations/L/keyRings/R/cryptoKeys/K, in the bucket's location; the Cloud Storage service agent "
        "gets cryptoKeyEncrypterDecrypter on it before the bucket uses it. Unset: Google-managed encryption.",
    )


class AutoscalingConfig(CamelModel):
    min_nodes: int = Field(ge=0, le=NODES_MAX, description="Minimum nodes of each node pool of this pool.")
    max_nodes: int = Field(ge=1, le=NODES_MAX, description="Maximum nodes of each node pool of this pool.")


def _expected(allowed: tuple[str, ...]) -> str:
    """The allowed values as pydantic's literal_error words them ("'a', 'b' or 'c'")."""
    return " or ".join([", ".join(repr(a) for a in allowed[:-1]), repr(allowed[-1])])


Capacity = Literal["on-demand", "spot", "reservation", "flex-start"]


class TpuPoolConfig(CamelModel):
    name: str = Field(
        description="Pool name; node pools are `<name>` (single-host) or `<name>-s0` ... `<name>-s<N-1>` (one per "
        "slice, even for one slice, so adding slices never renames one)."
    )
    tpu: str = Field(description=f"TPU generation (stacks/facts/catalog.py): {', '.join(catalog.GENERATIONS)}.")
    topology: str = Field(
        description="Slice topology, e.g. 1x1, 2x2, 2x4, 4x4, 4x8 (v5e/v6e), 2x2x1, 2x2x4 (v4/v5p); tpu7x: 1x1x1, "
        "2x2x1 (one VM), 2x2x2, 2x2x4, 2x4x4, then every AxBxC with 4 <= A <= B <= C, each a multiple of 4, up to 144 "
        "4x4x4 cubes (xpk's rule). A wrong one is refused with the generation's list."
    )
    zone: str = Field(
        description="Zone of the slices; must be in gcp:region (refused otherwise). A zone Google's TPU zone list "
        "does not name for the generation is a warning naming that list (stacks/facts/catalog.py); so is a zone it marks "
        "single-tenant, unless the pool consumes a reservation (or takes the zone's named exception, e.g. spot)."
    )
    slices: int = Field(
        1,
        le=SLICES_MAX,
        description="Multi-host only: number of slices, one node pool each. Each slice's size goes through the "
        "autoscaler as 0 or whole (GKE does not resize an atomic slice): {min: hosts, max: hosts} for a reservation, "
        "{min: 0, max: hosts} for capacity that can stock out, unless autoscaling says otherwise.",
    )
    capacity: Capacity | list[Capacity] = Field(
        "on-demand",
        description="on-demand, spot, reservation or flex-start; or a list in priority order, e.g. [reservation, "
        "spot, on-demand, flex-start]: a GKE ComputeClass that falls back from one to the next (docs/stack-config.md); "
        "a list of one is that value.",
    )
    reservation: str | None = Field(
        None,
        description="With reservation in capacity: a reservation name, or projects/<p>/reservations/<name> for a "
        "shared one.",
    )
    autoscaling: AutoscalingConfig | None = Field(
        None,
        description="Default: from capacity. Single-host: {minNodes, maxNodes}; multi-host: only {minNodes: 0 or "
        "hosts, maxNodes: hosts} (slices are atomic); with a capacity list minNodes is 0 and maxNodes bounds what "
        "workloads may use. minNodes above 0 makes pulumi up create the nodes and wait for them; 0 leaves them to "
        "pending pods.",
    )
    machine_type: str | None = Field(
        None,
        description="Default: the catalog's. Only to choose among the machine types the catalog allows for the "
        "topology, e.g. ct6e-standard-4t for the 2-host v6e 2x4.",
    )
    warm_slices: int = Field(
        0,
        ge=0,
        le=SLICES_MAX,
        description="Multi-host only: slices kept up while idle (their node pools' minimum is the whole slice), so a "
        "scale-out finds a slice ready instead of waiting for GKE to provision one; billed all the time (the cost "
        "estimate's baseline). At most `slices`; not with a capacity list (GKE removes the node pools it creates when "
        "empty). Only on a reservation does `pulumi up` create them; on on-demand or spot capacity they start empty and "
        "are kept once the first scale-out brings them up (a create would wait for capacity and fail on a stockout). "
        "Single-host pools keep warm nodes with autoscaling.minNodes.",
    )
    zone_confirmed: bool = Field(
        False,
        description="Set true once `gcloud compute tpus accelerator-types list --zone=<zone>` shows this pool's "
        "generation in its zone (e.g. v6e-16 for a v6e 4x4) while the catalog's copy of Google's TPU zone list does "
        "not name it: silences that one warning, so the stack passes `render --strict`. Changes nothing deployed; a "
        "single-tenant zone still warns unless the pool consumes a reservation.",
    )

    @field_validator("capacity", mode="before")
    @classmethod
    def _capacity_list(cls, value: Any) -> Any:
        """One capacity, or a list naming each at most once; a list of one is that one value (node pools)."""
        allowed = get_args(Capacity)
        expected = _expected(allowed)
        if isinstance(value, list):
            bad = [v for v in value if v not in allowed]
            if bad or not value or len(set(value)) != len(value):
                raise PydanticCustomError(
                    "capacity_list",
                    "a capacity list names each of {expected} at most once, at least one",
                    {"expected": expected},
                )
            return value[0] if len(value) == 1 else value
        if value not in allowed:
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}, or a list of them", {"expected": expected}
            )
        return value


def _adapter_enum(schema: dict[str, Any]) -> None:
    schema["enum"] = list(metrics_adapters.choices())


class MonitoringConfig(CamelModel):
    """TPU metrics, the one metrics adapter the HPAs read, and the Cloud Monitoring dashboard."""

    adapter: str = Field(
        metrics_adapters.DEFAULT,
        title="Adapter",
        description="The one metrics adapter serving custom/external metrics to HPAs (exactly one per cluster: they "
        "register the same metrics APIServices; docs/addons-and-monitoring.md), or none.",
        json_schema_extra=_adapter_enum,
    )
    dashboard: bool = Field(True, description="Create a Cloud Monitoring dashboard for the serving stack.")
    tpu_metrics: bool = Field(
        True,
        description="Scrape the TPU device plugin (HBM, duty cycle; kube-system, port "
        f"{metrics.TPU_DEVICE_PLUGIN_PORT}) when TPU pools exist.",
    )
    scrape_interval: str = Field(
        "15s", pattern=r"^[1-9][0-9]*s$", description="Scrape interval of the stack's PodMonitorings, e.g. 15s."
    )

    @field_validator("adapter", mode="before")
    @classmethod
    def _registered_adapter(cls, value: Any) -> Any:
        """One of the registry's adapters or `none`, read at validation time (stacks/metrics_adapters)."""
        allowed = metrics_adapters.choices()
        if value not in allowed:
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": _expected(allowed)})
        return value


class GatewayConfig(CamelModel):
    """GKE Inference Gateway in front of the vllm workloads: one Gateway per stack, an InferencePool, endpoint
    picker and HTTPRoute per workload (a workload may opt out)."""

    enabled: bool = Field(False, description="Serve every vllm workload through one GKE Inference Gateway.")
    exposure: Literal["internal", "external"] = Field(
        "internal",
        description="internal: regional internal Application Load Balancer (VPC clients only); external: regional "
        "external Application Load Balancer, which needs sourceRanges or cloudArmorPolicy.",
    )
    source_ranges: list[str] = Field(
        default_factory=list,
        description="external only: client CIDRs allowed through (a regional Cloud Armor policy the stack creates "
        "denies every other source).",
    )
    cloud_armor_policy: str | None = Field(
        None,
        description="external only: name of an existing regional Cloud Armor security policy (in gcp:region) to "
        "attach instead of sourceRanges.",
    )
    proxy_subnet: Literal["create", "existing"] | None = Field(
        None,
        description="The proxy-only subnet (REGIONAL_MANAGED_PROXY, ACTIVE) the regional load balancers need in the "
        "cluster's VPC and region: create (default for a network the stack creates) or existing (the network "
        "already has one). Required when cluster.network.create is false.",
    )
    proxy_subnet_cidr: str = Field(
        "10.24.0.0/23", description="Range of the created proxy-only subnet (/26 or larger; GKE recommends /23)."
    )
    fleet_export: bool = Field(
        False,
        description="Export every gateway-served workload's InferencePool (networking.gke.io/export) and its KV-cache "
        "metric to a fleet stack's multi-cluster Inference Gateway (GKE, Preview; docs/fleet.md) instead of serving "
        "it through a Gateway of this stack: no Gateway, route or proxy-only subnet here. Needs an existing shared "
        "VPC (cluster.network.create: false), no proxySubnet, cluster.releaseChannel RAPID and cluster.minMasterVersion "
        "1.35.1-gke.1396000 or later (where GKE documents exporting a metric to the load balancer).",
    )


class BudgetConfig(CamelModel):
    """A monthly Cloud Billing budget with threshold alerts (pulumi_gcp billing.Budget; the billingbudgets API)."""

    billing_account: str = Field(
        pattern=r"^[0-9A-Z]{6}-[0-9A-Z]{6}-[0-9A-Z]{6}$",
        description="The Cloud Billing account ID that pays for the project, XXXXXX-XXXXXX-XXXXXX "
        "(https://cloud.google.com/billing/docs/how-to/find-billing-account-id). Creating the budget needs "
        "roles/billing.costsManager (or billing.admin) on that account and billingbudgets.googleapis.com enabled.",
    )
    monthly_amount: int = Field(
        ge=1, le=10**12, description="The budget per calendar month, in whole units of the account's currency."
    )
    currency_code: str | None = Field(
        None,
        pattern=r"^[A-Z]{3}$",
        description="ISO 4217 code; must be the billing account's currency (default: the account's).",
    )
    thresholds: list[float] = Field(
        default_factory=lambda: [0.5, 0.9, 1.0],
        min_length=1,
        description="Alert when current spend passes these fractions of the amount (0.5 = 50%), each above 0 and at "
        "most 10, without repeats.",
    )
    notification_channels: list[str] = Field(
        default_factory=list,
        max_length=5,
        description="Up to 5 Cloud Monitoring email channels (projects/<project>/notificationChannels/<id>) alerted "
        "besides the billing account's administrators and users.",
    )
    scope: Literal["stack", "project"] = Field(
        "stack",
        description="stack: only the project's resources labelled with this stack (stack=<stack>: the cluster, its "
        "node pools and the bucket); project: everything the project spends.",
    )

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, value: list[float]) -> list[float]:
        if any(not 0 < t <= 10 for t in value) or len(set(value)) != len(value):
            raise PydanticCustomError("thresholds", "each threshold above 0 and at most 10, without repeats", {})
        return value

    @field_validator("notification_channels")
    @classmethod
    def _channels(cls, value: list[str]) -> list[str]:
        bad = [c for c in value if not re.fullmatch(r"projects/[^/]+/notificationChannels/[^/]+", c)]
        if bad:
            # the problem shows the value given ("got ..."): the message names the form only, not the value again
            raise PydanticCustomError(
                "channel", "{count} not of the form projects/<project>/notificationChannels/<id>", {"count": len(bad)}
            )
        return value


class CostConfig(CamelModel):
    """Cost attribution: GKE cost allocation, the workloads' names on their node pools, an optional budget."""

    allocation: bool = Field(
        True,
        description="GKE cost allocation: the cluster's Cloud Billing export breaks its cost down by namespace and "
        "Kubernetes label (each workload has its own namespace by default). Every TPU node pool also carries the "
        "name of the workloads that run on it as the resource label tpu-workload.",
    )
    budget: BudgetConfig | None = Field(None, description="A monthly budget with alerts; none by default.")


# ---- alerts ---------------------------------------------------------------------------------------------


class AlertChannelConfig(CamelModel):
    """Where alerts go: a Cloud Monitoring notification channel the stack creates (email, pubsub) or one that
    already exists (its id)."""

    type: Literal["email", "pubsub", "existing"] = Field(
        description="email: an email address; pubsub: a Pub/Sub topic (projects/P/topics/T; Cloud Monitoring's "
        "service agent needs roles/pubsub.publisher on it); existing: a channel that already exists "
        "(projects/P/notificationChannels/ID), e.g. PagerDuty or Slack set up in the console."
    )
    address: str = Field(description="The email address, topic path or channel id, as `type` says.")
    page: bool = Field(
        False,
        description="A paging channel: it receives only the paging (CRITICAL) alerts, and only where paging is on "
        "(alerts.paging); every other channel receives every alert.",
    )


class AlertsConfig(CamelModel):
    """Cloud Monitoring alert policies for every serving workload and the cluster's TPU capacity, and the SLOs the
    workloads' `slo` settings ask for (docs/operations.md "Alerts")."""

    enabled: bool | None = Field(
        None,
        description="Create the alert policies and SLOs; default true in staging and prod, false in dev. While "
        "tpu-serving:paused is true every policy stays and is disabled.",
    )
    paging: bool | None = Field(
        None,
        description="Send the paging (CRITICAL) alerts to the channels marked page; default true in prod only.",
    )
    channels: list[AlertChannelConfig] = Field(
        default_factory=list,
        description="Notification channels; none: the policies open incidents in Cloud Monitoring only.",
    )
    pending_minutes: int = Field(
        15, ge=1, le=1440, description="Minutes a workload's pod may stay Pending before an alert (TPU capacity)."
    )
    queue_minutes: int = Field(
        10,
        ge=1,
        le=1440,
        description="Minutes the requests waiting per replica may stay above the HPA's target before an alert.",
    )
    hbm_fraction: float = Field(
        0.98,
        gt=0,
        le=1,
        description="Fraction of a TPU node's HBM in use above which an alert fires (JAX preallocates most of HBM, so "
        "a serving node sits near 0.9 by design).",
    )
    gateway_error_ratio: float = Field(
        0.05,
        gt=0,
        le=1,
        description="Share of a gateway-served workload's requests that failed on the server side (the endpoint picker's error_code ModelServerError, Internal, ServiceUnavailable or Unknown) over 5 minutes.",
    )


# ---- workloads ------------------------------------------------------------------------------------------


class ServiceConfig(CamelModel):
    """The Kubernetes Service in front of the workload's HTTP server."""

    port: int = Field(8000, ge=1, le=PORT_MAX, description="Service port in front of the HTTP server.")
    type: Literal["ClusterIP", "LoadBalancer"] = Field(
        "ClusterIP", description="ClusterIP, or LoadBalancer (always an internal passthrough load balancer)."
    )


class LatencyObjective(CamelModel):
    """A latency SLO: `goal` of the requests within `thresholdSeconds`, e.g. 0.9 within 2 s is a p90 of 2 s."""

    threshold_seconds: float = Field(
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="The latency a good request stays within; a bucket bound of the server's histogram (a problem "
        "names the bounds otherwise).",
    )
    goal: float = Field(
        0.9, ge=0.5, le=0.9999, description="Fraction of requests that must be good (0.9: the 90th percentile)."
    )


class SloConfig(CamelModel):
    """Cloud Monitoring SLOs on the series the stack scrapes, each with multi-window burn-rate alerts."""

    time_to_first_token: LatencyObjective | None = Field(None, description="Time to first token objective.")
    time_per_output_token: LatencyObjective | None = Field(None, description="Time per output token objective.")
    availability: float | None = Field(
        None,
        ge=0.5,
        le=0.9999,
        description="Fraction of finished requests that must end well (stop or length, not abort or error).",
    )
    window_days: int = Field(28, ge=1, le=30, description="Rolling window of every objective, in days (1-30).")


class GateConfig(CamelModel):
    """What `make promote` measures the candidate with and what it must meet (tooling/operations/promote.py)."""

    scenario: str = Field(
        "chat",
        description="A benchmark scenario (stacks/serving/benchmark.py SCENARIOS: request rate, input and output "
        "lengths) the gate's Job runs against the candidate's pool.",
    )
    max_regression: float = Field(
        0.1,
        ge=0,
        le=1,
        description="How much worse than the current release's accepted result the candidate may be: its p90 time "
        "to first token and time per output token at most this fraction higher, its output throughput at most "
        "this fraction lower.",
    )
    min_goodput: float = Field(
        0.9,
        gt=0,
        le=1,
        description="Fraction of the benchmark's requests that must meet the workload's latency SLO thresholds "
        "(slo.timeToFirstToken, slo.timePerOutputToken): below it the candidate is rolled back.",
    )


class RolloutAccepted(CamelModel):
    """The current release's last accepted benchmark result (written by `make promote` at a full promotion)."""

    ttft_p90_seconds: float = Field(gt=0, allow_inf_nan=False, description="p90 time to first token, seconds.")
    tpot_p90_seconds: float = Field(gt=0, allow_inf_nan=False, description="p90 time per output token, seconds.")
    output_tokens_per_second: float = Field(gt=0, allow_inf_nan=False, description="Output throughput, tokens/s.")
    goodput: float = Field(ge=0, le=1, description="Fraction of requests within the SLO thresholds.")
    source: str = Field(description="Where the result was read (gs:// report of the gate Job).")


class RolloutDecision(CamelModel):
    """What `make promote` last decided (it writes this; the review shows it)."""

    action: Literal["advance", "hold", "promote", "rollback"] = Field(description="The decision.")
    weight: int = Field(ge=0, le=100, description="The candidate's weight after the decision.")
    reason: str = Field(description="Why, in words (the measured values against the gate).")
    at: str = Field(description="When (UTC, ISO 8601).")


class RolloutConfig(CamelModel):
    """A release of a gateway-served workload as a gated train: the current release and a candidate as two
    server sets, each behind its own InferencePool, under the workload's one HTTPRoute whose backend weights the
    stack owns (docs/operations.md "Release train"). A type adds `candidate` (the fields a release changes)."""

    strategy: Literal["canary", "blueGreen"] = Field(
        "canary",
        description="canary: the candidate's weight walks `steps`; blueGreen: 0 until the gate passes, then 100.",
    )
    steps: list[int] = Field(
        default_factory=lambda: [10, 50, 100],
        min_length=1,
        max_length=20,
        description="canary: the candidate's weights in percent, increasing, the last 100.",
    )
    weight: int = Field(
        0,
        ge=0,
        le=100,
        description="The candidate's share of the route's requests now, in percent (0 or a step); written by "
        "`make promote`, applied by the next `pulumi up`.",
    )
    mirror: bool = Field(
        False,
        description="Mirror the current release's requests to the candidate (HTTPRoute RequestMirror): refused; "
        "GKE's Gateway mirrors to a Service, and neither GKE nor the inference extension documents a mirror to an "
        'InferencePool (docs/operations.md "Release train").',
    )
    gate: GateConfig = Field(default_factory=GateConfig, description="The benchmark gate `make promote` applies.")
    slot: Literal["a", "b"] = Field(
        "a",
        description="Which of the workload's two server sets runs the current release: a (objects named after the "
        "workload) or b (`<name>-b`); the candidate runs in the other. A full promotion flips it, so the "
        "candidate's servers become the current release's without a restart.",
    )
    accepted: RolloutAccepted | None = Field(
        None, description="The current release's last accepted benchmark result (written by `make promote`)."
    )
    last_decision: RolloutDecision | None = Field(None, description="What `make promote` last decided.")
    attempt: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="The gate's attempt number, in its Job's name and its report's bucket path: `make promote` adds "
        "one at each hold and rollback, so the next `pulumi up` runs a new benchmark (a new Job, a fresh report "
        "path) for the same candidate and weight, or for a candidate proposed again after a rollback.",
    )


class AdvisoryAck(CamelModel):
    """A published security advisory a prod workload runs with on purpose (the version guard,
    stacks/serving/version_guard.py): its id as the release table (stacks/facts/releases.py) records it, and why."""

    id: str = Field(
        pattern=r"^(CVE-\d{4}-\d{4,}|GHSA(-[23456789cfghjmpqrvwx]{4}){3}|PYSEC-\d{4}-\d+|unknown-release)$",
        description="The advisory's id (CVE-..., GHSA-... or PYSEC-...), as the version guard's problem names it; "
        "`unknown-release` to run an engine image whose release the release table cannot judge (e.g. a nightly tag).",
    )
    reason: str = Field(
        min_length=1,
        max_length=500,
        pattern=r"\S",
        description="Why this workload runs with it (e.g. the vulnerable endpoint is not reachable); shown in every "
        "preview's warnings.",
    )


class WorkloadConfig(CamelModel):
    """Keys every workload type has."""

    name: str = Field(description="Workload name; its Kubernetes objects and identity are named after it.")
    pool: str = Field(description="The tpuPools entry to run on; topology, slices and chips come from it.")
    namespace: str | None = Field(
        None, description="Kubernetes namespace, created by the stack (unless default); default: the workload name."
    )
    slo: SloConfig | None = Field(
        None,
        description="Serving objectives (tpu-serving:alerts): Cloud Monitoring SLOs with burn-rate alerts; only what "
        "the workload's server exports (a problem names it otherwise).",
    )
    acknowledge_advisories: list[AdvisoryAck] = Field(
        default_factory=list,
        max_length=50,
        description="Open high or critical advisories of the engine release this workload runs that prod accepts "
        "anyway, each with a reason (the version guard refuses them in prod otherwise; each stays a warning).",
    )

    def overrides_images(self) -> bool:
        """It runs images of its own instead of its type's pinned ones (any key of its `images` set): the TPU
        generations it serves are then its own check's (versions.image_gaps), not its type's defaults'."""
        images = getattr(self, "images", None)
        return images is not None and any(v is not None for v in images.model_dump().values())


class HpaTargetConfig(CamelModel):
    """One metric an HPA scales on, and its per-replica target: each workload type narrows `name` to the metrics it
    offers (its own registry's keys, e.g. workloads/jetstream/config.py HpaMetricConfig)."""

    name: str = Field(description="A metric the workload's type offers.")
    target: float = Field(
        gt=0,
        le=1e15,
        allow_inf_nan=False,
        description="Value one replica should carry, in the metric's unit.",
    )


class HpaScalingPolicy(CamelModel):
    """autoscaling/v2 HPAScalingPolicy; bounds from kubernetes pkg/apis/autoscaling/validation/validation.go
    (value > 0, 0 < periodSeconds <= MaxPeriodSeconds = 1800)."""

    type: Literal["Pods", "Percent"] = Field(description="Pods or Percent.")
    value: int = Field(ge=1, le=2**31 - 1, description="Pods or percent of current replicas per period.")
    period_seconds: int = Field(ge=1, le=1800, description="Window the policy holds for (1-1800 s).")


class HpaScalingRules(CamelModel):
    """autoscaling/v2 HPAScalingRules (stabilizationWindowSeconds <= MaxStabilizationWindowSeconds = 3600; a given
    policy list has at least one policy)."""

    stabilization_window_seconds: int | None = Field(None, ge=0, le=3600, description="0-3600 s.")
    select_policy: Literal["Max", "Min", "Disabled"] | None = Field(None, description="Max, Min or Disabled.")
    policies: list[HpaScalingPolicy] | None = Field(None, min_length=1, description="At least one policy.")


class HpaBehavior(CamelModel):
    scale_up: HpaScalingRules | None = None
    scale_down: HpaScalingRules | None = None


class HpaAutoscalingConfig(CamelModel):
    """An HPA on a workload: each workload type narrows `metrics` to its own HpaTargetConfig (e.g.
    workloads/jetstream/config.py JetStreamAutoscalingConfig)."""

    min_replicas: int = Field(1, le=REPLICAS_MAX, description="At least 1.")
    max_replicas: int = Field(le=REPLICAS_MAX, description="At most what the pool's nodes can hold.")
    metrics: list[HpaTargetConfig] = Field(min_length=1, description="Combined in one HPA: the largest proposal wins.")
    behavior: HpaBehavior | None = Field(None, description="autoscaling/v2 HPA behavior (scaleUp/scaleDown).")
