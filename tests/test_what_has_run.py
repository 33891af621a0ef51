"""Issue 34 finding 16: the landing page says plainly what has and has not run on real Google Cloud, and the claim
stays true: it is held to the files that decide it, so a change that makes it false fails here.

- "CI applies nothing": `.ci/run` (what CI runs, docs/review.md) and every `make` target it calls run no `pulumi up`,
  `pulumi preview`, `gcloud` or `kubectl` (the Makefile's recipes, read as text).
- "the workflows that would deploy": every GitHub workflow step that runs `pulumi up` (pulumi/actions `command: up`)
  is named in the section.
- "what only a real deploy confirms": every page's own section of that kind (a heading saying what only a real
  deploy, cluster or fleet confirms or shows) is linked from it, and every `make` target it names exists.
"""

from __future__ import annotations

import re

import yaml

from tooling.harness.offline import ROOT

README = ROOT / "README.md"
HEADING = "## What has run on real Google Cloud"
REAL = re.compile(r"\b(pulumi (up|preview|destroy)|gcloud|kubectl)\b")


def section() -> str:
    text = README.read_text()
    assert HEADING in text, f"README.md has no {HEADING!r} section"
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def make_recipes() -> dict[str, str]:
    """Each Makefile target's recipe lines (its commands), by target."""
    recipes: dict[str, list[str]] = {}
    target = None
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z][a-z0-9-]*):", line)
        if match:
            target = match.group(1)
            recipes[target] = []
        elif line.startswith("\t") and target:
            recipes[target].append(line.strip())
    return {t: "\n".join(lines) for t, lines in recipes.items()}


# `make` as a command word of a command line (optionally under setsid, timeout and nice), its targets after it.
MAKE_COMMAND = re.compile(
    r"^\s*(?:setsid\s+)?(?:timeout\s+\d+\s+)?(?:nice\s+-n\s+\d+\s+)?make(?: -j\d+)? ([a-z][a-z0-9 -]*)"
)


def ci_commands(text: str | None = None) -> list[str]:
    """`.ci/run`'s command lines: not its comments, and not what it only prints (echo)."""
    text = (ROOT / ".ci" / "run").read_text() if text is None else text
    return [line for line in text.splitlines() if not line.lstrip().startswith(("#", "echo "))]


def ci_targets() -> list[str]:
    """The `make` targets `.ci/run` calls, and theirs (a target's prerequisites and its recipe's `make` calls)."""
    recipes = make_recipes()
    deps: dict[str, list[str]] = {}
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([a-z][a-z0-9-]*):([^=]*)$", line)
        if match:
            deps[match.group(1)] = [d for d in match.group(2).split() if d in recipes]
    todo = [t for line in ci_commands() for t in re.findall(MAKE_COMMAND, line)]
    todo = [t for words in todo for t in words.split() if t in recipes]
    seen: list[str] = []
    while todo:
        target = todo.pop()
        if target in seen:
            continue
        seen.append(target)
        todo += deps.get(target, [])
        todo += [t for t in re.findall(r"\$\(MAKE\) ([a-z][a-z0-9-]*)", recipes[target]) if t in recipes]
    return seen


def test_ci_applies_nothing_to_google_cloud():
    """What the section claims of CI: neither `.ci/run` nor any target it reaches runs pulumi up/preview/destroy,
    gcloud or kubectl."""
    assert "`.ci/run`" in section()
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in commands if REAL.search(line)]
    targets = ci_targets()
    # issue 35: CI runs the e2e CI set (make e2e-ci) and builds its toolchain
    assert {"lint", "test", "helm", "venv", "toolchain", "e2e-ci"} <= set(targets), targets
    recipes = make_recipes()
    assert {t: recipes[t] for t in targets if REAL.search(recipes[t])} == {}


def test_every_workflow_that_deploys_is_named():
    deploying = set()
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        for job in (yaml.safe_load(path.read_text()).get("jobs") or {}).values():
            if any((step.get("with") or {}).get("command") == "up" for step in job.get("steps", [])):
                deploying.add(f".github/workflows/{path.name}")
    assert deploying, "no workflow runs pulumi up: the section's sentence about them is stale"
    assert {w for w in deploying if f"`{w}`" not in section()} == set()


def test_every_pages_only_a_real_deploy_section_is_linked():
    from tooling.generate.docs import anchors

    wanted = set()
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for heading in re.findall(r"^#{2,6} (.*only a real .*)$", path.read_text(), re.M | re.I):
            (slug,) = [a for a in anchors(f"## {heading}\n")]
            wanted.add(f"{path.relative_to(ROOT).as_posix()}#{slug}")
    assert len(wanted) >= 3, wanted
    linked = set(re.findall(r"\]\(([^)]+)\)", section()))
    assert wanted - linked == set()


def test_every_make_target_the_section_names_exists():
    named = set(re.findall(r"`make ([a-z][a-z0-9-]*)", section()))
    assert named and named <= set(make_recipes()), named - set(make_recipes())


def test_ci_targets_are_read_from_command_lines_only():
    """Removing the command line that runs the e2e CI set takes it out, whatever the comments and echoes say."""
    text = (ROOT / ".ci" / "run").read_text()
    assert any(re.findall(MAKE_COMMAND, line) == ["e2e-ci"] for line in ci_commands(text))
    without = "\n".join(line for line in text.splitlines() if line.strip() != "make e2e-ci")
    assert not any("e2e-ci" in t for line in ci_commands(without) for t in re.findall(MAKE_COMMAND, line))
    assert re.findall(MAKE_COMMAND, "# the whole `make e2e` does not fit") == []
