"""The release: the package's version (pyproject.toml reads it: [tool.setuptools.dynamic]), the policy pack's
(policy/PulumiPolicy.yaml, held equal by tests/test_policy_pack.py) and CHANGELOG.md's latest entry."""

VERSION = "0.2.0"
