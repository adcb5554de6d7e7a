"""The scripted policy: script parsing, playing against requests, the HTTP server."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import openai
import pytest

from agent_host.policy.script import SCROLLS, PolicyScript, parse_item, play, position
from agent_host.errors import ConfigError

OBS = """app: com.android.settings  screen: 1080x2400
[0] TextView "Network & internet" | "Mobile, Wi-Fi, hotspot" tap
[1] Switch "Wi-Fi" | "AndroidWifi" id=switch_widget checked=off tap
[2] EditText hint="First name" id=first_name focused tap type
[3] ImageView desc="Add alarm" tap
"""


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def _assistant(reply: dict) -> dict:
    return {k: v for k, v in reply.items() if k in ("role", "content", "tool_calls")}


def _args(reply: dict) -> tuple[str, dict]:
    call = reply["tool_calls"][0]["function"]
    return call["name"], json.loads(call["arguments"])


def test_parse_items():
    assert parse_item("press_back").kind == "press_back"
    it = parse_item({"tap": {"text": "Wi-Fi"}})
    assert it.selector == {"text": "Wi-Fi"} and it.args == {}
    it = parse_item({"type_text": {"text_contains": "First", "text": "Ann"}})
    assert it.selector == {"text_contains": "First"} and it.args == {"text": "Ann", "submit": False}
    assert parse_item({"swipe": {"direction": "up"}}).selector is None
    assert parse_item({"raw": {"name": "tap", "arguments": "{bad"}}).raw_arguments == "{bad"
    for bad in ({"tap": {}}, {"tap": {"text": "a", "desc": "b"}}, {"fly": {}}, "jump",
                {"swipe": {"direction": "sideways"}}, {"wait": {"seconds": -1}}, {"tap": 3},
                {"type_text": {"text": "only text"}}):
        with pytest.raises(ValueError):
            parse_item(bad)


def test_script_file_errors_name_line(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("- open_app: {name: settings}\n- tap: {}\n")
    with pytest.raises(ConfigError, match=r"s.yaml:2: \[1\]: tap: give exactly one"):
        PolicyScript.load(p)
    p.write_text("actions: []\nafter: dance\n")
    with pytest.raises(ConfigError, match=r"s.yaml:2: after"):
        PolicyScript.load(p)


def test_play_resolves_selectors_in_turn_order():
    script = PolicyScript.from_data([
        {"tap": {"text": "Network & internet"}},
        {"tap": {"resource_id": "android:id/switch_widget"}},
        {"type_text": {"text_contains": "First name", "text": "Ann", "submit": True}},
        {"tap": {"desc": "Add alarm"}},
        {"task_complete": {"reason": "done"}},
    ], source="t")
    msgs = [{"role": "system", "content": "sys"}, _user(OBS)]
    expected = [("tap", {"index": 0}), ("tap", {"index": 1}),
                ("type_text", {"index": 2, "text": "Ann", "submit": True}), ("tap", {"index": 3}),
                ("task_complete", {"reason": "done"})]
    for want in expected:
        reply = play(script, msgs)
        assert _args(reply) == want
        msgs += [_assistant(reply), {"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"],
                                     "content": "ok"}, _user(OBS)]
    # past the end: after=wait by default
    assert _args(play(script, msgs))[0] == "wait"


def test_after_option_and_say():
    script = PolicyScript.from_data({"actions": [{"say": "hello"}], "after": "task_complete"})
    r = play(script, [_user(OBS)])
    assert r["content"] == "hello" and "tool_calls" not in r
    r2 = play(script, [_user(OBS), _assistant(r), _user("no tool call; try again")])
    assert _args(r2)[0] == "task_complete"


SCROLLING = OBS + """[4] RecyclerView id=recycler_view scroll
[5] ScrollView id=main_content_scrollable_container scroll
"""


def test_a_selector_below_the_fold_scrolls_the_list_first_then_waits_then_gives_up():
    script = PolicyScript.from_data({"actions": [{"tap": {"text": "Display"}}, {"press_back": {}}],
                                     "retries": 1, "retry_wait": 0.25})
    msgs = [_user(SCROLLING)]
    for n in range(SCROLLS):
        r = play(script, msgs)
        name, args = _args(r)
        assert name == "swipe" and args["direction"] == "up" and args["index"] in (4, 5)
        msgs += [_assistant(r), {"role": "tool", "tool_call_id": r["tool_calls"][0]["id"], "content": "ok"}, _user(SCROLLING)]
        assert position(msgs) == (0, 0, n + 1)
    r = play(script, msgs)
    assert _args(r)[0] == "wait"
    msgs += [_assistant(r), _user(SCROLLING)]
    r = play(script, msgs)
    assert "tool_calls" not in r and "Display" in r["content"]
    # found once scrolled into view: tapped, and the next item follows
    shown = SCROLLING + '[6] TextView "Display" tap\n'
    r = play(script, msgs[:3] + [_user(shown)])
    assert _args(r) == ("tap", {"index": 6})


def test_unresolved_selector_retries_then_gives_up():
    script = PolicyScript.from_data({"actions": [{"tap": {"text": "Nowhere"}}, {"press_back": {}}],
                                     "retries": 2, "retry_wait": 0.25})
    msgs = [_user(OBS)]
    for _ in range(2):
        r = play(script, msgs)
        assert _args(r) == ("wait", {"seconds": 0.25})
        msgs += [_assistant(r), {"role": "tool", "tool_call_id": r["tool_calls"][0]["id"], "content": "ok"}, _user(OBS)]
    assert position(msgs) == (0, 2, 0)
    r = play(script, msgs)
    assert "tool_calls" not in r and "Nowhere" in r["content"]
    msgs += [_assistant(r), _user(OBS)]
    assert _args(play(script, msgs))[0] == "press_back"


def test_selector_resolves_on_a_later_screen():
    script = PolicyScript.from_data([{"tap": {"text": "Later"}}])
    msgs = [_user(OBS)]
    r = play(script, msgs)
    assert _args(r)[0] == "wait"
    later = OBS + '[4] Button "Later" tap\n'
    msgs += [_assistant(r), {"role": "tool", "tool_call_id": r["tool_calls"][0]["id"], "content": "ok"}, _user(later)]
    assert _args(play(script, msgs)) == ("tap", {"index": 4})


def test_http_server_with_openai_client(policy_server):
    server = policy_server([{"tap": {"text": "Wi-Fi"}}], api_key="sekret", model="scripted")
    client = openai.OpenAI(base_url=server.base_url, api_key="sekret")
    assert [m.id for m in client.models.list().data] == ["scripted"]
    resp = client.chat.completions.create(
        model="scripted", messages=[{"role": "user", "content": OBS}],
        tools=[{"type": "function", "function": {"name": "tap", "parameters": {"type": "object"}}}],
        tool_choice="required", parallel_tool_calls=False, seed=3)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "tap"
    assert json.loads(call.function.arguments) == {"index": 1}
    assert resp.usage.prompt_tokens > 0
    assert server.requests[0]["seed"] == 3
    bad = openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model="scripted", messages=[{"role": "user", "content": "x"}])


def test_cached_tokens_grow_with_an_append_only_conversation(policy_server):
    server = policy_server([{"wait": {"seconds": 0}}] * 3)
    client = openai.OpenAI(base_url=server.base_url, api_key="x")
    msgs = [{"role": "system", "content": "s" * 400}, _user(OBS)]
    r1 = client.chat.completions.create(model="policy", messages=msgs)
    msgs += [r1.choices[0].message.model_dump(exclude_none=True), _user(OBS)]
    r2 = client.chat.completions.create(model="policy", messages=msgs)
    assert r2.usage.prompt_tokens_details.cached_tokens > 100


def test_cli_serve_port_zero(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- press_home\n")
    proc = subprocess.Popen([sys.executable, "-m", "agent_host", "policy", "serve", "--script", str(script),
                             "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("policy server: http://127.0.0.1:")
        base = line.split()[2]
        r = httpx.post(f"{base}/chat/completions", json={"model": "policy", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "press_home"
        assert httpx.get(f"{base}/models").json()["data"][0]["id"] == "policy"
    finally:
        proc.terminate()
        proc.wait(10)


def test_script_waits_have_the_actions_bound(tmp_path):
    """A wait the script plays is a model call; past the `wait` action's bound (10 s) the agent
    rejected it and the step was wasted, so the script's options may not exceed it either."""
    for data in ([{"wait": {"seconds": 11}}], {"actions": [], "wait_seconds": 30}, {"actions": [], "retry_wait": 12}):
        with pytest.raises(ConfigError):
            PolicyScript.from_data(data, source="s")
    assert parse_item({"wait": {"seconds": 10}}).args == {"seconds": 10.0}
    assert PolicyScript.from_data({"actions": [], "wait_seconds": 10}, source="s").wait_seconds == 10.0


def test_stop_does_not_wait_out_a_long_poll():
    """stop() returned only when the serving loop next woke: up to 0.5 s, a quarter of a
    scripted episode on the virtual phone. Now it returns within the loop's short poll."""
    import time

    from agent_host.policy.server import PolicyServer
    took = []
    for _ in range(3):
        server = PolicyServer(PolicyScript.from_data([{"press_home": {}}])).start()
        t0 = time.monotonic()
        server.stop()
        took.append(time.monotonic() - t0)
    assert min(took) < 0.2, took


def test_answers_are_sent_without_waiting_for_a_delayed_ack(policy_server):
    """Headers and body are two writes: with Nagle on, the body waited for the client's delayed
    ACK, 40 ms on every answer. The server's side of the connection has TCP_NODELAY set."""
    import socket

    server = policy_server([{"press_home": {}}])
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    client.chat.completions.create(model="policy", messages=[{"role": "user", "content": "go"}])
    with server._lock:      # the keep-alive connection the answer went out on
        conns = list(server._conns)
    assert conns and all(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for c in conns)
