"""Commands an operator runs against a real project: make example, preflight, maintenance, the measured rollout. May import: tooling.review and below."""
