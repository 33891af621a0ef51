"""The stack config's models (what a user may write under `tpu-serving:`), one key parsed with its model, the environment profiles. May import: stacks.monitoring and below."""
