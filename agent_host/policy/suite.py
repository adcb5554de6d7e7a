"""A scripted policy for whole suites: each task's reference solution, picked per task instance.

`agent-host policy serve --script FILE` where FILE is a mapping with `suite`:

```yaml
suite: tasks/                 # task files, directories or ids (as `agent-host run --tasks`)
flaws:                        # optional: seeded mistakes, as probabilities per episode
  premature: 0.2              #   task_complete at once
  undo: 0.1                   #   repeat the last action before completing (a toggle flips back)
  unrecognised: 0.1           #   the solution without task_complete, then only waits
  wander: 0.1                 #   home and back, never navigating
```

The task instance is named by the request's TASK_HEADER (serving/endpoint.py; every episode
sends it), else recognised from the `Goal: ...` line of the first user message. The goal alone
is ambiguous: instances of a parameterised task may share it (the answer to "how many unread
messages?" lives in the phone's state), and a verify variant shares its base task's goal; a
client that sends no header gets the first such instance's solution.

On a verify variant (key `ID@verify`, the goal already holds) the reference is to recognise
it: `task_complete` at once (RECOGNISE, as `tasks check-solutions` plays it). Flaws there:
`premature` is the same call; `undo` plays the whole solution as if nothing held (a toggle
flips back); `unrecognised` and `wander` as on the base variant.

A suite may instead be `recorded:`, a mapping from task instance key to the tool calls an
episode made, in order, each `{raw: {name: N, arguments: {...}}}` (a blind replay: played
as sent, never resolved against the screen; `agent-host baseline blind-replay` writes one).
No flaws then; past the end of its recording an instance answers `task_infeasible` (the
episode ends instead of waiting out its steps).

The flaw of an episode is a pure function of the request's `seed` and the goal, so the same
episode gets the same flaw on every build, every resume and every server: two suite policies
with different flaws make a pair of scripted builds whose episodes pair one to one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_host.config.loading import load_yaml
from agent_host.config.tasks import TaskInstance, load_tasks, with_values
from agent_host.errors import ConfigError
from agent_host.policy.script import PolicyScript, message_text, play

FLAWS = ("premature", "undo", "unrecognised", "wander")
RECOGNISE = [{"task_complete": {"reason": "the goal already holds"}}]
# The `wait` a flawed episode answers until its step budget runs out: what makes it
# unrecognised (or nav_fail) is that it never completes, not how long it waits; at a script's
# default 0.5 s these waits were half of a scripted run's time on the virtual phone.
FLAW_WAIT_S = 0.05
_GOAL = re.compile(r"^Goal: (.*)$", re.M)


# Any: OpenAI chat messages, free-form JSON
def goal_of(messages: list[dict[str, Any]]) -> str | None:
    for m in messages:
        if m.get("role") == "user":
            found = _GOAL.search(message_text(m))
            if found:
                return found.group(1).strip()
    return None


def flaw_for(seed: object, goal: str, flaws: dict[str, float]) -> str | None:
    digest = hashlib.sha256(f"{seed}|{goal}".encode()).digest()
    u = int.from_bytes(digest[:8], "little") / 2**64
    edge = 0.0
    for name in FLAWS:
        edge += flaws.get(name, 0.0)
        if u < edge:
            return name
    return None


# Any: script actions and data as the policy YAML holds them
def flawed(solution: list[dict[str, Any]], flaw: str | None, verify: bool = False) -> dict[str, Any]:
    """The script data a flaw turns a reference solution into (on a verify variant, when
    `verify`)."""
    if verify and flaw in (None, "premature"):
        return {"actions": RECOGNISE}
    if verify and flaw == "undo":
        return {"actions": solution}
    if flaw is None:
        return {"actions": solution}
    if flaw == "premature":
        return {"actions": [{"task_complete": {"reason": "done"}}]}
    if flaw == "undo":
        body = solution[:-1]
        return {"actions": body + body[-1:] + solution[-1:]}
    if flaw == "unrecognised":
        return {"actions": solution[:-1], "after": "wait", "wait_seconds": FLAW_WAIT_S}
    if flaw == "wander":
        return {"actions": ["press_home", "press_back"] * 2, "after": "wait", "wait_seconds": FLAW_WAIT_S}
    raise ValueError(flaw)


@dataclass
class SuitePolicy:
    solutions: dict[str, list[dict[str, Any]]]          # goal -> reference solution (first instance)
    flaws: dict[str, float] = field(default_factory=dict)
    source: str = "<suite>"
    by_instance: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # instance id -> solution
    varied: dict[str, TaskInstance] = field(default_factory=dict)   # instance id -> it, where it has vary.values
    _scripts: dict[tuple[str, str | None, bool], PolicyScript] = field(default_factory=dict)

    # Any: a solution's actions as the policy YAML holds them
    def script_for(self, name: str, solution: list[dict[str, Any]], flaw: str | None,
                   verify: bool = False) -> PolicyScript:
        key = (name, flaw, verify)
        if key not in self._scripts:
            what = f"{flaw or 'reference'}{', verify' if verify else ''}"
            self._scripts[key] = PolicyScript.from_data(flawed(solution, flaw, verify),
                                                        source=f"{self.source}: {name} ({what})")
        return self._scripts[key]

    # Any: OpenAI chat JSON (messages, body, the reply), its shape fixed by the API
    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any],
               task: str | None = None, values: int = 0) -> dict[str, Any]:
        goal = goal_of(messages)
        if goal is None:
            return {"role": "assistant", "content": f"policy suite {self.source}: no goal in the request"}
        instance, _, variant = (task or "").partition("@")
        flaw = flaw_for(body.get("seed"), goal, self.flaws)
        if values and instance in self.varied:      # the phone carries a `vary.values` overlay
            solution = with_values(self.varied[instance], values).solution
            script = self.script_for(f"{instance}~{values}", solution, flaw, variant == "verify")
        elif instance in self.by_instance:
            script = self.script_for(instance, self.by_instance[instance], flaw, variant == "verify")
        elif goal in self.solutions:
            script = self.script_for(goal, self.solutions[goal], flaw)
        else:
            return {"role": "assistant", "content": f"policy suite {self.source}: no task has the goal {goal!r}"}
        return play(script, messages)

    @classmethod
    def recorded(cls, data: dict[str, Any], *, source: str) -> SuitePolicy:   # Any: the policy file's data as YAML/JSON gives it, checked here
        """A blind replay: each instance's recorded calls, played as sent (`recorded:`)."""
        rec = data["recorded"]
        if set(data) - {"recorded"} or not isinstance(rec, dict) or not all(
                isinstance(v, list) for v in rec.values()):
            raise ConfigError(f"{source}: recorded: a mapping of task instance key -> list of calls, alone")
        by_instance = {str(k): list(v) + [{"task_infeasible": {"reason": "the recording has ended"}}]
                       for k, v in rec.items()}
        return cls(solutions={}, source=source, by_instance=by_instance)

    @classmethod
    def from_data(cls, data: dict[str, Any], *, source: str) -> SuitePolicy:   # Any: the policy file's data as YAML/JSON gives it, checked here
        if "recorded" in data:
            return cls.recorded(data, source=source)
        unknown = set(data) - {"suite", "flaws"}
        if unknown:
            raise ConfigError(f"{source}: {sorted(unknown)[0]}: unknown option (suite, flaws, or recorded alone)")
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
        by_instance: dict[str, list[dict[str, Any]]] = {}
        varied: dict[str, TaskInstance] = {}
        for task in load_tasks(specs, variants=("base",)):
            if task.solution:
                solutions.setdefault(task.goal, task.solution)
                by_instance[task.key] = task.solution
                if task.vary_values or task.vary_feasible:
                    varied[task.key] = task
        if not solutions:
            raise ConfigError(f"{source}: suite: no task with a solution in {', '.join(specs)}")
        return cls(solutions=solutions, flaws={k: float(v) for k, v in flaws.items()}, source=source,
                   by_instance=by_instance, varied=varied)


def load_policy(path: Path | str) -> SuitePolicy | PolicyScript:
    """A policy script file: a suite mapping, or a plain script (list or `actions` mapping)."""
    data, _ = load_yaml(Path(path))
    if isinstance(data, dict) and ("suite" in data or "recorded" in data):
        return SuitePolicy.from_data(data, source=str(path))
    return PolicyScript.load(path)
