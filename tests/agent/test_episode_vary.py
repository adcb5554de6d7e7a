"""An episode's varied phone (issue 34), through the real adb stack on the virtual phone: one
seed makes one first screen, byte for byte; another seed another; the record says what was
varied; teardown puts the settings back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.records import EpisodeIdentity
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from fixtures_phone import set_clock_today

# one instance per app the suite drives, each starting on its own kind of screen
SAMPLE = ["wifi-on", "contact-number-lookup[0]", "alarm-set[0]", "files-count-pdf", "sms-unread-count[0]",
          "calendar-count-day", "markor-wifi-password", "calllog-last-caller[0]"]
DONE = [{"task_complete": {"reason": "looked"}}]


@pytest.fixture(scope="module")
def sample():
    by_id = {t.id: t for t in load_tasks(variants=("base",))}
    return [by_id[i] for i in SAMPLE]


def first_screen(make_phone, serve, profile, task, seed: int, out: Path, vary: str = "full") -> tuple[str, bytes, dict]:
    """Step 0's observation and screenshot of a fresh phone, its clock at 10:00 (the status bar
    shows the time), and the episode's record."""
    vphone = make_phone()
    set_clock_today(vphone, 10, 0)
    server = serve(DONE)
    rec = run_episode(task, Phone.connect(vphone.serial), server.endpoint("b"), out_dir=out, profile=profile,
                      identity=EpisodeIdentity.of("b", task, seed=seed, vary=vary))
    step0 = json.loads((out / "steps.jsonl").read_text().splitlines()[0])
    return step0["observation"], (out / "step-000.png").read_bytes(), rec.model_dump()


def test_one_seed_one_first_screen_and_another_seed_another(sample, virtual_phone_factory, policy_server,
                                                            virtual_profile, tmp_path):
    for task in sample:
        a = first_screen(virtual_phone_factory, policy_server, virtual_profile, task, 7, tmp_path / f"{task.id}-a")
        b = first_screen(virtual_phone_factory, policy_server, virtual_profile, task, 7, tmp_path / f"{task.id}-b")
        c = first_screen(virtual_phone_factory, policy_server, virtual_profile, task, 8, tmp_path / f"{task.id}-c")
        assert a[0] == b[0] and a[1] == b[1], f"{task.id}: the same seed gave another first screen"
        assert (a[0], a[1]) != (c[0], c[1]), f"{task.id}: two seeds gave the same first screen"
        assert a[2]["vary"] == "full" and a[2]["variation"]["kinds"], task.id
        assert a[2]["variation"] == b[2]["variation"] != c[2]["variation"]
        assert a[2]["outcome"] != "error", a[2]["error"]


def test_no_variation_leaves_the_first_screen_as_it_was(sample, virtual_phone_factory, policy_server,
                                                        virtual_profile, tmp_path):
    task = sample[0]
    a = first_screen(virtual_phone_factory, policy_server, virtual_profile, task, 7, tmp_path / "a", vary="none")
    b = first_screen(virtual_phone_factory, policy_server, virtual_profile, task, 8, tmp_path / "b", vary="none")
    assert a[0] == b[0] and a[1] == b[1]
    assert a[2]["vary"] == "none" and a[2]["variation"] is None


def test_teardown_puts_the_varied_settings_back(sample, virtual_phone_factory, policy_server, virtual_profile,
                                                tmp_path):
    vphone = virtual_phone_factory()
    phone = Phone.connect(vphone.serial)
    before = [phone.shell(c).output for c in ("settings get system font_scale", "wm density",
                                               "cmd uimode night", "settings get system time_12_24")]
    task = sample[1]
    rec = run_episode(task, phone, policy_server(DONE).endpoint("b"), out_dir=tmp_path / "e", profile=virtual_profile,
                      identity=EpisodeIdentity.of("b", task, seed=3, vary="full"), screenshots=False)
    assert rec.variation is not None and {"font_scale", "display_size", "dark", "clock_24h"} <= set(rec.variation["kinds"])
    after = [phone.shell(c).output for c in ("settings get system font_scale", "wm density",
                                              "cmd uimode night", "settings get system time_12_24")]
    assert after == before
    assert phone.shell("cmd vphone launcher-order").output.strip() == "0"     # the launcher's order back
