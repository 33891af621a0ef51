"""The Google provider's schema rules, extracted from its Go source, and a check of registered inputs against them.

pulumi-gcp bridges hashicorp/terraform-provider-google-beta: the Terraform schema (`schema.Schema` maps in
`google-beta/services/<product>/*.go`) is what the provider validates before it calls any API, and mocks accept
anything. This module

- extracts, for every resource type the program registers (RESOURCES), each field's `Type` (and its element's),
  `Required`, `Optional`, `ForceNew`, `MaxItems`, `MinItems`, `ExactlyOneOf`, `ConflictsWith`, `RequiredWith`,
  `AtLeastOneOf`, enum validator (`validation.StringInSlice`, `verify.ValidateEnum`) and any other validator by
  name with its literal arguments, as dotted snake_case paths, into tooling/data/provider_rules.json with its
  origin (`repo@ref:path` per resource);
- checks a resource's inputs (camelCase, as Pulumi registers them) against that data, the way the SDK's
  `schemaMap.validate` does (hashicorp/terraform-plugin-sdk helper/schema/schema.go: ExactlyOneOf and
  AtLeastOneOf whenever the enclosing block is sent, RequiredWith and ConflictsWith when the field is set,
  Required when the enclosing block is sent; validateList / validateMap / validatePrimitive for item counts,
  types and validators), plus unknown fields and enum values;
- gives the review (tooling/review/recreate.py) the ForceNew paths.

Regenerate (from a checkout, or straight from a git directory at a tag):

    python -m tooling.oracles.provider_schema --git <terraform-provider-google-beta.git> --ref v7.45.0
    python -m tooling.oracles.provider_schema --source <checkout> --origin hashicorp/terraform-provider-google-beta@<ref>

The parser reads just enough Go: composite literals, calls, selectors, `var` and single-`return` functions.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import ipaddress
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from tooling.harness.offline import UNKNOWN

DATA = Path(__file__).resolve().parents[1] / "data" / "provider_rules.json"
REPO = "hashicorp/terraform-provider-google-beta"
REF = "v7.45.0"  # the tag the data was read from: the newest google-beta in the snapshot we could read (see README)
# Written into the data: which google-beta pulumi-gcp 10.2.0 bridges is not established from a source we could read.
ORIGIN_NOTE = (
    "Read from google-beta v7.45.0, the newest tag in the snapshot we could read. pulumi-gcp 10.2.0 (stacks/facts/versions.py)"
    " bridges a google-beta 8.x release: its SDK lacks what google-beta 8.0.0 removed (the beyondcorp app_connection,"
    " app_connector and app_gateway resources; google_compute_reservation.reservation_block_count; google-beta"
    " website/docs/guides/version_8_upgrade.html.markdown) and has fields newer than the snapshot's latest commit"
    " (93c65b2d60, after the 8.0.0 merge: node pool best_effort_provisioning). pulumi/pulumi-gcp's snapshot ends at"
    " v9.35.0 (google-beta v7.45.0), so the exact 8.x version is unknown. Read at 93c65b2d60, the registered types"
    " differ from this data only in logging_config/monitoring_config.enable_components becoming sets, the"
    " host_maintenance_policy.opportunistic_maintenance_strategy block, and a name_prefix validator"
    " (tests/test_provider_schema.py NEWER_IN_SDK lists what the SDK has beyond this data)."
)

# Pulumi type -> Terraform resource name: pulumi/pulumi-gcp provider/resources.go maps each `gcp:` token to its
# `google_*` resource; every type the program registers is listed (tests/test_provider_schema.py keeps it so).
RESOURCES: dict[str, str] = {
    "gcp:container/cluster:Cluster": "google_container_cluster",
    "gcp:container/nodePool:NodePool": "google_container_node_pool",
    "gcp:compute/network:Network": "google_compute_network",
    "gcp:compute/subnetwork:Subnetwork": "google_compute_subnetwork",
    "gcp:compute/router:Router": "google_compute_router",
    "gcp:compute/routerNat:RouterNat": "google_compute_router_nat",
    "gcp:compute/resourcePolicy:ResourcePolicy": "google_compute_resource_policy",
    "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy": "google_compute_region_security_policy",
    "gcp:storage/bucket:Bucket": "google_storage_bucket",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "google_storage_bucket_iam_member",
    "gcp:storage/bucketObject:BucketObject": "google_storage_bucket_object",
    "gcp:projects/iAMCustomRole:IAMCustomRole": "google_project_iam_custom_role",
    "gcp:monitoring/dashboard:Dashboard": "google_monitoring_dashboard",
    "gcp:logging/metric:Metric": "google_logging_metric",
    "gcp:monitoring/alertPolicy:AlertPolicy": "google_monitoring_alert_policy",
    "gcp:monitoring/notificationChannel:NotificationChannel": "google_monitoring_notification_channel",
    "gcp:monitoring/customService:CustomService": "google_monitoring_custom_service",
    "gcp:monitoring/slo:Slo": "google_monitoring_slo",
    "gcp:serviceaccount/account:Account": "google_service_account",
    "gcp:serviceaccount/iAMMember:IAMMember": "google_service_account_iam_member",
    "gcp:projects/iAMMember:IAMMember": "google_project_iam_member",
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": "google_kms_crypto_key_iam_member",
    "gcp:artifactregistry/repository:Repository": "google_artifact_registry_repository",
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": "google_artifact_registry_repository_iam_member",
    "gcp:billing/budget:Budget": "google_billing_budget",
    "gcp:gkehub/membership:Membership": "google_gke_hub_membership",
    "gcp:gkehub/feature:Feature": "google_gke_hub_feature",
}
# Where the resources' schemas and what they call live (google-beta/...).
SOURCE_DIRS = (
    "google-beta/services/container",
    "google-beta/services/compute",
    "google-beta/services/storage",
    "google-beta/services/monitoring",
    "google-beta/services/logging",
    "google-beta/services/kms",
    "google-beta/services/artifactregistry",
    "google-beta/services/resourcemanager",
    "google-beta/services/billingbudgets",
    "google-beta/services/gkehub",
    "google-beta/services/gkehub2",
    "google-beta/tpgiamresource",
    "google-beta/tpgresource",
)
RULE_KEYS = ("ExactlyOneOf", "ConflictsWith", "RequiredWith", "AtLeastOneOf")

# ---- a small Go reader ----------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\\n])*")
    |(?P<rune>'(?:\\.|[^'\\\n])+')|(?P<num>\d[\w.]*)|(?P<id>[A-Za-z_]\w*)
    |(?P<op>:=|\.\.\.|&&|\|\||==|!=|<=|>=|<-|\+\+|--|[-+*/%&|^<>=!:;,.(){}\[\]~])""",
    re.S | re.X,
)
_BINARY = {"+", "-", "*", "/", "%", "&&", "||", "==", "!=", "<", ">", "<=", ">=", "|", "&", "^"}


@dataclass(frozen=True)
class Tok:
    kind: str
    text: str


def tokenize(src: str) -> list[Tok]:
    out = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append(Tok(kind, m.group()))
    return out


@dataclass
class Ref:
    name: str


@dataclass
class Call:
    func: str
    args: list[Any]


@dataclass
class Composite:
    type: str | None
    items: list[tuple[Any, Any]]


class Opaque:
    """A Go expression the rules do not need (function literals, arithmetic, conversions)."""


class Parser:
    def __init__(self, toks: list[Tok], pos: int = 0) -> None:
        self.t, self.i = toks, pos

    def peek(self, k: int = 0) -> str:
        return self.t[self.i + k].text if self.i + k < len(self.t) else ""

    def take(self, text: str | None = None) -> Tok:
        tok = self.t[self.i]
        if text is not None and tok.text != text:
            raise SyntaxError(f"expected {text!r}, got {tok.text!r} at token {self.i}")
        self.i += 1
        return tok

    def skip_balanced(self, open_: str, close: str) -> None:
        depth = 0
        while True:
            text = self.take().text
            depth += (text == open_) - (text == close)
            if depth == 0:
                return

    def type_text(self) -> str:
        """A type: []T, [N]T, map[K]V, *T, pkg.T, func(...)..."""
        if self.peek() == "[":
            self.take()
            n = self.take().text if self.peek() != "]" else ""
            self.take("]")
            return f"[{n}]{self.type_text()}"
        if self.peek() == "map":
            self.take()
            self.take("[")
            key = self.type_text()
            self.take("]")
            return f"map[{key}]{self.type_text()}"
        if self.peek() == "*":
            self.take()
            return "*" + self.type_text()
        if self.peek() in ("interface", "struct"):
            word = self.take().text
            self.skip_balanced("{", "}")
            return word + "{}"
        name = self.take().text
        while self.peek() == "." and self.t[self.i + 1].kind == "id":
            self.take()
            name += "." + self.take().text
        return name

    def expr(self) -> Any:
        left = self.unary()
        while self.peek() in _BINARY:
            op = self.take().text
            right = self.unary()
            left = left + right if op == "+" and isinstance(left, str) and isinstance(right, str) else Opaque()
        return left

    def unary(self) -> Any:
        if self.peek() in ("&", "*", "-", "!", "^", "<-"):
            op = self.take().text
            inner = self.unary()
            return inner if op in ("&", "*") else Opaque()
        return self.postfix(self.primary())

    def primary(self) -> Any:
        tok = self.t[self.i]
        if tok.kind == "str":
            self.take()
            return ast.literal_eval(tok.text)
        if tok.kind == "raw":
            self.take()
            return tok.text[1:-1]
        if tok.kind in ("num", "rune"):
            self.take()
            if tok.kind == "num" and tok.text.isdigit():
                return int(tok.text)
            return float(tok.text) if tok.kind == "num" and re.fullmatch(r"[\d.]+", tok.text) else Opaque()
        if tok.text == "(":
            self.take()
            inner = self.expr()
            self.take(")")
            return inner
        if tok.text in ("[", "map"):
            return self.composite(self.type_text())
        if tok.text == "func":
            self.take()
            self.skip_balanced("(", ")")
            while self.peek() != "{":
                self.take()
            self.skip_balanced("{", "}")
            return Opaque()
        if tok.text == "{":
            return self.composite(None)
        if tok.kind == "id":
            self.take()
            name = tok.text
            while self.peek() == "." and self.t[self.i + 1].kind == "id":
                self.take()
                name += "." + self.take().text
            return Ref(name)
        raise SyntaxError(f"unexpected {tok.text!r} at token {self.i}")

    def postfix(self, node: Any) -> Any:
        while True:
            nxt = self.peek()
            if nxt == "(":
                self.take()
                args = []
                while self.peek() != ")":
                    args.append(self.expr())
                    if self.peek() == "...":
                        self.take()
                    if self.peek() == ",":
                        self.take()
                self.take(")")
                node = Call(node.name if isinstance(node, Ref) else "?", args)
            elif nxt == "{" and isinstance(node, Ref) and node.name.split(".")[-1][:1].isupper():
                node = self.composite(node.name)
            elif nxt == "[":
                self.skip_balanced("[", "]")
                node = Opaque()
            elif nxt == "." and self.peek(1) == "(":
                self.take()
                self.skip_balanced("(", ")")
                node = Opaque()
            elif nxt == "." and self.t[self.i + 1].kind == "id":
                self.take()
                attr = self.take().text
                node = Ref(f"{node.name}.{attr}") if isinstance(node, Ref) else Opaque()
            else:
                return node

    def composite(self, type_: str | None) -> Composite:
        self.take("{")
        items: list[tuple[Any, Any]] = []
        while self.peek() != "}":
            key: Any = None
            value = self.expr()
            if self.peek() == ":":
                self.take()
                key, value = value, self.expr()
            items.append((key, value))
            if self.peek() == ",":
                self.take()
        self.take("}")
        return Composite(type_, items)


# ---- declarations and evaluation ------------------------------------------------------------------------------

_DECL = re.compile(r"^(?:func (\w+)\(|var (\w+)\b|\t(\w+)\s*(?:=|\S[^=\n]*=)\s)", re.M)


@dataclass
class Decl:
    path: str
    kind: str  # "func" | "var"
    name: str


@dataclass
class GoSource:
    """The non-test Go files under SOURCE_DIRS of one checkout, read as declarations are needed."""

    root: Path
    decls: dict[str, list[Decl]] = field(default_factory=dict)
    tokens: dict[str, list[Tok]] = field(default_factory=dict)
    depths: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for directory in SOURCE_DIRS:
            for path in sorted((self.root / directory).glob("*.go")):
                if path.name.endswith("_test.go"):
                    continue
                rel = path.relative_to(self.root).as_posix()
                for m in _DECL.finditer(path.read_text()):
                    name = m.group(1) or m.group(2) or m.group(3)
                    self.decls.setdefault(name, []).append(Decl(rel, "func" if m.group(1) else "var", name))

    def toks(self, rel: str) -> list[Tok]:
        if rel not in self.tokens:
            self.tokens[rel] = toks = tokenize((self.root / rel).read_text())
            depth, depths = 0, []
            for tok in toks:  # brace depth before each token: 0 is package level
                depths.append(depth)
                depth += (tok.text == "{") - (tok.text == "}")
            self.depths[rel] = depths
        return self.tokens[rel]

    def find(self, name: str, kind: str) -> tuple[Decl, Any] | None:
        """The expression a package-level var is set to, or the first top-level `return` of a function."""
        for decl in (d for d in self.decls.get(name.split(".")[-1], []) if d.kind == kind):
            toks = self.toks(decl.path)
            for i, tok in enumerate(toks):
                if tok.text != name.split(".")[-1] or i == 0:
                    continue
                if decl.kind == "func" and toks[i - 1].text == "func":
                    return decl, self._returned(toks, i)
                if decl.kind == "var" and toks[i + 1].text == "=" and self.depths[decl.path][i] == 0:
                    return decl, Parser(toks, i + 2).expr()
        return None

    @staticmethod
    def _returned(toks: list[Tok], i: int) -> Any:
        p = Parser(toks, i + 1)
        p.skip_balanced("(", ")")
        while p.peek() != "{":
            p.take()
        start = p.i
        p.skip_balanced("{", "}")
        body, depth, locals_ = toks[start + 1 : p.i - 1], 0, {}
        for j, tok in enumerate(body):
            depth += (tok.text == "{") - (tok.text == "}")
            if depth == 0 and tok.text == ":=" and body[j - 1].kind == "id":
                locals_[body[j - 1].text] = j + 1
            if depth == 0 and tok.text == "return" and j + 1 < len(body) and body[j + 1].text != "}":
                value = Parser(body, j + 1).expr()
                if isinstance(value, Ref) and value.name in locals_:
                    return Parser(body, locals_[value.name]).expr()
                return value
        return Opaque()


@dataclass
class Enum:
    values: list[str]
    ignore_case: bool = False


@dataclass
class Validator:
    """A named validator (`validation.IntAtLeast(1)`, `verify.ValidateRFC3339Date`, a local function) and its
    arguments as far as they are literals (None where not)."""

    name: str
    args: list[Any] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.args:
            out["args"] = [_arg(a) for a in self.args]
        return out


def _arg(value: Any) -> Any:
    if isinstance(value, Validator):
        return value.record()
    if isinstance(value, Enum):
        return {"name": "StringInSlice", "args": [value.values, value.ignore_case]}
    if isinstance(value, list):
        return [_arg(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) else None


class Evaluator:
    def __init__(self, src: GoSource) -> None:
        self.src = src
        self.used: set[str] = set()

    def value(self, node: Any, depth: int = 0) -> Any:
        if depth > 40:
            return Opaque()
        if isinstance(node, Ref):
            if node.name in ("true", "false"):
                return node.name == "true"
            if node.name.startswith("schema.Type"):
                return node.name.removeprefix("schema.")
            found = self.src.find(node.name, "var")
            if found is None:
                return node
            self.used.add(found[0].path)
            return self.value(found[1], depth + 1)
        if isinstance(node, Call):
            return self.call(node, depth)
        if isinstance(node, Composite):
            if node.type and node.type.startswith("map["):
                return {self.value(k, depth): self.value(v, depth + 1) for k, v in node.items}
            if node.type and node.type.startswith("[]"):
                return [self.value(v, depth + 1) for _, v in node.items]
            return {(k.name if isinstance(k, Ref) else str(k)): self.value(v, depth + 1) for k, v in node.items}
        return node

    def call(self, node: Call, depth: int) -> Any:
        short = node.func.split(".")[-1]
        args = [self.value(a, depth + 1) for a in node.args]
        if short == "StringInSlice" and args and isinstance(args[0], list):
            return Enum([str(v) for v in args[0]], bool(args[1]) if len(args) > 1 else False)
        if short == "ValidateEnum" and args and isinstance(args[0], list):
            return Enum([str(v) for v in args[0]])
        if short == "ToDiagFunc" and args:
            return args[0]
        if short in ("All", "Any"):
            return next((a for a in args if isinstance(a, Enum)), None) or Validator(short, args)
        if short == "MustCompile" and args and isinstance(args[0], str):
            return args[0]  # regexp.MustCompile(`...`): the pattern
        if node.func.startswith(("validation.", "verify.")):
            return Validator(short, args)
        if short == "MergeSchemas":
            merged: dict[str, Any] = {}
            for a in args:
                if isinstance(a, dict):
                    merged.update(a)
            return merged
        if short in ("ResourceIamMember", "ResourceIamBinding") and args:
            base = self.value(Ref("IamMemberBaseSchema"), depth + 1)
            return {"Schema": {**(base if isinstance(base, dict) else {}), **args[0]}}
        found = self.src.find(node.func, "func")
        if found is None:
            return Validator(short, args) if short.lower().startswith("validate") else Opaque()
        self.used.add(found[0].path)
        value = self.value(found[1], depth + 1)
        # a local validator factory (it returns a function literal): recorded by name
        return Validator(short, args) if isinstance(value, Opaque) and "valid" in short.lower() else value


def registered_schema(src: GoSource, ev: Evaluator, tf_name: str) -> tuple[str, dict[str, Any]]:
    """(file, schema map) of the resource `registry.Schema{Name: tf_name, Type: ...Resource...}` registers."""
    needle = f'"{tf_name}"'
    for directory in SOURCE_DIRS:
        for path in sorted((src.root / directory).glob("*.go")):
            text = path.read_text()
            if path.name.endswith("_test.go") or needle not in text or "registry.Schema{" not in text:
                continue
            rel = path.relative_to(src.root).as_posix()
            toks = src.toks(rel)
            for i, tok in enumerate(toks):
                if tok.text == "registry" and toks[i + 2].text == "Schema" and toks[i + 3].text == "{":
                    lit = Parser(toks, i + 3).composite("registry.Schema")
                    fields = {k.name: v for k, v in lit.items if isinstance(k, Ref)}
                    kind = getattr(fields.get("Type"), "name", "")
                    if fields.get("Name") == tf_name and kind.endswith(("SchemaTypeResource", "SchemaTypeIAMResource")):
                        resource = ev.value(fields["Schema"])
                        return rel, resource["Schema"]
    raise LookupError(f"no registry.Schema for {tf_name}")


def _path(tf_path: str) -> str:
    """`maintenance_policy.0.daily_maintenance_window` -> `maintenance_policy.daily_maintenance_window`."""
    return ".".join(p for p in tf_path.split(".") if not p.isdigit())


def flatten(schema_map: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for name, sch in schema_map.items():
        if not isinstance(sch, dict):
            yield prefix + name, {"opaque": True}
            continue
        rec: dict[str, Any] = {"type": sch.get("Type", "")}
        for flag, key in (
            ("Required", "required"),
            ("Optional", "optional"),
            ("Computed", "computed"),
            ("ForceNew", "force_new"),
        ):
            if sch.get(flag) is True:
                rec[key] = True
        for key, as_key in (("MaxItems", "max_items"), ("MinItems", "min_items")):
            if isinstance(sch.get(key), int) and sch[key] > 0:
                rec[as_key] = sch[key]
        for key in RULE_KEYS:
            if isinstance(sch.get(key), list):
                rec[re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower()] = [_path(str(p)) for p in sch[key]]
        elem = sch.get("Elem")
        validator = sch.get("ValidateFunc") or sch.get("ValidateDiagFunc")
        if not isinstance(validator, Enum) and isinstance(elem, dict) and "Schema" not in elem:
            validator = elem.get("ValidateFunc") or elem.get("ValidateDiagFunc")
        if isinstance(validator, Enum):
            rec["enum"] = validator.values
            if validator.ignore_case:
                rec["enum_ignore_case"] = True
        if isinstance(elem, dict) and "Schema" not in elem and isinstance(elem.get("Type"), str):
            rec["elem_type"] = elem["Type"]
        for key, where in (("validate", sch), ("elem_validate", elem if isinstance(elem, dict) else {})):
            found = _validator(where.get("ValidateFunc") or where.get("ValidateDiagFunc"))
            if found is not None:
                rec[key] = found
        yield prefix + name, rec
        if isinstance(elem, dict) and isinstance(elem.get("Schema"), dict):
            yield from flatten(elem["Schema"], f"{prefix}{name}.")


def _validator(value: Any) -> dict[str, Any] | None:
    """The record of a validator other than an enum (enums are recorded as `enum`): a named function or a call of
    one; a function literal is recorded as such (nothing to check)."""
    if value is None or isinstance(value, Enum):
        return None
    if isinstance(value, Validator):
        return value.record()
    if isinstance(value, Ref):
        return {"name": value.name.split(".")[-1]}
    return {"name": "(function literal)"}


def extract(root: Path, origin: str) -> dict[str, Any]:
    src = GoSource(root)
    out: dict[str, Any] = {"origin": origin, "resources": {}}
    for pulumi_type, tf_name in sorted(RESOURCES.items()):
        ev = Evaluator(src)
        rel, schema_map = registered_schema(src, ev, tf_name)
        fields = dict(sorted(flatten(schema_map)))
        out["resources"][pulumi_type] = {
            "terraform": tf_name,
            "origin": f"{origin}:{rel}",
            "also_read": sorted(ev.used - {rel}),
            "fields": fields,
        }
    return out


# ---- reading the data and checking inputs ---------------------------------------------------------------------


@cache
def rules() -> dict[str, Any]:
    return json.loads(DATA.read_text())


def camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def pulumi_name(leaf: str, rec: dict[str, Any]) -> str:
    """The camelCase name Pulumi gives a provider field: a list or set that is not MaxItems=1 gets its plural
    (pulumi/pulumi-terraform-bridge pkg/tfbridge/names.go TerraformToPulumiNameV2: inflector.Pluralize when the
    name is singular), then snake_case becomes camelCase."""
    plural = rec.get("type") in ("TypeList", "TypeSet") and rec.get("max_items") != 1
    if plural and (not leaf.endswith("s") or leaf.endswith("ss")):
        if leaf.endswith("y") and leaf[-2:-1] not in "aeiou":
            return camel(leaf[:-1] + "ies")
        return camel(leaf + ("es" if leaf.endswith(("ss", "x", "ch", "sh")) else "s"))
    return camel(leaf)


@cache
def pulumi_names(pulumi_type: str) -> dict[str, str]:
    """Pulumi camelCase dotted path -> provider snake_case dotted path, for every field of the type."""
    fields = rules()["resources"][pulumi_type]["fields"]
    camel_of: dict[str, str] = {}
    for path in sorted(fields, key=lambda p: p.count(".")):
        parent, _, leaf = path.rpartition(".")
        camel_of[path] = (
            f"{camel_of[parent]}.{pulumi_name(leaf, fields[path])}" if parent else pulumi_name(leaf, fields[path])
        )
    return {c: t for t, c in camel_of.items()}


@cache
def force_new_fields(pulumi_type: str) -> dict[str, dict[str, Any]]:
    """camelCase input path -> its provider record (plus `block`: it holds nested fields), for each ForceNew field,
    under the name Pulumi registers it (a list of blocks under its plural)."""
    fields = rules()["resources"][pulumi_type]["fields"]
    out = {}
    for camel_path, tf_path in sorted(pulumi_names(pulumi_type).items()):
        rec = fields[tf_path]
        if rec.get("force_new"):
            out[camel_path] = {**rec, "block": any(p.startswith(tf_path + ".") for p in fields)}
    return out


def _present(v: Any) -> bool:
    """Sent: an empty object is a block of one element with nothing set (the bridge sends `[{}]`), an empty list
    is no block."""
    return v is not None and v != []


def _values_at(node: Any, parts: list[str], where: str = "") -> Iterator[tuple[str, Any]]:
    """(where, value) of every value at a camelCase dotted path, through lists of blocks (`a[0].b`)."""
    if not parts:
        yield where, node
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _values_at(item, parts, f"{where}[{i}]")
    elif isinstance(node, dict) and parts[0] in node:
        yield from _values_at(node[parts[0]], parts[1:], f"{where}.{parts[0]}".lstrip("."))


_INDEX = re.compile(r"\[\d+\]")


# ---- types and named validators, as the plugin SDK applies them --------------------------------------------------
# hashicorp/terraform-plugin-sdk@v2.40.1 helper/schema/schema.go: validateList refuses more than MaxItems (and fewer
# than MinItems) items; validatePrimitive refuses a list or a map for a primitive, then decodes the value the way
# mapstructure.WeakDecode does (TypeInt: a whole number or a string of one; TypeFloat and TypeBool: numbers, bools
# and strings strconv parses) and runs ValidateFunc on the decoded value.

_BOOL_STRINGS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True, "": False}
_BOOL_STRINGS |= {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def decode(type_: str, value: Any) -> tuple[Any, str | None]:
    """(decoded value, None) or (None, why the SDK refuses it) for a primitive of the given Terraform type."""
    if isinstance(value, list):
        return None, "must be a single value, not a list"
    if isinstance(value, dict):
        return None, "must be a single value, not a map"
    if type_ == "TypeInt":
        if isinstance(value, float) and value.is_integer():  # mocks and the bridge carry numbers as floats
            return int(value), None
        if isinstance(value, int) and not isinstance(value, bool):
            return value, None
        if isinstance(value, str):
            try:
                return int(value, 0), None
            except ValueError:
                pass
        return None, f"must be a whole number, got {value!r}"
    if type_ == "TypeFloat":
        try:
            return float(value), None
        except (TypeError, ValueError):
            return None, f"must be a number, got {value!r}"
    if type_ == "TypeBool":
        if isinstance(value, (bool, int, float)):
            return bool(value), None
        if isinstance(value, str) and value in _BOOL_STRINGS:
            return _BOOL_STRINGS[value], None
        return None, f"must be a bool, got {value!r}"
    if type_ == "TypeString" and isinstance(value, bool):
        return ("1" if value else "0"), None
    return (str(value) if type_ == "TypeString" else value), None


_GO_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_GO_DURATION = re.compile(r"[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")
_GCE_NAME = r"^(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)$"  # google-beta verify/validation.go ValidateGCEName
_RFC1918 = [
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
]  # verify Rfc1918Networks


def _rfc3339(v: Any) -> str | None:
    """Go time.Parse(time.RFC3339, v) (google-beta verify.ValidateRFC3339Date)."""
    if isinstance(v, str) and _GO_RFC3339.fullmatch(v):
        try:
            datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))
            return None
        except ValueError:
            pass
    return f"{v!r} is not an RFC 3339 time (2006-01-02T15:04:05Z07:00)"


def _cidr(v: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """Go net.ParseCIDR: an address and a prefix length (host bits may be set)."""
    try:
        return ipaddress.ip_network(v, strict=False) if isinstance(v, str) and "/" in v else None
    except ValueError:
        return None


def _cidr_network(v: Any, low: int, high: int) -> str | None:
    """plugin-sdk validation.IsCIDRNetwork: a CIDR written as its network, prefix length in [low, high]."""
    net = _cidr(v)
    if net is None:
        return f"{v!r} is not a CIDR"
    if str(net) != v:
        return f"{v!r} is not a network address (expected {net})"
    if not low <= net.prefixlen <= high:
        return f"{v!r} has a prefix length outside {low}..{high}"
    return None


def _rfc1918(v: Any, low: int, high: int) -> str | None:
    """google-beta verify.ValidateRFC1918Network: IsCIDRNetwork and inside 10/8, 172.16/12 or 192.168/16."""
    problem = _cidr_network(v, low, high)
    net = _cidr(v)
    v4 = net if isinstance(net, ipaddress.IPv4Network) else None
    inside = v4 is not None and any(v4.subnet_of(r) for r in _RFC1918)
    if problem is None and not inside:
        problem = f"{v!r} is not an RFC 1918 range"
    return problem


def _rfc6996_asn(v: int) -> str | None:
    """google-beta verify.ValidateRFC6996Asn: a private ASN or Google's partner ASN 16550."""
    ok = 64512 <= v <= 65534 or 4200000000 <= v <= 4294967294 or v == 16550
    return None if ok else f"{v} is not a private ASN (64512-65534, 4200000000-4294967294) or 16550"


def _hourly(v: str) -> str | None:
    """google-beta verify.ValidateHourlyOnly: HH:00."""
    hour, colon, minute = v.partition(":")
    ok = colon and minute == "00" and hour.lstrip("+-").isdigit() and 0 <= int(hour) <= 23
    return None if ok else f"{v!r} is not HH:00"


def _hh_mm(v: str) -> str | None:
    """google-beta verify.ValidateRFC3339Time: HH:mm."""
    ok = len(v) == 5 and v[2] == ":" and v[:2].isdigit() and v[3:].isdigit() and int(v[:2]) <= 23
    return None if ok and int(v[3:]) <= 59 else f"{v!r} is not HH:mm"


def _match(v: Any, pattern: str | None, what: str) -> str | None:
    if pattern is None or not isinstance(v, str):
        return None
    return None if re.search(pattern, v) else f"{v!r} does not match {what or pattern}"


def _json(v: Any) -> str | None:
    try:
        json.loads(v)
        return None
    except (TypeError, ValueError):
        return f"{v!r} is not JSON"


def _between(v: Any, low: Any, high: Any) -> str | None:
    return None if low <= v <= high else f"{v!r} is outside {low}..{high}"


# name -> check(decoded value, args) -> what is wrong, or None. Sources: hashicorp/terraform-plugin-sdk@v2.40.1
# helper/validation/{int,float,strings,network}.go; google-beta verify/validation.go; google-beta
# services/container/resource_container_cluster.go validateDuration (time.ParseDuration).
CHECKS: dict[str, Any] = {
    "IntAtLeast": lambda v, a: None if v >= a[0] else f"{v} is less than {a[0]}",
    "IntAtMost": lambda v, a: None if v <= a[0] else f"{v} is more than {a[0]}",
    "IntBetween": lambda v, a: _between(v, a[0], a[1]),
    "FloatBetween": lambda v, a: _between(v, a[0], a[1]),
    "FloatAtLeast": lambda v, a: None if v >= a[0] else f"{v} is less than {a[0]}",
    "StringLenBetween": lambda v, a: None if a[0] <= len(v) <= a[1] else f"{v!r} is not {a[0]}-{a[1]} characters",
    "StringMatch": lambda v, a: _match(v, a[0], a[1] if len(a) > 1 else ""),
    "ValidateRegexp": lambda v, a: _match(v, a[0], ""),
    "ValidateGCEName": lambda v, a: _match(v, _GCE_NAME, "a GCE name (RFC 1035, at most 63 characters)"),
    "ValidateRFC1035Name": lambda v, a: (
        None
        if a[0] <= len(v) <= a[1] and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", v)
        else f"{v!r} is not an RFC 1035 name of {a[0]}-{a[1]} characters"
    ),
    "StringIsJSON": lambda v, a: _json(v),
    # google-beta@v7.45.0 verify/validation.go: IAMCustomRoleIDRegex = "^[a-zA-Z0-9_\\.]{3,64}$"
    "ValidateIAMCustomRoleID": lambda v, a: (
        None if re.fullmatch(r"[a-zA-Z0-9_.]{3,64}", v) else f"{v!r} is not a custom role id ([a-zA-Z0-9_.]{{3,64}})"
    ),
    "IsCIDR": lambda v, a: None if _cidr(v) else f"{v!r} is not a CIDR",
    "ValidateIpCidrRange": lambda v, a: None if _cidr(v) else f"{v!r} is not a CIDR",
    "IsCIDRNetwork": lambda v, a: _cidr_network(v, a[0], a[1]),
    "ValidateRFC1918Network": lambda v, a: _rfc1918(v, a[0], a[1]),
    "ValidateRFC3339Date": lambda v, a: _rfc3339(v),
    "ValidateRFC3339Time": lambda v, a: _hh_mm(v),
    "ValidateHourlyOnly": lambda v, a: _hourly(v),
    "ValidateRFC6996Asn": lambda v, a: _rfc6996_asn(v),
    "validateDuration": lambda v, a: None if _GO_DURATION.fullmatch(v) else f"{v!r} is not a Go duration (e.g. 4h)",
    "ValidateDuration": lambda v, a: None if _GO_DURATION.fullmatch(v) else f"{v!r} is not a Go duration (e.g. 4h)",
    # google-beta/services/monitoring/resource_monitoring_slo.go
    "validateMonitoringSloGoal": lambda v, a: None if 0 < v <= 0.9999 else f"goal {v} must be > 0 and <= 0.9999",
    "validateAvailabilitySli": lambda v, a: None if v is True else f"{v!r} must be true",
}
# Recorded by the extractor, not checked here (the reason each): labelKeyValidator checks map keys against a regexp
# var the extractor does not read; validateIAMMember and a function literal are code, not data.
UNCHECKED = {"labelKeyValidator", "validateIAMMember", "(function literal)"}


def check_validator(spec: dict[str, Any], value: Any) -> str | None:
    """What a recorded validator refuses in a decoded value (None: accepted, or not checkable)."""
    name, args = spec["name"], spec.get("args", [])
    if name == "OrEmpty":
        return None if value == "" else check_validator(args[0], value)
    if name in ("All", "Any"):
        found = [check_validator(a, value) for a in args if isinstance(a, dict)]
        bad = [f for f in found if f]
        return (bad[0] if bad else None) if name == "All" else (bad[0] if found and len(bad) == len(found) else None)
    check = CHECKS.get(name)
    if check is None or any(a is None for a in args):
        return None
    try:
        return check(value, args)
    except TypeError:
        return None


@dataclass
class _Check:
    """One resource's inputs against its provider schema (tooling.harness.offline.UNKNOWN, an output a preview does not
    know, counts as set: the provider validates it once known, and a check cannot see its value)."""

    fields: dict[str, Any]
    camel: dict[str, str]  # provider path -> camelCase path
    inputs: dict[str, Any]
    out: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        if message not in self.out:
            self.out.append(message)

    def name(self, tf_path: str) -> str:
        return self.camel.get(tf_path, tf_path).rpartition(".")[2]

    def sent_anywhere(self, tf_path: str) -> bool:
        return any(_present(v) for _, v in _values_at(self.inputs, self.camel[tf_path].split(".")))

    def blocks(self, tf_parent: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every sent instance of the block at `tf_parent` ('' = the resource itself): (where, its inputs)."""
        if not tf_parent:
            yield "", self.inputs
            return
        for where, v in _values_at(self.inputs, self.camel[tf_parent].split(".")):
            for i, item in enumerate(v if isinstance(v, list) else [v]):
                if isinstance(item, dict):
                    yield where + (f"[{i}]" if isinstance(v, list) else ""), item

    def field(self, path: str, where: str, block: dict[str, Any]) -> None:
        """plugin-sdk schemaMap.validate for one field of one sent block: ExactlyOneOf and AtLeastOneOf always,
        Required when unset, RequiredWith and ConflictsWith when set. A rule naming a field of the same block is
        read in that block; one naming a field elsewhere, anywhere it is sent."""
        rec, parent = self.fields[path], path.rpartition(".")[0]
        here = f"{where}.{self.name(path)}".lstrip(".")

        def sent(tf_path: str) -> bool:
            if tf_path.rpartition(".")[0] == parent:
                return _present(block.get(self.name(tf_path)))
            return tf_path in self.camel and self.sent_anywhere(tf_path)

        for key, need in (("exactly_one_of", "exactly one"), ("at_least_one_of", "at least one")):
            if group := rec.get(key):
                # the field itself is one of the group (hashicorp/terraform-plugin-sdk@v2.40.1
                # helper/schema/schema.go validateExactlyOneAttribute: `append(schema.ExactlyOneOf, k)`)
                group = list(dict.fromkeys([*group, path]))
                count = sum(sent(p) for p in group)
                if count == 0 or (key == "exactly_one_of" and count > 1):
                    names = ", ".join(self.name(p) for p in group)
                    self.add(f"{where or '(resource)'}: {need} of [{names}] must be set ({count} set)")
        if not sent(path):
            if rec.get("required"):
                self.add(f"{here}: required")
            return
        for other in rec.get("conflicts_with", []):
            if sent(other):
                self.add(f"{here}: conflicts with {self.camel.get(other, other)}")
        for other in rec.get("required_with", []):
            if not sent(other):
                self.add(f"{here}: requires {self.camel.get(other, other)}")

    def shape(self, here: str, rec: dict[str, Any], value: Any, *, block: bool) -> None:
        """The value's type, its number of items (MaxItems, MinItems) and its named validators (plugin-sdk
        schemaMap.validateList / validateMap / validatePrimitive). A MaxItems=1 block or value Pulumi registers as
        itself, not as a list of one (pulumi-terraform-bridge flattens it)."""
        if value is None or value == UNKNOWN:
            return
        type_ = rec.get("type", "")
        if type_ in ("TypeList", "TypeSet"):
            items = value if isinstance(value, list) else [value]
            if isinstance(value, list) and value and rec.get("max_items") and len(value) > rec["max_items"]:
                self.add(f"{here}: at most {rec['max_items']} item(s) allowed, {len(value)} given")
            if isinstance(value, list) and value and len(value) < rec.get("min_items", 0):
                self.add(f"{here}: at least {rec['min_items']} item(s) required, {len(value)} given")
            for i, item in enumerate(items):
                at = f"{here}[{i}]" if isinstance(value, list) else here
                if block and not isinstance(item, dict) and item != UNKNOWN:
                    self.add(f"{at}: must be a block (an object), got {item!r}")
                elif not block:
                    self.primitive(at, rec.get("elem_type", "TypeString"), rec.get("elem_validate"), item)
        elif type_ == "TypeMap":
            if not isinstance(value, dict):
                self.add(f"{here}: must be a map, got {value!r}")
                return
            for key, item in value.items():
                self.primitive(f"{here}.{key}", rec.get("elem_type", "TypeString"), rec.get("elem_validate"), item)
        elif type_:
            self.primitive(here, type_, rec.get("validate"), value)

    def primitive(self, here: str, type_: str, validator: dict[str, Any] | None, value: Any) -> None:
        if value is None or value == UNKNOWN:
            return
        decoded, why = decode(type_, value)
        if why is None and validator is not None:
            why = check_validator(validator, decoded)
        if why is not None:
            self.add(f"{here}: {why}")

    def names_and_enums(self, node: Any, where: str) -> None:
        """Every input is a field of the schema, and every value of an enum-validated field is one it allows."""
        if isinstance(node, list):
            for i, item in enumerate(node):
                self.names_and_enums(item, f"{where}[{i}]")
            return
        if not isinstance(node, dict):
            return
        by_camel = {c: t for t, c in self.camel.items()}
        plain = _INDEX.sub("", where)
        for key, value in node.items():
            here = f"{where}.{key}".lstrip(".")
            tf_path = by_camel.get(f"{plain}.{key}".lstrip("."))
            if tf_path is None:
                self.add(f"{here}: not a field of the provider's schema")
                continue
            rec = self.fields[tf_path]
            self.shape(here, rec, value, block=any(p.startswith(tf_path + ".") for p in self.fields))
            allowed = rec.get("enum")
            for v in value if isinstance(value, list) else [value]:
                if allowed and isinstance(v, str) and v != UNKNOWN:
                    fold = rec.get("enum_ignore_case")
                    if (v.lower() not in {e.lower() for e in allowed}) if fold else v not in allowed:
                        self.add(f"{here}: {v!r} is not one of {allowed}")
            if any(p.startswith(tf_path + ".") for p in self.fields):
                self.names_and_enums(value, here)


def violations(pulumi_type: str, inputs: dict[str, Any]) -> list[str]:
    """What the provider's schema validation refuses in one resource's inputs (camelCase, as registered)."""
    fields = rules()["resources"][pulumi_type]["fields"]
    check = _Check(fields, {t: c for c, t in pulumi_names(pulumi_type).items()}, inputs)
    check.names_and_enums(inputs, "")
    for path in sorted(fields, key=lambda p: (p.count("."), p)):
        for where, block in check.blocks(path.rpartition(".")[0]):
            check.field(path, where, block)
    return check.out


def recording_violations(recording: Any) -> list[str]:
    """`<type> <name>: <violation>` for every Google Cloud resource a run registered."""
    from tooling.harness.k8s_objects import plain

    out = []
    for reg in recording.resources:
        if reg.type.startswith("gcp:") and reg.custom:
            inputs = plain(reg.inputs, mask_secrets=False)
            if reg.type not in RESOURCES:
                out.append(f"{reg.type} {reg.name}: no provider rules (add it to RESOURCES and regenerate)")
                continue
            out.extend(f"{reg.type} {reg.name}: {v}" for v in violations(reg.type, inputs))
    return out


# ---- command line ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, help="a checkout of terraform-provider-google-beta")
    ap.add_argument("--origin", help=f"what --source is, as {REPO}@<ref>")
    ap.add_argument("--git", type=Path, help="a git directory of terraform-provider-google-beta (bare is fine)")
    ap.add_argument("--ref", default=REF, help="the tag or commit to read from --git")
    ap.add_argument("--out", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if args.git:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "-C", str(args.git), "archive", args.ref, *SOURCE_DIRS], check=True, capture_output=True
            ).stdout
            Path(tmp, "src.tar").write_bytes(archive)
            with tarfile.open(Path(tmp, "src.tar")) as tar:
                tar.extractall(Path(tmp, "src"), filter="data")
            commit = subprocess.run(
                ["git", "-C", str(args.git), "rev-parse", f"{args.ref}^{{commit}}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            data = extract(Path(tmp, "src"), f"{REPO}@{args.ref}")
            data["commit"] = commit
            if args.ref == REF:
                data["origin_note"] = ORIGIN_NOTE
    elif args.source and args.origin:
        data = extract(args.source, args.origin)
    else:
        ap.error("give --git and --ref, or --source and --origin")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {sum(len(r['fields']) for r in data['resources'].values())} fields", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
