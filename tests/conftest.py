"""Shared pytest fixtures live in tests/fixtures_*.py modules and are registered here."""
