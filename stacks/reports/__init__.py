"""What is read off a validated stack (stacks.stack_config): its estimated cost, each workload's time to serve, its fleet output; imports stacks.stack_config and below."""
