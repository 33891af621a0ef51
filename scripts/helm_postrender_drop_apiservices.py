#!/usr/bin/env python3
"""A Helm post-renderer: Helm's rendered manifests on stdin, the same on stdout without any APIService.

The stack registers every metrics APIService itself, as one resource under the same URN whichever metrics adapter
serves it (stacks/monitoring/adapters/entry.py api_service), so a switch of `monitoring.adapter` updates it in place.
KEDA's chart renders `v1beta1.external.metrics.k8s.io` whatever its values (kedacore/charts@v2.20.2:
keda/templates/metrics-server/apiservice.yaml, gated only on metricsServer.enabled): in the release's manifest, Helm
would refuse to install over the stack's object ("invalid ownership metadata") and its uninstall would delete it,
with the stack's resource still standing for it. The `keda` release runs this post-renderer (helm.v3.Release
`postrender`, Helm's --post-renderer: helm/helm@v3.20.2 pkg/postrender/exec.go, which runs the path, relative to the
project root Pulumi runs its provider in, with the manifests on stdin), so its manifest never holds an APIService.

Standard library only: Helm runs it with the deployer's python3, not the project's virtualenv. The manifests are
split at Helm's document separator lines (`---`); a document is dropped when one of its lines is the top-level
`kind: APIService` (at column 0: a nested mapping or block scalar is indented under its key, so no nested line is).
One pass over the lines.
"""

from __future__ import annotations

import sys

from helm_postrender_stream import documents

KIND = "APIService"
KIND_LINES = {f"kind: {KIND}", f'kind: "{KIND}"', f"kind: '{KIND}'"}


def is_dropped(doc: list[str]) -> bool:
    return any(line.rstrip() in KIND_LINES for line in doc)


def post_render(text: str) -> str:
    return "".join(line for doc in documents(text.splitlines(keepends=True)) if not is_dropped(doc) for line in doc)


def main() -> int:
    sys.stdout.write(post_render(sys.stdin.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
