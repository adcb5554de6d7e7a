"""A policy script: parsing and playing it against a chat request (pure; policy/server.py serves it).

A policy script is a YAML list of tool calls, `{TOOL: {args}}` (docs/architecture.md, "Policy
scripts"); task `solution:` lists use the same format. Or a mapping with options:

```yaml
actions:                      # the list above
  - open_app: {name: settings}
  - tap: {text: "Network & internet"}
after: wait                   # what to answer past the end: wait | task_complete |
                              #   task_infeasible | say   (default: wait)
wait_seconds: 0.5             # the `wait` played by `after: wait` (default 0.5, at most 10)
retries: 2                    # a selector not on screen: answer `wait` this many times ...
retry_wait: 0.5               # ... of this many seconds, then give up on that item
```

Items, besides the actions of config/actions.py (`press_back` / `press_home` may be bare strings):
- `say: "text"`: an assistant reply with this content and no tool call (to test the agent's
  handling of a reply without a tool call);
- `raw: {name: N, arguments: A}`: a tool call sent as is (A a string is sent verbatim, so
  malformed JSON can be tested; a mapping is JSON-encoded); no selector resolution.

Playing: the script position is derived from the request alone (the server keeps no episode
state, so one server can serve many episodes at once): each assistant message in the request
is one played turn. Tool-call ids carry the item played (`call_p<item>_...`), and a retry
(`call_p<item>r...`) does not advance, so a selector that is not on screen yet is retried
against the next observation. Where a list on screen scrolls, a selector not on screen first
scrolls it toward its end (`swipe up` on the largest scrollable element, `call_p<item>s...`, up
to SCROLLS times), as a person looks further down, then waits.
Element selectors (`text`, `text_contains`, `resource_id`,
`desc`) are resolved to an `index` against the observation in the latest user or tool
message (phone/render.py parse_rendered, phone/select.py find). A selector that never resolves is answered
with a reply without a tool call that says so.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agent_host.config.actions import ACTIONS, BARE_ACTIONS, MAX_WAIT_S, script_model, split_selector
from agent_host.config.loading import Loc, format_loc, line_of, load_yaml
from agent_host.config.requests import Json
from agent_host.errors import ConfigError
from agent_host.phone.render import parse_rendered
from agent_host.phone.screen import Element
from agent_host.phone.select import find

AFTER = ("wait", "task_complete", "task_infeasible", "say")
_ID_RE = re.compile(r"^call_p(\d+)([rds]?)_")
# A selector not on screen where a list scrolls: scroll it toward its end this many times, as a
# person looks further down (Settings' suggestion cards push rows below the fold), before the
# `wait` retries. A scroll (`call_p<item>s_`) neither advances nor spends a retry.
SCROLLS = 4
# The dismiss controls of the interruptions a varied phone shows (a permission dialog, a
# rate-this-app sheet, a heads-up notification: config/variation.py): a script taps them away
# before its next item, as a person would, without counting an item or a retry. A `raw` item
# (a blind replay's) is played as sent, interruption or not.
DISMISS_IDS = ("permission_deny_button", "not_now_button", "dismiss_button")


@dataclass(frozen=True)
class Item:
    kind: str                      # a tool name, "say" or "raw"
    args: dict[str, Any] = field(default_factory=dict)
    selector: dict[str, str] | None = None   # for element tools given by selector
    content: str | None = None     # say
    raw_arguments: str | None = None          # raw

    def describe(self) -> str:
        if self.kind == "say":
            return f"say {self.content!r}"
        sel = self.selector or {}
        shown = {**self.args, **sel}
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


@dataclass(frozen=True)
class PolicyScript:
    items: tuple[Item, ...]
    after: str = "wait"
    wait_seconds: float = 0.5
    retries: int = 2
    retry_wait: float = 0.5
    source: str = "<script>"

    @classmethod
    def from_data(cls, data: object, *, source: str = "<script>", node: yaml.Node | None = None) -> PolicyScript:
        """Build from parsed YAML (a list, or a mapping with `actions`). ConfigError on problems."""
        def fail(loc: Loc, msg: str) -> ConfigError:
            line = line_of(node, loc) if node is not None else None
            where = f"{source}:{line}" if line else source
            return ConfigError(f"{where}: {format_loc(loc)}: {msg}")

        opts: dict[str, Any] = {}
        prefix: Loc = ()
        if isinstance(data, dict):
            unknown = set(data) - {"actions", "after", "wait_seconds", "retries", "retry_wait"}
            if unknown:
                raise fail((sorted(unknown)[0],), "unknown option (actions, after, wait_seconds, retries, retry_wait)")
            after = data.get("after", "wait")
            if after not in AFTER:
                raise fail(("after",), f"one of {', '.join(AFTER)}")
            opts["after"] = after
            # a wait the script answers is a model call: the action's own bound applies
            for key, lo, hi in (("wait_seconds", 0, MAX_WAIT_S), ("retry_wait", 0, MAX_WAIT_S), ("retries", 0, 100)):
                if key in data:
                    v = data[key]
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                        raise fail((key,), f"a number from {lo:g} to {hi:g}")
                    opts[key] = int(v) if key == "retries" else float(v)
            items_data = data.get("actions", [])
            prefix = ("actions",)
        elif isinstance(data, list):
            items_data = data
        elif data is None:
            items_data = []
        else:
            raise fail((), "a policy script is a list of actions, or a mapping with `actions`")
        if not isinstance(items_data, list):
            raise fail(prefix, "a list of actions")
        items = []
        for i, raw in enumerate(items_data):
            try:
                items.append(parse_item(raw))
            except ValueError as exc:
                raise fail(prefix + (i,), str(exc)) from None
        return cls(items=tuple(items), source=source, **opts)

    def answer(self, messages: list[Json], body: Json | None = None,
               task: str | None = None, values: int = 0) -> Json:
        """The policy protocol PolicyServer speaks: the assistant message for a request (one
        script for every task, so `task` and `values` are not needed)."""
        return play(self, messages)

    @classmethod
    def load(cls, path: Path | str) -> PolicyScript:
        data, node = load_yaml(Path(path))
        return cls.from_data(data, source=str(path), node=node)


def parse_item(raw: object) -> Item:
    """One script item; ValueError names the problem. An action's arguments are checked by
    its script model (config/actions.py), as in task solutions."""
    if isinstance(raw, str):
        if raw in BARE_ACTIONS:
            return Item(raw)
        raise ValueError(f"unknown action {raw!r} (a bare action is {' or '.join(BARE_ACTIONS)})")
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ValueError("an action is a mapping with one key, the tool: {tap: {text: OK}}")
    kind, args = next(iter(raw.items()))
    if kind == "say":
        if not isinstance(args, str):
            raise ValueError("say: a string")
        return Item("say", content=args)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ValueError(f"{kind}: arguments are a mapping")
    if kind == "raw":
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("raw: needs `name`")
        arguments = args.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return Item("raw", args={"name": name}, raw_arguments=arguments)
    if kind not in ACTIONS:
        raise ValueError(f"unknown tool {kind!r} (one of: {', '.join(tuple(ACTIONS) + ('say', 'raw'))})")
    try:
        model = script_model(kind).model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = format_loc(tuple(err["loc"])) if err["loc"] else ""
        raise ValueError(f"{kind}: {where + ': ' if where else ''}{err['msg']}") from None
    call_args, selector = split_selector(kind, model.model_dump(exclude_none=True))
    return Item(kind, args=call_args, selector=selector)


# -- playing a script against a request (pure) --------------------------------------------


def message_text(message: Json) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def latest_observation(messages: list[Json]) -> list[Element]:
    """The elements of the most recent user/tool message that holds an observation."""
    for m in reversed(messages):
        if m.get("role") in ("user", "tool"):
            elements = parse_rendered(message_text(m)).elements
            if elements:
                return elements
    return []


def position(messages: list[Json]) -> tuple[int, int, int]:
    """(script item to play next, retries and scrolls already spent on it) for a request's
    messages."""
    pos = retries = scrolls = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        mm = _ID_RE.match(str(calls[0].get("id", ""))) if calls else None
        if mm:
            item, kind = int(mm.group(1)), mm.group(2)
            if item != pos:
                retries = scrolls = 0
            if kind == "d":            # an interruption dismissed before `item`: stay
                pos = item
            elif kind == "s":          # a scroll in search of `item`: stay
                scrolls, pos = scrolls + 1, item
            elif kind == "r":          # a retry of `item`: stay
                retries, pos = retries + 1, item
            else:
                pos, retries, scrolls = item + 1, 0, 0
        else:
            pos, retries, scrolls = pos + 1, 0, 0
    return pos, retries, scrolls


def _call(item_no: int | str, name: str, arguments: str | Json) -> Json:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": f"call_p{item_no}_{secrets.token_hex(4)}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


def play(script: PolicyScript, messages: list[Json]) -> Json:
    """The assistant message the script answers to these request messages."""
    pos, spent, scrolled = position(messages)
    if pos >= len(script.items):
        return _after(script, pos)
    item = script.items[pos]
    if item.kind == "say":
        return {"role": "assistant", "content": item.content}
    if item.kind == "raw":
        return {"role": "assistant", "content": None,
                "tool_calls": [_call(pos, item.args["name"], item.raw_arguments or "")]}
    elements = latest_observation(messages)      # parsed once: the interruption check and the selector
    interruption = next((e for e in elements or [] if e.rid in DISMISS_IDS), None)
    if interruption is not None:
        return {"role": "assistant", "content": None,
                "tool_calls": [_call(f"{pos}d", "tap", {"index": interruption.index})]}
    args = dict(item.args)
    if item.selector:
        hit = find(elements, **item.selector) if elements else None
        if hit is None:
            lists = [e for e in elements if e.scrollable]
            if lists and scrolled < SCROLLS and spent == 0:
                biggest = max(lists, key=lambda e: (e.bounds[2] - e.bounds[0]) * (e.bounds[3] - e.bounds[1]))
                call = _call(f"{pos}s", "swipe", {"direction": "up", "index": biggest.index})
                return {"role": "assistant", "content": None, "tool_calls": [call]}
            if spent < script.retries:
                call = _call(f"{pos}r", "wait", {"seconds": script.retry_wait})
                return {"role": "assistant", "content": None, "tool_calls": [call]}
            sel = ", ".join(f"{k}={v!r}" for k, v in item.selector.items())
            return {"role": "assistant",
                    "content": f"policy script {script.source} item {pos}: no element matches "
                               f"{sel} on this screen ({item.describe()})"}
        args = {"index": hit.index, **args}
    return {"role": "assistant", "content": None, "tool_calls": [_call(pos, item.kind, args)]}


def _after(script: PolicyScript, pos: int) -> Json:
    if script.after == "say":
        return {"role": "assistant", "content": "The policy script has ended."}
    if script.after == "wait":
        args: dict[str, Any] = {"seconds": script.wait_seconds}
    else:
        args = {"reason": "the policy script has ended"}
    return {"role": "assistant", "content": None, "tool_calls": [_call(pos, script.after, args)]}
