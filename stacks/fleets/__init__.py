"""The fleet stack kind (one model from several regions) and a regional stack's export to it; imports stacks.serving and below."""
