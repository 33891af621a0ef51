"""Commands an operator runs against a real project: make example, preflight, maintenance, and the measured rollout; imports tooling.oracles and below."""
