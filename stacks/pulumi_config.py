"""The program's entry to validation: read this stack's Pulumi config (the `tpu-serving:` keys, the gcp: settings,
how the token is set) and hand it to `stacks.config.parse_stack_config`; raise pulumi.RunError listing every
problem, or log the warnings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stacks.config import NS, SECRET_KEYS, known_keys, parse_stack_config
from stacks.problems import ConfigError
from stacks.serving.workload_type import WorkloadRegistry
from stacks.stack_config import StackConfig


def raw_config(get: Callable[[str], str | None]) -> dict[str, Any]:
    """Read each known key; structured values arrive as JSON text. Text that is not JSON is kept as a string,
    so validation reports it at its key ("should be a valid dictionary") with the other problems."""
    raw: dict[str, Any] = {}
    for key in known_keys():
        if key in SECRET_KEYS:
            continue
        text = get(key)
        if text is None:
            continue
        try:
            raw[key] = text if key == "environment" else json.loads(text)
        except json.JSONDecodeError:
            raw[key] = text
    return raw


def all_config_keys(runtime_config) -> set[str]:
    """Keys set for this run: the CLI passes them in the PULUMI_CONFIG bag; tests and mocks set them in-process."""
    return set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())


def secret_state(runtime_config, key: str) -> str | None:
    """None when `tpu-serving:<key>` is unset, else "secret" or "plain" (without reading the value)."""
    full = f"{NS}:{key}"
    if full not in all_config_keys(runtime_config):
        return None
    # the CLI lists secret keys in PULUMI_CONFIG_SECRET_KEYS; tests and mocks set them in-process
    secret = full in runtime_config.get_config_secret_keys_env() or runtime_config.is_config_secret(full)
    return "secret" if secret else "plain"


def under_mocks() -> bool:
    """True when the program runs under Pulumi's mocks (`pulumi.runtime.set_mocks`: the tests and the offline
    render), False under the Pulumi CLI's engine, whose resource monitor is a gRPC stub (pulumi==3.272.0
    sdk/python/lib/pulumi/runtime/settings.py Settings: a monitor address becomes a ResourceMonitorStub;
    runtime/mocks.py set_mocks installs a MockMonitor)."""
    from pulumi.runtime import settings
    from pulumi.runtime.mocks import MockMonitor

    return isinstance(settings.get_monitor(), MockMonitor)


def load_stack_config(workload_types: WorkloadRegistry) -> StackConfig:
    """Read and validate this stack's config; raise pulumi.RunError listing every problem."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    cfg = pulumi.Config(NS)
    gcp = pulumi.Config("gcp")
    stack = pulumi.get_stack()
    raw = raw_config(cfg.get)
    present = [k.split(":", 1)[1] for k in all_config_keys(runtime_config) if k.startswith(f"{NS}:")]
    extra = tuple(sorted(k for k in present if k not in known_keys()))
    try:
        parsed = parse_stack_config(
            raw,
            stack=stack,
            pulumi_project=pulumi.get_project(),
            gcp_project=gcp.get("project"),
            region=gcp.get("region"),
            workload_types=workload_types,
            extra_keys=extra,
            hf_token=secret_state(runtime_config, "hfToken"),
            # a local run (tpu-serving:local) creates nothing in Google Cloud: the examples' project may stay
            refuse_placeholder=not under_mocks() and raw.get("local") is None,
        )
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None
    for warning in parsed.warnings:
        pulumi.log.warn(warning)
    return parsed
