"""The fleet stack (tpu-serving:fleet; stacks/fleets/fleet.py, docs/fleet.md): one model served from two or more regional
stacks through GKE's multi-cluster Inference Gateway (Preview).

It reads each regional stack's `fleet` and `kubeconfig` outputs through `pulumi.StackReference`, checks every rule
before registering anything else (a pulumi.RunError lists every problem), and owns: a fleet membership per
cluster (location global), the multi-cluster ingress feature with its config membership, a GLOBAL_MANAGED_PROXY
proxy-only subnet per region in the shared VPC (unless the region names its existing one), the Multi Cluster Ingress
service agent's role, and in the config cluster the Gateway, a route, health check and
backend policy per imported pool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import register_manifest
from stacks.fleets import fleet
from stacks.pieces import environment as environment_piece
from stacks.problems import ConfigError, Problem
from stacks.pulumi_config import all_config_keys


def fleet_config(raw: Any, project: str | None, other_keys: tuple[str, ...] = ()) -> tuple[Any, list[Problem]]:
    """(tpu-serving:fleet as the model or None, every problem of it and of gcp:project, the fleet's host project)."""
    cfg, problems = fleet.parse_config(raw, other_keys)
    problems = environment_piece.project_problems(project) + problems
    return (None if problems else cfg), problems


def load_fleet_config(raw: Any, project: str | None, other_keys: tuple[str, ...] = ()) -> fleet.FleetConfig:
    """tpu-serving:fleet and gcp:project, before anything is registered; a RunError lists every problem."""
    cfg, problems = fleet_config(raw, project, other_keys)
    if cfg is None:
        raise pulumi.RunError(str(ConfigError(pulumi.get_stack(), problems)))
    return cfg


def build_fleet(cfg: fleet.FleetConfig, project: str, gateway_types: Sequence[str]) -> None:
    """Reference every regional stack, then (once their outputs are read) check and build the fleet. `gateway_types`:
    the workload types the gateway serves (WorkloadRegistry.gateway_types), named when a member exports none."""
    refs = {r.stack: pulumi.StackReference(f"region-{i}", stack_name=r.stack) for i, r in enumerate(cfg.regions)}
    outputs = pulumi.Output.all(*[ref.get_output(fleet.OUTPUT) for ref in refs.values()])
    planned = outputs.apply(
        lambda values: _checked_plan(cfg, dict(zip(refs, values, strict=True)), project, gateway_types)
    )
    planned.apply(lambda plan: Fleet("fleet", plan=plan, ref=refs[plan.config_member.config.stack]))
    pulumi.export("fleet", planned.apply(fleet.routing_summary))


def _checked_plan(
    cfg: fleet.FleetConfig, outputs: dict[str, Any], project: str, gateway_types: Sequence[str]
) -> fleet.FleetPlan:
    members, problems = fleet.members(cfg, outputs)
    problems += fleet.problems(cfg, members, project, gateway_types)
    if problems:
        raise pulumi.RunError(str(ConfigError(pulumi.get_stack(), problems)))
    return fleet.plan(cfg, members, project)


class Fleet(pulumi.ComponentResource):
    """The fleet's own resources: memberships, multi-cluster ingress, proxy-only subnets, the config cluster's
    objects."""

    def __init__(self, name: str, *, plan: fleet.FleetPlan, ref: pulumi.StackReference):
        super().__init__("tpu-serving:fleet:Fleet", name, None, None)
        _build(name, plan, ref, pulumi.ResourceOptions(parent=self))
        self.register_outputs({"gateway": fleet.GATEWAY_NAME})


def _build(name: str, plan: fleet.FleetPlan, ref: pulumi.StackReference, child: pulumi.ResourceOptions) -> None:
    memberships = {
        m.config.stack: gcp.gkehub.Membership(
            f"{name}-membership-{m.output['region']}",
            gcp.gkehub.MembershipArgs(
                membership_id=m.output["clusterName"],
                location=fleet.MEMBERSHIP_LOCATION,
                project=plan.project,
                endpoint=gcp.gkehub.MembershipEndpointArgs(
                    gke_cluster=gcp.gkehub.MembershipEndpointGkeClusterArgs(
                        resource_link=f"//container.googleapis.com/{m.output['clusterId']}"
                    )
                ),
            ),
            opts=child,
        )
        for m in plan.members
    }
    ingress = gcp.gkehub.Feature(
        f"{name}-multicluster-ingress",
        gcp.gkehub.FeatureArgs(
            name=fleet.INGRESS_FEATURE,
            location=fleet.MEMBERSHIP_LOCATION,
            project=plan.project,
            spec=gcp.gkehub.FeatureSpecArgs(
                multiclusteringress=gcp.gkehub.FeatureSpecMulticlusteringressArgs(
                    config_membership=memberships[plan.config_member.config.stack].id
                )
            ),
        ),
        opts=child,
    )
    subnets = [
        _proxy_subnet(f"{name}-proxy", plan, m, cidr, child)
        for m in plan.members
        if (cidr := m.config.proxy_subnet_cidr)
    ]
    agent = _ingress_agent_role(name, plan, ingress, child)
    _config_cluster_objects(name, plan, ref, [ingress, agent, *memberships.values(), *subnets], child)


def _ingress_agent_role(
    name: str, plan: fleet.FleetPlan, ingress: gcp.gkehub.Feature, child: pulumi.ResourceOptions
) -> gcp.projects.IAMMember:
    """F3 "Grant IAM permissions required by the Gateway controller": the project's Multi Cluster Ingress service
    agent (service-<project number>@gcp-sa-multiclusteringress) gets roles/container.admin, once the feature that
    uses it is on."""
    number = gcp.organizations.get_project_output(project_id=plan.project).number
    return gcp.projects.IAMMember(
        f"{name}-ingress-agent",
        gcp.projects.IAMMemberArgs(
            project=plan.project,
            role=fleet.INGRESS_AGENT_ROLE,
            member=number.apply(fleet.ingress_service_agent),
        ),
        opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[ingress])),
    )


def _proxy_subnet(
    prefix: str, plan: fleet.FleetPlan, member: fleet.Member, cidr: str, child: pulumi.ResourceOptions
) -> gcp.compute.Subnetwork:
    """The region's proxy-only subnet for the cross-regional load balancer's Envoy proxies (F1)."""
    region = member.output["region"]
    return gcp.compute.Subnetwork(
        f"{prefix}-{region}",
        gcp.compute.SubnetworkArgs(
            name=f"fleet-proxy-{region}",
            project=plan.project,
            region=region,
            network=member.output["network"],
            ip_cidr_range=cidr,
            purpose=fleet.PROXY_PURPOSE,
            role=fleet.PROXY_ROLE,
        ),
        opts=child,
    )


def _config_cluster_objects(
    name: str,
    plan: fleet.FleetPlan,
    ref: pulumi.StackReference,
    after: list[pulumi.Resource],
    child: pulumi.ResourceOptions,
) -> None:
    """The Gateway, and per imported pool its route, health check and backend policy, in the config cluster."""
    provider = k8s.Provider(
        f"{name}-config-cluster",
        kubeconfig=ref.require_output("kubeconfig"),
        enable_server_side_apply=True,
        opts=child,
    )
    opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(provider=provider, depends_on=after))
    gateway = register_manifest(f"{name}-gateway", fleet.gateway_manifest(plan), opts)
    for pool in plan.pools:
        prefix = f"{name}-{pool['namespace']}-{pool['pool']}"
        after_gateway = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[gateway]))
        register_manifest(f"{prefix}-route", fleet.route_manifest(plan, pool), after_gateway)
        register_manifest(f"{prefix}-health-check", fleet.health_check_manifest(pool), opts)
        register_manifest(f"{prefix}-backend-policy", fleet.backend_policy_manifest(plan, pool), opts)


def fleet_config_text() -> str | None:
    """`tpu-serving:fleet` as this stack's config gives it: set, the stack is a fleet stack."""
    return pulumi.Config(fleet.NS).get("fleet")


def build_fleet_stack(gateway_types: Sequence[str]) -> None:
    """The fleet stack's program: its config, then the fleet (`gateway_types`: build_fleet)."""
    from pulumi.runtime import config as runtime_config

    present = sorted(k.split(":", 1)[1] for k in all_config_keys(runtime_config) if k.startswith(f"{fleet.NS}:"))
    others = tuple(k for k in present if k != "fleet")
    project = pulumi.Config("gcp").get("project")
    build_fleet(load_fleet_config(raw_fleet_config(fleet_config_text()), project, others), project or "", gateway_types)


def raw_fleet_config(text: str | None) -> Any:
    """The `tpu-serving:fleet` value as the program reads config: JSON text (a string when it is not JSON)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
