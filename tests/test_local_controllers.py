"""The chart controllers as local processes (tooling/local/local_controllers.py): which Deployment each stands for, and
how a chart's pod spec becomes a local process (arguments, configuration, environment, Endpoints). Pure: no cluster,
no go."""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path

import pytest
import yaml

from stacks.facts import versions
from tooling.local import local_cluster, local_controllers, toolchain
from tooling.local.local_controllers import CONTROLLERS

ROOT = Path(__file__).resolve().parent.parent
RECORD = json.loads((ROOT / "tooling" / "data" / "chart_objects.json").read_text())["charts"]


def test_every_controller_is_a_toolchain_binary_and_a_recorded_chart_deployment() -> None:
    binaries = {name for tool in versions.TOOLCHAIN for name, _ in tool.binaries}
    for controller in CONTROLLERS:
        assert controller.name in binaries
        chart = versions.CHARTS[controller.chart][versions.default_version(controller.chart)]
        recorded = [v for k, v in RECORD.items() if k.endswith(f"@{chart.version}") and chart.chart.split("/")[-1] in k]
        recorded += [v for k, v in RECORD.items() if k == f"{chart.chart}@{chart.version}"]
        assert recorded, controller.chart
        deployments = {o["name"] for o in recorded[0]["objects"] if o["kind"] == "Deployment"}
        assert controller.deployment in deployments, (controller.name, deployments)
        assert recorded[0]["namespace"] == controller.namespace


def test_controller_addresses_are_distinct_and_in_the_namespace_only_range() -> None:
    addresses = [local_controllers.address_of(c) for c in CONTROLLERS]
    assert len(set(addresses)) == len(addresses)
    assert all(a.startswith("198.18.") for a in addresses)  # RFC 2544, as LOCAL_ADDRESS


def test_arguments_point_at_local_copies_and_the_controllers_own_address(tmp_path: Path) -> None:
    mounts = {"/certs": tmp_path / "mnt/certs", "/controller_manager_config.yaml": tmp_path / "mnt/cfg.yaml"}
    args = [
        "--leader-elect",
        "--config=/controller_manager_config.yaml",
        "--cert-dir=/certs",
        "--tls-cert-file=/certs/tls.crt",
        "--metrics-bind-address=:8080",
        "--zap-log-level=2",
        "--certsx=/certsx",
    ]
    assert local_controllers.rewrite_args(args, mounts, "198.18.1.4") == [
        "--leader-elect=false",
        f"--config={tmp_path}/mnt/cfg.yaml",
        f"--cert-dir={tmp_path}/mnt/certs",
        f"--tls-cert-file={tmp_path}/mnt/certs/tls.crt",
        "--metrics-bind-address=198.18.1.4:8080",
        "--zap-log-level=2",
        "--certsx=/certsx",  # only a mount path or a path under it
    ]


def test_a_controller_runtime_configuration_serves_on_the_controllers_address(tmp_path: Path) -> None:
    chart_config = (
        "apiVersion: config.lws.x-k8s.io/v1alpha1\nkind: Configuration\nleaderElection:\n  leaderElect: true\n"
        "internalCertManagement:\n  enable: true\n"
    )
    mounts = {"/tmp/k8s-webhook-server/serving-certs": tmp_path / "certs"}
    config = yaml.safe_load(local_controllers.rewrite_config(chart_config, mounts, "198.18.1.1"))
    assert config["webhook"] == {"host": "198.18.1.1", "certDir": str(tmp_path / "certs")}
    assert config["health"]["healthProbeBindAddress"] == "198.18.1.1:8081"
    assert config["metrics"]["bindAddress"] == "0"
    assert config["leaderElection"]["leaderElect"] is False
    assert config["internalCertManagement"] == {"enable": True}  # the chart's own settings stay


def test_environment_as_the_kubelet_gives_it() -> None:
    container = {
        "env": [
            {"name": "A", "value": 1},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "S", "valueFrom": {"secretKeyRef": {"name": "x", "key": "y"}}},
            {"name": "WATCH_NAMESPACE"},  # `value: ""` as the API server serves it
        ]
    }
    assert local_controllers.env_of(container, "lws-system", "pod", "198.18.1.1") == {
        "A": "1",
        "NS": "lws-system",
        "IP": "198.18.1.1",
        "WATCH_NAMESPACE": "",
    }


def test_services_selecting_the_pods_get_endpoints_at_the_controllers_address() -> None:
    container = {"ports": [{"name": "webhook-server", "containerPort": 9443}, {"containerPort": 8443}]}
    service = {
        "metadata": {"name": "lws-webhook-service", "namespace": "lws-system"},
        "spec": {
            "selector": {"control-plane": "controller-manager"},
            "ports": [{"port": 443, "targetPort": "webhook-server"}, {"name": "m", "port": 8443, "targetPort": 8443}],
        },
    }
    assert local_controllers.selects(service, {"control-plane": "controller-manager", "x": "y"})
    assert not local_controllers.selects(service, {"x": "y"})
    assert not local_controllers.selects({"spec": {}}, {"x": "y"})  # a Service without a selector is not ours
    ports = local_controllers.endpoint_ports(service, container)
    assert ports == [{"port": 9443, "protocol": "TCP"}, {"port": 8443, "protocol": "TCP", "name": "m"}]
    (_, endpoints), (_, slice_) = local_controllers.endpoints_objects(service, "198.18.1.1", ports, ready=True)
    assert endpoints["subsets"] == [{"addresses": [{"ip": "198.18.1.1"}], "ports": ports}]
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "lws-webhook-service"
    assert slice_["endpoints"] == [{"addresses": ["198.18.1.1"], "conditions": {"ready": True}}]
    # until the controller's pod is Ready, the address is not ready (the API server does not dial it)
    (_, endpoints), (_, slice_) = local_controllers.endpoints_objects(service, "198.18.1.1", ports)
    assert endpoints["subsets"] == [{"notReadyAddresses": [{"ip": "198.18.1.1"}], "ports": ports}]
    assert slice_["endpoints"] == [{"addresses": ["198.18.1.1"], "conditions": {"ready": False}}]
    assert endpoints["metadata"]["labels"] == {local_cluster.LOCAL_LABEL: "controller"}
    assert local_controllers.hosts_lines([service], "198.18.1.1") == [
        "198.18.1.1 lws-webhook-service.lws-system.svc lws-webhook-service.lws-system.svc.cluster.local"
    ]


def test_restarts_back_off_as_the_kubelet_does() -> None:
    assert [local_controllers.backoff(n) for n in range(7)] == [10, 20, 40, 80, 160, 300, 300]


def test_a_controller_waits_for_the_secrets_it_mounts() -> None:
    spec = {
        "volumes": [
            {"name": "c", "secret": {"secretName": "kedaorg-certs"}},
            {"name": "o", "secret": {"secretName": "extra", "optional": True}},
            {"name": "m", "configMap": {"name": "cfg"}},
        ]
    }
    assert local_controllers.missing_secrets(spec, set()) == ["kedaorg-certs"]
    assert local_controllers.missing_secrets(spec, {"kedaorg-certs"}) == []


def test_volumes_under_tmp_are_bind_mounted_in_the_processs_own_mount_namespace(tmp_path: Path) -> None:
    certs = tmp_path / "mnt/tmp/k8s-webhook-server/serving-certs"
    certs.mkdir(parents=True)
    config = tmp_path / "mnt/controller_manager_config.yaml"
    config.write_text("")
    mounts = {"/tmp/k8s-webhook-server/serving-certs": certs, "/controller_manager_config.yaml": config}
    command = local_controllers.launch_command("tpu-local-x", "/bin/ctl", ["--a=1"], mounts)
    assert command[:6] == ["ip", "netns", "exec", "tpu-local-x", "sh", "-c"]
    assert command[6] == (
        f"mkdir -p '/tmp/k8s-webhook-server/serving-certs' && mount --bind '{certs}' "
        "'/tmp/k8s-webhook-server/serving-certs' && exec \"$@\""
    )
    assert command[7:] == ["sh", "/bin/ctl", "--a=1"]
    assert local_controllers.launch_command("n", "/bin/ctl", [], {"/certs": certs}) == [
        "ip", "netns", "exec", "n", "/bin/ctl"
    ]  # fmt: skip


def _pod(name: str, labels: dict[str, str], ip: str | None, ready: str = "True") -> dict:
    return {
        "metadata": {"name": name, "namespace": "custom-metrics", "labels": labels},
        "spec": {"containers": [{"ports": [{"name": "https", "containerPort": 443}]}]},
        "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": ready}]},
    }


def test_services_no_local_controller_serves_get_their_ready_pods_as_endpoints():
    # `pulumi up` waits for a Service with a selector to have a ready endpoint (pulumi-kubernetes
    # provider/pkg/await/service.go); the local cluster runs no endpoints controller, so the first up waited 10
    # minutes on the metrics adapter's Service, whose binary the local cluster does not run.
    from tooling.local.local_controllers import pod_endpoints

    service = {
        "metadata": {"name": "adapter", "namespace": "custom-metrics"},
        "spec": {"selector": {"run": "adapter"}, "ports": [{"name": "https", "port": 443, "targetPort": "https"}]},
    }
    pods = [
        _pod("a", {"run": "adapter"}, "10.0.0.2"),
        _pod("b", {"run": "adapter"}, "10.0.0.3", ready="False"),
        _pod("c", {"run": "other"}, "10.0.0.4"),
    ]
    got = pod_endpoints(service, pods)
    assert got["subsets"] == [
        {
            "addresses": [{"ip": "10.0.0.2", "targetRef": {"kind": "Pod", "name": "a", "namespace": "custom-metrics"}}],
            "ports": [{"port": 443, "protocol": "TCP", "name": "https"}],
        }
    ]
    assert pod_endpoints(service, pods[1:])["subsets"] == []
    assert pod_endpoints({**service, "spec": {"ports": service["spec"]["ports"]}}, pods) is None


def test_the_stackdriver_adapter_is_stood_in_by_prometheus_adapter_serving_every_api_it_registers() -> None:
    # the Stackdriver adapter cannot run here; without a server for its APIServices, discovery fails and no namespace
    # can be deleted (NamespaceDeletionDiscoveryFailure: the first e2e hung on gemma-fallback's namespace change)
    from stacks.monitoring.adapters import stackdriver
    from stacks.monitoring.adapters.entry import ADAPTER_NAMESPACE, AdapterContext

    (stand_in,) = local_controllers.STAND_INS
    binaries = {name for tool in versions.TOOLCHAIN for name, _ in tool.binaries}
    assert stand_in.toolchain_binary == "prometheus-adapter" and stand_in.toolchain_binary in binaries
    build = stackdriver.build(AdapterContext("p", "c", "s", chart=lambda key: None))  # type: ignore[arg-type,return-value]
    bodies = [p.body for p in build.parts if isinstance(p.body, dict)]
    deployment = next(b for b in bodies if b["kind"] == "Deployment")
    assert (stand_in.deployment, stand_in.namespace) == (deployment["metadata"]["name"], ADAPTER_NAMESPACE)
    # it serves custom.metrics.k8s.io (every version: rules) and external.metrics.k8s.io (externalRules)
    # (prometheus-adapter@v0.12.0 cmd/adapter/adapter.go main)
    config = yaml.safe_load(stand_in.config_text)
    assert config["rules"] and config["externalRules"]
    registered = {(b["spec"]["group"], b["spec"]["version"]) for b in bodies if b["kind"] == "APIService"}
    assert registered == {(g, v) for g, v, _ in stackdriver.API_SERVICES}
    assert {g for g, _ in registered} == {"custom.metrics.k8s.io", "external.metrics.k8s.io"}
    # the flags the two binaries share keep the Deployment's values (its port behind the Service's targetPort)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert local_controllers.kept_args(container, stand_in.kept_flags) == [
        f"--secure-port={stackdriver.PORT}",
        "--cert-dir=",
    ]
    assert stand_in.stands_in_for.startswith(stackdriver.NAME)
    assert local_controllers.address_of(stand_in) not in {local_controllers.address_of(c) for c in CONTROLLERS}


def test_a_secret_volume_changes_all_at_once_as_the_kubelet_writes_it(tmp_path: Path) -> None:
    # a reader sees the old Secret's files or the new one's, never a certificate beside another one's key
    folder = tmp_path / "certs"
    assert not local_controllers.write_volume(folder, {})
    assert local_controllers.write_volume(folder, {"tls.crt": b"", "tls.key": b""})  # the chart's placeholder
    first = (folder / "..data").resolve()
    assert local_controllers.write_volume(folder, {"tls.crt": b"cert", "tls.key": b"key"})
    assert (folder / "tls.crt").read_bytes() == b"cert" and (folder / "tls.key").is_symlink()
    assert not first.exists()  # the old payload is gone once the link points at the new one
    assert not local_controllers.write_volume(folder, {"tls.crt": b"cert", "tls.key": b"key"})
    assert local_controllers.write_volume(folder, {"tls.crt": b"new"})
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("..")) == ["tls.crt"]


def test_workload_identity_is_stood_in_by_a_key_whose_token_endpoint_is_a_closed_loopback_port(tmp_path: Path) -> None:
    # without Application Default Credentials KEDA's `gcp` pod identity cannot build the prometheus scaler
    # ("google: could not find default credentials": the first e2e's ScaledObject never got its HPA)
    import urllib.parse

    path = local_controllers.google_credentials(tmp_path, "keda-operator", "custom-metrics")
    creds = json.loads(path.read_text())
    assert creds["type"] == "service_account" and creds["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
    host = urllib.parse.urlsplit(creds["token_uri"]).hostname
    assert host == "127.0.0.1"  # a token request never leaves the namespace's loopback
    assert creds["client_email"].endswith(".invalid")  # no real account
    assert local_controllers.google_credentials(tmp_path, "x", "y") == path  # made once


# ---- readiness: a controller's pod is Ready when its process answers, as the kubelet's probe decides on GKE ---------


def test_a_pod_a_local_process_stands_in_for_stays_unready_until_probed() -> None:
    """kwok's pod-ready stage (Running and Ready at once) split: unchanged outside the controllers' namespaces,
    Running but not Ready in them (the supervisor sets Ready); kwok's own stage file is read, not copied."""
    kwok = next(t for t in versions.TOOLCHAIN if t.name == "kwok")
    source = toolchain.data_path(kwok, "kustomize/stage/pod/fast/pod-ready.yaml")
    if not source.exists():
        pytest.skip(f"kwok's stage files are kept with its toolchain build ({source}): `make toolchain`")
    kwok_stage = yaml.safe_load(source.read_text())
    namespaces = local_cluster.stand_in_namespaces()
    assert {"lws-system", "jobset-system", "kueue-system", "custom-metrics"} <= set(namespaces)
    ready, unready = local_cluster.readiness_stages(kwok_stage, namespaces)
    assert ready["metadata"]["name"] == "pod-ready" and unready["metadata"]["name"] != "pod-ready"
    assert ready["spec"]["next"] == kwok_stage["spec"]["next"]
    assert ready["spec"]["selector"]["matchExpressions"][-1] == {
        "key": ".metadata.namespace",
        "operator": "NotIn",
        "values": namespaces,
    }
    assert unready["spec"]["selector"]["matchExpressions"][-1]["operator"] == "In"
    template = unready["spec"]["next"]["statusTemplate"]
    assert 'status: "False"\n  type: Ready\n' in template and 'status: "False"\n  type: ContainersReady' in template
    assert "phase: Running" in template and "  ready: false\n  restartCount: 0\n  state:\n    running:" in template
    with pytest.raises(local_cluster.LocalClusterError, match="pod-ready stage changed"):
        local_cluster.readiness_stages(
            {**kwok_stage, "spec": {**kwok_stage["spec"], "next": {"statusTemplate": ""}}}, []
        )


def test_a_pods_deployment_is_its_replicasets_name_less_the_template_hash() -> None:
    pod = {
        "metadata": {
            "labels": {"pod-template-hash": "5d8f7c9b4"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "lws-controller-manager-5d8f7c9b4"}],
        }
    }
    assert local_controllers.owner_deployment(pod) == "lws-controller-manager"
    assert local_controllers.owner_deployment({"metadata": {"ownerReferences": [{"kind": "Job", "name": "x"}]}}) is None


def test_readiness_is_the_probe_and_the_ports_the_api_server_dials_with_the_tls_it_accepts() -> None:
    bundle = base64.b64encode(b"PEM").decode()
    listings = [
        ("webhooks", [{"webhooks": [{"clientConfig": {"service": {"namespace": "lws-system", "name": "lws-webhook-service"}, "caBundle": bundle}}]}]),  # noqa: E501
        ("spec", [{"spec": {"group": "external.metrics.k8s.io", "service": {"namespace": "custom-metrics", "name": "keda-api"}, "insecureSkipTLSVerify": True}}]),  # noqa: E501
        ("spec", [{"spec": {"group": "x.io", "names": {"kind": "X"}}}]),  # a CRD without a conversion webhook
    ]  # fmt: skip
    dialed = local_controllers.dialed_services(listings)
    assert dialed == {("lws-system", "lws-webhook-service"): "PEM", ("custom-metrics", "keda-api"): None}
    container = {
        "ports": [{"name": "webhook-server", "containerPort": 9443}, {"name": "probe", "containerPort": 8081}],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "probe"}},
    }
    webhook = {
        "metadata": {"name": "lws-webhook-service", "namespace": "lws-system"},
        "spec": {"selector": {"a": "b"}, "ports": [{"port": 443, "targetPort": "webhook-server"}]},
    }
    metrics = {  # selects the pods too, but nothing dials it (its metrics listener is off locally)
        "metadata": {"name": "lws-metrics", "namespace": "lws-system"},
        "spec": {"selector": {"a": "b"}, "ports": [{"port": 8443, "targetPort": 8443}]},
    }
    probes = local_controllers.probe_targets(container, [webhook, metrics], dialed)
    assert probes == [
        local_controllers.Probe("HTTP", 8081, "/readyz"),
        local_controllers.Probe("TLS", 9443, server_name="lws-webhook-service.lws-system.svc", ca="PEM"),
    ]


def test_a_port_answers_once_something_listens() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        assert not local_controllers.answers("127.0.0.1", local_controllers.Probe("TCP", port))
        server.listen()
        assert local_controllers.answers("127.0.0.1", local_controllers.Probe("TCP", port))
        # a TLS port where nothing speaks TLS does not answer (the API server's handshake would fail)
        assert not local_controllers.answers("127.0.0.1", local_controllers.Probe("TLS", port), timeout=0.3)


def test_readiness_is_written_as_the_kubelet_writes_it() -> None:
    pod = {
        "status": {
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Ready", "status": "False"},
                {"type": "ContainersReady", "status": "False"},
            ],
            "containerStatuses": [{"name": "manager", "ready": False}],
        }
    }
    patch = local_controllers.readiness_patch(pod, True)
    assert patch is not None
    conditions = {c["type"]: c["status"] for c in patch["status"]["conditions"]}
    assert conditions == {"Initialized": "True", "Ready": "True", "ContainersReady": "True"}
    assert patch["status"]["containerStatuses"] == [{"name": "manager", "ready": True}]
    assert local_controllers.readiness_patch(pod, False) is None  # already so: nothing written
