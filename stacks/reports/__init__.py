"""What is read off a validated stack (stacks.stack_config): its estimated cost, each workload's time to serve, its fleet output. May import: stacks.stack_config, stacks.workload_checks and below."""
