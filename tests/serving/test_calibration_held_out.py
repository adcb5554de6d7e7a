"""The default GPTQ calibration set is held out from every measure: it shares no screen (and
hardly a line) with the fidelity probe's screens or with the screens of the demo's tasks on
the virtual phone, played by their reference solutions through the real stack."""

from __future__ import annotations

import re

import pytest

from agent_host.agent.episode import run_episode
from agent_host.cli.demo import DEMO_TASKS
from agent_host.cli.quantize import calibration_screens
from agent_host.config.records import StepRecord
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.serving.fidelity import load_prompts

INDEX = re.compile(r"^\[\d+\] ")
# Lines every Android screen of a kind has: sharing them is not sharing a screen.
GENERIC = {'ImageButton desc="Navigate up" tap', 'RecyclerView id=recycler_view scroll',
           'Button "OK" id=button1 tap'}


def lines(screen: str) -> set[str]:
    """A screen's element lines without their index (an index moves when one element does)."""
    return {INDEX.sub("", ln) for ln in screen.splitlines()[1:] if ln.strip()} - GENERIC


def shared(calibration: list[str], others: list[str]) -> float:
    """The largest share of one calibration screen's lines found in any one other screen."""
    return max(len(lines(c) & lines(o)) / max(1, len(lines(c))) for c in calibration for o in others)


def test_twelve_screens_none_from_the_fidelity_probe():
    calib = [s for _, s in calibration_screens()]
    probe = [p.screen for p in load_prompts().prompts]
    assert len(calib) == len(set(calib)) == 12
    assert not set(calib) & set(probe)
    assert shared(calib, probe) == 0


@pytest.mark.slow
def test_no_screen_of_the_demo_tasks_on_the_virtual_phone(virtual_phone, policy_server, virtual_profile, tmp_path):
    from agent_host.policy.suite import SuitePolicy

    suite = SuitePolicy.from_data({"suite": [t for t in DEMO_TASKS.split(",")]}, source="<test>")
    seen: list[str] = []
    for i, task in enumerate(load_tasks(DEMO_TASKS.split(","), variants=("base", "verify"))):
        server = policy_server(suite)
        out = tmp_path / f"ep{i}"
        rec = run_episode(task, Phone.connect(virtual_phone.serial), server.endpoint(), out_dir=out,
                          profile=virtual_profile, screenshots=False)
        assert rec.outcome == "success", (task.key, rec.error)
        seen += [StepRecord.model_validate_json(ln).observation
                 for ln in (out / "steps.jsonl").read_text().splitlines()]
    assert len(seen) >= 8
    calib = [s for _, s in calibration_screens()]
    assert not set(calib) & set(seen)
    assert shared(calib, seen) == 0
