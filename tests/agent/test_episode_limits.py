"""An episode's waits are bounded by limits the user sets, and a screenshot is optional:
through the real stack (virtual phone behind adb, a real HTTP policy server).

Before: a policy server that never answered held one step for 1202 s (a 600 s client
timeout, retried once); `type_text("Ada\\nLovelace")` made every screenshot raise in the
virtual phone's renderer, so the episode ended `error` on every attempt."""

from __future__ import annotations

import time

from agent_host.agent.episode import run_episode
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone, PhoneError


def _task(key: str):
    return load_tasks([key], ["base"])[0]


def _run(task, script, virtual_phone, policy_server, virtual_profile, out, server_kwargs=None, **kw):
    server = policy_server(script, **(server_kwargs or {}))
    phone = Phone.connect(virtual_phone.serial)
    return run_episode(task, phone, server.endpoint(), out_dir=out, profile=virtual_profile, **kw), phone


def test_a_newline_typed_by_the_model_is_an_action_not_an_error(virtual_phone, policy_server,
                                                                 virtual_profile, tmp_path):
    task = _task("contact-add")
    script = [dict(item) for item in task.solution]
    script[2] = {"type_text": {"text_contains": "First name", "text": "Ada\nLovelace", "submit": False}}
    rec, _ = _run(task, script, virtual_phone, policy_server, virtual_profile, tmp_path, screenshots=True)
    assert rec.outcome != "error", rec.error
    assert rec.steps == len(script)
    shots = sorted(p.name for p in tmp_path.glob("step-*.png"))
    assert len(shots) == len(script) + 1, shots          # every screen captured, the typed one too


def test_a_failing_screenshot_never_ends_the_episode(virtual_phone, policy_server, virtual_profile,
                                                     tmp_path, monkeypatch):
    def broken(self):
        raise PhoneError("screenshot: renderer failed")

    monkeypatch.setattr(Phone, "screenshot", broken)
    task = _task("wifi-on")
    rec, _ = _run(task, task.solution, virtual_phone, policy_server, virtual_profile, tmp_path,
                  screenshots=True)
    assert rec.outcome == "success", rec.error
    assert not list(tmp_path.glob("step-*.png"))


def test_a_hanging_server_is_bounded_by_the_request_timeout(virtual_phone, policy_server,
                                                            virtual_profile, tmp_path):
    task = _task("wifi-on")
    t0 = time.monotonic()
    rec, _ = _run(task, task.solution, virtual_phone, policy_server, virtual_profile, tmp_path,
                  server_kwargs={"delay_ms": 20_000}, screenshots=False, request_timeout=0.5)
    took = time.monotonic() - t0
    assert rec.outcome == "error"
    assert rec.error.startswith("limit: model request timed out after") and "--request-timeout" in rec.error
    assert took < 10, took                 # one request, not retried inside the episode


def test_the_episode_wall_clock_limit_fires_between_steps(virtual_phone, policy_server, virtual_profile,
                                                          tmp_path):
    task = _task("wifi-on")
    t0 = time.monotonic()
    rec, _ = _run(task, task.solution, virtual_phone, policy_server, virtual_profile, tmp_path,
                  server_kwargs={"delay_ms": 1500}, screenshots=False, request_timeout=30, episode_timeout=4.0)
    took = time.monotonic() - t0
    assert rec.outcome == "error"
    assert rec.error.startswith("limit: episode wall-clock limit of 4 s") and "--episode-timeout" in rec.error
    assert rec.steps < len(task.solution)   # the solution would have needed 5 x 1.5 s
    assert took < 4 + 3, took
