"""Oracles and upstream data: API, provider, CRD and chart schemas and rules, the deployer's requirements table. May import: tooling.harness."""
