"""Every shipped task's reference solution reaches `success` (or `infeasible_claimed`) on the
virtual phone, base and verify variants alike: `agent-host tasks check-solutions tasks/` in CI."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_host.cli.tasks_check import run as check_solutions

TASKS = Path(__file__).resolve().parents[2] / "tasks"


@pytest.mark.slow
def test_every_shipped_solution_succeeds(virtual_phone, tmp_path, capsys):
    args = argparse.Namespace(phone=virtual_phone.serial, tasks=[str(TASKS)], out=str(tmp_path))
    code = check_solutions(args)
    out = capsys.readouterr().out
    assert code == 0, out.strip().splitlines()[-1]
    assert "all solutions succeed" in out
