"""The dependency updater (renovate.json): its managers, applied as Renovate applies them, find every pin of the version
matrix (stacks/facts/versions.py) and requirements*.txt exactly once, each as the package its datasource looks up.

How Renovate reads the config, at the pinned release (stacks/facts/versions.py RENOVATE, npm renovate@44.121.2):
- a custom regex manager's matchStrings are compiled with flags "g" only (no "m": `^` and `$` are the file's ends),
  by RE2 (dist/util/regex.js regEx; dist/modules/manager/custom/regex/strategies.js), named groups `(?<name>...)`
  give depName and currentValue, a *Template field overrides a group;
- an update replaces currentValue everywhere inside the matched string (autoReplaceGlobalMatch, default true:
  dist/workers/repository/update/branch/auto-replace.js), so one match may carry a version twice (a tag beside it);
- managerFilePatterns (not fileMatch) are `/regex/` or globs (renovate-schema.json definitions.managerFilePatterns);
  the built-in managers' defaults: pip_requirements `/(^|/)[\\w-]*requirements([-._]\\w+)?\\.(txt|pip)$/`,
  github-actions `/(^|/)(workflow-templates|\\.(?:github|gitea|forgejo)/(?:workflows|actions))/.+\\.ya?ml$/`
  (dist/modules/manager/{pip_requirements,github-actions}/index.js defaultConfig);
- enabledManagers names a custom manager `custom.regex` (dist/modules/manager/index.js).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from stacks.facts import versions
from tooling.harness.offline import ROOT

CONFIG = json.loads((ROOT / "renovate.json").read_text())
MATRIX = ROOT / "stacks" / "facts" / "versions.py"
SCHEMA = ROOT / ".cache" / "renovate" / "package" / "renovate-schema.json"
RELEASE = re.compile(r"v\d+\.\d+\.\d+")
PIP_DEFAULT = r"(^|/)[\w-]*requirements([-._]\w+)?\.(txt|pip)$"
ACTIONS_DEFAULT = r"(^|/)(workflow-templates|\.(?:github|gitea|forgejo)/(?:workflows|actions))/.+\.ya?ml$"

# Pins of the matrix no manager tracks, each with why. Everything else is tracked (a new pin must be, or be listed).
UNTRACKED_GO = {
    "github.com/pulumi/pulumi-kubernetes/provider/v4": "the proxy serves provider/v4 only as one pseudo-version",
}
DERIVED_GO = {  # the version is the chart's (CHARTS default or its image tag): it moves with the chart, by hand
    "sigs.k8s.io/lws",
    "sigs.k8s.io/jobset",
    "github.com/kedacore/keda/v2",
    "sigs.k8s.io/kueue",
    "sigs.k8s.io/prometheus-adapter",
}
NOT_TRACKED = {
    "CHARTS older supported versions": "kept for stacks created on them; a new release replaces the newest only",
    "CRDS of GKE-managed projects (gatewayApi, prometheusEngine)": "validated at what GKE installs, not upstream's newest",
    "CRDS of charts (lws, jobset, kueue, keda) and KEDA_CRD_FILES": "follow their chart; their sha256 are set by hand",
    "GCLOUD_SDK": "the Cloud SDK release setup-gcloud installs has no Renovate datasource",
}


def _py(pattern: str) -> str:
    """A JavaScript/RE2 pattern as Python's re reads it: named groups `(?<n>` are `(?P<n>`."""
    return re.sub(r"\(\?<([A-Za-z]\w*)>", r"(?P<\1>", pattern)


def _file_regex(pattern: str) -> str:
    assert pattern.startswith("/") and pattern.endswith("/"), f"{pattern}: a /regex/ (no glob is used)"
    return _py(pattern[1:-1])


def _render(template: str, groups: dict[str, str | None]) -> str:
    assert not re.search(r"\{\{#", template), f"{template}: a template with helpers is not rendered here"
    return re.sub(r"\{\{\{?(\w+)\}?\}\}", lambda m: groups[m.group(1)] or "", template)


def _managers_of(path: str) -> list[dict]:
    return [
        m for m in CONFIG["customManagers"] if any(re.search(_file_regex(p), path) for p in m["managerFilePatterns"])
    ]


def _extract(manager: dict, text: str) -> list[tuple[str, str, str]]:
    """(datasource, depName, currentValue) of every match, as Renovate's regex manager extracts them."""
    found = []
    for match_string in manager["matchStrings"]:
        for m in re.finditer(_py(match_string), text):
            groups = m.groupdict()
            dep = _render(manager["depNameTemplate"], groups) if "depNameTemplate" in manager else groups["depName"]
            value = groups["currentValue"]
            assert dep and value, (manager["description"], m.group(0))
            assert value in m.group(0)
            found.append((manager["datasourceTemplate"], dep, value))
    return found


def _matrix_pins() -> Counter:
    """Every pin the matrix holds that the updater tracks, as (datasource, package, version), from the data."""
    pins: Counter = Counter()
    for image in versions.IMAGE_RECORDS.values():
        repository, tag = image.ref.rsplit(":", 1)
        pins["docker", repository, tag] += 1
    for chart in versions.CHARTS.values():
        newest = chart[list(chart)[-1]]
        if newest.repository is None:
            pins["docker", newest.chart.removeprefix("oci://"), newest.version] += 1
        else:
            pins["helm", newest.chart, newest.version] += 1
    router = versions.LLM_D_ROUTER
    pins["docker", router.chart.removeprefix("oci://"), router.version] += 1
    pins["docker", router.image_repository, router.image_tag] += 1
    for version, files in versions.CRDS["gatewayApiInferenceExtension"].items():
        pins["github-releases", files[0].repo, version] += 1
    for version, manifest in versions.PATHWAYS_JOB.items():
        pins["github-releases", manifest.url.split("/")[3] + "/" + manifest.url.split("/")[4], version] += 1
    pins["pypi", versions.HELM.wheel, versions.HELM.wheel_version] += 1
    for action, version in versions.GITHUB_ACTIONS.items():
        pins["github-tags", action, version] += 1
    pins["github-releases", "pulumi/pulumi", versions.PULUMI_CLI] += 1
    for tool in versions.TOOLCHAIN:
        if tool.module in UNTRACKED_GO or tool.module in DERIVED_GO:
            continue
        assert RELEASE.fullmatch(tool.version), f"{tool.name}: track it or list it in UNTRACKED_GO/DERIVED_GO"
        pins["go", tool.module, tool.version] += 1
    return pins


def test_every_pin_of_the_matrix_is_found_by_exactly_one_manager():
    text = MATRIX.read_text()
    found: Counter = Counter()
    by_manager: dict[tuple, set[str]] = {}
    for manager in _managers_of("stacks/facts/versions.py"):
        for pin in _extract(manager, text):
            found[pin] += 1
            by_manager.setdefault(pin, set()).add(manager["description"])
    expected = _matrix_pins()
    assert found == expected, {
        "missed": sorted((expected - found).elements()),
        "unexpected": sorted((found - expected).elements()),
    }
    assert all(len(names) == 1 for names in by_manager.values()), by_manager


def test_a_superseded_image_or_an_older_chart_version_is_not_updated():
    """What the matrix keeps on purpose (SUPERSEDED_IMAGES, a chart's older supported versions) is matched by no
    manager: the count above is exact, and these are absent."""
    text = MATRIX.read_text()
    refs = {(dep, value) for m in _managers_of("stacks/facts/versions.py") for _, dep, value in _extract(m, text)}
    for image in versions.SUPERSEDED_IMAGES:
        assert tuple(image.ref.rsplit(":", 1)) not in refs
    assert ("registry.k8s.io/lws/charts/lws", "0.7.0") not in refs and versions.default_version("lws") == "0.7.0"


def test_an_update_rewrites_every_copy_of_the_version_inside_its_match():
    """Renovate replaces currentValue throughout the matched string: the inference-extension CRD's tag and the
    PathwaysJob release URL move with their versions."""
    text = MATRIX.read_text()
    for manager in _managers_of("stacks/facts/versions.py"):
        if manager["datasourceTemplate"] != "github-releases" or "PULUMI_CLI" in manager["matchStrings"][0]:
            continue
        (match_string,) = manager["matchStrings"]
        m = re.search(_py(match_string), text)
        assert m is not None
        value = m.group("currentValue")
        assert m.group(0).count(value) >= 2 and f"v{value}" in m.group(0), manager["description"]


def test_the_patterns_are_re2_patterns():
    """RE2 has no lookaround and no backreference (Renovate compiles matchStrings with RE2)."""
    for manager in CONFIG["customManagers"]:
        for pattern in [*manager["matchStrings"], *manager["managerFilePatterns"]]:
            assert not re.search(r"\(\?<?[=!]|\\[1-9]", pattern), pattern
            re.compile(_py(pattern))


def test_python_packages_and_workflow_actions_are_the_built_in_managers():
    assert set(CONFIG["enabledManagers"]) == {"custom.regex", "pip_requirements", "github-actions"}
    for name in ("requirements.txt", "requirements-scan.txt"):
        assert re.search(PIP_DEFAULT, name), name
        for line in (ROOT / name).read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                assert re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][\w.]*", line), f"{name}: {line!r} is not an exact pin"
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert workflows and all(re.search(ACTIONS_DEFAULT, str(p.relative_to(ROOT))) for p in workflows)
    uses = {
        step["uses"]
        for p in workflows
        for job in yaml.safe_load(p.read_text())["jobs"].values()
        for step in job.get("steps", [])
        if "uses" in step
    }
    assert uses == {f"{a}@{v}" for a, v in versions.GITHUB_ACTIONS.items()}
    grouped = [r for r in CONFIG["packageRules"] if r.get("groupName") == "GitHub Actions"]
    assert grouped and set(grouped[0]["matchManagers"]) == {"github-actions", "custom.regex"}
    pulumi = [r for r in CONFIG["packageRules"] if r.get("groupName") == "Pulumi"]
    assert pulumi and set(pulumi[0]["matchDepNames"]) == {"pulumi", "pulumi/pulumi"}


def test_the_config_is_valid_for_the_pinned_renovate():
    if not SCHEMA.exists():
        pytest.skip(f"no {SCHEMA.relative_to(ROOT)}: `make renovate-check` fetches renovate@{versions.RENOVATE} (npm)")
    import jsonschema

    schema = json.loads(SCHEMA.read_text())
    assert schema["x-renovate-version"] == versions.RENOVATE
    jsonschema.validate(CONFIG, schema)
    custom = schema["definitions"]["customManagers"]["items"]["allOf"][0]["properties"]
    for manager in CONFIG["customManagers"]:
        assert set(manager) <= set(custom), set(manager) - set(custom)


def test_the_render_diff_reaches_the_updaters_pull_requests():
    """A Renovate pull request is a pull request: the workflow posts its render diff (what the pin changes)."""
    workflow = (ROOT / ".github" / "workflows" / "pull-request.yml").read_text()
    assert "pull_request:" in workflow and "tooling.review.render_diff" in workflow
    assert Path(ROOT / "tooling" / "review" / "render_diff.py").exists()
