"""The agent's tools as the model sees them: OpenAI function schemas, and validation of a call.

Both are derived from the action vocabulary (config/actions.py): a tool's parameters are its
argument model's JSON schema, and a call is validated by that model. `open_app`'s names are
the phone profile's app aliases, known only per episode, so they are added here.

`validate_call(name, arguments, ...)` returns the normalised arguments or raises `ToolError`
with a message written for the model (it is fed back once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pydantic import ValidationError

from agent_host.config.actions import (ACTION_NAMES, ACTIONS, DIRECTIONS, ELEMENT_ACTIONS, FINAL_ACTIONS,
                                       MAX_INDEX, MAX_WAIT_S, offered)
from agent_host.config.observation import Frame
from agent_host.config.requests import Json, JsonValue

TOOL_NAMES = ACTION_NAMES
ELEMENT_TOOLS = ELEMENT_ACTIONS
FINAL_TOOLS = FINAL_ACTIONS
__all__ = ["DIRECTIONS", "ELEMENT_TOOLS", "FINAL_TOOLS", "MAX_INDEX", "MAX_WAIT_S", "TOOL_NAMES",
           "ToolError", "parse_arguments", "points", "tool_schemas", "validate_call"]


class ToolError(ValueError):
    """A call the agent cannot act on; the message is shown to the model."""


def _clean(schema: JsonValue) -> JsonValue:
    """A pydantic JSON schema without what a model need not read (titles, defaults), with
    optional fields as their plain type rather than anyOf[type, null]."""
    if isinstance(schema, list):
        return [_clean(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    if "anyOf" in schema:
        kept = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if len(kept) == 1:
            schema = {**{k: v for k, v in schema.items() if k != "anyOf"}, **kept[0]}
    out = {k: _clean(v) for k, v in schema.items() if k not in ("title", "default")}
    return {k: out[k] for k in sorted(out, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER))}


_ORDER = ("type", "enum", "minimum", "maximum", "maxLength")   # the key order a model has always seen


def _parameters(name: str, apps: list[str]) -> Json:
    schema = _clean(ACTIONS[name].args.model_json_schema())
    props = schema.get("properties", {})
    if name == "open_app":
        props["name"] = {"type": "string", "enum": apps}
    return {"type": "object", "properties": props, "required": schema.get("required", []),
            "additionalProperties": False}


def tool_schemas(apps: Iterable[str], coordinates: bool = False) -> list[Json]:
    """The tools, in OpenAI's `tools` format; `apps` are the aliases open_app accepts;
    `coordinates`: offer the point actions (tap_xy, ...) too (a build with a coordinate frame).

    Descriptions are terse: the system prompt explains each tool in text (prompt.py), and every
    token here is paid again in each request's prefill on a CPU server."""
    apps = sorted(set(apps))
    return [{"type": "function",
             "function": {"name": name, "description": ACTIONS[name].summary, "parameters": _parameters(name, apps)}}
            for name in offered(coordinates)]


def parse_arguments(arguments: JsonValue) -> Json:
    """A tool call's `arguments` (a JSON string, per the API) as a dict."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, dict):
        return dict(arguments)
    if not isinstance(arguments, str):
        raise ToolError(f"arguments must be a JSON object, got {type(arguments).__name__}")
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON ({exc.msg} at character {exc.pos})") from None
    except RecursionError:  # the model's malformed call, not the harness's failure
        raise ToolError("arguments are nested too deeply to read") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


def _message(name: str, err: Json) -> str:
    """One pydantic error as a sentence for the model."""
    key = ".".join(str(p) for p in err["loc"]) or "arguments"
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return f"{name} needs the argument {key!r}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        field = ACTIONS[name].args.model_fields[err["loc"][0]]
        # getattr: a field's metadata holds constraints of several kinds; only Ge and Le have ge, le
        lo = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
        hi = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
        return f"{key} must be between {lo:g} and {hi:g}"
    if kind == "string_too_long":
        return f"{key} is longer than {ctx.get('max_length')} characters"
    if kind.startswith("int_"):
        return f"{key} must be an integer, got {value!r}"
    if kind.startswith("float_"):
        return f"{key} must be a number, got {value!r}"
    if kind.startswith("bool_"):
        return f"{key} must be true or false, got {value!r}"
    if kind == "literal_error" and key == "direction":
        return f"direction must be one of {', '.join(DIRECTIONS)}"
    if kind.startswith("string_"):
        return f"{key} must be a string"
    return f"{key}: {err['msg']}"


def points(args: Json) -> list[tuple[int, int]]:
    """The screen points a point action's arguments name, in its frame (tap_xy: one; swipe_xy: two)."""
    if "x1" in args:
        return [(args["x1"], args["y1"]), (args["x2"], args["y2"])]
    return [(args["x"], args["y"])]


def validate_call(name: str, arguments: JsonValue, *, indices: Iterable[int] | None = None,
                  apps: Iterable[str] = (), frame: Frame | None = None) -> Json:
    """Normalised arguments of a call, or ToolError. `indices`: the element indices on screen
    (None: do not check them); `frame`: the build's coordinate frame (None: no point actions).
    Unknown extra arguments are dropped; numbers written as strings ("3") are accepted, as
    several servers' tool parsers produce them."""
    kind = ACTIONS.get(name)
    names = offered(frame is not None)
    if kind is None or name not in names:
        raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(names)}")
    raw = {k: v for k, v in parse_arguments(arguments).items() if v is not None}
    try:
        args = kind.args.model_validate(raw).model_dump(exclude_none=True)
    except ValidationError as exc:
        raise ToolError(_message(name, dict(exc.errors()[0]))) from None
    if "index" in args and indices is not None and args["index"] not in set(indices):
        raise ToolError(f"there is no element with index {args['index']} on the current screen")
    if kind.point and frame is not None:
        for x, y in points(args):
            off = frame.outside(x, y)
            if off is not None:
                raise ToolError(off)
    if name == "open_app":
        known = sorted(set(apps))
        if args["name"] not in known:
            raise ToolError(f"unknown app {raw.get('name')!r}; the apps are: {', '.join(known)}")
    return args
