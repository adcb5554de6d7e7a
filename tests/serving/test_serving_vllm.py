"""Serving end to end on a real vLLM CPU server of the tiny random model (one per session).

Start, readiness, a schema-valid tool call with tool_choice="required", metrics delta, and an
`openai` build pointed at the same server. The `tiny_vllm` fixture's teardown checks that
stopping leaves no process of the server's group behind.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from openai import OpenAI

from agent_host.config.builds import Build
from agent_host.serving import metrics, procs
from agent_host.serving.server import start

from fixtures_tools import SCHEMAS, SWIPE, TAP, TASK_COMPLETE

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with the vllm extra")

TOOLS = [TAP, SWIPE, TASK_COMPLETE]
MESSAGES = [
    {"role": "system", "content": "You operate an Android phone. Call exactly one tool."},
    {"role": "user", "content": "Goal: turn on Wi-Fi.\nScreen:\n[0] Network & internet\n[1] Display\n[2] Battery"},
]


def _client(ep) -> OpenAI:
    return OpenAI(base_url=ep.base_url, api_key=ep.api_key, max_retries=0, timeout=120)


def test_ready_server_lists_its_build_and_reports_timings(tiny_vllm):
    ep = tiny_vllm.endpoint
    assert tiny_vllm.alive() and tiny_vllm.managed
    assert ep.model == "tiny-random" and ep.base_url.startswith("http://127.0.0.1:")
    assert [m.id for m in _client(ep).models.list().data] == ["tiny-random"]
    assert {"health", "models", "warmup", "start_to_ready"} <= set(tiny_vllm.timings)
    assert os.getpgid(tiny_vllm.pid) == tiny_vllm.pid          # its own process group
    log = "\n".join(tiny_vllm.last_log_lines(400))
    assert "ready after" in log and ep.api_key not in log.split("argv:")[1].splitlines()[0]


def test_api_key_is_required(tiny_vllm):
    import openai

    ep = tiny_vllm.endpoint
    with pytest.raises(openai.AuthenticationError):
        OpenAI(base_url=ep.base_url, api_key="wrong", max_retries=0).models.list()


def test_required_tool_call_is_schema_valid_and_metrics_count_it(tiny_vllm):
    ep = tiny_vllm.endpoint
    before = metrics.snapshot(ep)
    assert before is not None and metrics.PROMPT in before
    t0 = time.monotonic()
    r = _client(ep).chat.completions.create(
        model=ep.model, messages=MESSAGES, tools=TOOLS, tool_choice="required",
        parallel_tool_calls=False, max_tokens=64, temperature=0)
    latency = time.monotonic() - t0
    calls = r.choices[0].message.tool_calls
    assert calls and len(calls) == 1, r.choices[0].message
    name = calls[0].function.name
    assert name in SCHEMAS
    args = json.loads(calls[0].function.arguments)
    jsonschema.validate(args, SCHEMAS[name])
    print(f"required tool call: {name}({args}) in {latency:.2f} s")

    after = metrics.snapshot(ep)
    d = metrics.delta(before, after)
    assert d[metrics.PROMPT] == r.usage.prompt_tokens
    assert d[metrics.GENERATION] == r.usage.completion_tokens
    s = metrics.summarize(d)
    assert s["requests"] == 1 and s["mean_ttft_s"] > 0 and s["mean_e2e_s"] > 0
    assert 0 <= s["prefix_cache_hit_rate"] <= 1


def test_greedy_output_is_deterministic(tiny_vllm):
    ep = tiny_vllm.endpoint
    outs = [
        _client(ep).chat.completions.create(
            model=ep.model, messages=MESSAGES, tools=TOOLS,
            tool_choice={"type": "function", "function": {"name": "task_complete"}},
            max_tokens=48, temperature=0).choices[0].message.tool_calls[0].function.arguments
        for _ in range(2)
    ]
    assert outs[0] == outs[1]
    jsonschema.validate(json.loads(outs[0]), SCHEMAS["task_complete"])


def test_openai_build_checks_readiness_only(tiny_vllm, tmp_path, monkeypatch):
    ep = tiny_vllm.endpoint
    monkeypatch.setenv("AH_TINY_KEY", ep.api_key)
    build = Build(id="elsewhere", weight_path="fp32", server="openai", model=ep.model,
                  base_url=ep.base_url, api_key_env="AH_TINY_KEY")
    with start(build, log_dir=tmp_path) as remote:
        assert not remote.managed and remote.pid is None and remote.alive()
        assert remote.endpoint.model == "tiny-random" and remote.endpoint.metrics_url is None
        assert remote.endpoint.api_key == ep.api_key
    assert tiny_vllm.alive()                 # stopping an openai build touches nothing
    assert procs.group_members(tiny_vllm.pid)
