"""Every field of a model reply is capped, and the body too, decompressed; what was cut is said.

Before: only `content` was capped. A 5 MB tool-call id made a 12-step run folder 234 MB, a 5 MB
finish_reason 120 MB, 5,000 tool calls 5.5 MB a step, and a gzip body (1 GB of zeros, ~1 MB on
the wire) was inflated whole in memory (3 GB)."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_host.agent import model_client
from agent_host.agent.model_client import MAX_BODY_BYTES, REPLY_CAPS, ModelClient, ServerError
from agent_host.serving.endpoint import Endpoint

BIG = 5 * 1024 * 1024


def _call(i: int, call_id: str | None = None) -> dict:
    return {"id": call_id or f"call_{i}", "type": "function",
            "function": {"name": "wait", "arguments": '{"seconds": 1}'}}


def _completion(calls: list[dict], finish: str = "tool_calls") -> dict:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": None, "tool_calls": calls}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


class _Misbehaving:
    """An OpenAI-compatible server on 127.0.0.1 answering every request with one fixed body."""

    def __init__(self, body: bytes, gzipped: bool = False):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if gzipped:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.requests = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.endpoint = Endpoint(base_url=f"http://127.0.0.1:{self.httpd.server_address[1]}/v1",
                                 api_key="none", model="m")

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def make(payload, gzipped=False):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        servers.append(_Misbehaving(body, gzipped))
        return servers[-1].endpoint

    yield make
    for s in servers:
        s.close()


def _ask(endpoint):
    return ModelClient(endpoint, timeout=60).chat([{"role": "user", "content": "hi"}], [])


def _size(reply) -> int:
    return len(json.dumps({"m": reply.message, "f": reply.finish_reason, "c": reply.cut}))


def test_a_huge_tool_call_id_is_cut_and_said(serve):
    reply = _ask(serve(_completion([_call(0, "i" * BIG)])))
    assert reply.cut == {"tool_calls[0].id": BIG}
    assert len(reply.message["tool_calls"][0]["id"]) < REPLY_CAPS["id"] + 100
    assert _size(reply) < 10_000


def test_a_huge_finish_reason_is_cut_and_said(serve):
    reply = _ask(serve(_completion([_call(0)], finish="f" * BIG)))
    assert reply.cut == {"finish_reason": BIG}
    assert _size(reply) < 10_000


def test_thousands_of_tool_calls_are_cut_and_said(serve):
    reply = _ask(serve(_completion([_call(i) for i in range(5000)])))
    assert reply.cut == {"tool_calls": 5000}
    assert len(reply.message["tool_calls"]) == REPLY_CAPS["tool_calls"]
    assert _size(reply) < 10_000


def test_a_gzip_bomb_is_refused_before_it_is_inflated(serve, monkeypatch):
    seen = []
    real = model_client.read_bounded

    def watch(response):
        try:
            real(response)
        finally:
            seen.append(len(getattr(response, "_content", b"")))

    # the hook is bound when the client is made: watch it to see nothing was kept whole
    monkeypatch.setattr(model_client, "read_bounded", watch)
    bomb = gzip.compress(b"0" * (MAX_BODY_BYTES * 4), compresslevel=9)
    assert len(bomb) < MAX_BODY_BYTES // 50
    with pytest.raises(ServerError, match="byte limit"):
        _ask(serve(bomb, gzipped=True))
    assert seen and all(n == 0 for n in seen)   # refused mid-read: no inflated body kept


@pytest.mark.slow
@pytest.mark.parametrize("payload, field", [
    (_completion([_call(0, "i" * BIG)]), "tool_calls[0].id"),
    (_completion([_call(0)], finish="f" * BIG), "finish_reason"),
    (_completion([_call(i) for i in range(5000)]), "tool_calls"),
], ids=["id", "finish_reason", "5000-calls"])
def test_an_episode_against_a_misbehaving_server_keeps_a_small_record(serve, payload, field, virtual_phone,
                                                                      virtual_profile, tmp_path):
    from agent_host.agent.episode import run_episode
    from agent_host.config.tasks import load_tasks
    from agent_host.phone.device import Phone

    task = load_tasks(["wifi-on"], ["base"])[0].model_copy(update={"max_steps": 3})
    rec = run_episode(task, Phone.connect(virtual_phone.serial), serve(payload), out_dir=tmp_path,
                      profile=virtual_profile, screenshots=False)
    assert rec.steps >= 1, rec.error
    total = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert total < 1_000_000, total
    steps = [json.loads(line) for p in tmp_path.rglob("*.json*") for line in p.read_text().splitlines()
             if '"cut"' in line]
    assert steps and field in json.dumps(steps)
