"""Stack-level code: typed config, profiles, the composition of the one stack, offline runs."""
