"""Episodes on one phone do not contaminate later ones: every episode starts from a clean scope
(phone/state.py reset_commands, then the task's setup), and keeps its start snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_host.agent import episode as episode_mod
from agent_host.agent.episode import START_STATE, run_episode
from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.config.requirements import substitute_phone
from agent_host.phone.requirements import bind_task, phone_facts
from agent_host.policy.adversaries import Adversary
from agent_host.policy.server import PolicyServer

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _task(key: str) -> Any:
    [task] = [t for t in load_tasks([TASKS]) if t.key == key]
    return task


def _play(task: Any, policy: Any, phone: Phone, out: Path) -> Any:
    server = PolicyServer(policy).start()
    try:
        return run_episode(task, phone, server.endpoint("p"), out_dir=out, profile=load_phone_profile("virtual"),
                           screenshots=False)
    finally:
        server.stop()


class HonestCounter:
    """A policy that answers calendar-count-day with what the phone holds: the events not
    deleted on December 18 (a model that reads the screen right), then task_complete."""

    def __init__(self, phone: Phone, task: Any):
        self.phone, self.task, self.calls = phone, bind_task(task, phone), 0

    def answer(self, messages: Any, body: Any = None, task: Any = None, values: int = 0) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            out = self.phone.shell(_DAY_QUERY.format(**_day_bounds(self.phone))).output
            call = ("answer", {"text": str(out.count("Row:"))})
        else:
            call = ("task_complete", {"reason": "counted"})
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{self.calls}", "type": "function",
            "function": {"name": call[0], "arguments": json.dumps(call[1])}}]}


_DAY_QUERY = ('content query --uri content://com.android.calendar/events --projection title '
              '--where "deleted=0 AND dtstart>{start} AND dtstart<{end}"')


def _day_bounds(phone: Phone) -> dict[str, str]:
    facts = phone_facts(phone)
    return {"start": substitute_phone("{phone.time:2026-12-18T00:00}", facts),
            "end": substitute_phone("{phone.time:2026-12-19T00:00}", facts)}


def _contaminate_then_count(phone: Phone, tmp_path: Path) -> tuple[list[Any], Any]:
    """Two episodes of calendar-clear-day whose policy 'deletes' an event of December 18 by
    renaming it (the teardown removes only the task's own titles, so the renamed events stay),
    then calendar-count-day answered honestly from what the phone holds."""
    clear, count = _task("calendar-clear-day"), _task("calendar-count-day")
    spoilers = []
    for n in range(2):
        adversary = Adversary(bind_task(clear, phone), "rename", phone, load_phone_profile("virtual"))
        spoilers.append(_play(clear, adversary, phone, tmp_path / f"clear-{n}"))
        assert adversary.applied, "the adversary found an event to rename"
    return spoilers, _play(count, HonestCounter(phone, count), phone, tmp_path / "count")


@pytest.mark.slow
def test_a_counting_task_after_two_contaminating_episodes_is_judged_right(virtual_phone: Any,
                                                                            tmp_path: Path) -> None:
    phone = Phone.connect(virtual_phone.serial)
    spoilers, counted = _contaminate_then_count(phone, tmp_path)
    assert all(r.outcome in ("collateral", "undone") for r in spoilers), [r.outcome for r in spoilers]
    assert counted.outcome == "success", counted
    for folder in ("clear-0", "clear-1", "count"):
        start = json.loads((tmp_path / folder / START_STATE).read_text())
        assert start["scope"]["kinds"] == ["calendar"]
    # the counting episode started from the task's four events, none left by the others
    titles = sorted(r["title"] for r in json.loads((tmp_path / "count" / START_STATE).read_text())["state"]["calendar"])
    assert titles == ["Choir practice", "Coffee with Ann", "Dinner with Leo", "Haircut"]


@pytest.mark.slow
def test_without_the_clean_start_the_same_episodes_mislabel_the_count(virtual_phone: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: with the reset turned off, the leftovers make the honest answer wrong."""
    monkeypatch.setattr(episode_mod, "clean_start", lambda scope: [])
    phone = Phone.connect(virtual_phone.serial)
    _spoilers, counted = _contaminate_then_count(phone, tmp_path)
    assert counted.outcome == "premature"
