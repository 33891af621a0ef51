"""The docs (issue 24 item 3): a README that is a landing page, docs/ pages one subject each, a configuration
reference generated from the config models (current, like the JSON Schema), and no relative link that leads nowhere.
That every command in them runs: tests/test_readme_commands.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from stacks import addons
from stacks.model.config_model import BucketConfig, ClusterConfig, GatewayConfig, MonitoringConfig, TpuPoolConfig
from tests.test_workload_registry import echo_registered  # noqa: F401 (a fixture)
from tooling.generate import docs, package_map
from tooling.harness.offline import ROOT
from workloads import registry

README = ROOT / "README.md"


def test_generated_pages_and_tables_are_current():
    """What `make lint` checks (`python -m tooling.generate.docs --check`)."""
    assert docs.stale() == [], "run `.venv/bin/python -m tooling.generate.docs`"


def test_every_relative_link_resolves_to_a_file_and_heading():
    assert docs.broken_links() == []


def test_the_link_check_finds_a_missing_page_and_a_missing_heading(tmp_path):
    page = ROOT / "docs" / "x.md"
    text = (
        "# X\n\n## A `b`: c (d)\n\n[ok](#a-b-c-d) [ok](security.md#google-cloud-checks) [web](https://x.y/z)\n"
        "[gone](nope.md) [no heading](security.md#nope) [own](#nope) `[code](nope.md)`\n"
    )
    assert docs.broken_links({page: text}) == [
        "docs/x.md: nope.md",
        "docs/x.md: security.md#nope",
        "docs/x.md: #nope",
    ]


def test_anchors_are_githubs():
    text = "# T\n## `tpu-serving:tpuPools[]`\n### `type: vllm`\n## How to add ...\n## Dup\n## Dup\n```\n# not\n```\n"
    assert docs.anchors(text) == {"t", "tpu-servingtpupools", "type-vllm", "how-to-add-", "dup", "dup-1"}


def test_readme_is_a_landing_page_linking_every_docs_page():
    text = README.read_text()
    assert len(text.encode()) <= 20_000, len(text.encode())
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[:4] == ["What it builds", "Quick start (needs only Python 3.11+)", "Deploy", "Where to read next"]
    assert "```mermaid" in text.split("## Quick start")[0]
    linked = {(README.parent / target).resolve() for target in re.findall(r"\]\((docs/[^)#]+)", text)}
    assert set(ROOT.glob("docs/**/*.md")) <= linked


@pytest.mark.parametrize("name", list(registry.WORKLOAD_TYPES))
def test_every_workload_type_has_its_page_and_reference_section(name):
    page = ROOT / "docs" / "workloads" / f"{name}.md"
    assert page.is_file(), f"docs/workloads/{name}.md"
    assert page.read_text().startswith(f"# `{name}`: ")
    assert f"configuration.md#type-{name}" in page.read_text()
    assert f"### `type: {name}`" in docs.configuration_reference()


def _keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _section(reference: str, heading: str) -> str:
    return reference.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_the_reference_has_a_row_for_every_key_of_every_model():
    """Every field of the platform's models, the add-on registry's and each workload type's, with the model's own
    description; the vLLM `gateway` row the hand-written table missed is there."""
    reference = docs.configuration_reference()
    platform = {
        "cluster": ClusterConfig,
        "bucket": BucketConfig,
        "monitoring": MonitoringConfig,
        "gateway": GatewayConfig,
        "addons": addons.settings_model(),
    }
    for key, model in platform.items():
        for field in _keys(model):
            assert f"| `tpu-serving:{key}.{field}` |" in reference, (key, field)
    for field in _keys(TpuPoolConfig):
        assert f"| `tpu-serving:tpuPools[].{field}` |" in reference, field
    for name, entry in registry.WORKLOAD_TYPES.items():
        section = _section(reference, f"### `type: {name}`")
        for field in _keys(entry.config):
            assert f"| `tpu-serving:workloads[].{field}` |" in section, (name, field)
    vllm = _section(reference, "### `type: vllm`")
    row = next(line for line in vllm.splitlines() if line.startswith("| `tpu-serving:workloads[].gateway` |"))
    description = registry.WORKLOAD_TYPES["vllm"].config.model_fields["gateway"].description
    assert row.split("|")[2:4] == [" boolean ", " `true` "] and description in row


def test_every_key_in_the_reference_says_what_it_means():
    """Every row's meaning comes from a model's description, so every field carries one."""
    rows = [line.split("|") for line in docs.configuration_reference().splitlines() if line.startswith("| `")]
    assert rows and [row[1].strip() for row in rows if not row[5].strip()] == []


def test_a_type_added_to_the_registry_alone_gets_its_reference_section_and_needs_its_page(echo_registered):  # noqa: F811
    reference = docs.configuration_reference()
    section = _section(reference, "### `type: echo`")
    assert "| `tpu-serving:workloads[].replicas` |" in section
    assert docs.broken_links({docs.REFERENCE: reference}) == ["docs/configuration.md: workloads/echo.md"]


def test_a_generated_block_is_rewritten_from_its_source_and_an_unknown_one_refused():
    stale = "intro\n<!-- generated:gke-managed -->\n| old |\n<!-- /generated:gke-managed -->\nafter\n"
    filled = docs.fill(stale)
    assert filled.startswith("intro\n<!-- generated:gke-managed -->\n| kind | objects |")
    assert filled.endswith("\n<!-- /generated:gke-managed -->\nafter\n")
    with pytest.raises(SystemExit, match="unknown generated block 'nope'"):
        docs.fill("<!-- generated:nope -->\n<!-- /generated:nope -->\n")


def test_the_makefile_lint_runs_the_docs_check():
    lint = (ROOT / "Makefile").read_text().split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) -m tooling.generate.docs --check" in lint


def test_no_page_is_named_after_another_subject(tmp_path: Path):
    """One subject per page: no two pages share a title."""
    titles = [p.read_text().splitlines()[0] for p in ROOT.glob("docs/**/*.md")]
    assert all(t.startswith("# ") for t in titles) and len(set(titles)) == len(titles)


def test_the_profiles_table_has_every_field_of_every_environment():
    """docs/stack-config.md "Environment profiles" is generated from stacks/model/profiles.py PROFILES: a row per Profile
    field (the upgrade hold, flow logs and intranode visibility included), a column per environment, the field's
    documented meaning; a hand-written table once merged staging and prod and left three fields out."""
    import dataclasses

    from stacks.model.profiles import PROFILES, Profile

    page = (ROOT / "docs" / "stack-config.md").read_text()
    block = page.split("<!-- generated:profiles -->\n", 1)[1].split("<!-- /generated:profiles -->", 1)[0]
    lines = block.strip().splitlines()
    assert lines[0] == "| field | " + " | ".join(f"`{env}`" for env in PROFILES) + " | meaning |"
    fields = [f for f in dataclasses.fields(Profile) if f.name != "name"]
    rows = {line.split(" | ")[0].removeprefix("| "): line.split(" | ")[1:] for line in lines[2:]}
    assert list(rows) == [f"`{f.name}`" for f in fields]
    for f in fields:
        cells = rows[f"`{f.name}`"]
        assert f.metadata["doc"] and cells[-1].removesuffix(" |") == f.metadata["doc"]
        for env, cell in zip(PROFILES.values(), cells[:-1], strict=True):
            value = getattr(env, f.name)
            if isinstance(value, bool):
                assert cell == ("on" if value else "off"), (env.name, f.name)
    assert rows["`vpc_flow_logs`"][:3] == rows["`intranode_visibility`"][:3] == ["off", "off", "on"]
    assert rows["`hold_minor_and_node_upgrades`"][:3] == ["off", "on", "on"]


def test_every_quoted_section_reference_names_a_heading_of_its_page():
    """`README "<section>"` and `docs/x.md "<section>"` in code comments, strings, docs and the Makefile: each names a
    heading of that page (the README's manual moved to docs/, and references to its old sections were left)."""
    assert docs.broken_section_references() == []
    found = [m.group(0) for p in docs.reference_files() for m in docs.SECTION_REF.finditer(p.read_text())]
    assert len(found) >= 10  # the check reads the tree (a pattern that matched nothing would pass)


def test_the_section_check_finds_a_missing_heading_and_skips_upstream_files():
    texts = {
        ROOT / "Makefile": '# gcloud (see README "Deploying for real").\n# see README "Deploy" and docs/nope.md "X"\n',
        # the parenthesised form a stack file used for a README section that never existed (issue 34 item 17); a
        # list of titles in parentheses is not a reference
        ROOT / "Pulumi.x.yaml": '# Every key is documented in README.md ("Stack config").\n# the README ("A", "B")\n',
        ROOT / "a.py": (
            'x = ("See docs/operations.md "\n    \'"What GKE manages"). And docs/operations.md "GKE \'\n'
            '    \'upgrades". And docs/operations.md "GKE\n# upgrades and more"\n'
            '# tpu-inference@v0.27.0 README "Recommended"; the chart\'s README "Custom Metrics";\n'
            '# tools/x/README.md "Saxml HTTP Server APIs"\n'
        ),
    }
    assert docs.broken_section_references(texts) == [
        'Makefile: README "Deploying for real"',
        'Makefile: docs/nope.md "X"',
        'Pulumi.x.yaml: README.md "Stack config"',
        'a.py: docs/operations.md "GKE upgrades and more"',
    ]


@pytest.mark.parametrize("name", list(registry.WORKLOAD_TYPES))
def test_every_workload_page_says_how_it_differs_from_upstream(name):
    """Issue 24: one page per workload type, each with its deliberate differences from the upstream tutorial or
    samples it follows: a `## Differences from the upstream ...` heading followed by at least one paragraph or list."""
    text = (ROOT / "docs" / "workloads" / f"{name}.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    found = [s for s in sections if s.startswith("Differences from the upstream ")]
    assert len(found) == 1, f"docs/workloads/{name}.md has no `## Differences from the upstream ...` section"
    body = found[0].split("\n", 1)[1].strip()
    assert len(body.split()) >= 20, body


def test_the_package_map_draws_every_layer_member_and_only_arrows_no_longer_path_implies():
    """docs/architecture.md "The map": generated from the contracts and grimp's imports (tooling/generate/package_map.py)."""
    assert package_map.reduced({("a", "b"), ("b", "c"), ("a", "c"), ("a", "d")}) == {("a", "b"), ("b", "c"), ("a", "d")}
    text = (ROOT / "docs" / "architecture.md").read_text()
    for package in package_map.PACKAGES:
        drawn = package_map.mermaid(package)
        assert drawn in text
        for layer in package_map.layers(package):
            for name in layer:
                assert f"    {name}[" in drawn, (package, name)
        imports = package_map.member_imports(package)
        for a, b in package_map.reduced(imports):
            assert f"    {a} --> {b}" in drawn
        if package == "stacks":
            assert ("config", "pieces") in imports and "    config --> pieces" not in drawn  # implied by a longer path
