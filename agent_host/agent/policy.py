"""A scripted policy behind a real OpenAI-compatible HTTP server (`agent-host policy serve`).

A policy script is a YAML list of tool calls, `{TOOL: {args}}` (docs/architecture.md, "Policy
scripts"); task `solution:` lists use the same format. Or a mapping with options:

```yaml
actions:                      # the list above
  - open_app: {name: settings}
  - tap: {text: "Network & internet"}
after: wait                   # what to answer past the end: wait | task_complete |
                              #   task_infeasible | say   (default: wait)
wait_seconds: 0.5             # the `wait` played by `after: wait` (default 0.5)
retries: 2                    # a selector not on screen: answer `wait` this many times ...
retry_wait: 0.5               # ... of this many seconds, then give up on that item
```

Items, besides the ten tools (`press_back` / `press_home` may be bare strings):
- `say: "text"`: an assistant reply with this content and no tool call (to test the agent's
  handling of a reply without a tool call);
- `raw: {name: N, arguments: A}`: a tool call sent as is (A a string is sent verbatim, so
  malformed JSON can be tested; a mapping is JSON-encoded); no selector resolution.

Playing: the script position is derived from the request alone (the server keeps no episode
state, so one server can serve many episodes at once): each assistant message in the request
is one played turn. Tool-call ids carry the item played (`call_p<item>_...`), and a retry
(`call_p<item>r...`) does not advance, so a selector that is not on screen yet is retried
against the next observation. Element selectors (`text`, `text_contains`, `resource_id`,
`desc`) are resolved to an `index` against the observation in the latest user or tool
message (observe.parse_rendered + observe.find). A selector that never resolves is answered
with a reply without a tool call that says so.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_host.agent.tools import DIRECTIONS, ELEMENT_TOOLS, TOOL_NAMES
from agent_host.errors import ConfigError

SELECTOR_KEYS = ("text", "text_contains", "resource_id", "desc")
AFTER = ("wait", "task_complete", "task_infeasible", "say")
BARE = ("press_back", "press_home")
_ID_RE = re.compile(r"^call_p(\d+)(r?)_")


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
    def from_data(cls, data: Any, *, source: str = "<script>", node: Any = None) -> PolicyScript:
        """Build from parsed YAML (a list, or a mapping with `actions`). ConfigError on problems."""
        def fail(loc: tuple[Any, ...], msg: str) -> ConfigError:
            from agent_host.config.loading import format_loc, line_of
            line = line_of(node, loc) if node is not None else None
            where = f"{source}:{line}" if line else source
            return ConfigError(f"{where}: {format_loc(loc)}: {msg}")

        opts: dict[str, Any] = {}
        prefix: tuple[Any, ...] = ()
        if isinstance(data, dict):
            unknown = set(data) - {"actions", "after", "wait_seconds", "retries", "retry_wait"}
            if unknown:
                raise fail((sorted(unknown)[0],), "unknown option (actions, after, wait_seconds, retries, retry_wait)")
            after = data.get("after", "wait")
            if after not in AFTER:
                raise fail(("after",), f"one of {', '.join(AFTER)}")
            opts["after"] = after
            for key, lo, hi in (("wait_seconds", 0, 60), ("retry_wait", 0, 60), ("retries", 0, 100)):
                if key in data:
                    v = data[key]
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                        raise fail((key,), f"a number from {lo} to {hi}")
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

    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The policy protocol PolicyServer speaks: the assistant message for a request."""
        return play(self, messages)

    @classmethod
    def load(cls, path: Path | str) -> PolicyScript:
        from agent_host.config.loading import load_yaml
        data, node = load_yaml(Path(path))
        return cls.from_data(data, source=str(path), node=node)


def parse_item(raw: Any) -> Item:
    """One script item; ValueError names the problem."""
    if isinstance(raw, str):
        if raw in BARE:
            return Item(raw)
        raise ValueError(f"unknown action {raw!r} (a bare action is press_back or press_home)")
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
    args = dict(args)
    if kind == "raw":
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("raw: needs `name`")
        arguments = args.get("arguments", "{}")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return Item("raw", args={"name": name}, raw_arguments=arguments)
    if kind not in TOOL_NAMES:
        raise ValueError(f"unknown tool {kind!r} (one of: {', '.join(TOOL_NAMES + ('say', 'raw'))})")
    selector = None
    if kind in ELEMENT_TOOLS:
        sel_keys = [k for k in SELECTOR_KEYS if k in args and not (kind == "type_text" and k == "text")]
        given = sel_keys + (["index"] if "index" in args else [])
        if kind == "swipe":
            if args.get("direction") not in DIRECTIONS:
                raise ValueError(f"swipe: direction is one of {', '.join(DIRECTIONS)}")
            if len(given) > 1:
                raise ValueError("swipe: give at most one of index, text, text_contains, resource_id, desc")
        elif len(given) != 1:
            keys = "index, text_contains, resource_id, desc" if kind == "type_text" else \
                "index, text, text_contains, resource_id, desc"
            raise ValueError(f"{kind}: give exactly one of {keys}")
        if "index" in args and (isinstance(args["index"], bool) or not isinstance(args["index"], int)):
            raise ValueError(f"{kind}: index is an integer")
        if sel_keys:
            selector = {k: str(args.pop(k)) for k in sel_keys}
        if kind == "type_text":
            if not isinstance(args.get("text"), str):
                args["text"] = "" if args.get("text") is None else str(args["text"])
            args.setdefault("submit", False)
    elif kind == "wait":
        s = args.get("seconds", 1.0)
        if isinstance(s, bool) or not isinstance(s, (int, float)) or s < 0:
            raise ValueError("wait: seconds is a number >= 0")
        args["seconds"] = s
    elif kind == "open_app":
        if not isinstance(args.get("name"), str):
            raise ValueError("open_app: needs `name` (an app alias such as settings)")
    elif kind in ("task_complete", "task_infeasible"):
        args.setdefault("reason", "")
    return Item(kind, args=args, selector=selector)


# -- playing a script against a request (pure) --------------------------------------------


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def latest_observation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The elements of the most recent user/tool message that holds an observation."""
    from agent_host.phone.observe import parse_rendered
    for m in reversed(messages):
        if m.get("role") in ("user", "tool"):
            elements = parse_rendered(message_text(m))
            if elements:
                return elements
    return []


def position(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """(script item to play next, retries already spent on it) for a request's messages."""
    pos = retries = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        mm = _ID_RE.match(str(calls[0].get("id", ""))) if calls else None
        if mm:
            item = int(mm.group(1))
            if mm.group(2):            # a retry of `item`: stay
                retries = retries + 1 if item == pos else 1
                pos = item
            else:
                pos, retries = item + 1, 0
        else:
            pos, retries = pos + 1, 0
    return pos, retries


def _call(item_no: int | str, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": f"call_p{item_no}_{secrets.token_hex(4)}", "type": "function",
            "function": {"name": name, "arguments": arguments}}


def play(script: PolicyScript, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message the script answers to these request messages."""
    pos, spent = position(messages)
    if pos >= len(script.items):
        return _after(script, pos)
    item = script.items[pos]
    if item.kind == "say":
        return {"role": "assistant", "content": item.content}
    if item.kind == "raw":
        return {"role": "assistant", "content": None,
                "tool_calls": [_call(pos, item.args["name"], item.raw_arguments or "")]}
    args = dict(item.args)
    if item.selector:
        elements = latest_observation(messages)
        from agent_host.phone.observe import find
        hit = find(elements, **item.selector) if elements else None
        if hit is None:
            if spent < script.retries:
                call = _call(f"{pos}r", "wait", {"seconds": script.retry_wait})
                return {"role": "assistant", "content": None, "tool_calls": [call]}
            sel = ", ".join(f"{k}={v!r}" for k, v in item.selector.items())
            return {"role": "assistant",
                    "content": f"policy script {script.source} item {pos}: no element matches "
                               f"{sel} on this screen ({item.describe()})"}
        ordered = {"index": hit["index"]} if isinstance(hit, dict) else {"index": hit.index}
        args = {**ordered, **args}
    return {"role": "assistant", "content": None, "tool_calls": [_call(pos, item.kind, args)]}


def _after(script: PolicyScript, pos: int) -> dict[str, Any]:
    if script.after == "say":
        return {"role": "assistant", "content": "The policy script has ended."}
    if script.after == "wait":
        args: dict[str, Any] = {"seconds": script.wait_seconds}
    else:
        args = {"reason": "the policy script has ended"}
    return {"role": "assistant", "content": None, "tool_calls": [_call(pos, script.after, args)]}


# -- the HTTP server ---------------------------------------------------------------------------


def _serialize(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages, ensure_ascii=False, sort_keys=True)


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix (binary search over C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PolicyServer:
    """A policy on a real HTTP port. `requests` keeps every chat request body.

    `script` is any object with `answer(messages, body) -> assistant message` (a PolicyScript,
    or policy_suite.SuitePolicy, which picks each task's solution by its goal)."""

    def __init__(self, script: Any, *, host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, model: str = "policy", delay_ms: int = 0,
                 log_path: Path | str | None = None):
        self.script = script
        self.host = host
        self.port = port
        self.api_key = api_key or None
        self.model = model
        self.delay_ms = delay_ms
        self.log_path = Path(log_path) if log_path else None
        self.requests: list[dict[str, Any]] = []
        self._recent: list[str] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)
        self._conns: set[Any] = set()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def endpoint(self, build_id: str = "policy"):
        from agent_host.serving.endpoint import Endpoint
        return Endpoint(self.base_url, self.api_key or "none", self.model, build_id, None)

    def start(self) -> PolicyServer:
        server = self

        class Handler(_Handler):
            policy = server

        self._httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="policy-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        assert self._thread is not None
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        finally:
            self.stop()

    def stop(self) -> None:
        """Stop listening and cut open keep-alive connections (as a dying server would)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
            with self._lock:
                conns, self._conns = list(self._conns), set()
            for conn in conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> PolicyServer:
        return self.start() if self._httpd is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- answering --

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages: a non-empty list is required")
        if body.get("stream"):
            raise ValueError("stream: not supported by the policy server")
        message = self.script.answer(messages, body)
        text = _serialize(messages)
        with self._lock:
            self.requests.append(body)
            cached = max((_common_prefix(text, r) for r in self._recent), default=0)
            self._recent = (self._recent + [text])[-16:]
            n = next(self._ids)
        prompt_tokens = max(1, len(text) // 4)
        out_text = json.dumps(message.get("tool_calls") or message.get("content") or "")
        completion_tokens = max(1, len(out_text) // 4)
        response = {
            "id": f"chatcmpl-policy-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": "agent-host-policy",
            "choices": [{
                "index": 0, "message": message, "logprobs": None,
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }],
            "usage": {
                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": min(prompt_tokens, cached // 4)},
            },
        }
        if self.log_path:
            with self._lock, self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"request": body, "response": response}, ensure_ascii=False) + "\n")
        return response


class _Handler(BaseHTTPRequestHandler):
    policy: PolicyServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (quiet by default)
        pass

    def setup(self) -> None:
        super().setup()
        with self.policy._lock:
            self.policy._conns.add(self.connection)

    def finish(self) -> None:
        with self.policy._lock:
            self.policy._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(code, {"error": {"message": message, "type": kind, "code": code}})

    def _authorised(self) -> bool:
        key = self.policy.api_key
        if key is None:
            return True
        if self.headers.get("Authorization", "") == f"Bearer {key}":
            return True
        self._error(401, "invalid API key", "authentication_error")
        return False

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", ""):
            self._send(200, {"status": "ok"})
            return
        if not self._authorised():
            return
        if path == "/v1/models":
            self._send(200, {"object": "list", "data": [
                {"id": self.policy.model, "object": "model", "created": 0, "owned_by": "agent-host"}]})
            return
        self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self._authorised():
            return
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/chat/completions":
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            self._error(400, f"invalid JSON body: {exc}")
            return
        if self.policy.delay_ms:
            time.sleep(self.policy.delay_ms / 1000)
        try:
            response = self.policy.complete(body)
        except ValueError as exc:
            self._error(400, str(exc))
            return
        except Exception as exc:  # a bug here must not look like a model's answer
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")
            return
        self._send(200, response)
