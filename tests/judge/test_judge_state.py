"""The whole-state half of the goal: the readers' parsing, the diff, the scope a task gets, and
the judge on a virtual phone through the real adb stack."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_host.config.phones import load_phone_profile
from agent_host.config.scope import STATE_KINDS, TOUCHES, Change, Scope, derive_scope
from agent_host.config.tasks import load_tasks
from agent_host.judge.checks import Judge, judge_diff
from agent_host.phone import state
from agent_host.phone.device import Phone
from agent_host.config.requirements import substitute_phone
from agent_host.phone.requirements import bind_task, phone_facts
from agent_host.phone.steps import run_steps

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _task(key: str) -> Any:
    [task] = [t for t in load_tasks([TASKS]) if t.key == key]
    return task


def test_content_rows_split_at_the_known_columns() -> None:
    out = ("Row: 0 _id=3, type=2, address=6505550142, body=Yes, count me in, see you\n"
           "Row: 1 _id=4, type=1, address=+1 650-555-0177, body=two\nlines\n")
    rows = state.content_rows(out, ["_id", "type", "address", "body"])
    assert rows == [{"_id": "3", "type": "2", "address": "6505550142", "body": "Yes, count me in, see you"},
                    {"_id": "4", "type": "1", "address": "+1 650-555-0177", "body": "two\nlines"}]
    assert state.content_rows("No result found.\n", ["_id"]) == []


def test_numbers_compare_as_national_digits() -> None:
    assert state.digits("+1 650-555-0142") == state.digits("(650) 555-0142") == "6505550142"


def test_a_diff_is_a_multiset_of_compared_fields() -> None:
    start = {"calendar": [{"id": "1", "title": "Team sync", "dtstart": "1"},
                          {"id": "2", "title": "Team sync", "dtstart": "2"}]}
    # deleted and made again the same (a new id): no change; an edit: one removed, one added
    same = {"calendar": [{"id": "7", "title": "Team sync", "dtstart": "1"},
                         {"id": "2", "title": "Team sync", "dtstart": "2"}]}
    assert state.diff(start, same)["calendar"] == state.KindDiff([], [])
    edited = {"calendar": [{"id": "1", "title": "Team sync", "dtstart": "1"},
                           {"id": "2", "title": "Team sync (cancelled)", "dtstart": "2"}]}
    d = state.diff(start, edited)["calendar"]
    assert (len(d.added), len(d.removed)) == (1, 1)
    assert judge_diff({"calendar": d}, {"calendar": (1, 1)})
    assert not judge_diff({"calendar": d}, {"calendar": (0, 1)})   # deleted by renaming
    assert not judge_diff({"calendar": d}, {})                     # an answer task that edited


def test_changed_counts_one_removed_and_one_added() -> None:
    assert Change.model_validate({"settings": {"changed": 1}}).counts() == {"settings": (1, 1)}
    assert Change.model_validate({"sms": {"added": 1, "removed": 4}}).counts() == {"sms": (1, 4)}


def test_scope_is_derived_from_commands_app_and_declarations() -> None:
    s = derive_scope(['content delete --uri content://com.android.calendar/events --where "title=\'X\'"',
                      'rm -rf "/sdcard/Download/Taxes 2026"', "ls /sdcard/Documents/Markor/a.md"], "files")
    assert s == Scope(("calendar", "files"), ("/sdcard/Documents", "/sdcard/Download"))
    assert derive_scope([], "settings").kinds == ("settings",)
    assert derive_scope(["setting", "wifi_on"], "x").kinds == ("settings",)       # a setting: step or check
    assert derive_scope(["/sdcard/window_dump.xml"], "x") == Scope()               # a file, not a folder
    assert derive_scope([], "x", Change.model_validate({"calls": {"added": 1}})).kinds == ("calls",)


def test_every_kind_has_a_reader_and_a_touch_rule() -> None:
    assert tuple(state.READERS) == STATE_KINDS == tuple(TOUCHES)


def test_every_settings_key_a_shipped_task_names_is_read() -> None:
    read = {k for keys in state.SETTINGS_KEYS.values() for k in keys}
    named = set()
    for t in load_tasks([TASKS]):
        for step in t.setup:
            if hasattr(step, "setting"):
                named.add(step.setting.key)
        from agent_host.judge.checks import leaves
        for leaf in leaves(t.check) if t.check is not None else []:
            if hasattr(leaf, "setting"):
                named.add(leaf.setting.key)
    # next_alarm_formatted is the alarms reader's; the warning flag changes by itself
    assert named - read <= {"next_alarm_formatted", "low_power_warning_acknowledged"}, named - read


def test_airplane_mode_turning_the_radios_off_is_not_a_change_of_the_users(virtual_phone: Any) -> None:
    """Wi-Fi and Bluetooth on before (an earlier episode's): airplane mode rewrites wifi_on 1 -> 3
    and bluetooth_on 1 -> 2 by itself, which is the asked change alone."""
    phone = Phone.connect(virtual_phone.serial)
    assert phone.shell("svc wifi enable").ok and phone.shell("cmd bluetooth_manager enable").ok
    _v0, v1 = _judged(_task("airplane-mode-on"), phone, "cmd connectivity airplane-mode enable")
    assert phone.shell("settings get global wifi_on").output.strip() == "3"
    assert v1.goal is True, v1.detail
    # turning Wi-Fi off as well is a change of the user's
    assert phone.shell("svc wifi enable").ok
    _v0, v2 = _judged(_task("airplane-mode-on"), phone, "cmd connectivity airplane-mode enable", "svc wifi disable")
    assert v2.asked is True and v2.goal is False


def test_a_file_moved_out_of_the_tasks_folders_is_still_seen(virtual_phone: Any) -> None:
    """markor-delete-note watches /sdcard/Documents; the note moved to Download is no deletion."""
    phone = Phone.connect(virtual_phone.serial)
    _v0, v1 = _judged(_task("markor-delete-note"), phone, "mkdir -p /sdcard/Download",
                      "mv /sdcard/Documents/Markor/old-ideas.md /sdcard/Download/old-ideas.md")
    assert v1.asked is True and v1.goal is False
    assert any("/sdcard/Download/old-ideas.md" in r for r in v1.detail["state"]["kinds"]["files"]["added"])


def test_every_shipped_task_declares_a_change_on_kinds_in_its_scope() -> None:
    for t in load_tasks([TASKS]):
        assert set(t.change.counts()) <= set(t.scope.kinds), t.id
        if t.infeasible:
            assert not t.change.counts(), f"{t.id}: an infeasible task asks for no change"


# -- on a virtual phone -----------------------------------------------------------------------------

def _param(task: Any, name: str, phone: Phone) -> str:
    """A parameter with its `{phone.*}` facts filled in for this phone."""
    return substitute_phone(str(task.params[name]), phone_facts(phone))


def _judged(task: Any, phone: Phone, *mutations: Any) -> tuple[Any, Any]:
    """Clean start, setup, the verdict after setup; `mutations` run (a command, or a function
    of the phone giving commands, called then); the verdict after."""
    profile = load_phone_profile("virtual")
    task = bind_task(task, phone)
    judge = Judge(task, profile)
    run_steps(state.clean_start(task.scope) + list(task.setup), phone, profile)
    v0 = judge.evaluate(phone)
    for m in mutations:
        for cmd in (m(phone) if callable(m) else [m]):
            assert phone.shell(cmd).ok, cmd
    return v0, judge.evaluate(phone)


def _add_event(title: str, start: str, end: str, *more: str) -> str:
    """The shell command that adds an event to the virtual phone's calendar (id 1, UTC)."""
    return " ".join(["content insert --uri content://com.android.calendar/events --bind calendar_id:i:1",
                     f"--bind 'title:s:{title}' --bind dtstart:l:{start} --bind dtend:l:{end}",
                     "--bind eventTimezone:s:UTC", *more])


def test_a_stray_event_beside_the_asked_one_is_not_the_goal(virtual_phone: Any) -> None:
    """calendar-add-event-offsite: a typo'd "Team ofsite" saved first, then the right event."""
    phone = Phone.connect(virtual_phone.serial)
    task = bind_task(_task("calendar-add-event-offsite"), phone)
    s, e = _param(task, "dtstart", phone), _param(task, "dtend", phone)

    def add(t: str) -> str:
        return _add_event(t, s, e, "--bind 'eventLocation:s:Harbor Conference Center'")
    v0, v1 = _judged(task, phone, add("Team ofsite"), add("Team offsite"))
    assert v0.goal is False and v0.clean is False
    assert v1.asked is True and v1.clean is False and v1.goal is False
    assert v1.detail["state"]["kinds"]["calendar"]["added"][0].startswith("title=Team ofsite") or \
        any("Team ofsite" in r for r in v1.detail["state"]["kinds"]["calendar"]["added"])
    # the right event alone is the goal
    _v0, v2 = _judged(task, phone, add("Team offsite"))
    assert v2.goal is True and v2.asked is True and v2.clean is True


def test_deleting_by_renaming_is_not_the_goal(virtual_phone: Any) -> None:
    phone = Phone.connect(virtual_phone.serial)
    task = bind_task(_task("calendar-delete-event-dec17"), phone)
    gone = _param(task, "gone", phone)
    v0, v1 = _judged(task, phone, "content update --uri content://com.android.calendar/events "
                     f"--bind 'title:s:Team sync (cancelled)' --where \"title='Team sync' AND dtstart={gone}\"")
    assert v1.asked is True and v1.goal is False       # the check alone was fooled
    _v0, v2 = _judged(task, phone, "content delete --uri content://com.android.calendar/events "
                      f"--where \"title='Team sync' AND dtstart={gone}\"")
    assert v2.goal is True


def test_a_change_before_claiming_infeasible_is_seen(virtual_phone: Any) -> None:
    phone = Phone.connect(virtual_phone.serial)
    v0, v1 = _judged(_task("sms-unsend"), phone, "appops set com.android.shell WRITE_SMS allow",
                     "content delete --uri content://sms --where \"address='6505550177'\"")
    assert v0.clean is True and v0.asked is None
    assert v1.clean is False and v1.goal is False


def test_a_verify_variant_starts_at_the_goal_and_expects_no_change(virtual_phone: Any) -> None:
    phone = Phone.connect(virtual_phone.serial)
    v0, _ = _judged(_task("calendar-add-event-offsite@verify"), phone)
    assert v0.goal is True and v0.clean is True


def test_the_clean_start_empties_what_an_earlier_episode_left(virtual_phone: Any) -> None:
    phone = Phone.connect(virtual_phone.serial)
    task = bind_task(_task("calendar-count-day"), phone)
    leftover = _add_event("Haircut (moved)", "1797588000000", "1797591600000")
    assert phone.shell(leftover).ok
    run_steps(state.clean_start(task.scope) + list(task.setup), phone, load_phone_profile("virtual"))
    titles = [r["title"] for r in state.read(task.scope, phone)["calendar"]]
    assert sorted(titles) == ["Choir practice", "Coffee with Ann", "Dinner with Leo", "Haircut"]


@pytest.mark.parametrize("kind", STATE_KINDS)
def test_every_reader_reads_the_virtual_phone(kind: str, virtual_phone: Any) -> None:
    """Each reader's commands answer (exit 0) and its reset runs, on a phone as set up."""
    phone = Phone.connect(virtual_phone.serial)
    scope = Scope((kind,), ("/sdcard/Download",) if kind == "files" else ())
    for cmd in state.reset_commands(scope):
        assert phone.shell(cmd).ok, cmd
    results = phone.shell_batch(state.commands(scope))
    # find exits 1 for a standard folder this phone lacks, and still lists the others
    assert all(r.ok or r.command.startswith("find ") for r in results), [(r.command, r.output) for r in results]
    snap = state.snapshot(scope, [(r.output, r.exit_code) for r in results])
    if kind == "settings":
        assert len(snap["settings"]) == sum(len(v) for v in state.SETTINGS_KEYS.values())
    else:
        assert snap[kind] == []    # emptied


def test_a_number_saved_as_typed_with_country_code_and_dashes_is_the_goal(virtual_phone: Any) -> None:
    """contact-save-sms-sender[0]: the virtual Contacts keeps a number as typed, +1-650-555-0110."""
    phone = Phone.connect(virtual_phone.serial)
    _v0, v1 = _judged(_task("contact-save-sms-sender[0]"), phone,
                      "content insert --uri content://com.android.contacts/raw_contacts --bind account_type:n: "
                      "--bind account_name:n:",
                      lambda p: _contact_rows(p, "Rosa Diaz", "+1-650-555-0110"))
    assert v1.goal is True, v1.detail


def _contact_rows(phone: Phone, name: str, number: str) -> list[str]:
    import re
    rid = max(int(i) for i in re.findall(r"_id=(\d+)", phone.shell(
        "content query --uri content://com.android.contacts/raw_contacts --projection _id").output) or ["1"])
    return [f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
            f"--bind mimetype:s:vnd.android.cursor.item/name --bind 'data1:s:{name}'",
            f"content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:{rid} "
            f"--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind data1:s:{number} --bind data2:i:2"]


def test_a_note_with_a_final_full_stop_is_the_goal(virtual_phone: Any) -> None:
    phone = Phone.connect(virtual_phone.serial)
    _v0, v1 = _judged(_task("markor-create-note-shopping"), phone,
                      "echo 'Milk, eggs, bread and coffee.' > /sdcard/Documents/Markor/shopping.md")
    assert v1.goal is True, v1.detail
