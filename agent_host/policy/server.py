"""A policy behind a real OpenAI-compatible HTTP server (`agent-host policy serve`).

`PolicyServer(policy)` answers /v1/chat/completions with `policy.answer(messages, body, task, values)` (a
policy/script.py PolicyScript, or a policy/suite.py SuitePolicy; `task` is the request's
TASK_HEADER, the episode's task instance key, or None; `values` its VALUES_HEADER, the
`vary.values` overlay its phone carries, or 0); usage counts are estimated
from the text, and `cached_tokens` from the longest prefix shared with a recent request, so
prefix-cache accounting can be exercised without a model.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from agent_host.serving.endpoint import (TASK_HEADER, VALUES_HEADER, Endpoint, task_from_header,
                                        values_from_header)


# Any: OpenAI chat messages, free-form JSON
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


POLL_S = 0.02   # how often the serving loop looks for a stop request (its idle cost: 50 wakeups/s)


class Policy(Protocol):
    """What a PolicyServer serves: the assistant message for a request's messages and body
    (OpenAI chat JSON, whose shape the API fixes), `task` the request's TASK_HEADER."""

    # Any: OpenAI chat JSON (messages, body, the reply), its shape fixed by the API
    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any],
               task: str | None = None, values: int = 0) -> dict[str, Any]: ...


class PolicyServer:
    """A policy on a real HTTP port. `requests` keeps every chat request body.

    `script` is a Policy: any object with `answer(messages, body, task) -> assistant message`
    (a PolicyScript, or policy/suite.py SuitePolicy, which picks each task's solution by its
    instance key, else by its goal)."""

    def __init__(self, script: Policy, *, host: str = "127.0.0.1", port: int = 0,
                 api_key: str | None = None, model: str = "policy", delay_ms: int = 0,
                 log_path: Path | str | None = None) -> None:
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
        self._conns: set[socket.socket] = set()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def endpoint(self, build_id: str = "policy") -> Endpoint:
        return Endpoint(self.base_url, self.api_key or "none", self.model, build_id, None)

    def start(self) -> PolicyServer:
        server = self

        class Handler(_Handler):
            policy = server

        self._httpd = ThreadingHTTPServer((self.host, self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        httpd = self._httpd
        # stop() waits for the serving loop to notice: at the default 0.5 s poll that was 0.25 s
        # on average per stop, a third of a scripted episode's time on the virtual phone
        self._thread = threading.Thread(target=lambda: httpd.serve_forever(poll_interval=POLL_S),
                                        name="policy-server", daemon=True)
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

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering --

    # Any: an OpenAI chat request and completion, free-form JSON
    def complete(self, body: dict[str, Any], task: str | None = None, values: int = 0) -> dict[str, Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages: a non-empty list is required")
        if body.get("stream"):
            raise ValueError("stream: not supported by the policy server")
        message = self.script.answer(messages, body, task, values)
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


MAX_BODY_BYTES = 64 * 1024 * 1024  # a request body larger than this is refused (413), never read


def _content_length(header: str | None) -> int | tuple[int, str]:
    """The body's length, or the (code, message) to refuse it with: a bad header must be answered, not a traceback."""
    text = (header or "0").strip()
    if not text.isascii() or not text.isdigit():
        return 400, f"invalid Content-Length {text[:40]!r}: not a non-negative integer"
    if len(text) > 12 or int(text) > MAX_BODY_BYTES:
        return 413, f"Content-Length {text[:40]} is over the {MAX_BODY_BYTES} byte limit"
    return int(text)


class _Handler(BaseHTTPRequestHandler):
    policy: PolicyServer
    protocol_version = "HTTP/1.1"
    # headers and body go out as two writes; with Nagle on, the body waited for the client's
    # delayed ACK of the headers: 40 ms on every answer, against ~2 ms of work
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (quiet by default)
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

    # Any: any JSON payload the handler answers with
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
        length = _content_length(self.headers.get("Content-Length"))
        if isinstance(length, tuple):
            self.close_connection = True  # the body's end is unknown: the connection cannot be reused
            self._error(*length)
            return
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
            response = self.policy.complete(body, task_from_header(self.headers.get(TASK_HEADER)),
                                            values_from_header(self.headers.get(VALUES_HEADER)))
        except ValueError as exc:
            self._error(400, str(exc))
            return
        except Exception as exc:  # a bug here must not look like a model's answer
            self._error(500, f"{type(exc).__name__}: {exc}", "server_error")
            return
        self._send(200, response)
