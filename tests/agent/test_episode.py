"""Episodes through the real stack: virtual phone (adb server, adbutils, uiautomator2), a real
HTTP policy server, the openai client. One test per outcome label, plus the loop's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.records import EpisodeRecord, StepRecord
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone

TO_WIFI = [
    {"open_app": {"name": "settings"}},
    {"tap": {"text": "Network & internet"}},
    {"tap": {"text": "Internet"}},
]


def _task(key: str, **update):
    variant = "verify" if key.endswith("@verify") else "base"
    task = load_tasks([key], [variant])[0]
    assert task.key == key
    return task.model_copy(update=update) if update else task


@pytest.fixture
def episode(virtual_phone, policy_server, virtual_profile, tmp_path):
    """episode(task_key_or_instance, script, **run_episode kwargs) -> (record, server, out_dir)."""
    counter = iter(range(1000))

    def run(task, script, *, screenshots=False, server_kwargs=None, **kw):
        if isinstance(task, str):
            task = _task(task)
        server = policy_server(script, **(server_kwargs or {}))
        phone = Phone.connect(virtual_phone.serial)
        out = tmp_path / f"ep{next(counter)}"
        rec = run_episode(task, phone, server.endpoint(), out_dir=out, profile=virtual_profile,
                          screenshots=screenshots, **kw)
        return rec, server, out

    return run


def _steps(out: Path) -> list[StepRecord]:
    return [StepRecord.model_validate_json(line) for line in (out / "steps.jsonl").read_text().splitlines()]


def _assert_append_only(server) -> None:
    reqs = [r["messages"] for r in server.requests]
    assert len(reqs) >= 2
    for a, b in zip(reqs, reqs[1:]):
        assert len(b) > len(a)
        assert b[:len(a)] == a, "a request rewrote earlier messages"


# -- each outcome label --------------------------------------------------------------------


def test_reference_solution_is_success_with_files(episode):
    task = _task("wifi-on")
    rec, server, out = episode(task, task.solution, screenshots=True, seed=7)
    assert rec.outcome == "success", rec
    assert rec.goal_initial is False and rec.goal_final is True
    assert rec.goal_first_step == 4 and rec.complete_step == 5 and rec.goal_lost_step is None
    assert rec.steps == 5 and rec.wasted_steps == 0 and rec.error is None
    assert rec.episode_id == "policy__wifi-on__base__r0" and rec.seed == 7
    # files: step 0 .. 5, screenshots step-000 .. step-005, episode.json == the record
    steps = _steps(out)
    assert [s.step for s in steps] == list(range(6))
    assert [s.goal for s in steps] == [False, False, False, False, True, True]
    # the goal's halves: the check from step 4; the scope (the settings) changed as asked from step 4
    assert [s.asked for s in steps] == [False, False, False, False, True, True]
    assert [s.clean for s in steps] == [False, False, False, False, True, True]
    start = json.loads((out / "start_state.json").read_text())
    assert start["scope"]["kinds"] == ["settings"]
    assert {"key": "global/wifi_on", "value": "off"} in start["state"]["settings"]   # read as the wish
    assert steps[4].action.name == "tap" and steps[4].action.point is not None
    assert steps[1].action.name == "open_app" and steps[5].action.name == "task_complete"
    for s in steps:
        assert s.screenshot == f"step-{s.step:03d}.png"
        assert (out / s.screenshot).read_bytes()[:4] == b"\x89PNG"
        assert s.observation.startswith("app: ")
    assert steps[2].package == "com.android.settings"
    assert steps[1].usage.prompt_tokens > 0 and steps[1].raw_output["tool_calls"]
    assert EpisodeRecord.model_validate_json((out / "episode.json").read_text()) == rec
    # the observation recorded is what the model saw; requests carry the build's options
    first = server.requests[0]
    assert steps[1].observation in first["messages"][1]["content"]
    assert first["tool_choice"] == "required" and first["parallel_tool_calls"] is False
    assert first["seed"] == 7 and {t["function"]["name"] for t in first["tools"]} >= {"tap", "task_complete"}
    _assert_append_only(server)
    assert rec.usage.cached_tokens and rec.usage.cached_tokens > 0


def test_on_then_off_then_complete_is_undone(episode):
    script = TO_WIFI + [{"tap": {"text": "Wi-Fi"}}, {"tap": {"text": "Wi-Fi"}},
                        {"task_complete": {"reason": "done"}}]
    rec, _, _ = episode("wifi-on", script)
    assert rec.outcome == "undone", rec
    assert (rec.goal_first_step, rec.goal_lost_step, rec.complete_step) == (4, 5, 6)
    assert rec.goal_final is False


def test_complete_at_once_is_premature(episode):
    rec, _, _ = episode("wifi-on", [{"task_complete": {"reason": "looks done"}}])
    assert rec.outcome == "premature" and rec.steps == 1 and rec.complete_step == 1
    assert rec.reason == "looks done"


def test_goal_then_only_wait_is_unrecognised(episode):
    script = {"actions": TO_WIFI + [{"tap": {"text": "Wi-Fi"}}], "after": "wait", "wait_seconds": 0}
    rec, _, _ = episode(_task("wifi-on", max_steps=6), script)
    assert rec.outcome == "unrecognised", rec
    assert rec.steps == 6 and rec.complete_step is None and rec.goal_first_step == 4 and rec.goal_final


def test_verify_variant_completed_at_once_is_success(episode):
    rec, _, _ = episode("wifi-on@verify", [{"task_complete": {"reason": "Wi-Fi is already on"}}])
    assert rec.variant == "verify" and rec.goal_initial is True
    assert rec.outcome == "success" and rec.complete_step == 1 and rec.goal_first_step == 1


def test_verify_variant_turned_off_is_undone(episode):
    script = TO_WIFI + [{"tap": {"text": "Wi-Fi"}}, {"task_complete": {"reason": "done"}}]
    rec, _, _ = episode("wifi-on@verify", script)
    assert rec.outcome == "undone" and rec.goal_lost_step == 4


def test_infeasible_task_claimed(episode):
    task = _task("fm-radio-on")
    assert task.infeasible
    rec, _, _ = episode(task, task.solution)
    assert rec.outcome == "infeasible_claimed" and rec.infeasible and rec.infeasible_step == 3
    assert rec.reason == "This phone has no FM radio setting"


def test_wandering_is_nav_fail(episode):
    script = {"actions": [{"open_app": {"name": "clock"}}, "press_back", {"open_app": {"name": "contacts"}},
                          {"swipe": {"direction": "up"}}, "press_home"],
              "after": "wait", "wait_seconds": 0}
    rec, _, out = episode(_task("wifi-on", max_steps=6), script)
    assert rec.outcome == "nav_fail" and rec.steps == 6 and rec.goal_first_step is None
    swipe = _steps(out)[4].action
    assert swipe.name == "swipe" and swipe.point[1] > swipe.to[1]


def test_phone_dropped_mid_episode_is_error(episode, virtual_phone):
    def drop(step: StepRecord) -> None:
        if step.step == 2:
            virtual_phone.set_faults("drop_after=0,drop_for=1")

    rec, _, out = episode("wifi-on", _task("wifi-on").solution, on_step=drop)
    assert rec.outcome == "error", rec
    assert rec.error.startswith("phone:")
    assert rec.goal_first_step is None and 2 <= rec.steps <= 3
    assert json.loads((out / "episode.json").read_text())["outcome"] == "error"


def test_server_gone_mid_episode_is_error(virtual_phone, policy_server, virtual_profile, tmp_path):
    task = _task("wifi-on")
    server = policy_server(task.solution)

    def stop(step: StepRecord) -> None:
        if step.step == 1:
            server.stop()

    rec = run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=tmp_path,
                      profile=virtual_profile, on_step=stop, screenshots=False)
    assert rec.outcome == "error" and rec.error.startswith("server:"), rec
    # step 1 is recorded once judged, beside step 2's model request, which may still get through
    assert rec.steps in (1, 2)


def test_setup_that_leaves_the_goal_true_is_error(episode, virtual_phone):
    Phone.connect(virtual_phone.serial).shell("svc wifi enable")
    rec, server, _ = episode(_task("wifi-on", setup=[]), [{"task_complete": {"reason": "x"}}])
    assert rec.outcome == "error" and rec.error.startswith("setup:")
    assert server.requests == []          # the model is never asked


def test_setup_whose_command_fails_is_error_and_never_the_models(episode, virtual_phone_factory):
    from agent_host.config.steps import ShellStep
    task = _task("wifi-on")
    broken = task.model_copy(update={"setup": [ShellStep(shell="content insert --uri content://nowhere "
                                                               "--bind x:s:1"), *task.setup]})
    rec, server, _ = episode(broken, [{"task_complete": {"reason": "x"}}])
    assert rec.outcome == "error" and rec.error.startswith("setup: 'content insert --uri content://nowhere")
    assert server.requests == []


def test_a_calendar_task_on_a_phone_without_a_calendar_is_error(policy_server, virtual_profile,
                                                                virtual_phone_factory, tmp_path):
    bare = virtual_phone_factory(calendar_account=False)
    task = _task("calendar-where")
    server = policy_server(task.solution)
    rec = run_episode(task, Phone.connect(bare.serial), server.endpoint(), out_dir=tmp_path, profile=virtual_profile)
    assert rec.outcome == "error" and "no writable calendar" in rec.error and server.requests == []


# -- the loop's rules ------------------------------------------------------------------------


def test_reply_without_tool_call_fed_back_once_then_wasted(episode):
    script = [{"say": "I think I should open Settings."}, {"say": "Really, Settings."},
              {"say": "Let me look."}, {"open_app": {"name": "settings"}},
              {"task_complete": {"reason": "x"}}]
    rec, server, out = episode("wifi-on", script)
    steps = _steps(out)
    # step 1: two replies without a tool call -> wasted
    assert steps[1].action is None and steps[1].retry_error == "the reply has no tool call"
    assert steps[1].raw_output["retried"][0]["content"] == "I think I should open Settings."
    # step 2: one bad reply fed back, then a valid call
    assert steps[2].retry_error and steps[2].action.name == "open_app"
    assert rec.wasted_steps == 1 and rec.steps == 3 and rec.outcome == "premature"
    reqs = server.requests
    assert len(reqs) == 5
    assert "not a valid tool call" in reqs[1]["messages"][-1]["content"]          # fed back once
    assert reqs[2]["messages"][-1]["content"].startswith("Your last reply was not a valid tool call")
    _assert_append_only(server)


def test_malformed_arguments_and_bad_index_are_fed_back(episode):
    script = [{"raw": {"name": "tap", "arguments": "{index: 3"}},
              {"open_app": {"name": "settings"}},
              {"tap": {"index": 999}},
              {"tap": {"text": "Network & internet"}},
              {"task_complete": {"reason": "x"}}]
    rec, server, out = episode("wifi-on", script)
    steps = _steps(out)
    assert "not valid JSON" in steps[1].retry_error and steps[1].action.name == "open_app"
    assert "no element with index 999" in steps[2].retry_error and steps[2].action.name == "tap"
    assert rec.wasted_steps == 0
    # the failed call was answered with a tool message carrying the error
    msgs = server.requests[1]["messages"]
    assert msgs[-1]["role"] == "tool" and "not valid JSON" in msgs[-1]["content"]
    _assert_append_only(server)


def test_type_text_is_literal_and_never_a_shell(episode, virtual_phone, monkeypatch):
    nasty_first, nasty_last = "; rm -rf /", "$(reboot) `id` && echo pwned"
    import adbutils

    # every adb service any layer opens (Phone, adbutils, uiautomator2): a shell reached
    # outside Phone.shell_batch would show here too
    shells: list[str] = []
    real = adbutils.AdbConnection.send_command

    def spy(self, cmd, *a, **kw):
        if cmd.startswith("shell"):
            shells.append(cmd)
        return real(self, cmd, *a, **kw)

    monkeypatch.setattr(adbutils.AdbConnection, "send_command", spy)
    task = _task("contact-add")
    script = [
        {"open_app": {"name": "contacts"}},
        {"tap": {"desc": "Create contact"}},
        {"type_text": {"text_contains": "First name", "text": nasty_first}},
        {"type_text": {"text_contains": "Last name", "text": nasty_last}},
        {"type_text": {"text_contains": "Phone", "text": "555-0142"}},
        {"tap": {"text": "Save"}},
        {"task_complete": {"reason": "saved"}},
    ]
    rec, _, out = episode(task, script)
    steps = _steps(out)
    assert [s.action.name for s in steps[1:]][:6] == ["open_app", "tap", "type_text", "type_text",
                                                      "type_text", "tap"]
    assert steps[3].action.error is None and steps[3].action.point is not None
    assert json.dumps(nasty_first)[1:-1] in steps[4].observation   # typed into the form literally
    assert json.dumps(nasty_last)[1:-1] in steps[5].observation
    rows = Phone.connect(virtual_phone.serial).shell(
        "content query --uri content://com.android.contacts/data/phones --projection display_name:number").output
    assert f"display_name={nasty_first} {nasty_last}, number=555-0142" in rows
    assert any("settings" in c or "content query" in c for c in shells), shells   # the spy saw the judge
    assert not any("rm -rf" in c or "reboot" in c or "pwned" in c for c in shells)
    assert rec.outcome == "premature"   # the name is not Ada Lovelace


def test_uiautomator_dying_mid_episode_is_survived(episode, virtual_phone):
    """uiautomator2 restarts its server after the phone's uiautomator dies: not an error."""
    task = _task("wifi-on")

    killed = []

    def kill(step: StepRecord) -> None:
        if step.step == 2:
            killed.append(virtual_phone.kill_u2())

    rec, _, _ = episode(task, task.solution, on_step=kill)
    assert killed == [True]            # it was running, and died mid-episode
    assert rec.outcome == "success", rec


# -- the answer action (question tasks) ------------------------------------------------------


def test_answer_is_recorded_and_judged(episode):
    """`answer(text)` does not end the episode; the goal holds from the step the answer is right,
    and a later wrong answer replaces it."""
    from agent_host.config.scope import Change
    from agent_host.config.tasks import _CHECK

    # a question: it asks for no change (wifi-on's own change would keep the goal false)
    task = _task("wifi-on", check=_CHECK.validate_python({"answer": {"expected": "AndroidWifi"}}), change=Change())
    rec, server, out = episode(task, [{"answer": {"text": "Android Phone"}}, {"answer": {"text": "Android-Wifi!"}},
                                      {"answer": {"text": "no idea"}}, {"answer": {"text": "androidwifi"}},
                                      {"task_complete": {"reason": "answered"}}])
    steps = _steps(out)
    assert [s.goal for s in steps] == [False, False, True, False, True, True]
    assert steps[2].action.name == "answer" and steps[2].check_detail["answer"] == "Android-Wifi!"
    assert rec.outcome == "success" and rec.answer == "androidwifi" and rec.complete_step == 5
    tool_results = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results[0] == 'ok: answer recorded: "Android Phone"'


def test_identity_from_the_plan_is_recorded_unchanged(episode):
    """The plan's identity goes into episode.json as given (it was overwritten after the episode
    by the run, with ids of its own)."""
    from agent_host.config.records import EpisodeIdentity

    ident = EpisodeIdentity("b1__wifi-on__base__r3", "b1", repeat=3, seed=99, attempt=2, run_id="run-x")
    rec, server, out = episode("wifi-on", [{"task_complete": {"reason": "x"}}], identity=ident)
    on_disk = EpisodeRecord.model_validate_json((out / "episode.json").read_text())
    assert on_disk == rec
    assert (rec.episode_id, rec.build, rec.repeat, rec.seed, rec.attempt, rec.run_id) == \
        ("b1__wifi-on__base__r3", "b1", 3, 99, 2, "run-x")
    assert all(r["seed"] == 99 for r in server.requests)
