"""Oracles and upstream data: API, provider, CRD and chart schemas and rules, the project requirements table; imports tooling.harness only."""
