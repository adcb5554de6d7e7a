"""phone layer (see docs/architecture.md)."""
