"""`requires:` in task files: known names only, declared wherever a task needs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_host.config.requirements import TASK_REQUIREMENTS
from agent_host.config.tasks import collect, load_task_file
from agent_host.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
BASE = """\
id: t
goal: g
app: calendar
max_steps: 3
verify: false
check: {setting: {namespace: global, key: k, equals: "1"}}
"""


def _load(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return load_task_file(p)


def test_an_unknown_requirement_is_named_with_its_line(tmp_path):
    with pytest.raises(ConfigError, match=r"t\.yaml:7: requires\[0\]: .*'calendar_account'"):
        _load(tmp_path, BASE + "requires: [calender_account]\n")


def test_a_task_naming_the_phones_calendar_must_require_one(tmp_path):
    steps = "setup:\n  - shell: content insert --bind calendar_id:i:{phone.calendar_id}\n"
    with pytest.raises(ConfigError, match="add calendar_account to requires"):
        _load(tmp_path, BASE + steps)
    (task,) = _load(tmp_path, BASE + "requires: [calendar_account]\n" + steps)
    assert task.requires == ["calendar_account"]


def test_an_unknown_phone_placeholder_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown placeholder \{phone.zone\}"):
        _load(tmp_path, BASE + "setup:\n  - shell: echo {phone.zone}\n")


def test_a_parameter_inside_a_phone_placeholder_is_checked_as_each_instance_has_it(tmp_path):
    """calendar-alarm-before's flight time is a parameter: {phone.time:2026-12-20T{dep}} was
    refused as an unknown placeholder, though every instance has a known one."""
    steps = "setup:\n  - shell: echo {phone.time:2026-12-20T{dep}}\n"
    (task,) = _load(tmp_path, BASE + "params: [{dep: '08:00'}]\n" + steps)
    assert task.params == [{"dep": "08:00"}]
    with pytest.raises(ConfigError, match=r"unknown placeholder \{phone.time:2026-12-20Tsoon\}"):
        _load(tmp_path, BASE + "params: [{dep: '08:00'}, {dep: soon}]\n" + steps)


def _text(task) -> str:
    return json.dumps(task.model_dump(mode="json", exclude={"notes", "goal"}))


def test_every_task_that_needs_a_sim_a_calendar_usb_or_no_contact_sync_declares_it():
    """What the suite's files show they need: an outgoing text or call checked, a calendar
    written, Wi-Fi turned off (in a step, or as the goal) or the radios checked (a near miss
    turns Wi-Fi or airplane mode the wrong way), contacts seeded by fixed raw contact id."""
    report = collect([ROOT / "tasks"])
    assert not report.errors
    wrong = []
    for task, path, _ in report.tasks:
        text, check = _text(task), json.dumps(task.check.model_dump(mode="json") if task.check else None)
        need = set()
        if "content://sms" in check and re.search(r"type=2|sent|outbox", check):
            need.add("sim_sms")
        if "call_log" in check and "type=2" in check:
            need.add("sim_call")
        if "{phone.calendar_id}" in text:
            need.add("calendar_account")
        if re.search(r"wifi (disable|set-wifi-enabled disabled)|wifi_on\W+equals\W+0|airplane_mode_on\W+equals\W+1",
                     text) or re.search(r'"key": "(wifi_on|airplane_mode_on)"', check):
            need.add("usb_adb")
        if "raw_contact_id:i:" in text:
            need.add("no_contact_sync")
        if need - set(task.requires):
            wrong.append(f"{path.name}: needs {sorted(need - set(task.requires))}")
    assert wrong == []
    used = {r for t, _, _ in report.tasks for r in t.requires}
    assert used == set(TASK_REQUIREMENTS)


def test_the_apps_a_task_opens_are_derived_from_it():
    from agent_host.config.tasks import app_names, app_packages, load_tasks
    (markor,) = load_tasks(["markor-to-contacts"], variants=("base",))
    assert app_names(markor) == ["contacts", "markor"]          # its app; setup stops Markor, the solution opens it
    assert app_packages(markor, {"markor": "org.example.markor", "contacts": "com.android.contacts"}) == \
        ("com.android.contacts", "org.example.markor")
    assert markor.needs() == ("app:com.google.android.contacts", "app:net.gsantner.markor")
    (wifi,) = load_tasks(["wifi-on-open-calendar"], variants=("base",))
    assert "calendar" in app_names(wifi)                          # its check: foreground: {app: calendar}
    (call,) = load_tasks(["call-contact[0]"], variants=("base",))
    assert call.needs()[:2] == ("sim_call", "no_contact_sync")
