"""An OpenAI-compatible endpoint, however it came to be running."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    base_url: str                 # ends in /v1
    api_key: str
    model: str                    # the served model name requests must use
    build_id: str = ""
    metrics_url: str | None = None  # Prometheus /metrics, when the server has one
