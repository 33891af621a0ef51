"""Parse one key of the stack config with its model, reporting each pydantic error in the stack's words: the key
path a user wrote (`tpu-serving:tpuPools[1].topology`), the bad value and what is allowed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core.core_schema import ErrorType

from stacks.model import pulumi_path
from stacks.problems import Problem, fmt


def _allowed_keys(root: Any, loc: tuple) -> list[str]:
    """The keys the model at `loc` accepts, for an 'unknown key' message."""
    tp = root
    for part in loc:
        if isinstance(part, str) and (part in _BRANCH_SEGMENTS or part.startswith(("function-", "is-instance"))):
            continue
        tp = _unwrap(tp)
        if isinstance(part, int):
            args = get_args(tp)
            tp = args[0] if args else tp
        elif isinstance(tp, type) and issubclass(tp, BaseModel):
            fld = next((f for n, f in tp.model_fields.items() if (f.alias or n) == part), None)
            if fld is None:
                break
            tp = fld.annotation
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or n for n, f in tp.model_fields.items()]
    return []


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is not None and type(None) in get_args(tp):
        tp = next(a for a in get_args(tp) if a is not type(None))
    return tp


# Path segments pydantic adds for the branch of a union or a validator: never part of a key path a user wrote.
_BRANCH_SEGMENTS = {"str", "int", "float", "bool", "list", "dict", "none", "json-or-python", "lax-or-strict"}
FLOAT64_EXACT = 2**53
# The error types of a value's type, form or range, or an unknown or missing key, each what a JSON Schema keyword
# says too (type, enum/const, minimum/maximum, min/maxLength, pattern, required, additionalProperties): pydantic's
# own (pydantic_core.core_schema.ErrorType) less those its models' validators raise. A validator's own error type
# (PydanticCustomError("capacity_list", ...)) is a rule the schema does not say.
_SHAPE_ERRORS = frozenset(get_args(ErrorType)) - {"value_error", "assertion_error", "custom_error"}


def _path(base: str, loc: tuple) -> str:
    out = base
    for part in loc:
        if isinstance(part, str) and (part in _BRANCH_SEGMENTS or part.startswith(("function-", "is-instance"))):
            continue
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


_TYPE_WORDS = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def _message(tp: Any, e: Any) -> str:
    """One pydantic error in the stack's words: what is wrong with the value, and what is allowed."""
    loc, kind, ctx, got = tuple(e["loc"]), e["type"], e.get("ctx") or {}, fmt(e.get("input"))
    if kind == "extra_forbidden":
        return f"unknown key; allowed: {', '.join(_allowed_keys(tp, loc[:-1]))}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        keys = _allowed_keys(tp, loc)
        return f"must be a mapping{' with keys ' + ', '.join(keys) if keys else ''} (got {got})"
    if kind in _TYPE_WORDS:
        return f"must be {_TYPE_WORDS[kind]} (got {got})"
    if kind == "literal_error":
        return f"{got} is not allowed; allowed: {ctx.get('expected', '').replace(' or ', ', ').replace(chr(39), '')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "greater than", "less_than_equal": "at most"}
        limit = next(v for k, v in ctx.items() if k in ("ge", "gt", "le", "lt"))
        return f"{got} is not allowed; must be {words.get(kind, 'less than')} {limit}"
    if kind in ("too_short", "too_long"):
        return f"{got} is not allowed; must have {'at least' if kind == 'too_short' else 'at most'} " + (
            f"{ctx.get('min_length', ctx.get('max_length'))} item(s)"
        )
    if kind == "string_pattern_mismatch":
        return f"{got} is not allowed; must match {ctx.get('pattern')}"
    if kind in ("finite_number",):
        return f"{got} is not allowed; must be a finite number"
    text = str(e["msg"]).removeprefix("Value error, ").replace("Input should be", "must be")
    return f"{text} (got {got})"


def _too_large(base: str, raw: Any, problems: list[Problem], loc: tuple = ()) -> bool:
    """Numbers a float64 does not hold exactly, anywhere in `raw`: Pulumi sends every number as a float64
    (google.protobuf.Value), so larger ones would change or fail in transit. Fields have their own, lower bounds."""
    found = False
    if isinstance(raw, dict):
        for k, v in raw.items():
            found = _too_large(base, v, problems, (*loc, k)) or found
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            found = _too_large(base, v, problems, (*loc, i)) or found
    elif isinstance(raw, int | float) and not isinstance(raw, bool) and not -FLOAT64_EXACT <= raw <= FLOAT64_EXACT:
        problems.append(Problem(_path(base, loc), f"{fmt(raw)} is too large; numbers are at most 2^53"))
        found = True
    return found


def as_json_numbers(raw: Any) -> Any:
    """`raw` with every whole float as an int (2.0 -> 2), anywhere in it: JSON, and so the JSON Schema, has one number
    type, in which 2.0 is an integer (JSON Schema 2020-12 Validation, 6.1.1 "type"), and the Pulumi CLI hands the
    program structured values as JSON text its Go encoder writes, which prints a whole float64 as `2`."""
    if isinstance(raw, dict):
        return {k: as_json_numbers(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return [as_json_numbers(v) for v in raw]
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    return raw


def parse(base: str, tp: Any, raw: Any, problems: list[Problem]) -> Any:
    """Validate `raw` as `tp`; on failure add one problem per error, in the stack's words, and return None.

    Strictly, as the JSON Schema generated from the same models (tooling/generate/json_schema.py) reads a value: a boolean
    is `true` or `false` (never 1, 0.0, "on" or "false"), a whole number is not `true` nor "2", a string is not a
    number. pydantic's default (lax) mode would convert each of those (docs.pydantic.dev, "Conversion Table"), so
    the program would deploy a config an editor marks invalid. Besides, each field takes what `pulumi config set
    --path` writes for it (stacks/model/pulumi_path.py: "0.8" for a number, 123 for a plain string), as the schema
    does."""
    if _too_large(base, raw, problems):
        return None
    try:
        return TypeAdapter(tp).validate_python(pulumi_path.as_written(tp, as_json_numbers(raw)), strict=True)
    except ValidationError as err:
        found: dict[str, list[str]] = {}
        branches: dict[str, list[str]] = {}  # a union reports one type error per branch: say them as one
        rules: set[tuple[str, str]] = set()  # the models' own validators' problems; every other one is of shape
        for e in err.errors():
            path = _path(base, tuple(e["loc"]))
            if e["type"] in _TYPE_WORDS and any(p in _BRANCH_SEGMENTS for p in e["loc"]):
                branches.setdefault(path, []).append(_TYPE_WORDS[e["type"]])
                found.setdefault(path, [])
                continue
            message = _message(tp, e)
            if message not in found.setdefault(path, []):
                found[path].append(message)
            if e["type"] not in _SHAPE_ERRORS:
                rules.add((path, message))
        for e in err.errors():
            path = _path(base, tuple(e["loc"]))
            if path in branches and not found[path]:
                words = list(dict.fromkeys(branches[path]))
                found[path].append(f"must be {', '.join(words[:-1])} or {words[-1]} (got {fmt(e['input'])})")
        problems.extend(
            Problem(path, m, shape=(path, m) not in rules) for path, messages in found.items() for m in messages
        )
        return None


def section(raw: dict[str, Any], key: str) -> Any:
    """A mapping key's value to validate: unset (absent or null, as the schema allows) is the empty mapping; any
    other value is validated as given (`0`, `false` or `""` are refused, as the schema refuses them)."""
    value = raw.get(key)
    return {} if value is None else value


def parse_each(base: str, tp: Any, raw: Any, what: str, problems: list[Problem]) -> list[Any]:
    """A list key, each entry validated as `tp` separately (None where it does not parse), so that one broken entry
    does not hide the problems of the others; unset is the empty list."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(base, f"must be a list of {what} (got {fmt(raw)})"))
        return []
    return [parse(f"{base}[{i}]", tp, item, problems) for i, item in enumerate(raw)]


def parse_by_type(base: str, models: Mapping[str, Any], raw: Any, what: str, problems: list[Problem]) -> list[Any]:
    """A list key whose entries say their `type:`, each validated as its type's model in `models`: (index, parsed)
    of those that parse; unset is the empty list."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(base, f"must be a list of {what}s (got {fmt(raw)})"))
        return []
    parsed: list[tuple[int, Any]] = []
    for i, item in enumerate(raw):
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in models:
            problems.append(
                Problem(f"{base}[{i}].type", f"{fmt(kind)} is not a {what} type; allowed: {', '.join(models)}")
            )
            continue
        entry = parse(f"{base}[{i}]", models[kind], item, problems)
        if entry is not None:
            parsed.append((i, entry))
    return parsed
