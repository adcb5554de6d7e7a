"""The adversaries generated from the state readers (policy/adversaries.py), each played as an
episode against every applicable base instance of every shipped task on the virtual phone:
none may end in success. The counts per kind are printed (pytest -s) for the record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_host.cli.tasks_adversaries import play, tally
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.policy.adversaries import KINDS, mutation, near_miss
from fixtures_phone import set_clock_today

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_near_misses() -> None:
    assert near_miss("Team offsite") == "Team offite"
    assert near_miss("Rosa Diaz") == "Roa Diaz"
    assert near_miss("6505550142") == "6505550143"
    assert near_miss("ab") == "abx"


def test_one_more_prefers_deleting_an_untouched_object() -> None:
    from agent_host.config.scope import Scope
    start = {"calendar": [{"id": "1", "title": "A", "dtstart": "1", "dtend": "2"},
                          {"id": "2", "title": "B", "dtstart": "3", "dtend": "4"}]}
    now = {"calendar": [start["calendar"][1]]}          # A was deleted (the asked change)
    cmds = mutation("one-more", Scope(("calendar",)), start, now, phone=None, facts=None)
    assert cmds == ['content delete --uri content://com.android.calendar/events --where "_id=2"']


def test_one_more_changes_a_radio_that_is_on() -> None:
    """wifi_on is read as the wish ("on"): the adversary must still turn it off."""
    from agent_host.config.scope import Scope
    snap = {"settings": [{"key": "global/wifi_on", "value": "on"}, {"key": "global/airplane_mode_on", "value": "0"}]}
    assert mutation("one-more", Scope(("settings",)), snap, snap, phone=None, facts=None) == \
        ["settings put global wifi_on 0"]


@pytest.mark.slow
def test_no_generated_adversary_succeeds_on_any_task(virtual_phone: Any, tmp_path: Path) -> None:
    tasks = [t for t in load_tasks([TASKS], ("base",)) if t.solution]
    results = play(tasks, virtual_phone.serial, KINDS, out_root=tmp_path, profile=load_phone_profile("virtual"))
    counts = tally(results)
    print("\nadversaries per kind:", counts)
    errors = [(r.instance, r.kind, r.error) for r in results if r.outcome == "error"]
    assert not errors, errors
    fooled = [(r.instance, r.kind, r.outcome, r.commands) for r in results if r.fooled]
    assert not fooled, fooled
    for kind in KINDS:   # every kind found instances to act on
        assert counts[kind]["tried"] >= 5, (kind, counts[kind])


@pytest.mark.slow
@pytest.mark.parametrize("minute,second", [(13, 5), (14, 52)])
@pytest.mark.parametrize("kind", ["stray", "one-more"])
def test_an_alarm_adversary_two_minutes_before_the_asked_alarm_is_still_seen(kind: str, minute: int, second: int,
                                                                             virtual_phone: Any,
                                                                             tmp_path: Path) -> None:
    """The extra alarm is set a few minutes from the phone's clock so that it is the next alarm
    (all Android shows). With the clock two minutes before the asked 6:15 AM, "two minutes from
    now" was the asked alarm itself: nothing extra to see, and the adversary passed; one minute
    before, any later minute is unseen until the asked alarm has rung."""
    set_clock_today(virtual_phone, 6, minute, second)
    task = next(t for t in load_tasks([TASKS / "alarm-set.yaml"], ("base",)) if t.key == "alarm-set[0]")
    assert "6:15" in task.goal
    results = play([task], virtual_phone.serial, (kind,), out_root=tmp_path, profile=load_phone_profile("virtual"))
    assert [r.outcome for r in results] in (["premature"], ["undone"], ["collateral"]), \
        [(r.outcome, r.error, r.commands) for r in results]
