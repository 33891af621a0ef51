#!/usr/bin/env python3
"""A Helm post-renderer for the llm-d-router-gateway chart: Helm's rendered manifests on stdin, the same on stdout
with `portSpecification: USE_FIXED_PORT` in every HealthCheckPolicy's `httpHealthCheck` that names a `port` and no
`portSpecification`.

The chart (llm-d/llm-d-router@v0.10.0 config/charts/llm-d-router-gateway/templates/gke.yaml) health-checks the model
servers over HTTP with `requestPath: /health` and `port: <the servers' port>`, no portSpecification (its gRPC branch
sets `portSpecification: "USE_FIXED_PORT"`). GKE's HealthCheckPolicy CRD (GoogleCloudPlatform/gke-gateway-api@fc40d606
config/crd/networking.gke.io_healthcheckpolicies.yaml, ../shared/reference/gke-crds/) refuses a port without it:
"port and portName must be unset for portSpecification being USE_SERVING_PORT (which is the default)". The first
real `pulumi up` of a gateway example (make e2e) failed there, the release rolled back. USE_FIXED_PORT is what the
chart means: "The port number in port is used for health checking" (the CRD's description).

Standard library only (Helm runs it with the deployer's python3); line-wise, as scripts/helm_postrender_drop_apiservices.py:
in a document whose top-level line is `kind: HealthCheckPolicy`, after an `httpHealthCheck:` line, its block (the
lines indented deeper) gets the field at the indentation of its first line, unless it has one.
"""

from __future__ import annotations

import sys

from helm_postrender_stream import documents

KIND_LINES = {"kind: HealthCheckPolicy", 'kind: "HealthCheckPolicy"', "kind: 'HealthCheckPolicy'"}
FIELD = "portSpecification: USE_FIXED_PORT"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def fix(doc: list[str]) -> list[str]:
    if not any(line.rstrip() in KIND_LINES for line in doc):
        return doc
    out: list[str] = []
    i = 0
    while i < len(doc):
        line = doc[i]
        out.append(line)
        i += 1
        if line.strip() != "httpHealthCheck:":
            continue
        block = []
        while i < len(doc) and doc[i].strip() and _indent(doc[i]) > _indent(line):
            block.append(doc[i])
            i += 1
        keys = {b.strip().split(":", 1)[0] for b in block}
        if block and "port" in keys and "portSpecification" not in keys:
            newline = "\n" if block[0].endswith("\n") else ""
            out.append(" " * _indent(block[0]) + FIELD + newline)
        out.extend(block)
    return out


def post_render(text: str) -> str:
    return "".join(line for doc in documents(text.splitlines(keepends=True)) for line in fix(doc))


def main() -> int:
    sys.stdout.write(post_render(sys.stdin.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
