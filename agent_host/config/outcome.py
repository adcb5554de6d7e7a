"""The outcome label of an episode, from its per-step goal values (pure; docs/concepts.md,
"Outcome labels").

`goals[t]` is G(t), the goal after step t: the asked-for change is there (`asked[t]`, the task's
check) and nothing else in the task's scope changed since setup (`clean[t]`; judge/checks.py);
`goals[0]` is the goal after setup (false for a base variant, true for a verify variant).
D = `complete_step`, I = `infeasible_step`. The episode ends at D or I, so at most one of them
is set and it is the last step. `asked` and `clean` are None for records judged before the
whole-state judge: no episode of theirs is `collateral`.

Precedence (exactly one label):
1. `error`: the harness, the phone or the server failed (`error` given). Also when no goal
   value was recorded at all.
1b. `exhausted`: a budget the harness imposes ran out before the agent ended the episode
   (the context window, or the per-reply token cap on every retry of a step). It is neither
   a navigation failure nor an infrastructure error, so it gets its own label, and the
   report keeps it out of navigation and recognition.
2. I exists: `collateral` when something in the task's scope had changed since setup (not
   untouched(I); a change made before giving up is damage, on any task; records from before
   `untouched` was kept use not clean(I), which on a feasible task is also false before any
   change);
   otherwise `infeasible_claimed` (on any task; the report counts it as a success only on
   infeasible tasks).
3. D exists:
   - on an infeasible task: `premature` (nothing can make the goal hold);
   - G(D) true: `success`, even if the goal was lost and regained earlier (success is defined
     by G(D) alone); `goal_lost_step` still records the earlier loss;
   - asked(D) true but not clean(D): `collateral` (the asked-for change is there, and so is
     something else: a stray under a near-miss name, a deletion done by renaming, one change
     too many);
   - G(D) false and G(t) true for some t < D (step 0 included, so a verify variant whose
     agent turned the goal off and then completed is `undone`): `undone`;
   - otherwise: `premature`.
4. No D:
   - G true at the end: `unrecognised` (also a verify variant the agent never confirmed);
   - G true at some step (step 0 included), false at the end: `undone`;
   - otherwise: `nav_fail`.

Recorded steps:
- `goal_first_step`: the first t >= 1 with G(t) (EpisodeRecord: "first step (>= 1) after
  which the goal held").
- `goal_lost_step`: the first t after the goal first held (counting from step 0, so a verify
  variant that loses the goal at step 1 records 1) with G(t) false; None if never lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Judgement:
    outcome: str
    goal_initial: bool
    goal_first_step: int | None
    goal_lost_step: int | None
    goal_final: bool
    complete_step: int | None
    infeasible_step: int | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _first(goals: Sequence[bool], start: int, value: bool) -> int | None:
    for t in range(start, len(goals)):
        if bool(goals[t]) is value:
            return t
    return None


def label(goals: Sequence[bool], *, complete_step: int | None = None,
          infeasible_step: int | None = None, infeasible_task: bool = False,
          error: str | None = None, exhausted: bool = False,
          asked: Sequence[bool | None] | None = None, clean: Sequence[bool | None] | None = None,
          untouched: Sequence[bool | None] | None = None) -> Judgement:
    """Label one episode. `goals[t]` = G(t) for t = 0 (after setup) .. last step; `asked[t]` and
    `clean[t]` its two halves where they were judged (None: not judged, never collateral);
    `untouched[t]`: nothing in the task's scope changed since setup (records before it: None,
    and an infeasible claim is then judged by `clean`)."""
    goals = [bool(g) for g in goals]
    for name, seq in (("asked", asked), ("clean", clean), ("untouched", untouched)):
        if seq is not None and len(seq) != len(goals):
            raise ValueError(f"{name} has {len(seq)} values for {len(goals)} goals")
    if complete_step is not None and infeasible_step is not None:
        raise ValueError("an episode ends at task_complete or task_infeasible, not both")
    for name, step in (("complete_step", complete_step), ("infeasible_step", infeasible_step)):
        if step is not None and not (1 <= step < len(goals)):
            raise ValueError(f"{name}={step} is outside the recorded steps 1..{len(goals) - 1}")

    goal_initial = goals[0] if goals else False
    goal_final = goals[-1] if goals else False
    goal_first_step = _first(goals, 1, True)
    held_from = _first(goals, 0, True)
    goal_lost_step = _first(goals, held_from + 1, False) if held_from is not None else None

    def judged(outcome: str) -> Judgement:
        return Judgement(outcome, goal_initial, goal_first_step, goal_lost_step, goal_final,
                         complete_step, infeasible_step)

    if error is not None or not goals:
        return judged("error")
    if exhausted:
        if complete_step is not None or infeasible_step is not None:
            raise ValueError("an exhausted episode ended before task_complete / task_infeasible")
        return judged("exhausted")
    if infeasible_step is not None:
        # damage is a change at all: on a feasible task `clean` is false before any change
        # (the asked one is missing), so it says nothing about giving up untouched
        changed = (untouched[infeasible_step] is False if untouched is not None and untouched[infeasible_step] is not None
                   else clean is not None and clean[infeasible_step] is False)
        if changed:
            return judged("collateral")
        return judged("infeasible_claimed")
    if complete_step is not None:
        if infeasible_task:
            return judged("premature")
        if goals[complete_step]:
            return judged("success")
        if asked is not None and clean is not None and asked[complete_step] and clean[complete_step] is False:
            return judged("collateral")
        if any(goals[:complete_step]):
            return judged("undone")
        return judged("premature")
    if goal_final:
        return judged("unrecognised")
    if held_from is not None:
        return judged("undone")
    return judged("nav_fail")


def solved(outcome: str, infeasible_task: bool) -> bool:
    """Whether an episode's label is what the rates count as a success: `success`, or on an
    infeasible task a claim of infeasibility (the right answer there)."""
    return outcome == ("infeasible_claimed" if infeasible_task else "success")
