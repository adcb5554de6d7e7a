"""Fixtures: policy (filled in by its owner)."""
