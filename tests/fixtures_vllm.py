"""Fixtures: vllm (filled in by its owner)."""
