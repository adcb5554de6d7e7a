"""The suite policy plays the right reference for each task instance, on a real episode.

Two instances of a parameterised retrieval task can share a goal word for word (the answer
lives in the phone's state, not in the goal), and a verify variant always shares its base
task's goal. The goal alone cannot tell them apart, so the episode names its task instance to
the server (serving/endpoint.py TASK_HEADER) and the suite policy picks the solution by it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_host.agent.episode import run_episode
from agent_host.config.tasks import load_tasks
from agent_host.phone.device import Phone
from agent_host.policy.suite import SuitePolicy

ROOT = Path(__file__).resolve().parents[2]


def _policy(**flaws: float) -> SuitePolicy:
    return SuitePolicy.from_data({"suite": [str(ROOT / "tasks")], "flaws": flaws}, source="<test>")


def _run(task, policy, phone, server_factory, profile, out):
    server = server_factory(policy)
    return run_episode(task, Phone.connect(phone.serial), server.endpoint(), out_dir=out,
                       profile=profile, screenshots=False)


def test_instances_sharing_a_goal_each_get_their_own_solution(virtual_phone, policy_server,
                                                              virtual_profile, tmp_path):
    tasks = load_tasks(["sms-unread-count"], variants=("base",))
    assert len({t.goal for t in tasks}) == 1 < len(tasks), "the task's instances should share a goal"
    policy = _policy()
    for task in tasks:
        rec = _run(task, policy, virtual_phone, policy_server, virtual_profile, tmp_path / task.key)
        assert rec.outcome == "success", (task.key, rec.outcome, rec.reason)


@pytest.mark.parametrize("flaws, outcome", [({}, "success"), ({"undo": 1.0}, "undone")])
def test_verify_variant_reference_recognises_the_goal(virtual_phone, policy_server, virtual_profile,
                                                      tmp_path, flaws, outcome):
    """The reference on a verify variant is to notice the goal holds (as `tasks check-solutions`
    plays it); the `undo` flaw replays the solution there, which flips the switch back."""
    task = next(t for t in load_tasks(["wifi-off"], variants=("verify",)) if t.variant == "verify")
    rec = _run(task, _policy(**flaws), virtual_phone, policy_server, virtual_profile, tmp_path / "ep")
    assert rec.outcome == outcome, (rec.outcome, rec.reason)


def test_task_header_carries_any_instance_id(policy_server):
    """Instance ids come from `instance_id` templates and params, which may hold any text; an
    HTTP header holds ASCII only, so the key travels percent-encoded and arrives as it was."""
    from agent_host.agent.model_client import ModelClient

    seen = []

    class Recorder:
        def answer(self, messages, body, task=None, values=0):
            seen.append(task)
            return {"role": "assistant", "content": "ok"}

    server = policy_server(Recorder())
    key = "call-zoë 2[0]@verify"
    ModelClient(server.endpoint(), task=key).chat([{"role": "user", "content": "Goal: x"}], [])
    assert seen == [key]


def test_a_flawed_episode_never_completes_and_waits_briefly_past_its_actions():
    """Its waits only run out the step budget: at a script's default 0.5 s they were half of
    a scripted two-build run's time on the virtual phone."""
    from agent_host.policy.script import PolicyScript
    from agent_host.policy.suite import flawed
    solution = [{"press_home": {}}, {"task_complete": {"reason": "done"}}]
    for flaw in ("unrecognised", "wander"):
        script = PolicyScript.from_data(flawed(solution, flaw))
        assert script.after == "wait" and script.wait_seconds <= 0.1, flaw
        assert all("task_complete" not in a for a in flawed(solution, flaw)["actions"])
