"""Reading a model's reply: the first tool call (native, or written as text), validated.

Models whose chat template drops `tools` write the call as text (`<tool_call>{...}</tool_call>`
or a bare JSON object with name and arguments); both are read here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from agent_host.agent.tools import ToolError, validate_call
from agent_host.config.observation import Frame
from agent_host.config.requests import Json, JsonValue


_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


def text_tool_call(content: str | None) -> tuple[str, JsonValue] | None:
    """A tool call written as text (`<tool_call>{...}</tool_call>` or a bare JSON object with
    name and arguments), for models whose chat template drops `tools`."""
    if not content:
        return None
    candidates = [m.group(1) for m in _TAGGED.finditer(content)] + [content]
    decoder = json.JSONDecoder()
    for text in candidates:
        for i, ch in enumerate(text):
            if ch != "{":
                continue
            try:
                obj, _ = decoder.raw_decode(text, i)
            except (json.JSONDecodeError, RecursionError):
                continue
            if isinstance(obj, dict) and isinstance(obj.get("name"), str):
                args = obj.get("arguments", obj.get("parameters", {}))
                return obj["name"], args
    return None


@dataclass
class Parsed:
    name: str | None = None
    args: Json = field(default_factory=dict)
    call_id: str | None = None        # None: the call came as text
    error: str | None = None


def parse_reply(message: Json, *, indices: list[int], apps: list[str],
                editable: set[int] | None = None, frame: Frame | None = None) -> Parsed:
    """The first tool call of a reply, validated; `editable`: indices type_text may target
    (None: any); `frame`: the build's coordinate frame (None: no point actions)."""
    calls = message.get("tool_calls") or []
    if calls:
        call = calls[0]
        name = call["function"]["name"]
        raw_args = call["function"]["arguments"]
        call_id = call["id"]
    else:
        found = text_tool_call(message.get("content"))
        if found is None:
            return Parsed(error="the reply has no tool call")
        name, raw_args = found
        call_id = None
    try:
        args = validate_call(name, raw_args, indices=indices, apps=apps, frame=frame)
    except ToolError as exc:
        return Parsed(name=name, call_id=call_id, error=str(exc))
    if name == "type_text" and editable is not None and args["index"] not in editable:
        return Parsed(name=name, call_id=call_id,
                      error=f"element {args['index']} is not a text field (type_text needs an element marked `type`)")
    return Parsed(name=name, args=args, call_id=call_id)




def reply_action(message: Json) -> tuple[str | None, Json | None]:
    """The action a reply asks for, unvalidated, for comparing two builds' replies: the first
    tool call's name and its arguments as a dict (None when they are not a JSON object).
    `(None, None)`: no tool call at all."""
    calls = message.get("tool_calls") or []
    if calls:
        name, raw = calls[0]["function"]["name"], calls[0]["function"]["arguments"]
    else:
        found = text_tool_call(message.get("content"))
        if found is None:
            return None, None
        name, raw = found
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return name, None
    return name, raw if isinstance(raw, dict) else None
