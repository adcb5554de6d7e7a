"""Harness budgets end an episode as `exhausted`, never `nav_fail` (real virtual phone, real
HTTP server that behaves as vLLM does when the context window or the reply cap runs out)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.serving.endpoint import Endpoint

CONTEXT_ERROR = {"object": "error", "type": "BadRequestError", "code": 400,
                 "message": "This model's maximum context length is 2048 tokens. However, you requested "
                            "2300 tokens (2044 in the messages, 256 in the completion)."}


def _reply(tool_call: dict | None, finish: str, completion_tokens: int = 5) -> dict:
    msg: dict = {"role": "assistant", "content": None if tool_call else "I think I should first"}
    if tool_call:
        msg["tool_calls"] = [{"id": "call_1", "type": "function", "function": tool_call}]
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1900, "completion_tokens": completion_tokens, "total_tokens": 1905}}


class _Server:
    """answers(i) -> (status, body) for the i-th chat request."""

    def __init__(self, answers):
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(n)
                status, body = answers(outer.count)
                outer.count += 1
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.count = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def endpoint(self) -> Endpoint:
        return Endpoint(f"http://127.0.0.1:{self.httpd.server_port}/v1", "none", "m", "budget", None)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake_server():
    made = []

    def make(answers):
        s = _Server(answers)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


def _run(server, virtual_phone, virtual_profile, tmp_path):
    task = load_tasks(["wifi-on"], ["base"])[0].model_copy(update={"max_steps": 5})
    return run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=tmp_path,
                       profile=virtual_profile, screenshots=False, build_id="budget")


def test_context_window_exhausted_is_its_own_ending(fake_server, virtual_phone, virtual_profile, tmp_path):
    wait = {"name": "wait", "arguments": "{}"}
    server = fake_server(lambda i: (200, _reply(wait, "tool_calls")) if i == 0 else (400, CONTEXT_ERROR))
    rec = _run(server, virtual_phone, virtual_profile, tmp_path)
    assert rec.outcome == "exhausted", rec            # was nav_fail
    assert rec.exhausted is not None and rec.exhausted.kind == "context"
    assert (rec.exhausted.step, rec.exhausted.tokens, rec.exhausted.limit) == (2, 1905, 2048)
    assert rec.steps == 1 and rec.error is None


def test_reply_token_cap_on_every_try_is_exhausted(fake_server, virtual_phone, virtual_profile, tmp_path):
    server = fake_server(lambda i: (200, _reply(None, "length", completion_tokens=256)))
    rec = _run(server, virtual_phone, virtual_profile, tmp_path)
    assert rec.outcome == "exhausted", rec
    assert rec.exhausted.kind == "reply_tokens" and rec.exhausted.step == 1
    assert rec.exhausted.tokens == 512 and rec.exhausted.limit == 256    # two tries of 256
