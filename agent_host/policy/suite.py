"""A scripted policy for whole suites: each task's reference solution, picked by the goal.

`agent-host policy serve --script FILE` where FILE is a mapping with `suite`:

```yaml
suite: tasks/                 # task files, directories or ids (as `agent-host run --tasks`)
flaws:                        # optional: seeded mistakes, as probabilities per episode
  premature: 0.2              #   task_complete at once
  undo: 0.1                   #   repeat the last action before completing (a toggle flips back)
  unrecognised: 0.1           #   the solution without task_complete, then only waits
  wander: 0.1                 #   home and back, never navigating
```

The task is recognised from the `Goal: ...` line of the first user message. The flaw of an
episode is a pure function of the request's `seed` and the goal, so the same episode gets the
same flaw on every build, every resume and every server: two suite policies with different
flaws make a pair of scripted builds whose episodes pair one to one. A verify variant has
the same goal as its base task; the suite policy cannot tell them apart and plays the solution.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_host.config.loading import load_yaml
from agent_host.config.tasks import load_tasks
from agent_host.errors import ConfigError
from agent_host.policy.script import PolicyScript, message_text, play

FLAWS = ("premature", "undo", "unrecognised", "wander")
_GOAL = re.compile(r"^Goal: (.*)$", re.M)


def goal_of(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if m.get("role") == "user":
            found = _GOAL.search(message_text(m))
            if found:
                return found.group(1).strip()
    return None


def flaw_for(seed: Any, goal: str, flaws: dict[str, float]) -> str | None:
    digest = hashlib.sha256(f"{seed}|{goal}".encode()).digest()
    u = int.from_bytes(digest[:8], "little") / 2**64
    edge = 0.0
    for name in FLAWS:
        edge += flaws.get(name, 0.0)
        if u < edge:
            return name
    return None


def flawed(solution: list[dict[str, Any]], flaw: str | None) -> dict[str, Any]:
    """The script data a flaw turns a reference solution into."""
    if flaw is None:
        return {"actions": solution}
    if flaw == "premature":
        return {"actions": [{"task_complete": {"reason": "done"}}]}
    if flaw == "undo":
        body = solution[:-1]
        return {"actions": body + body[-1:] + solution[-1:]}
    if flaw == "unrecognised":
        return {"actions": solution[:-1], "after": "wait"}
    if flaw == "wander":
        return {"actions": ["press_home", "press_back"] * 2, "after": "wait"}
    raise ValueError(flaw)


@dataclass
class SuitePolicy:
    solutions: dict[str, list[dict[str, Any]]]          # goal -> reference solution
    flaws: dict[str, float] = field(default_factory=dict)
    source: str = "<suite>"
    _scripts: dict[tuple[str, str | None], PolicyScript] = field(default_factory=dict)

    def script_for(self, goal: str, flaw: str | None) -> PolicyScript:
        key = (goal, flaw)
        if key not in self._scripts:
            self._scripts[key] = PolicyScript.from_data(flawed(self.solutions[goal], flaw),
                                                        source=f"{self.source}: {goal} ({flaw or 'reference'})")
        return self._scripts[key]

    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        goal = goal_of(messages)
        if goal is None or goal not in self.solutions:
            return {"role": "assistant", "content": f"policy suite {self.source}: no task has the goal {goal!r}"}
        return play(self.script_for(goal, flaw_for(body.get("seed"), goal, self.flaws)), messages)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, source: str) -> SuitePolicy:
        unknown = set(data) - {"suite", "flaws"}
        if unknown:
            raise ConfigError(f"{source}: {sorted(unknown)[0]}: unknown option (suite, flaws)")
        specs = data["suite"]
        specs = [specs] if isinstance(specs, str) else list(specs)
        base = Path(source).parent
        specs = [str(base / s) if (base / s).exists() else s for s in specs]
        flaws = data.get("flaws") or {}
        bad = [k for k in flaws if k not in FLAWS]
        if bad:
            raise ConfigError(f"{source}: flaws.{bad[0]}: unknown flaw (one of {', '.join(FLAWS)})")
        if sum(flaws.values()) > 1 or any(not 0 <= v <= 1 for v in flaws.values()):
            raise ConfigError(f"{source}: flaws: probabilities from 0 to 1 that sum to at most 1")
        solutions: dict[str, list[dict[str, Any]]] = {}
        for task in load_tasks(specs, variants=("base",)):
            if task.solution and task.goal not in solutions:
                solutions[task.goal] = task.solution
        if not solutions:
            raise ConfigError(f"{source}: suite: no task with a solution in {', '.join(specs)}")
        return cls(solutions=solutions, flaws={k: float(v) for k, v in flaws.items()}, source=source)


def load_policy(path: Path | str) -> Any:
    """A policy script file: a suite mapping, or a plain script (list or `actions` mapping)."""
    data, _ = load_yaml(Path(path))
    if isinstance(data, dict) and "suite" in data:
        return SuitePolicy.from_data(data, source=str(path))
    return PolicyScript.load(path)
