"""Shared fixtures live in tests/fixtures_*.py, one module per owner, registered here."""

pytest_plugins = ["fixtures_machine", "fixtures_phone", "fixtures_policy", "fixtures_vllm"]


def pytest_collection_modifyitems(config, items):
    """Modules holding slow end-to-end tests run last, so a fast test's failure shows in CI's
    first minutes rather than after half an hour. A module moves whole (its order kept), so a
    module-scoped fixture (a vLLM server) is still started once."""
    slow = {item.module.__name__ for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.module.__name__ in slow)
