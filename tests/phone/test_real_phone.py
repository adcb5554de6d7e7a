"""Against a real Android phone: `AGENT_HOST_PHONE=SERIAL make test PYTEST_ARGS="-m phone"`.

Skipped unless AGENT_HOST_PHONE names a phone the adb server (ANDROID_ADB_SERVER_PORT, or
5037 outside the test session) lists as `device`. These tests change only state that the
tasks' own teardown restores (dark theme), so they are safe on a personal phone.
"""

from __future__ import annotations

import os

import pytest

SERIAL = os.environ.get("AGENT_HOST_PHONE")
pytestmark = [
    pytest.mark.phone,
    pytest.mark.skipif(not SERIAL, reason="no real phone: set AGENT_HOST_PHONE=SERIAL (see `agent-host devices`)"),
]


@pytest.fixture(scope="module")
def phone():
    from agent_host.phone.device import Phone

    return Phone.connect(SERIAL)


def test_observation_of_a_real_screen(phone):
    from agent_host.phone.parse import parse
    from agent_host.phone.render import render

    phone.home()
    screen = parse(phone.dump())
    text = render(screen)
    assert screen.elements, text
    assert text.startswith("app: ")


def test_state_commands_answer_in_the_formats_tasks_expect(phone):
    results = phone.shell_batch(["settings get secure ui_night_mode", "cmd uimode night",
                                 "settings get global airplane_mode_on"])
    assert results[0].output.strip() in ("0", "1", "2", "3", "null")
    assert results[1].output.startswith("Night mode: ")
    assert results[2].output.strip() in ("0", "1")


def test_dark_theme_task_solution_succeeds(phone, tmp_path):
    from agent_host.agent.episode import run_episode
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.server import PolicyServer
    from agent_host.config.phones import load_phone_profile
    from agent_host.config.tasks import load_tasks

    task = load_tasks(["dark-theme-on"], variants=("base",))[0]
    profile = load_phone_profile(os.environ.get("AGENT_HOST_PHONE_PROFILE", "pixel-android14"))
    with PolicyServer(PolicyScript.from_data(task.solution)) as server:
        rec = run_episode(task, phone, server.endpoint("solution"), out_dir=tmp_path, profile=profile)
    assert rec.outcome == "success", rec.error


def test_phone_check_reads_every_row_of_a_real_phone(phone):
    # What each row saw is worth printing on a real phone: `pytest -m phone -s`.
    from agent_host.config.requirements import REQUIREMENTS
    from agent_host.phone.requirements import check_rows

    rows = check_rows(phone)
    for r in rows:
        print(f"{r.name:<20}{'met' if r.met else 'NOT MET':<9}{r.seen}")
    assert [r.name for r in rows] == list(REQUIREMENTS) and all(r.seen for r in rows)
    assert next(r for r in rows if r.name == "u2_server").met
