"""Step ordering: the judge runs beside the next model request, yet every step is judged on the
state right after its own action; on a still screen a step waits on two device round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.records import StepRecord
from agent_host.config.tasks import load_tasks
from agent_host.config.outcome import label
from agent_host.phone.device import Phone

# Wi-Fi on at step 4, off again at 5, on at 6; back at 7 keeps it on; complete at 8.
TOGGLES = [
    {"open_app": {"name": "settings"}},
    {"tap": {"text": "Network & internet"}},
    {"tap": {"text": "Internet"}},
    {"tap": {"text": "Wi-Fi"}},
    {"tap": {"text": "Wi-Fi"}},
    {"tap": {"text": "Wi-Fi"}},
    {"press_back": {}},
    {"task_complete": {"reason": "Wi-Fi is on"}},
]
# G(t) after each step's action, as a judge run right after that action sees it
EXPECTED_GOALS = [False, False, False, False, True, False, True, True, True]


def _steps(out: Path) -> list[StepRecord]:
    return [StepRecord.model_validate_json(line) for line in (out / "steps.jsonl").read_text().splitlines()]


def _run(phone_serial: str, policy_server, profile, out: Path, delay_ms: int):
    task = load_tasks(["wifi-on"], ["base"])[0]
    server = policy_server(TOGGLES, delay_ms=delay_ms)
    rec = run_episode(task, Phone.connect(phone_serial), server.endpoint(), out_dir=out,
                      profile=profile, screenshots=True)
    return rec, _steps(out)


def _check_labels(rec, steps):
    assert [s.goal for s in steps] == EXPECTED_GOALS
    expected = label(EXPECTED_GOALS, complete_step=8)
    assert (rec.outcome, rec.goal_first_step, rec.goal_lost_step, rec.goal_final, rec.complete_step) == \
        (expected.outcome, expected.goal_first_step, expected.goal_lost_step, expected.goal_final, 8)
    assert rec.steps == 8 and [s.step for s in steps] == list(range(9))


def test_constructed_trajectory_keeps_its_labels_with_the_judge_beside_the_model(
        virtual_phone, policy_server, virtual_profile, tmp_path):
    # a model slower than the judge: each verdict comes in while the next request is out
    rec, steps = _run(virtual_phone.serial, policy_server, virtual_profile, tmp_path, delay_ms=150)
    _check_labels(rec, steps)
    # the shell check's output is the one after the step's own action
    assert [s.check_detail["shell"]["settings get global wifi_on"]["out"] for s in steps[3:7]] == \
        ["0", "1", "0", "1"]


def test_a_still_screen_step_waits_on_two_round_trips(virtual_phone, policy_server, virtual_profile, tmp_path):
    _, steps = _run(virtual_phone.serial, policy_server, virtual_profile, tmp_path, delay_ms=0)
    taps = [s for s in steps if s.action is not None and s.action.name in ("tap", "press_back")]
    assert len(taps) == 6
    for s in taps:       # the input, then one settle dump; screenshot and judge went beside
        assert s.round_trips is not None and s.round_trips.critical == 2, s.round_trips
        assert s.round_trips.background == 2, s.round_trips
    final = steps[-1]
    assert final.action.name == "task_complete"
    assert final.round_trips.critical == 0 and final.round_trips.background == 2


@pytest.mark.slow
def test_labels_unchanged_under_real_phone_timings(real_latency_phone, policy_server, virtual_profile, tmp_path):
    profile = virtual_profile.model_copy(update={"settle_min_s": 0.3})
    rec, steps = _run(real_latency_phone.serial, policy_server, profile, tmp_path, delay_ms=300)
    _check_labels(rec, steps)
