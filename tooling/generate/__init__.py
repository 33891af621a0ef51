"""Generated files: the JSON Schema, docs/configuration.md and the registry tables and map in docs pages; imports tooling.review and below."""
