"""agent layer (see docs/architecture.md)."""
