"""The agent's tools: OpenAI function schemas (bounded), and validation of a model's call.

Tools: tap(index), long_press(index), type_text(index, text, submit), swipe(direction, index?),
press_back(), press_home(), open_app(name), wait(seconds), task_complete(reason),
task_infeasible(reason). `open_app`'s names are the phone profile's app aliases.

`validate_call(name, arguments, ...)` checks a call against its schema (and, for element
arguments, against the indices on screen) and returns the normalised arguments or raises
`ToolError` with a message written for the model (it is fed back once).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_INDEX = 999
MAX_TEXT = 500
MAX_REASON = 300
MAX_WAIT_S = 10.0
DIRECTIONS = ("up", "down", "left", "right")

TOOL_NAMES = ("tap", "long_press", "type_text", "swipe", "press_back", "press_home", "open_app",
              "wait", "task_complete", "task_infeasible")
ELEMENT_TOOLS = ("tap", "long_press", "type_text", "swipe")
FINAL_TOOLS = ("task_complete", "task_infeasible")


class ToolError(ValueError):
    """A call the agent cannot act on; the message is shown to the model."""


def _index() -> dict[str, Any]:
    return {"type": "integer", "minimum": 0, "maximum": MAX_INDEX}


def _reason() -> dict[str, Any]:
    return {"type": "string", "maxLength": MAX_REASON}


def _fn(name: str, description: str, props: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(required),
                           "additionalProperties": False},
        },
    }


def tool_schemas(apps: Iterable[str]) -> list[dict[str, Any]]:
    """The tools, in OpenAI's `tools` format; `apps` are the aliases open_app accepts.

    Descriptions are terse: the system prompt explains each tool in text (prompt.py), and every
    token here is paid again in each request's prefill on a CPU server."""
    apps = sorted(set(apps))
    return [
        _fn("tap", "Tap element [index].", {"index": _index()}, ["index"]),
        _fn("long_press", "Touch and hold element [index].", {"index": _index()}, ["index"]),
        _fn("type_text", "Set the text of text field [index]; submit presses Enter.",
            {"index": _index(), "text": {"type": "string", "maxLength": MAX_TEXT},
             "submit": {"type": "boolean"}}, ["index", "text"]),
        _fn("swipe", "Swipe up/down/left/right, in element [index] or across the screen.",
            {"direction": {"type": "string", "enum": list(DIRECTIONS)}, "index": _index()},
            ["direction"]),
        _fn("press_back", "Press Back.", {}),
        _fn("press_home", "Press Home.", {}),
        _fn("open_app", "Open an app.", {"name": {"type": "string", "enum": apps}}, ["name"]),
        _fn("wait", "Wait for the screen to change.",
            {"seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT_S}}, ["seconds"]),
        _fn("task_complete", "The goal is achieved (ends the task).", {"reason": _reason()}, ["reason"]),
        _fn("task_infeasible", "The goal cannot be achieved (ends the task).", {"reason": _reason()},
            ["reason"]),
    ]


def parse_arguments(arguments: Any) -> dict[str, Any]:
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
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


def _as_int(v: Any, what: str) -> int:
    if isinstance(v, bool):
        raise ToolError(f"{what} must be an integer")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    raise ToolError(f"{what} must be an integer, got {v!r}")


def _as_number(v: Any, what: str) -> float:
    if isinstance(v, bool):
        raise ToolError(f"{what} must be a number")
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            pass
    raise ToolError(f"{what} must be a number, got {v!r}")


def _as_bool(v: Any, what: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    raise ToolError(f"{what} must be true or false, got {v!r}")


def _as_str(v: Any, what: str, max_len: int) -> str:
    if not isinstance(v, str):
        raise ToolError(f"{what} must be a string")
    if len(v) > max_len:
        raise ToolError(f"{what} is longer than {max_len} characters")
    return v


def validate_call(name: str, arguments: Any, *, indices: Iterable[int] | None = None,
                  apps: Iterable[str] = ()) -> dict[str, Any]:
    """Normalised arguments of a call, or ToolError. `indices`: the element indices on screen
    (None: do not check them). Unknown extra arguments are dropped; numbers written as strings
    ("3") are accepted, as several servers' tool parsers produce them."""
    if name not in TOOL_NAMES:
        raise ToolError(f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}")
    args = parse_arguments(arguments)
    out: dict[str, Any] = {}

    def need(key: str) -> Any:
        if key not in args or args[key] is None:
            raise ToolError(f"{name} needs the argument {key!r}")
        return args[key]

    def element(key: str = "index", required: bool = True) -> None:
        if not required and args.get(key) is None:
            return
        idx = _as_int(need(key), key)
        if not 0 <= idx <= MAX_INDEX:
            raise ToolError(f"{key} must be between 0 and {MAX_INDEX}")
        if indices is not None and idx not in set(indices):
            raise ToolError(f"there is no element with index {idx} on the current screen")
        out[key] = idx

    if name in ("tap", "long_press"):
        element()
    elif name == "type_text":
        element()
        out["text"] = _as_str(need("text"), "text", MAX_TEXT)
        out["submit"] = _as_bool(args["submit"], "submit") if args.get("submit") is not None else False
    elif name == "swipe":
        direction = need("direction")
        if not isinstance(direction, str) or direction.strip().lower() not in DIRECTIONS:
            raise ToolError(f"direction must be one of {', '.join(DIRECTIONS)}")
        out["direction"] = direction.strip().lower()
        element(required=False)
    elif name == "open_app":
        apps = sorted(set(apps))
        app = need("name")
        if not isinstance(app, str) or app.strip().lower() not in apps:
            raise ToolError(f"unknown app {app!r}; the apps are: {', '.join(apps)}")
        out["name"] = app.strip().lower()
    elif name == "wait":
        seconds = _as_number(args["seconds"], "seconds") if args.get("seconds") is not None else 1.0
        if not 0 <= seconds <= MAX_WAIT_S:
            raise ToolError(f"seconds must be between 0 and {MAX_WAIT_S:g}")
        out["seconds"] = seconds
    elif name in FINAL_TOOLS:
        reason = args.get("reason")
        out["reason"] = "" if reason is None else _as_str(reason, "reason", MAX_REASON * 4)[:MAX_REASON * 4]
    return out
