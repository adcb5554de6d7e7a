"""Fixtures: phone (filled in by its owner)."""
