"""config layer (see docs/architecture.md)."""
