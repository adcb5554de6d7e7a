"""What an episode sent its model, kept so that every request can be rebuilt byte for byte.

The conversation is append-only, so request n's messages are a prefix of the final
conversation: `requests.json` keeps the final messages once, the tools once, and per
request the index its messages end at (`end`), the options sent with them (sampling, seed,
tool choice) and the sha256 of the request body as the client sent it. The reply to request
n is `messages[end]` (the assistant message appended after it).

`request_body` is the one definition of a request body (the model client sends it, replay
rebuilds it); `body_sha256` hashes it in one canonical JSON form (sorted keys, no spaces,
UTF-8), the form a test compares with what a real server received.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent_host.config.records import read_regular
from agent_host.errors import UserError

# A JSON object as the OpenAI API sends and takes it (messages, tool calls, arguments, request
# options): its values are of any JSON type, and the API, not agent-host, fixes their shape.
Json = dict[str, Any]
# Any one JSON value (what a model wrote where the API expects arguments, a schema's node).
JsonValue = Any

REQUESTS = "requests.json"
VERSION = 1


def calls_schema(tools: list[Json]) -> Json:
    """The `response_format` that makes a reply exactly one call of one of `tools`:
    {"name": ..., "arguments": {...}}, the arguments held to the tool's own parameters."""
    one_of = [{"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
               "properties": {"name": {"const": t["function"]["name"]},
                              "arguments": t["function"].get("parameters") or {"type": "object"}}}
              for t in tools]
    return {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": {"anyOf": one_of}}}


def call_from_json(content: JsonValue) -> list[Json]:
    """The tool call a reply asked through `calls_schema` holds; [] when it holds none (then
    the agent's usual "no tool call" applies)."""
    try:
        obj = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return []
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or "arguments" not in obj:
        return []
    return [{"id": f"call_{secrets.token_hex(6)}", "type": "function",
             "function": {"name": obj["name"], "arguments": json.dumps(obj["arguments"], ensure_ascii=False)}}]


def with_json_call(message: Json) -> Json:
    """`message` with the call its content holds (asked through `calls_schema`) as its
    `tool_calls`, when it has none and its content is one; else `message` as it is."""
    if message.get("tool_calls"):
        return message
    calls = call_from_json(message.get("content"))
    return {**message, "content": None, "tool_calls": calls} if calls else message


def request_body(model: str, messages: list[Json], tools: list[Json] | None, options: Json) -> Json:
    """The JSON body of one chat request (what the openai client posts, headers aside)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools is not None:
        body["tools"] = tools
    body.update(options)
    return body


def body_sha256(body: Json) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SentRequest(BaseModel):
    """One request the model answered: step and attempt (0, or 1 after an invalid reply)."""
    step: int
    attempt: int = 0
    end: int                                   # messages[:end] were sent; messages[end] is the reply
    options: dict[str, Any] = Field(default_factory=dict)
    sha256: str


class RequestLog(BaseModel):
    """An episode's `requests.json`."""
    version: int = VERSION
    model: str
    headers: dict[str, str] = Field(default_factory=dict)   # e.g. the X-Agent-Host-Task header
    tools: list[dict[str, Any]] | None = None
    messages: list[dict[str, Any]]
    requests: list[SentRequest] = Field(default_factory=list)

    def body(self, i: int) -> Json:
        r = self.requests[i]
        return request_body(self.model, self.messages[: r.end], self.tools, r.options)

    def reply(self, i: int) -> Json:
        """The assistant message that answered request i."""
        return self.messages[self.requests[i].end]

    def mismatches(self) -> list[int]:
        """Indices of requests whose rebuilt body does not hash to what was sent."""
        return [i for i, r in enumerate(self.requests) if body_sha256(self.body(i)) != r.sha256]


def load_request_log(episode_dir: Path) -> RequestLog:
    """An episode's request log; UserError with a one-line reason when it has none or it is unreadable."""
    path = Path(episode_dir) / REQUESTS
    if not path.exists():
        raise UserError(f"{path}: missing: this episode was recorded before agent-host kept its requests "
                        "(requests.json); re-run it to replay it")
    try:
        log = RequestLog.model_validate_json(read_regular(path))
    except OSError as exc:   # a FIFO is refused (read_regular), not waited on
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise UserError(f"{path}: {where}: {first['msg']}") from None
    if log.version != VERSION:
        raise UserError(f"{path}: version {log.version}, this agent-host reads version {VERSION}")
    bad = log.mismatches()
    if bad:
        raise UserError(f"{path}: request {bad[0]} does not rebuild to the body that was sent (sha256 differs)")
    return log
