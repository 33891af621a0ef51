"""The fields on whose change the Kubernetes provider replaces a built-in object instead of updating it, read from the
provider's own table (pulumi/pulumi-kubernetes provider/pkg/provider/diff.go: `forceNew`, its per-kind property lists
and the helpers they call) and written to tooling/data/k8s_force_new.json, which the transition review reads
(tooling/review/transition.py FORCE_NEW).

Beside it, what the API server refuses to change on update (API_RULES, `api_server`), from the Kubernetes sources.

`python -m tooling.oracles.k8s_force_new [diff.go [kubernetes source root]]` regenerates it; without an argument the file is looked up in the
Go module cache (the provider module the local toolchain builds, docs/toolchain.md). The table is the same at that
commit (v4.25.0) and after 4.32.0 (the pulumi/pulumi-kubernetes snapshot of 2026-07-01); the proxy does not serve the
pinned 4.34.2's module.

Besides the table, diff.go's forceNewProperties adds `.metadata.name` and `.metadata.namespace` for every kind, a
Secret's `.type`, `.stringData` and `.data` unless `enableSecretMutable`, and a ConfigMap's `.binaryData` and `.data`
unless `enableConfigMapMutable` (the stack's providers set neither): those are recorded under "always" and
"unless_mutable".

A helm.sh/v3 Release is diffed by its own provider (helm_release.go): its `forceNewFields` (`.name`, `.namespace`)
are recorded under "helm_release".
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "data" / "k8s_force_new.json"
MODULE = "github.com/pulumi/pulumi-kubernetes/provider/v4@v4.0.0-20260115033456-f47bc2d6f199"
ORIGIN = f"{MODULE}/pkg/provider/diff.go"
UNLESS_MUTABLE = {"core/v1/Secret": [".type", ".stringData", ".data"], "core/v1/ConfigMap": [".binaryData", ".data"]}

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\.\.\.|[A-Za-z_]\w*|[{}(),:+]|//[^\n]*|\s+')


def source() -> Path | None:
    """diff.go in the Go module cache, if the provider module is there."""
    for root in (Path.home() / "go" / "pkg" / "mod", Path("/root/go/pkg/mod")):
        path = root / "github.com" / "pulumi" / "pulumi-kubernetes" / "provider" / MODULE.split("/")[-1]
        if (path / "pkg" / "provider" / "diff.go").is_file():
            return path / "pkg" / "provider" / "diff.go"
    return None


def _tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text) if t.strip() and not t.startswith("//")]


class _Parser:
    """A reader of the Go expressions diff.go's table is made of: string literals, composite literals
    (`_groups{...}`, `properties{...}`), `append(a, b...)`, `prefix + "..."`, variables and helper calls."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.vars: dict[str, Any] = {}
        self.funcs = dict(re.findall(r"func (\w+)\([^)]*\) properties \{(.*?)\n\}", text, re.S))

    def var(self, name: str) -> Any:
        if name not in self.vars:
            start = self.text.index(f"var {name} = ") + len(f"var {name} = ")
            tokens = _tokens(self.text[start:])
            value, _ = self.expr(tokens, 0, {})
            self.vars[name] = value
        return self.vars[name]

    def expr(self, t: list[str], i: int, env: dict[str, str]) -> tuple[Any, int]:
        tok = t[i]
        if tok.startswith('"'):
            value: Any = json.loads(tok)
            i += 1
        elif tok == "append":
            assert t[i + 1] == "("
            first, i = self.expr(t, i + 2, env)
            out = list(first)
            while t[i] == "," and t[i + 1] != ")":  # a trailing comma before the `)`
                more, i = self.expr(t, i + 1, env)
                if t[i] == "...":
                    i += 1
                out.extend(more)
            i += 1 if t[i] == "," else 0
            assert t[i] == ")", t[i - 3 : i + 3]
            value, i = out, i + 1
        elif i + 1 < len(t) and t[i + 1] == "{":
            items, i = self.items(t, i + 2, env)
            value = dict(items) if items and isinstance(items[0], tuple) else [v for v in items]
            if tok == "properties":
                value = list(value)
        elif i + 1 < len(t) and t[i + 1] == "(":
            args = []
            i += 2
            while t[i] != ")":
                arg, i = self.expr(t, i, env)
                args.append(arg)
                if t[i] == ",":
                    i += 1
            value, i = self.call(tok, args), i + 1
        elif tok in env:
            value, i = env[tok], i + 1
        else:
            value, i = self.var(tok), i + 1
        if i < len(t) and t[i] == "+":
            rest, i = self.expr(t, i + 1, env)
            value = value + rest
        return value, i

    def items(self, t: list[str], i: int, env: dict[str, str]) -> tuple[list[Any], int]:
        out: list[Any] = []
        while t[i] != "}":
            value, i = self.expr(t, i, env)
            if t[i] == ":":
                item, i = self.expr(t, i + 1, env)
                out.append((value, item))
            else:
                out.append(value)
            if t[i] == ",":
                i += 1
        return out, i + 1

    def call(self, name: str, args: list[Any]) -> list[str]:
        """A helper `func name(prefix string) properties`: each `properties{...}` literal in its body, evaluated
        with its parameter bound to each argument (containerForceNewProperties loops over its prefixes)."""
        body = self.funcs[name]
        param = re.search(rf"func {name}\((\w+)", self.text)
        bind = "prefix" if param is None else param.group(1)
        if bind.endswith("s"):  # variadic `prefixes ...string`, looped over as `prefix`
            bind = "prefix"
        out: list[str] = []
        literal = body[body.index("properties{") :]
        for arg in args:
            value, _ = self.expr(_tokens(literal), 0, {bind: arg})
            out.extend(value)
        return out


def derive(path: Path) -> dict[str, Any]:
    """<group>/<version>/<Kind> ("core" for the legacy group) -> its force-new field paths, as in diff.go."""
    parser = _Parser(path.read_text())
    table = parser.var("forceNew")
    kinds: dict[str, list[str]] = {}
    for group, versions in table.items():
        if group == "":  # the legacy name of core, listed twice
            continue
        for version, by_kind in versions.items():
            for kind, fields in by_kind.items():
                kinds[f"{group}/{version}/{kind}"] = sorted(dict.fromkeys(fields))
    return {
        "origin": ORIGIN,
        "always": parser.call("metadataForceNewProperties", [".metadata"]),
        "unless_mutable": UNLESS_MUTABLE,
        "kinds": dict(sorted(kinds.items())),
        "helm_release": helm_release_force_new(path.parent / "helm_release.go"),
    }


def helm_release_force_new(path: Path) -> dict[str, Any]:
    """A helm.sh/v3 Release's force-new inputs: helm_release.go Diff's `forceNewFields := []string{...}` (its
    release name and namespace; the DiffResponse's DeleteBeforeReplace is false, so the new release is installed
    before the old one is uninstalled)."""
    text = path.read_text()
    found = re.search(r"forceNewFields := \[\]string\{([^}]*)\}", text)
    if found is None:
        raise ValueError(f"{path}: no forceNewFields in helmReleaseProvider.Diff")
    fields = re.findall(r'"([^"]+)"', found.group(1))
    delete_first = re.search(r"DeleteBeforeReplace:\s*(\w+)", text)
    return {
        "origin": f"{MODULE}/pkg/provider/helm_release.go",
        "fields": fields,
        "delete_before_replace": bool(delete_first and delete_first.group(1) == "true"),
    }


# What the API server refuses to change on update, for the built-in kinds the review checks, read from the Kubernetes
# sources at the control plane's version (k8s.io/kubernetes@v1.35.4, the local toolchain's; the Go module cache):
# (file, functions, kind); each function's `ValidateImmutableField(..., <path>.Child("x"))` and
# `NewPath("spec", "x")...("may not change once set" | "field is immutable")`.
KUBERNETES = "k8s.io/kubernetes@v1.35.4"
API_RULES = (
    ("pkg/apis/apps/validation/validation.go", ("ValidateDeploymentUpdate",), "apps/v1/Deployment"),
    ("pkg/apis/apps/validation/validation.go", ("ValidateDaemonSetSpecUpdate",), "apps/v1/DaemonSet"),
    (
        "pkg/apis/batch/validation/validation.go",
        ("ValidateJobSpecUpdate", "validatePodTemplateUpdate"),
        "batch/v1/Job",
    ),
    (
        "pkg/apis/core/validation/validation.go",
        (
            "validateUpgradeDowngradeClusterIPs",
            "validateUpgradeDowngradeIPFamilies",
            "validateServiceExternalTrafficFieldsUpdate",
        ),
        "core/v1/Service",
    ),
)
# A StatefulSet's spec is immutable but for the fields its update validation names (ValidateStatefulSetUpdate).
STATEFULSET_MUTABLE = re.compile(r"updates to statefulset spec for fields other than ([^\"]*?) are forbidden")


def kubernetes_source() -> Path | None:
    for root in (Path.home() / "go" / "pkg" / "mod", Path("/root/go/pkg/mod")):
        if (root / KUBERNETES / "pkg" / "apis").is_dir():
            return root / KUBERNETES
    return None


def _body(text: str, name: str) -> str:
    start = text.index(f"func {name}(")
    return text[start : text.index("\n}\n", start)]


def api_immutables(root: Path) -> dict[str, Any]:
    """<group>/<version>/<Kind> -> the spec fields its update validation refuses to change (module comment)."""
    kinds: dict[str, list[str]] = {}
    for file, functions, kind in API_RULES:
        text = (root / file).read_text()
        fields: set[str] = set()
        for function in functions:
            body = _body(text, function)
            fields.update(re.findall(r'ValidateImmutableField\([^\n]*?Child\("(\w+)"\)\)', body))
            fields.update(re.findall(r'validateCompletions\([^\n]*?Child\("(\w+)"\)', body))
            fields.update(
                re.findall(r'NewPath\("spec", "(\w+)"\)[^\n]*?(?:may not change once set|"field is immutable")', body)
            )
        kinds[kind] = sorted(f"spec.{f}" for f in fields)
    # clusterIP is clusterIPs[0] ("If ClusterIP is set, ClusterIPs[0] must match", validateServiceClusterIPsRelatedFields)
    if "spec.clusterIPs" in kinds["core/v1/Service"]:
        kinds["core/v1/Service"] = sorted({*kinds["core/v1/Service"], "spec.clusterIP"})
    apps = (root / "pkg/apis/apps/validation/validation.go").read_text()
    match = STATEFULSET_MUTABLE.search(apps)
    mutable = re.findall(r"'(\w+)'", match.group(1)) if match else []
    return {"origin": KUBERNETES, "kinds": kinds, "statefulset_mutable": sorted(f"spec.{f}" for f in mutable)}


def text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def derive_all(path: Path, kubernetes: Path) -> dict[str, Any]:
    return {**derive(path), "api_server": api_immutables(kubernetes)}


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else source()
    kubernetes = Path(argv[1]) if len(argv) > 1 else kubernetes_source()
    if path is None or kubernetes is None:
        print(f"no diff.go or Kubernetes sources: `go mod download {MODULE} {KUBERNETES}`", file=sys.stderr)
        return 1
    OUT.write_text(text(derive_all(path, kubernetes)))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
