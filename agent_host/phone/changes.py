"""What a task's goal_setup changes in its scope, measured on a phone: the change a task should
declare (`change:`), since goal_setup is the task's own statement of the goal state.

`agent-host tasks changes` prints it beside the declared change for every instance, and a test
runs it over every shipped task on the virtual phone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_host.config.tasks import TaskInstance
from agent_host.phone import state
from agent_host.phone.requirements import bind_task
from agent_host.phone.steps import run_steps

if TYPE_CHECKING:
    from agent_host.phone.device import Phone
    from agent_host.config.phones import PhoneProfile


@dataclass(frozen=True)
class MeasuredChange:
    instance: str
    declared: dict[str, tuple[int, int]]     # kind -> (added, removed)
    measured: dict[str, tuple[int, int]]     # what goal_setup did, kinds that changed only

    @property
    def agrees(self) -> bool:
        return {k: v for k, v in self.declared.items() if v != (0, 0)} == self.measured


def measure_change(base: TaskInstance, verify: TaskInstance, phone: Phone, profile: PhoneProfile | None = None) -> MeasuredChange:
    """Clean start and setup, a snapshot; goal_setup (the verify variant's extra setup steps),
    another; the counts of what changed between them."""
    base, verify = bind_task(base, phone), bind_task(verify, phone)
    goal_setup = list(verify.setup[len(base.setup):])
    run_steps(state.clean_start(base.scope) + list(base.setup), phone, profile)
    start = state.read(base.scope, phone, profile)
    run_steps(goal_setup, phone, profile)
    goal = state.read(base.scope, phone, profile)
    measured = {k: (len(d.added), len(d.removed)) for k, d in state.diff(start, goal).items()
                if d.added or d.removed}
    run_steps(base.teardown, phone, profile)
    return MeasuredChange(base.id, base.change.counts(), measured)
