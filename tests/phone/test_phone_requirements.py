"""phone/requirements.py: each requirement read from a phone (the virtual phone over real adb),
and `{phone.*}` facts bound into a task before its steps run."""

from __future__ import annotations

import pytest

from agent_host.config.requirements import REQUIREMENTS, PhoneFacts, UnboundPhoneFact, local_epoch_ms
from agent_host.config.tasks import bind_phone, load_tasks
from agent_host.judge.checks import Judge
from agent_host.phone.device import Phone
from agent_host.phone.requirements import (adb_over_usb, bind_task, check_rows, installed_packages,
                                           read_facts, sim_ready, writable_calendar)
from agent_host.phone.steps import run_steps


def test_a_writable_visible_calendar_is_the_lowest_id_the_shell_may_add_to():
    out = ("Row: 0 _id=1, calendar_access_level=200, visible=1, account_type=com.google\n"   # read-only (holidays)
           "Row: 1 _id=4, calendar_access_level=700, visible=0, account_type=com.google\n"   # hidden
           "Row: 2 _id=7, calendar_access_level=700, visible=1, account_type=com.google\n"
           "Row: 3 _id=9, calendar_access_level=700, visible=1, account_type=LOCAL\n")
    assert writable_calendar(out) == 7
    assert writable_calendar("No result found.\n") is None


def test_sim_state_and_adb_transport():
    assert sim_ready("READY") and sim_ready("ABSENT,READY") and not sim_ready("ABSENT") and not sim_ready("")
    assert adb_over_usb("0A281FDD4000D3") and adb_over_usb("emulator-5554") and adb_over_usb("127.0.0.1:6101")
    assert not adb_over_usb("192.168.1.20:5555")
    assert not adb_over_usb("adb-0A281FDD-x1Yz._adb-tls-connect._tcp")
    assert not adb_over_usb("lab:5037/192.168.1.20:5555") and adb_over_usb("lab:5037/0A281FDD4000D3")


def test_times_are_the_wall_clock_in_the_phones_zone():
    utc = local_epoch_ms("2026-12-15T10:00", "UTC")
    assert utc == 1797328800000
    assert local_epoch_ms("2026-12-15T10:00", "America/New_York") == utc + 5 * 3_600_000     # EST
    assert local_epoch_ms("2026-07-15T10:00", "Europe/Berlin") == local_epoch_ms("2026-07-15T08:00", "UTC")
    with pytest.raises(UnboundPhoneFact, match="unknown to this machine"):
        local_epoch_ms("2026-12-15T10:00", "Mars/Olympus")


def test_bind_phone_fills_every_part_and_refuses_a_phone_without_a_calendar():
    (task,) = load_tasks(["calendar-add-event-dentist@verify"])
    assert task.needs_phone_facts
    bound = bind_phone(task, PhoneFacts("s", calendar_id=3, timezone="America/New_York"))
    insert = next(s.command.command for s in bound.setup if "content insert" in str(s))
    assert "calendar_id:i:3" in insert and "eventTimezone:s:America/New_York" in insert
    assert f"dtstart:l:{1797328800000 + 5 * 3_600_000}" in insert
    assert str(1797328800000 + 5 * 3_600_000) in bound.check.model_dump_json()
    assert not bound.needs_phone_facts and bind_phone(bound, PhoneFacts("t")) is bound
    with pytest.raises(UnboundPhoneFact, match="calendar_account"):
        bind_phone(task, PhoneFacts("s", calendar_id=None))


def test_installed_packages_are_read_from_pm_list():
    assert installed_packages("package:com.android.settings\npackage:net.gsantner.markor\n") == \
        {"com.android.settings", "net.gsantner.markor"}
    facts = PhoneFacts("s", packages=frozenset({"com.android.settings"}))
    assert facts.missing(["app:com.android.settings", "app:net.gsantner.markor"]) == ["app:net.gsantner.markor"]
    assert PhoneFacts("s").missing(["app:net.gsantner.markor"]) == []    # no package list read: no app missing


def test_the_virtual_phone_meets_every_requirement(virtual_phone):
    rows = check_rows(Phone.connect(virtual_phone.serial))
    assert [r.name for r in rows if not r.met] == []
    assert [r.name for r in rows] == list(REQUIREMENTS) and len(rows) == 12
    seen = {r.name: r.seen for r in rows}
    assert seen["apps_installed"].startswith("all installed: settings, clock, contacts,")


def test_an_app_the_phone_lacks_is_named_in_its_row(virtual_phone):
    phone = Phone.connect(virtual_phone.serial)
    facts = read_facts(phone, apps={"settings": "com.android.settings", "markor": "org.example.markor"})
    assert not facts.met["apps_installed"]
    assert facts.seen["apps_installed"] == "not installed: markor (org.example.markor)"
    assert facts.missing(["app:org.example.markor", "app:com.android.settings"]) == ["app:org.example.markor"]


def test_a_phone_started_without_sim_and_calendar_says_so(virtual_phone_factory):
    bare = virtual_phone_factory(sim=False, calendar_account=False)
    facts = read_facts(Phone.connect(bare.serial))
    assert facts.missing(["calendar_account", "sim_sms", "sim_call", "usb_adb"]) == \
        ["calendar_account", "sim_sms", "sim_call"]
    assert facts.calendar_id is None


def _calendar_three(fs, *, model, seed):
    from virtual_phone.calendar_provider import Calendar
    from virtual_phone.world import World
    world = World(fs, model=model, seed=seed)
    world.state.calendar.calendars = [Calendar(3, "Work", "someone@example.com")]
    return world


def test_calendar_tasks_take_the_calendar_id_from_the_provider(virtual_phone_factory):
    vp = virtual_phone_factory(world_factory=_calendar_three)
    phone = Phone.connect(vp.serial)
    for key in ["calendar-add-event-dentist@verify", "calendar-where"]:
        (task,) = load_tasks([key])
        task = bind_task(task, phone)
        run_steps(task.setup, phone)
        rows = phone.shell("content query --uri content://com.android.calendar/events "
                           "--projection calendar_id --where deleted=0").text
        assert "calendar_id=3" in rows and "calendar_id=1" not in rows
        if task.variant == "verify":   # goal_setup's event, in calendar 3, is what the check finds
            assert Judge(task).evaluate(phone).goal is True
        run_steps(task.teardown, phone)
