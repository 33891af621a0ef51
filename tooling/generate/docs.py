"""The docs written by the program: docs/configuration.md whole (from the config models, through the JSON Schema they
generate), and the tables derived from registries inside hand-written pages, each between
`<!-- generated:NAME -->` and `<!-- /generated:NAME -->`.

    python -m tooling.generate.docs            # rewrite them
    python -m tooling.generate.docs --check    # exit 1 if any is stale (make lint; tests/test_docs.py)

The models' Field descriptions are the one source of every key's meaning: no key table is written by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stacks.config import NS
from stacks.model import pulumi_path
from tooling.generate import json_schema, transition_matrix
from tooling.generate.package_map import stacks_map, tooling_map
from tooling.generate.readme_tables import (
    alerts_table,
    gke_managed_table,
    metrics_adapters_table,
    profiles_table,
    release_train_cost_table,
    time_to_serve_assumptions_table,
    time_to_serve_cases_table,
)
from tooling.harness.offline import ROOT
from tooling.oracles import gcp_requirements
from tooling.review.summary import table

DOCS = ROOT / "docs"
REFERENCE = DOCS / "configuration.md"
HEADER = ["key", "type", "default", "allowed", "meaning"]

# The generated blocks inside hand-written pages: name -> the text between its markers.
BLOCKS: dict[str, Callable[[], str]] = {
    "metrics-adapters": metrics_adapters_table,
    "gke-managed": gke_managed_table,
    "profiles": profiles_table,
    "time-to-serve-assumptions": time_to_serve_assumptions_table,
    "time-to-serve-cases": time_to_serve_cases_table,
    "alerts": alerts_table,
    "deployer-prerequisites": gcp_requirements.prerequisites_block,
    "deployer-least-privilege": gcp_requirements.least_privilege_block,
    "stacks-map": stacks_map,
    "tooling-map": tooling_map,
    "transition-matrix": lambda: transition_matrix.table(),
    "release-train-cost": release_train_cost_table,
}


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(value: Any) -> str:
    return f"`{value}`" if isinstance(value, str) and value else f"`{json.dumps(value)}`"


class Reference:
    """Rows of key, type, default, allowed values and meaning, walking a JSON Schema whose $refs point into defs."""

    def __init__(self, defs: dict[str, Any]) -> None:
        self.defs = defs

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            target = self.defs[node["$ref"].rsplit("/", 1)[1]]
            return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def _variants(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The non-null alternatives of an anyOf (a field that may be unset), else the node itself."""
        options = [
            self.resolve(o)
            for o in node.get("anyOf", [node])
            if o.get("type") != "null" and o.get("$comment") != pulumi_path.PATH_COMMENT
        ]
        return options or [node]

    def type_of(self, node: dict[str, Any]) -> str:
        names = []
        for option in self._variants(node):
            kind = option.get("type", "object" if "properties" in option else "any")
            if "const" in option or "enum" in option:
                kind = "enum"
            elif kind == "array":
                item = self.resolve(option.get("items", {}))
                kind = f"list of {self.type_of(item)}"
            elif kind == "object" and "properties" not in option:
                kind = "map"
            names.append(kind)
        return " or ".join(dict.fromkeys(names))

    def allowed(self, node: dict[str, Any]) -> str:
        found = []
        for option in self._variants(node):
            if "const" in option:
                found.append(_code(option["const"]))
            if "enum" in option:
                found.append(", ".join(_code(v) for v in option["enum"]))
            low = option.get("minimum", option.get("exclusiveMinimum"))
            high = option.get("maximum")
            if low is not None or high is not None:
                left = "" if low is None else f"{low} {'<' if 'exclusiveMinimum' in option else '<='} "
                found.append(f"{left}n{'' if high is None else f' <= {high}'}")
            if "pattern" in option:
                found.append(f"matches `{option['pattern']}`")
            if "minLength" in option or "maxLength" in option:
                found.append(f"{option.get('minLength', 0)} to {option.get('maxLength', '...')} characters")
        return "; ".join(found)

    def rows(self, key: str, node: dict[str, Any], required: bool) -> list[list[str]]:
        # the field's own description, then what its model's docstring adds
        models = [self.resolve(o) for o in node.get("anyOf", [node]) if "$ref" in o or "title" in o]
        said = [node.get("description", ""), *(m.get("description", "") for m in models)]
        description = " ".join(dict.fromkeys(d for d in said if d))
        if not description and "const" in node:  # a workload type's discriminator
            description = f"Selects this workload type: {node['const']}."
        node = self.resolve(node)
        if "default" in node:
            default = _code(node["default"]) if node["default"] is not None else "unset"
        else:
            default = "required" if required else ""
        rows = [[f"`{key}`", self.type_of(node), default, _cell(self.allowed(node)), _cell(description)]]
        for option in self._variants(node):
            if option.get("type") == "array" and "properties" in self.resolve(option.get("items", {})):
                rows.extend(self.children(f"{key}[]", self.resolve(option["items"])))
            elif "properties" in option:
                rows.extend(self.children(key, option))
        return rows

    def is_section(self, node: dict[str, Any]) -> bool:
        """A key documented in a section of its own: a model (it has a title) or a list."""
        return any("title" in option or option.get("type") == "array" for option in self._variants(node))

    def section(self, key: str, node: dict[str, Any], required: bool, page: str | None) -> list[str]:
        """A key's heading (`key[]` for a list), the page on what it does, and its rows (a list's: its items')."""
        listed = any(option.get("type") == "array" for option in self._variants(node))
        rows = self.rows(key, node, required)
        lines = [f"## `{key}[]`" if listed else f"## `{key}`", ""]
        if page:
            lines += [f"What it does: [{page.split('#', 1)[0].removesuffix('.md')}]({page}).", ""]
        return [*lines, *table(HEADER, rows[1:] if listed else rows), ""]

    def children(self, key: str, model: dict[str, Any]) -> list[list[str]]:
        required = set(model.get("required", []))
        rows: list[list[str]] = []
        for name, field in model["properties"].items():
            rows.extend(self.rows(f"{key}.{name}", field, name in required))
        return rows


def configuration_reference() -> str:
    schema = json_schema.stack_config_schema()
    config = schema["properties"]["config"]
    ref = Reference(schema["$defs"])
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `.venv/bin/python -m tooling.generate.docs` from the config models (stacks/model/config_model.py, each "
        "workload type's config.py, the add-on registry); `make lint` fails when it is stale. Do not edit. -->",
        "",
        "Every key of `Pulumi.<stack>.yaml` the program reads, with its type, default, allowed values and meaning, "
        "generated from the config models' Field descriptions (the same models give the JSON Schema "
        "`schema/stack-config.schema.json` your editor validates with). Keys are camelCase; unknown `tpu-serving:` "
        "keys are errors. `unset` means the key may be left out or `null`; where the default depends on other keys "
        "(the environment profile, the pool), the meaning says how. The rules between keys (catalog, zones, names, "
        "what fits in a pool) are in [stack config](stack-config.md).",
        "",
    ]
    regional, fleet = config["else"], config["then"]
    keys, required = regional["properties"], set(regional["required"])
    plain = [key for key, node in keys.items() if not ref.is_section(node)]  # not a model nor a list
    lines += ["## Stack keys", "", *table(HEADER, [r for k in plain for r in ref.rows(k, keys[k], k in required)]), ""]
    pages = {f"{NS}:addons": "addons-and-monitoring.md", f"{NS}:monitoring": "addons-and-monitoring.md"}
    pages[f"{NS}:gateway"] = "gateway.md"
    pages[f"{NS}:cost"] = "operations.md"
    pages[f"{NS}:alerts"] = "operations.md#alerts"
    for key in (k for k in keys if k not in plain and not k.endswith(":workloads")):
        lines += ref.section(key, keys[key], key in required, pages.get(key))
    lines += [f"## `{NS}:workloads[]`", ""]
    lines += [
        "Each entry has a `type`; its keys are those of its type, and each type has a page on what it deploys.",
        "",
    ]
    for name, entry in json_schema.WORKLOAD_TYPES.items():  # the types the schema is built from
        model = ref.resolve({"$ref": json_schema.REF.format(model=entry.config.__name__)})
        page = f"workloads/{name}.md"
        lines += [f"### `type: {name}`", "", f"{_cell(model.get('description', ''))} ([{name}]({page}))", ""]
        lines += [*table(HEADER, ref.children(f"{NS}:workloads[]", model)), ""]
    lines += [
        "## A fleet stack",
        "",
        f"A config with `{NS}:fleet` is a fleet stack ([fleet](fleet.md)): it reads these keys and no other "
        f"`{NS}:` key.",
        "",
    ]
    fleet_keys, fleet_required = fleet["properties"], set(fleet["required"])
    fleet_plain = [key for key, node in fleet_keys.items() if not ref.is_section(node)]
    rows = [r for k in fleet_plain for r in ref.rows(k, fleet_keys[k], k in fleet_required)]
    lines += [*table(HEADER, rows), ""]
    for key in (k for k in fleet_keys if k not in fleet_plain):
        lines += ref.section(key, fleet_keys[key], key in fleet_required, "fleet.md")
    return "\n".join(lines)


MARKER = re.compile(r"(<!-- generated:([\w-]+) -->\n)(.*?)(<!-- /generated:\2 -->)", re.S)


def fill(text: str) -> str:
    """The page with each generated block rewritten from its source."""

    def block(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in BLOCKS:
            raise SystemExit(f"unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        return f"{match.group(1)}{BLOCKS[name]()}\n{match.group(4)}"

    return MARKER.sub(block, text)


def pages() -> dict[Path, str]:
    """Every generated page or page with a generated block, as it should read."""
    wanted = {REFERENCE: configuration_reference() + "\n"}
    for path in sorted([ROOT / "README.md", *DOCS.rglob("*.md")]):
        if path != REFERENCE and MARKER.search(path.read_text()):
            wanted[path] = fill(path.read_text())
    return wanted


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*$", re.M)


def _without_code(text: str) -> str:
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))


def anchors(text: str) -> set[str]:
    """The heading anchors GitHub gives a page: the text as shown, lower case, punctuation but `-` and `_` dropped,
    spaces as `-`; a repeated one gets `-1`, `-2`, ..."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)):
        shown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", shown.lower()).replace(" ", "-")
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def doc_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "examples" / "README.md", *sorted(DOCS.rglob("*.md"))]


def broken_links(texts: dict[Path, str] | None = None) -> list[str]:
    """Every relative link of the docs whose file or heading anchor does not exist, as `page: target`."""
    texts = texts or {path: path.read_text() for path in doc_files()}
    broken = []
    for page, text in texts.items():
        for target in LINK.findall(_without_code(text)):
            if re.match(r"[a-z]+:", target):
                continue
            rel, _, anchor = target.partition("#")
            path = (page.parent / rel).resolve() if rel else page
            if path not in texts and not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md":
                body = texts.get(path) or path.read_text()
                if anchor not in anchors(body):
                    broken.append(f"{page.relative_to(ROOT)}: {target}")
    return broken


# A quoted section reference in code comments, strings, docs and the Makefile: README "Deploy",
# docs/operations.md "What GKE manages", README.md ("Deploy"). An upstream file's (`owner/repo@tag README "..."`, `the chart's README "..."`,
# `tools/x/README.md "..."`) is not ours: the word before it holds `@` or ends in `'s`, or the path has a folder.
SECTION_REF = re.compile(
    r"(?<![\w/.-])(README(?:\.md)?|docs/[\w/.-]+\.md) +(?P<paren>\()?\"([^\"]{1,100})\"(?(paren)\))"
)
# a string or comment continued on the next line: `"... "` + newline + `"..."` (either quote), or `# ...` + newline
# + `# ...`; any other line break is a space
CONTINUED = re.compile(r"""['"]\s*\n\s*f?['"]|\n\s*#\s*|\s*\n\s*""")


def reference_files() -> list[Path]:
    """The files whose quoted section references are checked: the docs, the code, the Makefile, the project files
    (not the goldens, which the program writes, nor tests/test_docs.py, whose cases name missing sections)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    wanted = (".py", ".md", ".toml", ".yaml", ".cfg", ".txt")
    return [
        ROOT / rel
        for rel in listed.splitlines()
        if (rel.endswith(wanted) or rel == "Makefile")
        and rel != "tests/test_docs.py"
        and not rel.startswith("tests/golden/")
        and (ROOT / rel).is_file()
    ]


def headings(text: str) -> list[str]:
    """A page's headings as shown (links as their text, no backticks)."""
    found = HEADING.findall(re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))
    return [re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h).replace("`", "") for h in found]


def broken_section_references(texts: dict[Path, str] | None = None) -> list[str]:
    """Every quoted section reference (README or a docs/ page, then a heading's text in double quotes) whose page has
    no heading starting with that text, as `file: page "section"`."""
    texts = texts if texts is not None else {path: path.read_text() for path in reference_files()}
    broken = []
    for path, text in texts.items():
        flat = CONTINUED.sub(" ", text)
        for match in SECTION_REF.finditer(flat):
            before = flat[: match.start()].rstrip().rsplit(None, 1)
            word = before[-1] if before else ""
            if "@" in word or word.endswith("'s"):
                continue
            page, section = match.group(1), " ".join(match.group(3).split())
            target = ROOT / ("README.md" if page.startswith("README") else page)
            shown = headings(target.read_text()) if target.is_file() else []
            if not any(h == section or h.startswith(section + " ") for h in shown):
                broken.append(f'{path.relative_to(ROOT)}: {page} "{section}"')
    return broken


def stale() -> list[Path]:
    return [path for path, text in pages().items() if not path.exists() or path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if a generated page or block is stale")
    args = parser.parse_args(argv)
    if args.check:
        old, broken = stale(), broken_links()
        for reference in broken_section_references():
            print(f"no such section: {reference}", file=sys.stderr)
            broken.append(reference)
        for path in old:
            print(
                f"{path.relative_to(ROOT)} is stale: run `.venv/bin/python -m tooling.generate.docs`", file=sys.stderr
            )
        for link in broken:
            print(f"broken link {link}", file=sys.stderr)
        return 1 if old or broken else 0
    for path, text in pages().items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
