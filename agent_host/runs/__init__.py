"""runs layer (see docs/architecture.md)."""
