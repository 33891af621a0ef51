"""What `pulumi config set --path` writes, read as the field it sets.

`pulumi config set --path 'tpu-serving:workloads[0].autoscaling.metrics[0].target' 0.8` stores the leaf value after
one rule (pulumi/pulumi sdk/go/common/resource/config/object.go `coerce`, used by value.go `coerceObject` for every
`--path` value without `--type`; map.go `Set`): "true" and "false" become booleans, a string of base-10 digits not
starting with "0" an integer, anything else stays a string. So a number field set to 0.8 holds the string "0.8", and
a string field set to 123 holds the integer 123. The config is otherwise parsed strictly (stacks/model/config_parse.py
parse), so each field takes, besides its own type, exactly what `--path` writes for it:

- a number (JSON Schema `type: number`) also takes a string in JSON's decimal notation (RFC 8259 section 6, without
  an exponent), unsigned where the field's minimum is not negative (`number_text_pattern`): read as that number,
  then held to the field's range. `1e3`, `0x10`, ` 1`, `.5` stay strings and are refused.
- a plain string (no pattern, format, enum or length beyond 1) also takes an integer (`takes_integer`): read as its
  decimal digits.
- nothing else changes: a boolean is still only `true` or `false` (never "on", 1 or 0.0), an integer never a string.

The same predicates give the JSON Schema (tooling/generate/json_schema.py, `with_path_alternatives`), so an editor and
the program agree on every value; only a number's range, which JSON Schema cannot state of a string, is the program's
alone: a numeric string outside it is refused by the program and not by the schema.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic import TypeAdapter

FLOAT64_EXACT = 2**53
SIGNED = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$"
UNSIGNED = r"^(0|[1-9][0-9]*)(\.[0-9]+)?$"
_STRING_KEYWORDS = {"pattern", "format", "enum", "const", "maxLength"}


def number_text_pattern(node: dict[str, Any]) -> str:
    """The strings a number field takes (module docstring): unsigned where its minimum is not negative."""
    low = node.get("minimum", node.get("exclusiveMinimum"))
    return UNSIGNED if low is not None and low >= 0 else SIGNED


def takes_number_text(node: dict[str, Any]) -> bool:
    return node.get("type") == "number"


def takes_integer(node: dict[str, Any]) -> bool:
    """A plain string field: any integer's digits are a value it accepts (module docstring)."""
    return node.get("type") == "string" and not _STRING_KEYWORDS & set(node) and int(node.get("minLength", 0) or 0) <= 1


def _branches(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    node = _resolve(node, defs)
    options = node.get("anyOf") or node.get("oneOf")
    if options:
        return [b for option in options for b in _branches(option, defs)]
    return [node]


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node or ("allOf" in node and len(node["allOf"]) == 1):
        node = defs[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node["allOf"][0]
    return node


def _takes(branch: dict[str, Any], kind: str) -> bool:
    if branch.get("type") == kind or (kind == "integer" and branch.get("type") == "number"):
        return True
    values = branch.get("enum", [branch["const"]] if "const" in branch else [])
    return any(isinstance(v, str) for v in values) if kind == "string" else False


def _object_branch(node: dict[str, Any], raw: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    node = _resolve(node, defs)
    found = node.get("discriminator") or {}
    tag = raw.get(str(found.get("propertyName")))
    if isinstance(tag, str) and tag in (found.get("mapping") or {}):
        return _resolve({"$ref": found["mapping"][tag]}, defs)
    objects = [b for b in _branches(node, defs) if b.get("type") == "object" or "properties" in b]
    return objects[0] if len(objects) == 1 else None


def _read(raw: Any, node: dict[str, Any] | None, defs: dict[str, Any]) -> Any:
    if node is None or isinstance(raw, bool) or raw is None:
        return raw
    if isinstance(raw, dict):
        branch = _object_branch(node, raw, defs)
        if branch is None:
            return raw
        props, extra = branch.get("properties", {}), branch.get("additionalProperties")
        return {k: _read(v, props.get(k, extra if isinstance(extra, dict) else None), defs) for k, v in raw.items()}
    branches = _branches(node, defs)
    if isinstance(raw, list):
        arrays = [b for b in branches if b.get("type") == "array" and isinstance(b.get("items"), dict)]
        return [_read(v, arrays[0]["items"], defs) for v in raw] if len(arrays) == 1 else raw
    if isinstance(raw, str) and not any(_takes(b, "string") for b in branches):
        numbers = [b for b in branches if takes_number_text(b)]
        if any(re.fullmatch(number_text_pattern(b), raw) for b in numbers):
            return float(raw)
    if isinstance(raw, int) and not any(_takes(b, "integer") for b in branches):
        if any(takes_integer(b) for b in branches) and -FLOAT64_EXACT <= raw <= FLOAT64_EXACT:
            return str(raw)
    return raw


@functools.cache
def _schema(tp: Any) -> dict[str, Any]:
    return TypeAdapter(tp).json_schema(by_alias=True, mode="validation")


def as_written(tp: Any, raw: Any) -> Any:
    """`raw` with every value `pulumi config set --path` writes for a field of `tp` read as that field's type
    (module docstring); every other value as it is, for the strict parse to judge."""
    try:
        schema = _schema(tp)
    except TypeError:  # an unhashable type: no cache
        schema = TypeAdapter(tp).json_schema(by_alias=True, mode="validation")
    return _read(raw, schema, schema.get("$defs", {}))


def with_path_alternatives(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON Schema with, beside every number and plain string, what `--path` writes for it (module docstring):
    where `_read` converts a value, the schema takes it as written."""
    return _alternatives(schema, schema.get("$defs", {}), in_union=False)


# Each alternative says what it is: the reference (tooling/generate/docs.py) lists the field's own type, not these.
PATH_COMMENT = "what `pulumi config set --path` writes for this field (stacks/model/pulumi_path.py)"
INTEGER_TEXT = {"type": "integer", "minimum": -FLOAT64_EXACT, "maximum": FLOAT64_EXACT, "$comment": PATH_COMMENT}
ANNOTATIONS = ("title", "description", "default", "examples", "deprecated")


def _alternatives(node: Any, defs: dict[str, Any], *, in_union: bool) -> Any:
    if isinstance(node, list):
        return [_alternatives(v, defs, in_union=False) for v in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: v
        if k in ("enum", "const", "default", "examples")
        else [_alternatives(b, defs, in_union=True) for b in v]
        if k in ("anyOf", "oneOf")
        else _alternatives(v, defs, in_union=False)
        for k, v in node.items()
    }
    if in_union:
        return out
    union = "anyOf" if "anyOf" in node else "oneOf" if "oneOf" in node else None
    extra = _extra(_branches(node, defs) if union else [node])
    if not extra:
        return out
    if union == "anyOf":
        return {**out, "anyOf": [*out["anyOf"], *extra]}
    notes = {k: v for k, v in out.items() if k in ANNOTATIONS}
    return {**notes, "anyOf": [{k: v for k, v in out.items() if k not in ANNOTATIONS}, *extra]}


def _extra(branches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What `--path` writes that `_read` takes for a value with these branches, as schemas."""
    out: list[dict[str, Any]] = []
    if not any(_takes(b, "string") for b in branches):
        patterns = dict.fromkeys(number_text_pattern(b) for b in branches if takes_number_text(b))
        out += [{"type": "string", "pattern": p, "$comment": PATH_COMMENT} for p in patterns]
    if not any(_takes(b, "integer") for b in branches) and any(takes_integer(b) for b in branches):
        out.append(dict(INTEGER_TEXT))
    return out
