"""requests.json: every request an episode sent can be rebuilt byte for byte from it
(the final messages, each request's end index, tools, options) and hashes as sent."""

from __future__ import annotations

import json

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.requests import REQUESTS, body_sha256, load_request_log
from agent_host.config.tasks import load_tasks
from agent_host.errors import UserError
from agent_host.phone.device import Phone

SCRIPT = [
    {"open_app": {"name": "settings"}},
    {"tap": {"index": 999}},                      # not on screen: fed back, asked again
    {"tap": {"text": "Network & internet"}},
    {"tap": {"text": "Internet"}},
    {"tap": {"resource_id": "android:id/switch_widget"}},
    {"task_complete": {"reason": "Wi-Fi is on"}},
]


def _run(virtual_phone, policy_server, virtual_profile, out):
    task = load_tasks(["wifi-on"], ["base"])[0]
    server = policy_server(SCRIPT)
    rec = run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=out,
                      profile=virtual_profile, screenshots=False, seed=7)
    return rec, server


def test_every_request_rebuilds_to_the_body_the_server_received(virtual_phone, policy_server,
                                                                 virtual_profile, tmp_path):
    rec, server = _run(virtual_phone, policy_server, virtual_profile, tmp_path / "ep")
    assert rec.outcome == "success", rec.error
    log = load_request_log(tmp_path / "ep")
    assert len(log.requests) == len(server.requests) == 6
    assert [(r.step, r.attempt) for r in log.requests] == [(1, 0), (2, 0), (2, 1), (3, 0), (4, 0), (5, 0)]
    for i, received in enumerate(server.requests):
        assert log.body(i) == received                       # the same JSON, key for key
        assert body_sha256(received) == log.requests[i].sha256
        assert log.reply(i)["role"] == "assistant"
    assert log.reply(5)["tool_calls"][0]["function"]["name"] == "task_complete"
    assert log.headers == {"X-Agent-Host-Task": "wifi-on"}


def test_a_changed_byte_is_caught_and_an_old_episode_refused(virtual_phone, policy_server,
                                                             virtual_profile, tmp_path):
    out = tmp_path / "ep"
    _run(virtual_phone, policy_server, virtual_profile, out)
    data = json.loads((out / REQUESTS).read_text())
    data["messages"][1]["content"] += " "
    (out / REQUESTS).write_text(json.dumps(data))
    with pytest.raises(UserError, match=r"requests.json: request 0 does not rebuild"):
        load_request_log(out)
    (out / REQUESTS).unlink()
    with pytest.raises(UserError, match=r"requests.json: missing: this episode was recorded before"):
        load_request_log(out)
