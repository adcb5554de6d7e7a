"""What a broken server answers is the server's fault: a 200 whose body is not JSON, a JSON
list or `choices: [null]` ended episodes `harness: ...` (counted against nobody, but blamed on
agent-host); a server ignoring max_tokens with 20 MB replies grew one episode folder to 463 MB."""

from __future__ import annotations

import json

import pytest

from fixtures_faults import FakeServer, answer


def _episode(tmp_path, phone, chat, **kw):
    from agent_host.agent.episode import run_episode
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks
    from agent_host.phone.device import Phone
    from agent_host.serving.endpoint import Endpoint

    server = FakeServer(chat)
    try:
        task = load_tasks(["wifi-on"], variants=("base",))[0]
        return run_episode(task, Phone.connect(phone.serial), Endpoint(server.url, None, "m", "b"),
                           out_dir=tmp_path / "ep", profile=load_phone_profile("virtual"),
                           request_timeout=10, episode_timeout=30, screenshots=False, **kw)
    finally:
        server.close()


@pytest.mark.parametrize("body", [b"<html>not json</html>", [1, 2], {"choices": [None]}, {"choices": "x"}],
                         ids=["not-json", "list", "choices-null", "choices-str"])
def test_a_malformed_answer_is_the_servers_fault(tmp_path, virtual_phone, body):
    rec = _episode(tmp_path, virtual_phone, answer(body))
    assert rec.outcome == "error" and rec.error.startswith("server: "), rec.error


def test_a_reply_past_max_tokens_is_stored_capped_and_marked(tmp_path, virtual_phone):
    from agent_host.agent.model_client import CHARS_PER_TOKEN
    from agent_host.config.builds import Sampling

    huge = "x" * 5_000_000
    reply = {"id": "r", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                 "role": "assistant", "content": huge, "tool_calls": [{
                     "id": "c1", "type": "function",
                     "function": {"name": "wait", "arguments": json.dumps({"seconds": 1, "pad": huge})}}]}}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 64, "total_tokens": 65}}
    rec = _episode(tmp_path, virtual_phone, answer(reply), sampling=Sampling(max_tokens=64))
    assert rec.outcome != "error" or not rec.error.startswith("harness"), rec.error
    size = sum(f.stat().st_size for f in (tmp_path / "ep").iterdir())
    assert size < rec.steps * 10 * 64 * CHARS_PER_TOKEN + 200_000, size  # not 5 MB a step
    steps = (tmp_path / "ep" / "steps.jsonl").read_text()
    assert "[truncated by agent-host: " in steps


@pytest.mark.parametrize("body", [b"not json", [1], {"choices": [None]}], ids=["not-json", "list", "choices-null"])
def test_fidelity_on_a_malformed_answer_is_one_line_naming_the_build(body):
    from agent_host.errors import UserError
    from agent_host.serving.endpoint import Endpoint
    from agent_host.serving.fidelity import complete

    server = FakeServer(answer(body))
    try:
        with pytest.raises(UserError, match="build b: the server's answer is not a chat completion"):
            complete(Endpoint(server.url, None, "m", "b"), [{"role": "user", "content": "hi"}], max_tokens=4, seed=0,
                     tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    finally:
        server.close()


def test_fidelity_against_a_trickling_server_ends_at_its_request_timeout():
    import time

    from agent_host.errors import UserError
    from agent_host.serving.endpoint import Endpoint
    from agent_host.serving.fidelity import complete
    from fixtures_faults import trickle

    server = FakeServer(trickle)
    try:
        t0 = time.monotonic()
        with pytest.raises(UserError, match="no answer within"):
            complete(Endpoint(server.url, None, "m", "b"), [{"role": "user", "content": "hi"}], max_tokens=4, seed=0,
                     tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
                     timeout=2)
        assert time.monotonic() - t0 < 10
    finally:
        server.close()


@pytest.mark.parametrize("body", [b"<html>", [1, 2], {"choices": [None]}], ids=["not-json", "list", "choices-null"])
def test_a_warm_up_answered_with_something_else_is_not_ready(body):
    """Before: JSONDecodeError / AttributeError tracebacks from serving/ready.py."""
    from agent_host.serving.endpoint import Endpoint
    from agent_host.serving.ready import NotReady, warmup_completion

    server = FakeServer(answer({}), warmup=answer(body))
    try:
        with pytest.raises(NotReady, match="warm-up completion"):
            warmup_completion(Endpoint(server.url, None, "m", "b"), timeout=5)
    finally:
        server.close()


def test_tool_arguments_nested_10000_deep_are_the_models_malformed_call():
    """Before: `harness: RecursionError`, the episode `error`."""
    from agent_host.agent.tools import ToolError, parse_arguments

    with pytest.raises(ToolError, match="nested too deeply"):
        parse_arguments('{"a": ' + "[" * 10_000 + "]" * 10_000 + "}")


@pytest.mark.parametrize("given", ["new-out", "empty-out"])
def test_a_run_whose_server_never_gets_ready_leaves_nothing_behind(tmp_path, virtual_phone, given):
    """Before: the one-line error, and a run directory holding a manifest and an empty log that
    `report` and `--resume` took for a run. Now nothing is left (a directory the user made stays,
    empty)."""
    import subprocess
    import sys
    from pathlib import Path

    server = FakeServer(answer({}), warmup=answer(b"<html>"))
    run = tmp_path / "run"
    if given == "empty-out":
        run.mkdir()
    hosts = tmp_path / "h.yaml"
    hosts.write_text("id: h\ndescription: d\nhardware_class: x86-avx2\nbuilds:\n"
                     f"  - {{id: w, weight_path: remote, server: openai, base_url: {server.url}, model: m,"
                     f" startup_timeout_s: 5}}\n")
    try:
        out = subprocess.run([sys.executable, "-m", "agent_host", "run", "--builds", "w", "--host-profile",
                              str(hosts), "--tasks", "wifi-on", "--variants", "base", "--phones",
                              virtual_phone.serial, "--out", str(run), "--quiet", "--no-report"],
                             cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    finally:
        server.close()
    assert out.returncode != 0
    assert "nothing ran; no run directory kept" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    if given == "empty-out":
        assert run.is_dir() and not any(run.iterdir()), list(run.iterdir())
    else:
        assert not run.exists()
