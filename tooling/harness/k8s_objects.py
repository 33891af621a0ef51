"""The Kubernetes objects a recorded program would send: plain dicts, camelCase, numbers as integers.

Values only known after apply become "(known after apply)". Secrets are unwrapped for validation, and masked
("[secret]") for anything written to disk.
"""

from __future__ import annotations

from typing import Any

from tooling.harness.offline import UNKNOWN, Recording, Registration

# Registrations of the kubernetes provider that are not single API objects.
NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")
_UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # pulumi.runtime.rpc.UNKNOWN
_SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")


SECRET = "[secret]"
# The key of a rendered Kubernetes file (tooling/review/render.py) holding the resource options, beside the object's fields;
# no Kubernetes object has a top-level field of that name. Whatever reads a file as a manifest strips it (manifest).
OPTIONS = "options"


def manifest(body: Any) -> tuple[Any, dict[str, Any]]:
    """A rendered Kubernetes file's object without its options block, and the options."""
    if not isinstance(body, dict):
        return body, {}
    rest = dict(body)
    return rest, rest.pop(OPTIONS, None) or {}


def plain(value: Any, *, mask_secrets: bool = False) -> Any:
    from pulumi.output import Unknown

    if isinstance(value, Unknown):
        return UNKNOWN
    if isinstance(value, dict):
        if value.get(_SECRET_SIG[0]) == _SECRET_SIG[1]:
            return SECRET if mask_secrets else plain(value.get("value"))
        return {k: plain(v, mask_secrets=mask_secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, mask_secrets=mask_secrets) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == _UNKNOWN_SENTINEL:
        return UNKNOWN
    return value


def is_object(reg: Registration) -> bool:
    # a `...Patch` resource is a partial object (server-side apply of a few fields onto an existing one)
    return (
        reg.custom
        and reg.type.startswith("kubernetes:")
        and not reg.type.startswith(NOT_OBJECTS)
        and not reg.type.endswith("Patch")
    )


def to_object(reg: Registration) -> dict[str, Any]:
    obj = plain(reg.inputs)
    # the provider's own bookkeeping input, not part of the object
    obj.pop("__fieldManager", None)
    return obj


def kubernetes_objects(recording: Recording) -> list[dict[str, Any]]:
    objects = [to_object(r) for r in recording.resources if is_object(r)]
    return sorted(objects, key=lambda o: (o.get("metadata", {}).get("namespace", ""), o["kind"], o["metadata"]["name"]))
