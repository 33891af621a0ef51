#!/usr/bin/env python3
"""A Helm post-renderer: Helm's rendered manifests on stdin, the same on stdout with Helm's keep policy
(`helm.sh/resource-policy: keep`) on every CustomResourceDefinition and without the aggregated ClusterRoles (below).

A chart that templates its CRDs (kubernetes-sigs/kueue@v0.17.1 charts/kueue/templates/crd/, with no value that turns
them off) has them in its release's manifest, so `helm uninstall` deletes them, and with them every object of their
kinds in the cluster (the ClusterQueues, LocalQueues and Workloads operators made). Helm's uninstall keeps what the
release's STORED manifest annotates with the keep policy (helm/helm@v3.20.2 pkg/action/uninstall.go deleteRelease:
filterManifestsToKeep over rel.Manifest, pkg/action/resource_policy.go), and the stored manifest is the post-rendered
one (pkg/action/action.go renderResources runs the post-renderer and returns its output as the manifest). An upgrade
that drops one keeps it too (pkg/kube/client.go Update reads the live object's annotations, which this put there).
The CRDs stay the chart's own (their conversion webhooks included, which the repository's config/components/crd/bases
files do not carry: config/components/crd/kustomization.yaml patches them in).

It also leaves out every aggregated ClusterRole (a ClusterRole with a top-level `aggregationRule`: Kueue's
kueue-batch-admin-role and kueue-batch-user-role, charts/kueue/templates/rbac/batch_{admin,user}_role.yaml). Helm's
uninstall deletes a chart's objects of one kind at once, and kube-controller-manager's clusterrole-aggregation-
controller, woken by the deletion of the roles an aggregated role selects, recomputes that role from its informer's
cache, which may still hold it, and force-applies the new rules with server-side apply, which creates it again
(k8s.io/kubernetes@v1.35.4 pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go syncClusterRole:
`c.clusterRoleLister.Get(name)`, then applyClusterRoles `ClusterRoles().Apply(..., Force: true)`, no UID
precondition). `helm uninstall --wait` (the Kubernetes provider's Delete of a release, provider/pkg/provider/
helm_release.go: `uninstall.Wait = true`) then waits out its timeout on the re-created role, and it stays behind
(seen in make e2e, pathways-job, docs/local.md). Deleted alone (an upgrade that drops it) no rule changes, so no
re-create: an existing release loses the two roles cleanly on its next upgrade. The per-kind editor and viewer roles
they aggregated stay; bind those.

Standard library only: Helm runs it with the deployer's python3, not the project's virtualenv. The manifests are
split at Helm's document separator lines (`---`); a document is a CRD when one of its lines is the top-level
`kind: CustomResourceDefinition` (at column 0). Its top-level `metadata:` block gets the annotation in its
`annotations:` mapping (block style, or `{}`), or a new `annotations:` mapping; any other shape is an error (exit 1),
so Helm fails rather than install a CRD its uninstall would delete.
"""

from __future__ import annotations

import re
import sys

from helm_postrender_stream import documents

KIND = "CustomResourceDefinition"


def kind_lines(kind: str) -> set[str]:
    """The top-level `kind:` lines of a document of `kind`, plain or quoted."""
    return {f"kind: {kind}", f'kind: "{kind}"', f"kind: '{kind}'"}


KIND_LINES = kind_lines(KIND)
POLICY_KEY = "helm.sh/resource-policy"
KEEP = f"{POLICY_KEY}: keep"
ANNOTATIONS = re.compile(r"^(?P<indent> +)annotations:(?P<rest>.*)$")


class Unreadable(ValueError):
    """A CRD document whose metadata this reader does not recognise."""


def is_crd(doc: list[str]) -> bool:
    return any(line.rstrip() in KIND_LINES for line in doc)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def keep(doc: list[str]) -> list[str]:
    """The CRD document `doc` with the keep policy among its metadata's annotations."""
    starts = [i for i, line in enumerate(doc) if line.rstrip() == "metadata:"]
    if len(starts) != 1:
        raise Unreadable(f"a {KIND} without one top-level `metadata:` block")
    start = starts[0]
    end = next((i for i in range(start + 1, len(doc)) if _content(doc[i]) and _indent(doc[i]) == 0), len(doc))
    children = [i for i in range(start + 1, end) if _content(doc[i])]
    if not children:
        raise Unreadable(f"a {KIND} with an empty `metadata:` block")
    child = _indent(doc[children[0]])
    for i in children:
        match = ANNOTATIONS.match(doc[i].rstrip("\n"))
        if match is None or len(match.group("indent")) != child:
            continue
        rest = match.group("rest").strip()
        if rest == "{}":
            return [*doc[:i], f"{' ' * child}annotations:\n", f"{' ' * (child + 2)}{KEEP}\n", *doc[i + 1 :]]
        if rest and not rest.startswith("#"):
            raise Unreadable(f"a {KIND} whose annotations are not a block mapping: {rest!r}")
        entries: list[int] = []  # the mapping's lines: every content line below it indented deeper than its key
        for j in range(i + 1, end):
            if _content(doc[j]):
                if _indent(doc[j]) <= child:
                    break
                entries.append(j)
        indent = _indent(doc[entries[0]]) if entries else child + 2
        policies = [
            doc[j].strip() for j in entries if _indent(doc[j]) == indent and doc[j].strip().startswith(POLICY_KEY)
        ]
        if policies == [KEEP]:
            return doc
        if policies:
            raise Unreadable(f"a {KIND} with another {POLICY_KEY}: {policies}")
        return [*doc[: i + 1], f"{' ' * indent}{KEEP}\n", *doc[i + 1 :]]
    return [*doc[: start + 1], f"{' ' * child}annotations:\n", f"{' ' * (child + 2)}{KEEP}\n", *doc[start + 1 :]]


CLUSTER_ROLE_LINES = kind_lines("ClusterRole")


def is_aggregated_cluster_role(doc: list[str]) -> bool:
    """A ClusterRole document with a top-level `aggregationRule:` (its rules the aggregation controller's)."""
    return any(line.rstrip() in CLUSTER_ROLE_LINES for line in doc) and any(
        line.startswith("aggregationRule:") for line in doc
    )


def post_render(text: str) -> str:
    docs = documents(text.splitlines(keepends=True))
    return "".join(
        line for doc in docs if not is_aggregated_cluster_role(doc) for line in (keep(doc) if is_crd(doc) else doc)
    )


def main() -> int:
    try:
        sys.stdout.write(post_render(sys.stdin.read()))
    except Unreadable as err:
        sys.stderr.write(f"helm_postrender_keep_crds: {err}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
