"""The user CI workflows: valid, complete, safe, and every action pinned to the version matrix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from stacks.facts.versions import GCLOUD_SDK, GITHUB_ACTIONS, PULUMI_CLI
from stacks.security.kubeconfig import gke_kubeconfig
from tooling.harness.offline import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key `on` as True
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps(workflow: dict):
    for name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield name, step


def test_workflows_exist():
    assert {p.name for p in WORKFLOWS} == {"pull-request.yml", "deploy.yml", "ephemeral-stack.yml", "promote.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_structure(path):
    wf = load(path)
    assert {"name", "on", "jobs", "permissions"} <= set(wf), path.name
    for name, job in wf["jobs"].items():
        assert job.get("runs-on"), f"{path.name}: job {name} has no runs-on"
        assert job.get("steps"), f"{path.name}: job {name} has no steps"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), f"{path.name}: a step of {name} needs exactly one of uses/run"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_pinned_to_the_version_matrix(path):
    for job, step in steps(load(path)):
        if "uses" not in step:
            continue
        action, _, ref = step["uses"].partition("@")
        assert action in GITHUB_ACTIONS, f"{path.name}/{job}: {action} is not in stacks.facts.versions.GITHUB_ACTIONS"
        assert ref == GITHUB_ACTIONS[action], (
            f"{path.name}/{job}: {step['uses']} is not the pinned {GITHUB_ACTIONS[action]}"
        )
        assert re.fullmatch(r"v\d+\.\d+\.\d+", ref)
        if action == "pulumi/actions":
            assert step["with"]["pulumi-version"] == PULUMI_CLI


def test_pull_request_runs_tests_render_diff_and_gated_preview():
    wf = load(ROOT / ".github/workflows/pull-request.yml")
    assert wf["on"] == {"pull_request": {"branches": ["main"]}}
    assert wf["permissions"] == {"contents": "read"}
    runs = " ".join(s.get("run", "") for _, s in steps(wf))
    assert "make test" in runs and "make lint" in runs
    assert "tooling.review.render_diff" in runs
    preview = wf["jobs"]["preview"]
    assert preview["if"] == "vars.GCP_WORKLOAD_IDENTITY_PROVIDER != ''"
    assert preview["permissions"]["id-token"] == "write"
    pulumi_steps = [s for s in preview["steps"] if s.get("uses", "").startswith("pulumi/actions")]
    assert pulumi_steps[0]["with"]["command"] == "preview" and pulumi_steps[0]["with"]["comment-on-pr"] is True
    gate = preview["steps"][-1]["run"]
    assert (
        "pulumi preview" in gate
        and "--json" in gate
        and "tooling.review.preview_gate" in gate
        and "allow-replace" in gate
    )


def test_deploy_goes_dev_staging_prod_with_approval():
    jobs = load(ROOT / ".github/workflows/deploy.yml")["jobs"]
    assert list(jobs) == ["dev", "staging", "prod"]
    assert jobs["staging"]["needs"] == ["dev"] and jobs["prod"]["needs"] == ["staging"]
    assert jobs["prod"]["environment"] == "production"
    for name, job in jobs.items():
        (up,) = [s for s in job["steps"] if s.get("uses", "").startswith("pulumi/actions")]
        assert up["with"]["command"] == "up" and up["with"]["stack-name"] == name


def test_ephemeral_stack_is_opt_in_and_removed_on_close():
    jobs = load(ROOT / ".github/workflows/ephemeral-stack.yml")["jobs"]
    for job in jobs.values():
        assert "contains(github.event.pull_request.labels.*.name, 'ephemeral-stack')" in job["if"]
    (destroy,) = [s for s in jobs["destroy"]["steps"] if s.get("uses", "").startswith("pulumi/actions")]
    assert destroy["with"]["command"] == "destroy" and destroy["with"]["remove"] is True
    assert "github.event.action == 'closed'" in jobs["destroy"]["if"]


def test_ci_run_is_the_offline_test_command():
    text = (ROOT / ".ci/run").read_text()
    assert "make test" in text and "set -euo pipefail" in text
    # and again as on a user's clone, without ../shared/reference (issue 22 item 13)
    assert "TPU_SERVING_REFERENCE=/nonexistent/reference make test" in text


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_jobs_with_cloud_credentials_install_the_gke_auth_plugin(path):
    """The kubeconfig the program builds runs gke-gcloud-auth-plugin, which no runner image ships: every job that
    authenticates installs it (setup-gcloud's `install_components`, google-github-actions/setup-gcloud@v2.1.5
    action.yml) at the pinned Cloud SDK release, before any Pulumi step."""
    assert "gke-gcloud-auth-plugin" in gke_kubeconfig("c", "203.0.113.10", "Q0E=")
    for name, job in load(path)["jobs"].items():
        uses = [step.get("uses", "").split("@")[0] for step in job.get("steps", [])]
        if "google-github-actions/auth" not in uses:
            continue
        setup = [s for s in job["steps"] if s.get("uses", "").startswith("google-github-actions/setup-gcloud@")]
        assert len(setup) == 1, f"{path.name}: job {name} does not install gke-gcloud-auth-plugin"
        assert setup[0]["with"] == {"version": GCLOUD_SDK, "install_components": "gke-gcloud-auth-plugin"}
        index = uses.index("google-github-actions/setup-gcloud")
        assert uses.index("google-github-actions/auth") < index < uses.index("pulumi/actions")


def test_staging_and_prod_are_rendered_strictly_before_anything_changes():
    """Issue 23: a warning (open control plane, placeholder project, unlisted TPU zone, gated model without a token)
    fails CI for staging and prod stacks: `deploy.yml` renders each with --strict before its `pulumi up`, and
    every pull request renders every stack with --strict-for staging,prod before its preview."""
    from tooling.review.render import argument_parser

    jobs = load(ROOT / ".github/workflows/deploy.yml")["jobs"]
    for name in ("staging", "prod"):
        runs = [s.get("run", "") or s.get("uses", "") for s in jobs[name]["steps"]]
        strict = runs.index(f"make render STACK={name} STRICT=1")
        assert strict < next(i for i, r in enumerate(runs) if r.startswith("pulumi/actions"))
    assert not any("STRICT" in s.get("run", "") for s in jobs["dev"]["steps"])
    assert "$(if $(STRICT),--strict)" in (ROOT / "Makefile").read_text()

    pr = load(ROOT / ".github/workflows/pull-request.yml")["jobs"]
    (render,) = [s["run"] for s in pr["render-strict"]["steps"] if "tooling.review.render" in s.get("run", "")]
    argv = render.split()[3:]
    args = argument_parser().parse_args([a for a in argv if a != "Pulumi.*.yaml"])
    assert args.check and args.strict_for == {"staging", "prod"} and "Pulumi.*.yaml" in argv
    assert "render-strict" in pr["preview"]["needs"]


def test_promote_runs_the_gate_on_a_schedule_and_proposes_its_decision_as_a_pull_request():
    """Issue 37 review, finding 7: nothing rolls a candidate back by itself; this workflow runs `make promote` on a
    schedule (GitHub Actions `on.schedule` cron) and proposes the stack file it wrote as a pull request (`gh pr
    create`, GitHub CLI on the runner image), never `pulumi up`: the merge applies it through deploy.yml."""
    workflow = load(ROOT / ".github/workflows/promote.yml")
    assert workflow["on"]["schedule"] and "workflow_dispatch" in workflow["on"]
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write", "id-token": "write"}
    runs = [step.get("run", "") for _, step in steps(workflow)]
    assert "make promote STACK=${{ matrix.stack }}" in runs
    assert any("gh pr create" in r and "git diff --quiet" in r for r in runs)
    assert all(step.get("with", {}).get("command") is None for _, step in steps(workflow))  # no pulumi up/preview
