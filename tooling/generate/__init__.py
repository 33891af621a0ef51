"""Generated files: the JSON Schema, docs/configuration.md, the registry tables and the package map in docs pages. May import: tooling.review and below."""
