"""Fake OpenAI servers that misbehave: one that trickles (headers, then one byte a second, for
ever) and answers everything else properly, so a run gets past its readiness checks and only
the agent's requests stall."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "m"


def _reply() -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class FakeServer:
    """`FakeServer(chat)`: `chat(handler, body)` answers POST /v1/chat/completions with tools;
    /v1/models and the warm-up (no tools) are answered properly."""

    def __init__(self, chat: Callable[[BaseHTTPRequestHandler, dict], None]):
        stopping = self.stopping = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _json(self, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if not body.get("tools"):
                    return self._json(_reply())
                try:
                    chat(self, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass
        Handler.stopping = stopping  # type: ignore[attr-defined]
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def trickle(handler: BaseHTTPRequestHandler, body: dict) -> None:
    """Headers at once, then one byte a second: every read makes progress, none finishes."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "100000000")
    handler.end_headers()
    handler.wfile.flush()
    while not handler.stopping.is_set():  # type: ignore[attr-defined]
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(1.0)


def answer(obj: Any) -> Callable[[BaseHTTPRequestHandler, dict], None]:
    """A chat handler answering 200 with `obj` (bytes as they are, anything else as JSON)."""
    def chat(handler: BaseHTTPRequestHandler, body: dict) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    return chat
