"""The llama.cpp bar's tool calls. llama-server (11434) builds its `tool_choice: required`
grammar as "any text, then a call", and SmolLM2 filled the text to max_tokens: no call was ever
parsed, so the bar could not run one episode. Its kind now asks the call as one JSON object
(response_format json_schema over the tools) and the client reads it from the content."""

from __future__ import annotations

import json
import shutil

import pytest

from fixtures_faults import FakeServer

TOOLS = [{"type": "function", "function": {"name": "tap", "parameters": {
             "type": "object", "properties": {"index": {"type": "integer"}}, "required": ["index"]}}},
         {"type": "function", "function": {"name": "task_complete", "parameters": {
             "type": "object", "properties": {"reason": {"type": "string"}}}}}]


def _content_reply(content: str):
    seen: list[dict] = []

    def chat(handler, body):
        seen.append(body)
        data = json.dumps({"id": "r", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": content}}],
                           "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}}).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    return chat, seen


def test_the_llama_cpp_kind_asks_calls_as_json():
    from agent_host.config.builds import SERVER_KINDS
    from agent_host.serving.kinds import llama_cpp
    from agent_host.config.hosts import embedded_build

    assert SERVER_KINDS["llama.cpp"].calls_as_json and not SERVER_KINDS["vllm"].calls_as_json
    build = embedded_build("embedded-q4-llama.cpp")
    if llama_cpp.llama_server() is None and not shutil.which("llama-server"):
        pytest.skip("llama-server is not built (make bar): its argv cannot be planned")
    assert llama_cpp.plan(build, port=1, api_key="k", seed=0).endpoint.calls_as_json


@pytest.mark.parametrize("calls_as_json", [True, False])
def test_a_json_content_reply_is_a_tool_call_only_where_asked_so(calls_as_json):
    from agent_host.agent.model_client import ModelClient
    from agent_host.serving.endpoint import Endpoint

    chat, seen = _content_reply('{"name": "tap", "arguments": {"index": 4}}')
    server = FakeServer(chat)
    try:
        client = ModelClient(Endpoint(server.url, "k", "m", "b", calls_as_json=calls_as_json))
        reply = client.chat([{"role": "user", "content": "go"}], TOOLS)
    finally:
        server.close()
    sent = seen[-1]
    if not calls_as_json:
        assert "response_format" not in sent and "tool_calls" not in reply.message
        return
    schema = sent["response_format"]["json_schema"]["schema"]
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["tap", "task_complete"]
    assert schema["anyOf"][0]["properties"]["arguments"] == TOOLS[0]["function"]["parameters"]
    assert sent["tool_choice"] == "required"
    [call] = reply.message["tool_calls"]
    assert call["function"]["name"] == "tap" and json.loads(call["function"]["arguments"]) == {"index": 4}
    assert reply.message["content"] is None


@pytest.mark.parametrize("content", ["not json", "[1]", '{"name": 3, "arguments": {}}', '{"name": "tap"}', None])
def test_content_that_is_no_call_stays_no_call(content):
    from agent_host.config.requests import call_from_json

    assert call_from_json(content) == []


@pytest.mark.slow
@pytest.mark.skipif(not __import__("agent_host.serving.kinds.llama_cpp", fromlist=["x"]).llama_server(),
                    reason="llama-server is not built (make bar, about 10-60 min once)")
def test_the_real_bar_drives_an_episode_with_tool_calls(tmp_path, virtual_phone):
    """The shipped GGUF on the real llama-server through the real step loop: every step a
    parsed call (before: 'the reply has no tool call' at step 1, the text run to max_tokens)."""
    from agent_host.agent.episode import run_episode
    from agent_host.config.hosts import embedded_build
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.phone.device import Phone
    from agent_host.serving.server import start

    build = embedded_build("embedded-q4-llama.cpp")
    task = load_tasks(["wifi-on"], variants=("base",))[0].model_copy(update={"max_steps": 3})
    with start(build, log_dir=tmp_path / "servers", seed=0, startup_timeout=300) as server:
        rec = run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint, out_dir=tmp_path / "ep",
                          profile=load_phone_profile("virtual"), sampling=build.sampling,
                          request_timeout=120, episode_timeout=300, screenshots=False)
    assert rec.outcome != "error", rec.error
    steps = [json.loads(x) for x in (tmp_path / "ep" / "steps.jsonl").read_text().splitlines()]
    acted = [s for s in steps if s["step"] > 0]     # step 0 is the first observation
    assert acted and all((s["action"] or {}).get("name") for s in acted), acted[0]["raw_output"]
