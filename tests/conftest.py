"""Shared fixtures live in tests/fixtures_*.py, one module per owner, registered here."""

pytest_plugins = ["fixtures_phone", "fixtures_policy", "fixtures_vllm"]
