"""The fleet stack kind (one model served from several regions) and a regional stack's export to it. May import: stacks.serving and below."""
