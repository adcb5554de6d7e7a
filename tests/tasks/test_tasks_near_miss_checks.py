"""Fast near misses, one per kind tag, on the virtual phone (over adb): the state a careless model
leaves makes the task's own check false, the real fix makes it true. State is changed with the
shell commands a real phone answers the same way (test_tasks_near_misses.py plays episodes)."""

from __future__ import annotations

import pytest

from agent_host.config.scope import Scope
from agent_host.config.tasks import load_tasks
from agent_host.judge.checks import Judge
from agent_host.config.outcome import label
from agent_host.phone.device import Phone
from agent_host.phone.requirements import bind_task
from agent_host.phone.steps import run_steps

EVENTS = "content insert --uri content://com.android.calendar/events --bind calendar_id:i:1 --bind eventTimezone:s:UTC"
ALARM = ("am start -a android.intent.action.SET_ALARM --ei android.intent.extra.alarm.HOUR {h} "
         "--ei android.intent.extra.alarm.MINUTES {m} --ez android.intent.extra.alarm.SKIP_UI true")
MARKOR = "/sdcard/Documents/Markor"


def _instance(instance_id: str):
    """The task with its check alone (no scope): these cases test checks; the whole-state half
    of the goal is tested in tests/judge/test_judge_state.py and by the adversaries."""
    (task,) = [t for t in load_tasks([instance_id], variants=("base",)) if t.id == instance_id]
    return task.model_copy(update={"scope": Scope()})


@pytest.fixture
def phone(virtual_phone):
    return Phone.connect(virtual_phone.serial)


def _goal(task, phone, answer=None):
    return Judge(task).evaluate(phone, answer=answer).goal


def _shell(phone, *cmds):
    for res in phone.shell_batch(list(cmds)):
        assert res.exit_code == 0, res.output


# (kind, instance id, near-miss commands, fix commands)
CASES = [
    # long-horizon: every field right but the end time, left at Calendar's default one hour.
    ("long-horizon", "calendar-add-event-dentist",
     [f"{EVENTS} --bind 'title:s:Dentist appointment' --bind dtstart:l:1797328800000 "
      "--bind dtend:l:1797332400000 --bind 'eventLocation:s:Smile Dental'"],
     ["content delete --uri content://com.android.calendar/events --where \"title='Dentist appointment'\"",
      f"{EVENTS} --bind 'title:s:Dentist appointment' --bind dtstart:l:1797328800000 "
      "--bind dtend:l:1797330600000 --bind 'eventLocation:s:Smile Dental'"]),
    # text-entry: the note has the text but under the wrong name (no .md: Markor's Plain text type).
    ("text-entry", "markor-create-note-shopping",
     [f"echo 'Milk, eggs, bread and coffee' > {MARKOR}/shopping.txt"],
     [f"echo 'Milk, eggs, bread and coffee' > {MARKOR}/shopping.md"]),
    # multi-app: the alarm at the flight's own time instead of one hour before.
    ("multi-app", "calendar-alarm-before", [ALARM.format(h=8, m=0)],
     ["pm clear com.google.android.deskclock", ALARM.format(h=7, m=0)]),
    # recognition: Bluetooth on, but Wi-Fi (already on) toggled off on the way.
    ("recognition", "bluetooth-on-keep-wifi", ["cmd bluetooth_manager enable", "cmd wifi set-wifi-enabled disabled"],
     ["cmd wifi set-wifi-enabled enabled"]),
    # files: the wrong one of two near-identical names deleted.
    ("files", "files-delete-copy", ["rm /sdcard/Download/invoice_2026.pdf"],
     ["echo 'Invoice 2026 total 120 EUR' > /sdcard/Download/invoice_2026.pdf",
      "rm '/sdcard/Download/invoice_2026 (1).pdf'"]),
]


@pytest.mark.parametrize("kind, instance_id, near_miss, fix", CASES, ids=[c[0] for c in CASES])
def test_near_miss_fails_and_the_fix_succeeds(phone, kind, instance_id, near_miss, fix):
    task = _instance(instance_id)
    task = bind_task(task, phone)
    assert kind in task.tags or kind == "files"
    run_steps(task.setup, phone)
    try:
        assert _goal(task, phone) is False
        _shell(phone, *near_miss)
        assert _goal(task, phone) is False, f"{kind}: the near-miss must not count"
        _shell(phone, *fix)
        assert _goal(task, phone) is True
    finally:
        run_steps(task.teardown, phone)


def test_retrieval_answer_is_checked_against_the_provider(phone):
    """The other event's time (9:00 AM) fails; the right one counts however it is written."""
    task = _instance("calendar-when-dentist")
    task = bind_task(task, phone)
    assert "retrieval" in task.tags
    run_steps(task.setup, phone)
    try:
        assert _goal(task, phone, answer=None) is False
        assert _goal(task, phone, answer="9:00 AM") is False
        assert _goal(task, phone, answer="3:15 pm") is True
    finally:
        run_steps(task.teardown, phone)


def test_retrieval_answer_is_fixed_at_setup(phone):
    """calendar-where's answer is the location setup wrote: editing the event to match a wrong
    answer does not make it right (the model can change the state; it cannot change the answer)."""
    task = _instance("calendar-where")
    task = bind_task(task, phone)
    run_steps(task.setup, phone)
    try:
        assert _goal(task, phone, answer="Elm Street studio") is False
        assert _goal(task, phone, answer="Westside Music School, Room 3") is True
        _shell(phone, "content update --uri content://com.android.calendar/events "
                      "--bind 'eventLocation:s:Town Hall' --where \"title='Piano lesson'\"")
        assert _goal(task, phone, answer="town hall") is False
        assert _goal(task, phone, answer="Westside Music School, Room 3") is True
    finally:
        run_steps(task.teardown, phone)


def test_infeasible_claimed_done_is_never_success(phone):
    """A model that 'does something' on an infeasible task and calls task_complete is premature."""
    task = _instance("files-read-only")
    task = bind_task(task, phone)
    assert "infeasible" in task.tags and task.check is None
    run_steps(task.setup, phone)
    try:
        _shell(phone, "mv /sdcard/Download/report.pdf /sdcard/Download/report-readonly.pdf")
        goal = _goal(task, phone)
        assert goal is False
        assert label([False, goal], complete_step=1, infeasible_task=True).outcome == "premature"
        assert label([False, goal], infeasible_step=1, infeasible_task=True).outcome == "infeasible_claimed"
    finally:
        _shell(phone, "rm -f /sdcard/Download/report-readonly.pdf")
        run_steps(task.teardown, phone)


def test_sort_downloads_ignores_what_other_episodes_left_in_downloads(phone):
    """A full-suite run on one phone: an earlier episode (a careless files-trip-folder) left a
    `Trip` folder in Downloads, and files-sort-downloads then failed its own reference solution
    (premature) and its verify setup (error), as its check wanted Downloads to hold nothing but
    todo.txt. The check is about the six files the task is about; its near misses still fail."""
    task = _instance("files-sort-downloads")
    task = bind_task(task, phone)
    goal_setup = next(t for t in load_tasks(["files-sort-downloads"], variants=("verify",))
                      if t.variant == "verify").setup[len(task.setup):]
    _shell(phone, "mkdir -p /sdcard/Download/Trip")
    run_steps(task.setup, phone)
    try:
        run_steps(goal_setup, phone)
        assert _goal(task, phone) is True
        _shell(phone, "mv /sdcard/Download/todo.txt /sdcard/Documents")     # moved one file too many
        assert _goal(task, phone) is False
        _shell(phone, "mv /sdcard/Documents/todo.txt /sdcard/Download",
               "cp /sdcard/Documents/bill.pdf /sdcard/Download")               # copied, not moved
        assert _goal(task, phone) is False
        _shell(phone, "rm /sdcard/Download/bill.pdf")
        assert _goal(task, phone) is True
    finally:
        run_steps(task.teardown, phone)
        _shell(phone, "rm -rf /sdcard/Download/Trip")


def test_delete_all_notes_starts_from_its_own_three(phone):
    """markor-delete-all checks that the Markor folder ends empty (as AndroidWorld's
    MarkorDeleteAllNotes), so its setup must leave exactly its three notes there: a note an
    earlier episode left (a careless markor-create-note's shopping.txt) made deleting the
    three fail the reference solution, and the verify setup ended `error`."""
    task = _instance("markor-delete-all")
    task = bind_task(task, phone)
    _shell(phone, f"mkdir -p {MARKOR}", f"echo milk > {MARKOR}/shopping.txt")
    run_steps(task.setup, phone)
    try:
        assert _goal(task, phone) is False
        _shell(phone, f"rm {MARKOR}/trip.md {MARKOR}/errands.md {MARKOR}/reading.md")   # what the solution deletes
        assert _goal(task, phone) is True
    finally:
        run_steps(task.teardown, phone)
        _shell(phone, f"rm -f {MARKOR}/shopping.txt")
