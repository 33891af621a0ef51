"""The GKE cluster, its system pool, node identity and network, as registered."""

import json

import pulumi
import pytest

from tests.conftest import STACK_FILES, make_config, recorded
from tooling.harness.offline import parse_stack_file

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"


def test_cluster_settings(run):
    rec = run(make_config())
    gke = rec.one(CLUSTER).inputs
    assert gke["name"] == "tpu-serving-dev"
    assert gke["location"] == "us-east5"
    assert gke["removeDefaultNodePool"] is True
    assert gke["workloadIdentityConfig"] == {"workloadPool": "tpu-test-project.svc.id.goog"}
    assert gke["monitoringConfig"]["managedPrometheus"] == {"enabled": True}
    assert "SYSTEM_COMPONENTS" in gke["monitoringConfig"]["enableComponents"]
    assert gke["loggingConfig"] == {"enableComponents": ["SYSTEM_COMPONENTS", "WORKLOADS"]}
    assert gke["releaseChannel"] == {"channel": "REGULAR"}
    assert gke["enableShieldedNodes"] is True
    # Control plane (control_plane_access): user traffic through the DNS-based endpoint, gated by IAM
    # (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation ; CIS GKE Benchmark 2.0.0 5.6.4
    # "Use DNS based access or private GKE control plane endpoints"); field names: pulumi-gcp 10.2.0
    # container/_inputs.py ClusterControlPlaneEndpointsConfig{DnsEndpointConfig,IpEndpointsConfig}Args.
    assert gke["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True},
        "ipEndpointsConfig": {"enabled": True},  # the nodes still use the private IP endpoint
    }
    # no CIDRs listed: the public IP endpoint is off (private endpoint only) and authorized networks are enforced
    # with no entry and no Google Cloud public addresses
    assert gke["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert gke["masterAuthorizedNetworksConfig"] == {"gcpPublicCidrsAccessEnabled": False}
    # GKE hardening guide: no client certificates, no legacy ABAC
    # (https://cloud.google.com/kubernetes-engine/docs/how-to/hardening-your-cluster)
    assert gke["masterAuth"] == {"clientCertificateConfig": {"issueClientCertificate": False}}
    assert gke["enableLegacyAbac"] is False
    # Dataplane V2 enforces NetworkPolicy itself; the Calico setting and add-on stay off so the two never mix
    # (https://cloud.google.com/kubernetes-engine/docs/concepts/dataplane-v2: "network policy enforcement is built in")
    assert gke["networkPolicy"] == {"enabled": False, "provider": "PROVIDER_UNSPECIFIED"}
    assert gke["addonsConfig"]["networkPolicyConfig"] == {"disabled": True}
    assert gke["datapathProvider"] == "ADVANCED_DATAPATH"  # NetworkPolicy enforcement
    assert gke["networkingMode"] == "VPC_NATIVE"
    assert gke["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}
    assert gke["resourceLabels"] == {"app": "tpu-serving", "stack": "dev", "environment": "dev"}
    assert gke["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert gke["nodeConfig"]["serviceAccount"].startswith("tpu-serving-dev-nodes@")


def test_dev_may_opt_out_to_the_public_ip_endpoint(run):
    rec = run(make_config(tpu_serving__cluster={"controlPlaneEndpoint": "ip"}))
    gke = rec.one(CLUSTER).inputs
    assert "controlPlaneEndpointsConfig" not in gke and "masterAuthorizedNetworksConfig" not in gke
    assert gke["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    assert gke["masterAuth"] == {"clientCertificateConfig": {"issueClientCertificate": False}}
    assert any("controlPlaneEndpoint=ip with no masterAuthorizedNetworks" in w for w in rec.warnings)
    kubeconfig = json.loads(rec.outputs["kubeconfig"])
    assert kubeconfig["clusters"][0]["cluster"] == {
        "server": "https://203.0.113.10",
        "certificate-authority-data": "LS0tLS1CRUdJTi1GQUtFLUNBLS0tLS0=",
    }
    assert not rec.outputs["getCredentialsCommand"].endswith("--dns-endpoint")


@pytest.mark.parametrize("environment", ["staging", "prod"])
def test_only_dev_may_use_the_ip_endpoint(run, environment):
    cfg = make_config(tpu_serving__environment=environment, tpu_serving__cluster={"controlPlaneEndpoint": "ip"})
    with pytest.raises(pulumi.RunError) as err:
        run(cfg, stack=environment)
    assert (
        f"tpu-serving:cluster.controlPlaneEndpoint: 'ip' is allowed only in dev (environment is '{environment}')"
    ) in str(err.value)


def test_master_authorized_networks_and_public_nodes(run):
    rec = run(
        make_config(
            tpu_serving__cluster={
                "privateNodes": False,
                "masterAuthorizedNetworks": [
                    {"cidrBlock": "203.0.113.0/24", "displayName": "office"},
                    {"cidrBlock": "198.51.100.7/32"},
                ],
            }
        )
    )
    gke = rec.one(CLUSTER).inputs
    assert gke["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [
            {"cidrBlock": "203.0.113.0/24", "displayName": "office"},
            {"cidrBlock": "198.51.100.7/32", "displayName": "198.51.100.7/32"},
        ],
        "gcpPublicCidrsAccessEnabled": False,
    }
    # listed CIDRs keep the public IP endpoint, reachable from them only
    assert gke["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert gke["privateClusterConfig"]["enablePrivateNodes"] is False
    assert any("privateNodes=false" in w for w in rec.warnings)


def test_system_pool_is_cpu_autoscaled_and_secured(run):
    rec = run(
        make_config(tpu_serving__cluster={"systemPool": {"machineType": "e2-standard-8", "minNodes": 2, "maxNodes": 5}})
    )
    system = rec.one(NODE_POOL, "cluster-system")
    inputs = system.inputs
    assert inputs["autoscaling"] == {"totalMinNodeCount": 2, "totalMaxNodeCount": 5, "locationPolicy": "BALANCED"}
    assert inputs["initialNodeCount"] == 1  # per zone, x3 zones of the regional cluster
    assert inputs["nodeConfig"]["machineType"] == "e2-standard-8"
    assert inputs["nodeConfig"]["labels"] == {"tpu-serving/role": "system"}
    assert inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert inputs["nodeConfig"]["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableIntegrityMonitoring": True,
    }
    assert "guestAccelerators" not in inputs["nodeConfig"]
    assert system.ignore_changes == ["initialNodeCount"]


def test_every_pool_uses_the_dedicated_node_service_account(run):
    rec = run(make_config())
    sa = rec.one("gcp:serviceaccount/account:Account")
    assert sa.inputs["accountId"] == "tpu-serving-dev-nodes"
    email = "tpu-serving-dev-nodes@tpu-test-project.iam.gserviceaccount.com"
    for node_pool in rec.of_type(NODE_POOL):
        assert node_pool.inputs["nodeConfig"]["serviceAccount"] == email
        assert node_pool.inputs["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    roles = {
        m.inputs["role"]: m.inputs["member"]
        for m in rec.of_type("gcp:projects/iAMMember:IAMMember")
        if m.name.startswith("cluster-nodes-")
    }
    # Artifact Registry reader on the stack's image repository only, not the project (cluster.images.mirror)
    assert roles == {"roles/container.defaultNodeServiceAccount": f"serviceAccount:{email}"}
    reads = rec.one("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember", "cluster-nodes-reads-docker-hub")
    assert (reads.inputs["role"], reads.inputs["member"]) == (
        "roles/artifactregistry.reader",
        f"serviceAccount:{email}",
    )


def test_created_network(run):
    rec = run(make_config())
    subnet = rec.one("gcp:compute/subnetwork:Subnetwork").inputs
    assert subnet["ipCidrRange"] == "10.0.0.0/20"
    assert subnet["privateIpGoogleAccess"] is True
    assert subnet["secondaryIpRanges"] == [
        {"rangeName": "pods", "ipCidrRange": "10.16.0.0/14"},
        {"rangeName": "services", "ipCidrRange": "10.20.0.0/20"},
    ]
    assert rec.one("gcp:compute/network:Network").inputs["autoCreateSubnetworks"] is False
    nat = rec.one("gcp:compute/routerNat:RouterNat").inputs
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    gke = rec.one(CLUSTER).inputs
    assert gke["network"].endswith("/networks/tpu-serving-dev")
    assert gke["subnetwork"].endswith("/subnetworks/tpu-serving-dev")


EXISTING_NETWORK = {
    "create": False,
    "network": "shared-vpc",
    "subnetwork": "gke",
    "podsRangeName": "p",
    "servicesRangeName": "s",
}


def test_existing_network_creates_nothing(run):
    rec = run(make_config(tpu_serving__cluster={"network": {**EXISTING_NETWORK, "nat": False}}))
    assert not [r for r in rec.resources if r.type.startswith("gcp:compute/")]
    gke = rec.one(CLUSTER).inputs
    assert gke["network"] == "projects/tpu-test-project/global/networks/shared-vpc"
    assert gke["subnetwork"] == "projects/tpu-test-project/regions/us-east5/subnetworks/gke"
    assert gke["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "p", "servicesSecondaryRangeName": "s"}


def test_zonal_cluster(run):
    rec = run(make_config(tpu_serving__cluster={"location": "us-east5-b"}))
    assert rec.one(CLUSTER).inputs["location"] == "us-east5-b"
    for node_pool in rec.of_type(NODE_POOL):
        assert node_pool.inputs["location"] == "us-east5-b"
    assert rec.outputs["getCredentialsCommand"] == (
        "gcloud container clusters get-credentials tpu-serving-dev --location us-east5-b --project tpu-test-project "
        "--dns-endpoint"
    )


def test_kubernetes_provider_uses_exec_plugin_and_secret_kubeconfig(run):
    import json

    rec = run(make_config())
    assert "kubeconfig" in rec.secret_outputs
    kubeconfig = json.loads(rec.outputs["kubeconfig"])
    user = kubeconfig["users"][0]["user"]
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert "token" not in user and "client-key-data" not in user
    # the DNS endpoint, with no cluster CA: it serves a publicly trusted certificate, as the kubeconfig
    # `gcloud container clusters get-credentials --dns-endpoint` writes
    assert kubeconfig["clusters"][0]["cluster"] == {"server": "https://gke-0123456789abcdef-tpu-serving-dev.x.gke.goog"}
    assert rec.outputs["clusterEndpoint"] == "gke-0123456789abcdef-tpu-serving-dev.x.gke.goog"
    provider = rec.one("pulumi:providers:kubernetes", "cluster-k8s")
    # the provider's kubeconfig input stays a secret (wrapped with Pulumi's secret signature)
    from pulumi.runtime import rpc

    wrapped = provider.inputs["kubeconfig"]
    assert wrapped[rpc._special_sig_key] == rpc._special_secret_sig
    assert json.loads(wrapped["value"]) == kubeconfig


def test_existing_network_gets_nat_when_asked(run):
    """nat: true on an existing network creates a router and NAT for exactly the cluster's subnet."""
    rec = run(make_config(tpu_serving__cluster={"network": {**EXISTING_NETWORK, "nat": True}}))
    assert not rec.of_type("gcp:compute/network:Network") and not rec.of_type("gcp:compute/subnetwork:Subnetwork")
    router = rec.one("gcp:compute/router:Router").inputs
    assert router["network"] == "projects/tpu-test-project/global/networks/shared-vpc"
    assert router["region"] == "us-east5"
    nat = rec.one("gcp:compute/routerNat:RouterNat").inputs
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"
    assert nat["subnetworks"] == [
        {
            "name": "projects/tpu-test-project/regions/us-east5/subnetworks/gke",
            "sourceIpRangesToNats": ["ALL_IP_RANGES"],
        }
    ]


def test_existing_network_needs_an_explicit_nat_choice(run):
    """Never silently ignore nat (issue 11 item 9): with an existing network the user says whether NAT is needed."""
    with pytest.raises(pulumi.RunError, match=r"cluster\.network\.nat: required when network\.create is false"):
        run(make_config(tpu_serving__cluster={"network": EXISTING_NETWORK}))


def test_every_node_pool_turns_the_kubelet_read_only_port_off(run):
    # pulumi-gcp 10.2.0 container NodePoolNodeConfigKubeletConfigArgs.insecure_kubelet_readonly_port_enabled
    # ("Possible values: TRUE, FALSE"; "strongly recommended to set this to FALSE"); CIS GKE Benchmark 3.2.4
    rec = run(make_config())
    pools = rec.of_type(NODE_POOL)
    assert pools
    for node_pool in pools:
        config = node_pool.inputs["nodeConfig"]
        assert config["kubeletConfig"] == {"insecureKubeletReadonlyPortEnabled": "FALSE"}, node_pool.name
        assert config["shieldedInstanceConfig"] == {"enableSecureBoot": True, "enableIntegrityMonitoring": True}
    gke = rec.one(CLUSTER).inputs
    assert gke["nodeConfig"]["kubeletConfig"] == {"insecureKubeletReadonlyPortEnabled": "FALSE"}


def test_binary_authorization_flow_logs_and_intranode_visibility_follow_profile_and_config(run):
    dev = run(make_config())
    gke = dev.one(CLUSTER).inputs
    # evaluation_mode: DISABLED or PROJECT_SINGLETON_POLICY_ENFORCE (pulumi-gcp 10.2.0 ClusterBinaryAuthorizationArgs)
    assert gke["binaryAuthorization"] == {"evaluationMode": "DISABLED"}
    assert gke["enableIntranodeVisibility"] is False
    assert "logConfig" not in dev.one("gcp:compute/subnetwork:Subnetwork").inputs

    prod = run(make_config(tpu_serving__environment="prod"), stack="prod")
    assert prod.one(CLUSTER).inputs["enableIntranodeVisibility"] is True
    assert prod.one("gcp:compute/subnetwork:Subnetwork").inputs["logConfig"] == {
        "aggregationInterval": "INTERVAL_5_SEC",
        "flowSampling": 0.5,
        "metadata": "INCLUDE_ALL_METADATA",
    }

    opted = run(
        make_config(
            tpu_serving__cluster={
                "binaryAuthorization": True,
                "intranodeVisibility": True,
                "network": {"flowLogs": True},
            }
        )
    )
    gke = opted.one(CLUSTER).inputs
    assert gke["binaryAuthorization"] == {"evaluationMode": "PROJECT_SINGLETON_POLICY_ENFORCE"}
    assert gke["enableIntranodeVisibility"] is True
    assert "logConfig" in opted.one("gcp:compute/subnetwork:Subnetwork").inputs


def test_flow_logs_need_a_created_subnet(run):
    cfg = make_config(
        tpu_serving__cluster={
            "network": {"create": False, "network": "vpc", "subnetwork": "sub", "nat": False, "flowLogs": True}
        }
    )
    with pytest.raises(pulumi.RunError) as err:
        run(cfg)
    assert "tpu-serving:cluster.network.flowLogs: true applies only to a subnet the stack creates" in str(err.value)


# ---- the cluster's argument builders, directly (no Pulumi program) ---------------------------------------


def test_gateway_api_asks_for_the_standard_channel_and_http_load_balancing():
    from components.cluster import cluster_addons_args

    on, off = cluster_addons_args(True), cluster_addons_args(False)
    assert on["gateway_api_config"].channel == "CHANNEL_STANDARD"
    assert on["addons_config"].http_load_balancing.disabled is False
    assert off["gateway_api_config"] is None and off["addons_config"].http_load_balancing is None
    for args in (on, off):  # Dataplane V2 enforces NetworkPolicy; GCS FUSE mounts model weights
        assert args["addons_config"].network_policy_config.disabled is True
        assert args["addons_config"].gcs_fuse_csi_driver_config.enabled is True


def test_system_pool_sizes_are_totals_over_the_cluster_zones():
    from components.cluster import system_pool_args
    from stacks.model.config_model import ClusterConfig
    from stacks.model.profiles import PROFILES
    from stacks.pieces import cluster as cluster_piece

    def args(location: str):
        config = ClusterConfig.model_validate({"systemPool": {"minNodes": 1, "maxNodes": 3}, "location": location})
        plan = cluster_piece.plan(
            config, name="c", region="us-east5", project="p", profile=PROFILES["dev"], labels={}, gateway_api=False
        )
        return system_pool_args(plan, cluster="c", service_account="sa")

    regional, zonal = args("us-east5"), args("us-east5-b")
    assert regional.name == "system" and regional.node_config.labels == {"tpu-serving/role": "system"}
    assert (regional.autoscaling.total_min_node_count, regional.autoscaling.total_max_node_count) == (1, 3)
    assert (zonal.autoscaling.total_min_node_count, zonal.autoscaling.total_max_node_count) == (1, 3)
    assert regional.node_config.kubelet_config.insecure_kubelet_readonly_port_enabled == "FALSE"


# ---- issue 22 item 1: a maintenance policy always carries exactly one window ---------------------------------

# The provider refuses a maintenance_policy without exactly one of these before any call to Google (ExactlyOneOf on
# each, hashicorp/terraform-provider-google-beta@v7.45.0 google-beta/services/container/resource_container_cluster.go
# "maintenance_policy"; the same at the v8 line's 93c65b2d), so `pulumi preview` of a stack that sends a policy
# with only its exclusions fails. Input names: pulumi-gcp 10.2.0 container.ClusterMaintenancePolicyArgs.
WINDOW_FIELDS = ("dailyMaintenanceWindow", "recurringWindow", "recurringMaintenanceWindow")
EXACTLY_ONE_WINDOW = (
    "one of `recurring_window`, `recurring_maintenance_window` and `daily_maintenance_window` is required if a "
    "`maintenance_policy` block is supplied"
)
DEFAULT_WINDOW = {
    "startTime": "2025-01-04T03:00:00Z",
    "endTime": "2025-01-04T11:00:00Z",
    "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
}


def windows(policy: dict) -> list[str]:
    return [field for field in WINDOW_FIELDS if policy.get(field)]


def test_the_installed_provider_sdk_states_the_window_rule():
    import inspect

    import pulumi_gcp as gcp

    # the SDK this program is built with documents the rule the test below holds every stack to
    doc = " ".join(inspect.getdoc(gcp.container.ClusterMaintenancePolicyArgs.__init__).split())
    assert EXACTLY_ONE_WINDOW in doc
    fields = set(inspect.signature(gcp.container.ClusterMaintenancePolicyArgs.__init__).parameters)
    assert {"daily_maintenance_window", "recurring_window", "recurring_maintenance_window"} <= fields


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name.removeprefix("Pulumi.").removesuffix(".yaml"))
def test_every_shipped_stack_sends_a_policy_the_provider_accepts(path):
    cfg = parse_stack_file(path)
    policy = recorded(path, False).one(CLUSTER).inputs.get("maintenancePolicy")
    hold = cfg.cluster_plan.hold_minor_and_node_upgrades  # the configured value, else the environment profile's
    if policy is None:
        assert not hold and cfg.cluster.maintenance.window is None
        return
    assert len(windows(policy)) == 1, policy
    assert bool(policy.get("maintenanceExclusions")) == hold


@pytest.mark.parametrize("environment", ["dev", "staging", "prod"])
@pytest.mark.parametrize("hold", [None, True, False])
@pytest.mark.parametrize(
    "window", [None, {"start": "2025-02-01T22:00:00Z", "end": "2025-02-02T04:00:00Z", "recurrence": "FREQ=DAILY"}]
)
def test_a_hold_always_comes_with_a_window_the_default_or_the_configured_one(environment, hold, window):
    from components.cluster import maintenance_policy
    from stacks.model.config_model import ClusterConfig
    from stacks.model.profiles import PROFILES
    from stacks.pieces import cluster as cluster_piece

    maintenance: dict = {"window": window} if window else {}
    if hold is not None:
        maintenance["holdMinorAndNodeUpgrades"] = hold
    config = ClusterConfig.model_validate({"maintenance": maintenance})
    profile = PROFILES[environment]
    held = profile.hold_minor_and_node_upgrades if hold is None else hold
    plan = cluster_piece.plan(
        config, name="c", region="us-east5", project="p", profile=profile, labels={}, gateway_api=False
    )
    args = maintenance_policy(plan)
    if not held and window is None:
        assert args is None  # nothing to send: GKE's default (any time)
        return
    policy = {
        "recurringWindow": args.recurring_window
        and {
            "startTime": args.recurring_window.start_time,
            "endTime": args.recurring_window.end_time,
            "recurrence": args.recurring_window.recurrence,
        },
        "dailyMaintenanceWindow": args.daily_maintenance_window,
        "recurringMaintenanceWindow": args.recurring_maintenance_window,
    }
    assert windows(policy) == ["recurringWindow"]
    given = (
        {"startTime": window["start"], "endTime": window["end"], "recurrence": window["recurrence"]} if window else {}
    )
    expected = DEFAULT_WINDOW if window is None else given
    assert policy["recurringWindow"] == expected
    assert bool(args.maintenance_exclusions) == held


def test_staging_without_a_window_previews_with_the_default_one(run):
    rec = run(make_config(tpu_serving__environment="staging"), stack="staging")
    policy = rec.one(CLUSTER).inputs["maintenancePolicy"]
    assert policy["recurringWindow"] == DEFAULT_WINDOW
    assert [e["exclusionName"] for e in policy["maintenanceExclusions"]] == ["tpu-serving-hold-minor-and-node-upgrades"]
