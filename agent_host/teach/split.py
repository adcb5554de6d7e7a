"""The fixed split of the suite's task instances into taught and held-out (config/taught.py).

The rule (RULE) is a pure function of the seed and the task and instance ids, so the same
suite and seed give the same split on every machine, and a task's kind does not depend on
which other tasks are split with it (adding a task moves no other).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from agent_host.config.taught import Kind, TaughtSplit, instance_id
from agent_host.config.tasks import TaskInstance

HELD_OUT_TASK_FRACTION = 0.2
RULE = ("a task whose sha256('{seed}|{task id}') (its first 16 hex digits / 16**16, in [0, 1)) is below the fraction "
        "is held out whole (held-out-task); of every other task with two or more parameter sets, the instance "
        "with the lowest sha256('{seed}|{instance id}') is held out (held-out-params); the rest are "
        "taught. A variant (@verify) goes with its instance.")


def _rank(seed: int, name: str) -> str:
    return hashlib.sha256(f"{seed}|{name}".encode()).hexdigest()


def _uniform(seed: int, name: str) -> float:
    return int(_rank(seed, name)[:16], 16) / 2**64


def choose_split(tasks: Iterable[TaskInstance], *, seed: int = 0,
                 held_out_task_fraction: float = HELD_OUT_TASK_FRACTION) -> TaughtSplit:
    """The split of `tasks`' instances by RULE."""
    by_task: dict[str, set[str]] = {}
    for t in tasks:
        by_task.setdefault(t.task_id, set()).add(instance_id(t.key))
    unseen = {tid for tid in by_task if _uniform(seed, tid) < held_out_task_fraction}
    kinds: dict[str, Kind] = {}
    owner: dict[str, str] = {}
    for tid in sorted(by_task):
        ids = sorted(by_task[tid])
        held = min(ids, key=lambda i: _rank(seed, i)) if len(ids) > 1 else None
        for i in ids:
            owner[i] = tid
            kinds[i] = "held-out-task" if tid in unseen else "held-out-params" if i == held else "taught"
    return TaughtSplit(rule=RULE, seed=seed, held_out_task_fraction=held_out_task_fraction,
                       instances=dict(sorted(kinds.items())), tasks=dict(sorted(owner.items())))
