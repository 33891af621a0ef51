"""Validate Kubernetes objects the way the API server would, offline.

- Built-in kinds: `kubernetes-validate` in strict mode (unknown fields are errors) at the cluster's minor version.
- Custom resources: the upstream CRD's openAPIV3Schema, made strict the same way (an object schema with
  `properties` rejects other keys unless it preserves unknown fields), so a snake_case or misspelled field fails.
- GKE-installed custom resources with no published CRD file (ComputeClass): the strict schema written from GKE's
  reference page in tooling/oracles/documented_schemas.py.

CRDs are read from $TPU_SERVING_CRDS, else the `make crds` cache, else ../shared/reference/crds (tooling/oracles/crds.py).
A CRD none of them holds is read from its recorded schema (tooling/data/crd_schemas.json, tooling/oracles/crd_schemas.py:
the upstream files no reference copy holds, KEDA's). When none exists, custom resources are reported as not
checked; they never count as valid.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils as kv_utils
from referencing import Registry, Resource

from tooling.oracles import crd_schemas, documented_schemas
from tooling.oracles.crds import CRD_DIR_ENV, crd_source

OBJECT_META_KEYS = {"name", "namespace", "labels", "annotations", "generateName", "finalizers", "ownerReferences"}


def crd_dir() -> Path | None:
    return crd_source()[0]


_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _crd_schemas(directory: str, group: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict schema for one API group, from `<group>_<plural>.yaml` files in `directory`."""
    out = {}
    for path in sorted(Path(directory).glob(f"{group}_*.yaml")):
        for doc in yaml.load_all(path.read_text(), Loader=_YAML_LOADER):
            if not doc or doc.get("kind") != "CustomResourceDefinition" or doc["spec"]["group"] != group:
                continue
            kind = doc["spec"]["names"]["kind"]
            for version in doc["spec"]["versions"]:
                if version.get("served", True) and "schema" in version:
                    out[(f"{group}/{version['name']}", kind)] = strict(version["schema"]["openAPIV3Schema"])
    return out


@cache
def _recorded_schemas(group: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> strict schema for one API group, from the recorded CRD schemas."""
    return {key: strict(schema) for key, schema in crd_schemas.schemas(group).items()}


def crd_schema(directory: Path | None, api_version: str, kind: str) -> dict[str, Any] | None:
    """The strict schema of a custom resource kind: from the CRD files in `directory`, else the recorded one."""
    group = api_version.split("/")[0] if "/" in api_version else ""
    if "." not in group:
        return None
    found = _crd_schemas(str(directory), group) if directory else {}
    return found.get((api_version, kind)) or _recorded_schemas(group).get((api_version, kind))


# Value validations a structural schema may hold: their `properties` only constrain the fields the enclosing
# object already declares, never define its structure (Kubernetes "Specifying a structural schema": in allOf,
# anyOf, oneOf and not, no field that is not also specified outside them), so they stay open here: closed, a branch
# naming one field (the Gateway API's `addresses` items: oneOf {type: IPAddress} / {type: not IPAddress}) would
# refuse every other field of the object.
# https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#specifying-a-structural-schema
_VALUE_VALIDATIONS = ("allOf", "anyOf", "oneOf", "not")


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    schema = copy.deepcopy(schema)

    def walk(node: Any, structural: bool = True) -> None:
        if isinstance(node, dict):
            if (
                structural
                and "properties" in node
                and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")
            ):
                node["additionalProperties"] = False
            for key, value in node.items():
                walk(value, structural and key not in _VALUE_VALIDATIONS)
        elif isinstance(node, list):
            for value in node:
                walk(value, structural)

    walk(schema)
    return schema


class SchemaNotFound(Exception):
    pass


@cache
def _builtin_registry(schema_dir: str) -> Registry:
    definitions = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", schema_dir)
    return Resource.from_contents(definitions) @ Registry()


@cache
def _builtin_validator(kubernetes_minor: str, api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    """kubernetes-validate's strict schema for a kind, loaded once (its own validate() reloads 1.5 MB per call)."""
    versions = [v for v in kv_utils.all_versions() if kv_utils.major_minor(v) <= kubernetes_minor]
    if not versions or kv_utils.major_minor(kubernetes_minor) > kv_utils.latest_version():
        raise SchemaNotFound(
            f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for {kubernetes_minor}"
        )
    schema_dir = f"v{versions[-1]}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(
            f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json", kubernetes_minor
        )
    except FileNotFoundError:
        raise SchemaNotFound(f"no schema for {api_version} {kind} at Kubernetes {kubernetes_minor}") from None
    registry = Resource.from_contents(schema) @ _builtin_registry(schema_dir)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate_builtin(obj: dict[str, Any], kubernetes_minor: str) -> list[str]:
    validator = _builtin_validator(kubernetes_minor, obj["apiVersion"], obj["kind"])
    return [
        f"{'.'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}"
        for err in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    ]


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def _ident(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    ns = meta.get("namespace")
    return f"{obj.get('apiVersion')} {obj.get('kind')} {ns + '/' if ns else ''}{meta.get('name')}"


def validate_custom(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    errors = []
    meta = obj.get("metadata", {})
    for key in sorted(set(meta) - OBJECT_META_KEYS):
        errors.append(f"metadata.{key}: unknown field")
    if not meta.get("name"):
        errors.append("metadata.name: required")
    body = {k: v for k, v in obj.items() if k != "metadata"}
    validator = jsonschema.Draft7Validator({**schema, "properties": {**schema.get("properties", {}), "metadata": {}}})
    for err in sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path)):
        path = ".".join(str(p) for p in err.absolute_path) or "(root)"
        errors.append(f"{path}: {err.message}")
    return errors


def validate_objects(objects: list[dict[str, Any]], kubernetes_minor: str) -> Report:
    report = Report()
    directory = crd_dir()
    for obj in objects:
        key = (obj.get("apiVersion", ""), obj.get("kind", ""))
        group = key[0].split("/")[0] if "/" in key[0] else ""
        schema = crd_schema(directory, *key)
        if schema is not None:
            problems = validate_custom(obj, schema)
        elif key in documented_schemas.SCHEMAS:  # GKE-installed CRDs published only as documentation
            problems = validate_custom(obj, documented_schemas.SCHEMAS[key])
        elif "." in group and not group.endswith(".k8s.io"):
            report.unchecked.append(f"{_ident(obj)}: no CRD schema found (run `make crds` or set {CRD_DIR_ENV})")
            continue
        else:
            try:
                problems = validate_builtin(obj, kubernetes_minor)
            except SchemaNotFound as err:
                report.unchecked.append(f"{_ident(obj)}: {err}")
                continue
        report.checked += 1
        report.errors.extend(f"{_ident(obj)}: {p}" for p in problems)
    return report
