"""An OpenAI-compatible endpoint, however it came to be running."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

# The request header an episode names its task instance in (`ID[i]`, `ID[i]@verify`). Model
# servers ignore it and it never reaches the prompt; scripted policies (policy/suite.py) read
# it, because a goal alone does not tell apart instances that share it, or a verify variant.
# Percent-encoded (UTF-8): an instance id from params may hold any text, a header ASCII only.
TASK_HEADER = "X-Agent-Host-Task"
# Which of the task's `vary.values` overlays the episode's phone carries (config/variation.py),
# sent only when one does: a scripted suite answers that overlay's solution (its answer).
VALUES_HEADER = "X-Agent-Host-Values"


def task_header(key: str, values: int | None = None) -> dict[str, str]:
    return {TASK_HEADER: quote(key, safe=""), **({VALUES_HEADER: str(values)} if values else {})}


def values_from_header(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 0


def task_from_header(value: str | None) -> str | None:
    return unquote(value) if value else None


@dataclass(frozen=True)
class Endpoint:
    base_url: str                 # ends in /v1
    api_key: str
    model: str                    # the served model name requests must use
    build_id: str = ""
    metrics_url: str | None = None  # Prometheus /metrics, when the server has one
    calls_as_json: bool = False   # ask tool calls as a JSON object (config/builds.ServerTraits)
