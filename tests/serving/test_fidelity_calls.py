"""Fidelity over what an agent answers: tool calls (name + canonical JSON arguments) and
content, over real HTTP servers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_host.config.builds import Build
from agent_host.serving import fidelity
from agent_host.serving.fidelity import Answer, canonical_arguments, compare


def test_canonical_arguments():
    assert canonical_arguments('{"b": 2, "a": 1}') == canonical_arguments({"a": 1, "b": 2}) == '{"a":1,"b":2}'
    assert canonical_arguments('{"text": "Café"}') == '{"text":"Café"}'
    assert canonical_arguments("{not json") == "{not json"
    assert canonical_arguments("") == ""


def test_answer_from_message_and_serialized():
    msg = {"content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "tap", "arguments": '{"index": 3}'}},
        {"id": "y", "type": "function", "function": {"name": "press_back", "arguments": "{}"}}]}
    a = Answer.from_message(msg)
    assert a == Answer("", (("tap", '{"index":3}'), ("press_back", "{}")))
    assert a.serialized() == 'tap {"index":3}\npress_back {}'
    assert Answer("Going back.", (("press_back", "{}"),)).serialized() == "Going back.\npress_back {}"


def test_compare_tool_calls_not_content_alone():
    """Two answers with the same (empty) content but different calls are not a match; the
    same calls with different content match on calls only; call order matters."""
    ids = ["a", "b", "c", "d"]
    ref = [Answer("", (("open_app", '{"name":"settings"}'),)), Answer("ok", (("tap", '{"index":1}'),)),
           Answer("", (("tap", '{"index":1}'), ("press_back", "{}"))), Answer("", (("wait", '{"seconds":1}'),))]
    got = [Answer("", (("press_back", "{}"),)), Answer("fine", (("tap", '{"index":1}'),)),
           Answer("", (("press_back", "{}"), ("tap", '{"index":1}'))), Answer("", (("wait", '{"seconds":1}'),))]
    r = compare("b", "w", ids, ref, got)
    assert [x.exact for x in r.results] == [False, False, False, True]
    assert [x.calls_match for x in r.results] == [False, True, False, True]
    assert [x.content_match for x in r.results] == [True, False, True, True]
    assert (r.exact, r.calls_exact) == (1, 2)
    assert r.results[0].divergence == 0 and r.results[0].answer == "press_back {}"
    assert r.results[0].reference == 'open_app {"name":"settings"}'


def _policy(tmp_path, bid: str, action) -> Build:
    script = tmp_path / f"{bid}.yaml"
    script.write_text(json.dumps({"actions": [action]}))
    return Build(id=bid, weight_path="w-" + bid, server="policy", script=str(script))


def test_two_scripted_endpoints_differ_in_tool_calls(tmp_path, monkeypatch):
    """The issue's case: one server always answers open_app(settings), the other press_back.
    Both have empty content; the old probe (content only) scored them 12/12 exact."""
    from agent_host.cli.fidelity import agent_tools
    from agent_host.serving import procs

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))
    ref = _policy(tmp_path, "settings", {"open_app": {"name": "settings"}})
    same = _policy(tmp_path, "settings2", {"open_app": {"name": "settings"}})
    back = _policy(tmp_path, "back", "press_back")
    rep = fidelity.run_fidelity([same, back], ref, max_tokens=16, log_dir=tmp_path / "logs",
                                tools=agent_tools(), tool_choice="required", startup_timeout=60)
    s, b = rep.builds
    assert (s.exact, s.calls_exact, s.total) == (12, 12, 12)
    assert (b.exact, b.calls_exact, b.total) == (0, 0, 12)
    assert b.median_divergence == 0
    assert b.results[0].answer == "press_back {}"
    assert b.results[0].reference == 'open_app {"name":"settings"}'
    assert rep.reference_deterministic and rep.tools
    assert not list(procs.pidfile_dir().glob("*.json"))


class _Flaky(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint whose every answer taps another index: serving that
    is not deterministic."""
    n = 0

    def log_message(self, *a):
        pass

    def _send(self, payload):
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._send({"object": "list", "data": [{"id": "flaky", "object": "model"}]})

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).n += 1
        call = {"id": "c", "type": "function", "function": {"name": "tap", "arguments": json.dumps(
            {"index": type(self).n})}}
        self._send({"id": "x", "object": "chat.completion", "model": "flaky", "choices": [
            {"index": 0, "finish_reason": "tool_calls",
             "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


@pytest.fixture
def flaky_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_reference_that_disagrees_with_itself_is_reported(tmp_path, flaky_server, capsys):
    from agent_host.cli.fidelity import print_report

    ref = Build(id="flaky", weight_path="x", server="openai", base_url=flaky_server, model="flaky")
    rep = fidelity.run_fidelity([], ref, max_tokens=8, log_dir=tmp_path, startup_timeout=30,
                                tools=[{"type": "function", "function": {"name": "tap", "parameters": {}}}],
                                tool_choice="required")
    assert not rep.reference_deterministic
    assert rep.reference_unstable == rep.prompts          # every second ask differs
    assert rep.to_json()["reference_deterministic"] is False
    print_report(rep)
    assert "the reference flaky is not deterministic" in capsys.readouterr().out


def test_fidelity_cli_shows_both_answers(tmp_path, monkeypatch, capsys):
    """The CLI end to end on two policy builds in a host profile file: the table says 0/12
    and every prompt shows the reference's and the build's answer."""
    import yaml

    from agent_host.cli import main

    monkeypatch.setenv("AGENT_HOST_CACHE", str(tmp_path / "cache"))
    builds = [_policy(tmp_path, "settings", {"open_app": {"name": "settings"}}), _policy(tmp_path, "back", "press_back")]
    prof = {"id": "t", "description": "test", "hardware_class": "x86-avx2",
            "builds": [b.model_dump(mode="json", exclude_defaults=True) for b in builds]}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(prof))
    out = tmp_path / "out"
    rc = main(["fidelity", "--builds", "back", "--reference", "settings", "--host-profile", str(path),
               "--max-tokens", "8", "--out", str(out), "--startup-timeout", "60"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "0/12" in text and "with the agent's tools" in text
    assert text.count('open_app {"name":"settings"}') >= 12 and text.count("press_back {}") >= 12
    data = json.loads((out / "fidelity.json").read_text())
    assert data["builds"][0]["exact"] == 0 and data["tools"] is True
