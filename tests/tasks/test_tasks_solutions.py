"""Every shipped task's reference solution reaches `success` (or `infeasible_claimed`) on the
virtual phone, base and verify variants alike: `agent-host tasks check-solutions tasks/` in CI."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_host.cli.tasks_check import run as check_solutions

TASKS = Path(__file__).resolve().parents[2] / "tasks"


# The phone's time of day, pinned: today's date, at 22:38 UTC, the hour in which Calendar's proposed
# event (23:00 to 00:00) crosses midnight. The suite failed only when it happened to run in that
# hour (calendar-all-day made two-day events); a sweep of 00:00:05, 11:59:40, 22:38 and 23:59:30
# passed after the fix.
TIME_OF_DAY_S = 22 * 3600 + 38 * 60


@pytest.mark.slow
def test_every_shipped_solution_succeeds(virtual_phone, tmp_path, capsys):
    clock = virtual_phone.world.state.clock
    now = clock.now()       # read once: two reads could fall either side of midnight
    clock.set(now - now % 86400 + TIME_OF_DAY_S)
    args = argparse.Namespace(phone=virtual_phone.serial, tasks=[str(TASKS)], out=str(tmp_path))
    code = check_solutions(args)
    out = capsys.readouterr().out
    assert code == 0, out.strip().splitlines()[-1]
    assert "all solutions succeed" in out
