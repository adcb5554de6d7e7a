"""Every shipped task's declared change (`change:`) is what its goal_setup does to its scope,
measured on the virtual phone through the real adb stack (phone/changes.py); tasks without a
goal_setup are held to it by their reference solution (`tasks check-solutions`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_host.config.phones import load_phone_profile
from agent_host.config.tasks import load_tasks
from agent_host.phone.changes import measure_change
from agent_host.phone.device import Phone

TASKS = Path(__file__).resolve().parents[2] / "tasks"


@pytest.mark.slow
def test_every_declared_change_is_what_goal_setup_does(virtual_phone: Any) -> None:
    instances = load_tasks([TASKS])
    verify = {t.id: t for t in instances if t.variant == "verify"}
    phone = Phone.connect(virtual_phone.serial)
    profile = load_phone_profile("virtual")
    wrong = []
    for base in (t for t in instances if t.variant == "base" and t.id in verify):
        m = measure_change(base, verify[base.id], phone, profile)
        if not m.agrees:
            wrong.append((m.instance, m.declared, m.measured))
    assert len(verify) > 80      # 83 instances have a goal_setup
    assert not wrong, wrong
