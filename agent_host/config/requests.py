"""What an episode sent its model, kept so that every request can be rebuilt byte for byte.

The conversation is append-only, so request n's messages are a prefix of the final
conversation: `requests.json` keeps the final messages once, the tools once, and per
request the index its messages end at (`end`), the options sent with them (sampling, seed,
tool choice) and the sha256 of the request body as the client sent it. The reply to request
n is `messages[end]` (the assistant message appended after it).

`request_body` is the one definition of a request body (the model client sends it, replay
rebuilds it); `body_sha256` hashes it in one canonical JSON form (sorted keys, no spaces,
UTF-8), the form a test compares with what a real server received.

A vision build's messages carry images (OpenAI `image_url` content parts). Each image is
stored once, by content, as `images/<sha256>.png` in the episode folder, and the messages
(the loop's and requests.json's) reference it by that path; `expand_images` is the one rule
that makes a request's messages from them: the newest `history_images` references become
PNG data URLs, older ones a short text part (so a prompt does not grow without bound). The
rule depends only on the messages up to the request, so every body rebuilds byte for byte.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from pathlib import Path
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr, ValidationError

from agent_host.config.records import read_regular
from agent_host.errors import UserError

# A JSON object as the OpenAI API sends and takes it (messages, tool calls, arguments, request
# options): its values are of any JSON type, and the API, not agent-host, fixes their shape.
Json = dict[str, Any]
# Any one JSON value (what a model wrote where the API expects arguments, a schema's node).
JsonValue = Any

REQUESTS = "requests.json"
VERSION = 1
IMAGE_DIR = "images"
DROPPED_IMAGE = "(an earlier screenshot, no longer shown)"


def _image_refs(messages: list[Json]) -> list[str]:
    return [p["image_url"]["url"] for m in messages if isinstance(m.get("content"), list)
            for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url"]


def png_data_url(data: bytes) -> str:
    """A PNG as the data URL an `image_url` part sends."""
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def expand_images(messages: list[Json], keep: int, read: Callable[[str], bytes]) -> list[Json]:
    """`messages` as sent: the newest `keep` image references as data URLs (`read(ref)` gives
    the PNG bytes), older ones replaced by a text part; messages without images unchanged."""
    refs = _image_refs(messages)
    if not refs:
        return messages
    kept = len(refs) - keep
    seen = 0
    out: list[Json] = []
    for m in messages:
        content = m.get("content")
        if not isinstance(content, list):
            out.append(m)
            continue
        parts: list[Json] = []
        for p in content:
            if isinstance(p, dict) and p.get("type") == "image_url":
                ref = p["image_url"]["url"]
                if seen >= kept:
                    parts.append({"type": "image_url", "image_url": {"url": png_data_url(read(ref))}})
                else:
                    parts.append({"type": "text", "text": DROPPED_IMAGE})
                seen += 1
            else:
                parts.append(p)
        out.append({**m, "content": parts})
    return out


def image_ref_ok(ref: str) -> bool:
    """A reference is `images/<64 hex>.png`: nothing else is read from an episode folder."""
    name = ref.removeprefix(f"{IMAGE_DIR}/")
    return name != ref and len(name) == 68 and name.endswith(".png") and all(c in "0123456789abcdef" for c in name[:64])


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
    # a vision build's images kept per prompt (expand_images); absent from a text build's file
    history_images: int | None = Field(None, ge=0)
    _dir: Path | None = PrivateAttr(None)   # the episode folder its images are read from

    def body(self, i: int) -> Json:
        r = self.requests[i]
        messages = self.messages[: r.end]
        if self.history_images is not None:
            messages = expand_images(messages, self.history_images, self.read_image)
        return request_body(self.model, messages, self.tools, r.options)

    def read_image(self, ref: str) -> bytes:
        """An image the messages reference, from the episode folder it was loaded from."""
        if self._dir is None or not image_ref_ok(ref):
            raise UserError(f"requests.json: image reference {ref[:80]!r} is not images/<sha256>.png "
                            "of a loaded episode folder")
        path = self._dir / ref
        try:
            data = read_regular(path)
        except OSError as exc:
            raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if f"{IMAGE_DIR}/{hashlib.sha256(data).hexdigest()}.png" != ref:
            raise UserError(f"{path}: its content does not hash to its name")
        return data

    def dump(self) -> Json:
        """The file's JSON (a text build's without `history_images`, as it always was)."""
        return self.model_dump(mode="json", exclude={"history_images"} if self.history_images is None else None)

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
    log._dir = Path(episode_dir)
    if log.version != VERSION:
        raise UserError(f"{path}: version {log.version}, this agent-host reads version {VERSION}")
    bad = log.mismatches()
    if bad:
        raise UserError(f"{path}: request {bad[0]} does not rebuild to the body that was sent (sha256 differs)")
    return log
