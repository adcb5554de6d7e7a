"""judge layer (see docs/architecture.md)."""
