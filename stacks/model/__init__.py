"""The stack config's models (what a user may write under tpu-serving:), one key parsed with its model, and the environment profiles; imports stacks.monitoring and below."""
