"""`pulumi preview` with the guardrails policy pack (policy/), by the real Pulumi engine (the toolchain's CLI, v3.274.1):

    python -m e2e.policy_preview examples/<name>/Pulumi.<stack>.yaml     an example on its running local cluster
                                                                          (exit 0: the preview passed the pack)

and `preview_program`, a small inline program (a broken stack) previewed with the pack, for e2e/test_policy_pack.py.

The pack runs through policy/run-pack, a binary analyzer plugin path: Pulumi v3.274.1 runs a folder path through the
Python language host, which the toolchain cannot build (stacks/facts/versions.py TOOLCHAIN_UNBUILDABLE), and
launches an executable path directly (pulumi/pulumi@v3.274.1 pkg/resource/plugin/analyzer_plugin.go NewPolicyAnalyzer).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tooling.harness.offline import ROOT
from tooling.local import local_stack
from tooling.review.render import stack_name

PACK = ROOT / "scripts" / "run-pack-dev"  # policy/run-pack with this checkout on PYTHONPATH
# A kubeconfig whose server is a closed port on loopback: the Kubernetes provider previews without a cluster
# ("cluster unreachable"), and nothing leaves the machine.
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
"""


def _collect(lines: list[str]) -> Callable[[str], None]:
    return lines.append


def preview_program(
    root: Path, stack: str, program: Callable[[], None], config: dict[str, str], tags: dict[str, str] | None = None
) -> tuple[bool, str]:
    """(passed, output) of a preview of `program` as stack `stack` of project policy-e2e, with the pack."""
    from pulumi import automation as auto

    local = local_stack.LocalStack(stack, root)
    local.project.mkdir(parents=True, exist_ok=True)
    local.state.mkdir(parents=True, exist_ok=True)
    env = local_stack.pulumi_env(local)
    workspace = auto.LocalWorkspaceOptions(
        work_dir=str(local.project),
        pulumi_home=str(local.folder / "pulumi-home"),
        env_vars=env,
        secrets_provider="passphrase",
        pulumi_command=auto.PulumiCommand(root=local_stack.pulumi_root(), skip_version_check=True),
        project_settings=auto.ProjectSettings(name="policy-e2e", runtime="python"),
    )
    st = auto.create_or_select_stack(stack, project_name="policy-e2e", program=program, opts=workspace)
    for key, value in config.items():
        st.set_config(key, auto.ConfigValue(value))
    for key, value in (tags or {}).items():
        st.set_tag(key, value)
    lines: list[str] = []
    try:
        st.preview(policy_packs=[str(PACK)], on_output=_collect(lines), color="never")
    except auto.errors.CommandError as err:
        return False, "\n".join(lines) + str(err)
    return True, "\n".join(lines)


def preview_example(path: Path) -> tuple[bool, str]:
    """The example's local stack (tooling/local/local_stack.py, on its running local cluster) previewed with the pack."""
    from pulumi import automation as auto

    local = local_stack.prepare(stack_name(path), source=path)
    lines: list[str] = []
    try:
        local_stack.run(local, "preview", on_output=_collect(lines), policy_packs=[str(PACK)])
    except auto.errors.CommandError as err:
        return False, "\n".join(lines) + str(err)
    return True, "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve()
    local_stack.enter_cluster_network(stack_name(path))
    passed, out = preview_example(path)
    print(out[-20000:])
    print("POLICY PREVIEW PASSED" if passed else "POLICY PREVIEW FAILED")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
