"""serving layer (see docs/architecture.md)."""
