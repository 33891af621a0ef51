"""A test program: the real stack plus one WorkloadIdentity, as a workload layer will use it."""

import pulumi
import pulumi_kubernetes as k8s

from components.platform import build_stack
from components.workload_identity import WorkloadIdentity
from stacks.pulumi_config import load_stack_config
from stacks.security.bucket_access import OBJECT_VIEWER, Grant
from workloads.registry import WORKLOAD_TYPES

cfg = load_stack_config(WORKLOAD_TYPES)
platform = build_stack(cfg)
namespace = k8s.core.v1.Namespace(
    "serving-ns",
    metadata=k8s.meta.v1.ObjectMetaArgs(name="serving"),
    opts=pulumi.ResourceOptions(provider=platform.cluster.provider),
)
WorkloadIdentity(
    "jetstream",
    namespace="serving",
    service_account_name="jetstream",
    project=cfg.gcp_project,
    stack=cfg.stack,
    stack_bucket_name=cfg.bucket_name,
    stack_bucket=platform.bucket.name,
    bucket_get_role=platform.bucket.bucket_get_role,
    grants=[Grant("checkpoint", cfg.bucket_name, OBJECT_VIEWER, "ckpt/")],
    provider=platform.cluster.provider,
    depends_on=[namespace],
)
