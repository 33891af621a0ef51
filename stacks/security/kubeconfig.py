"""A kubeconfig for a GKE cluster that authenticates with `gke-gcloud-auth-plugin` (no static credentials)."""

from __future__ import annotations

import json


def gke_kubeconfig(context: str, endpoint: str, ca_certificate: str | None) -> str:
    """JSON (valid YAML) kubeconfig; the plugin exchanges the caller's gcloud credentials for a token.

    `ca_certificate` None: the server (GKE's DNS-based endpoint) presents a publicly trusted certificate, so the
    system roots verify it, as in the kubeconfig `gcloud container clusters get-credentials --dns-endpoint` writes."""
    server: dict = {"server": f"https://{endpoint}"}
    if ca_certificate is not None:
        server["certificate-authority-data"] = ca_certificate
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": server,
            }
        ],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(config, indent=2, sort_keys=True)


def get_credentials_command(cluster: str, location: str, project: str, dns_endpoint: bool = True) -> str:
    flag = " --dns-endpoint" if dns_endpoint else ""
    return f"gcloud container clusters get-credentials {cluster} --location {location} --project {project}{flag}"
