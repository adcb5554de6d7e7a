"""virtual_phone layer (see docs/architecture.md)."""
