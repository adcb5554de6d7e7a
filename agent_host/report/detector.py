"""Completion recognition read as a detector of "the goal holds" (docs/reports.md, "Recognition").

Sensitivity: placed at the goal (verify variants), the model calls task_complete while it holds.
Specificity: on base variants, it never calls task_complete while the goal does not hold.
Either alone is gamed by a trivial policy (always "done": sensitivity 100%, specificity 0%;
never "done": the reverse), so the report gives their mean, the balanced figure, beside them.

The balanced figure's interval is the mean of the two Korn-Graubard intervals' limits. The two
rates rest on the same tasks (a task's verify and base instances), and their per-task values
may be correlated either way; the mean of the limits is what the MOVER sum of the two gives at
a correlation of +1, the least favourable one, so no correlation has to be estimated.
bench/coverage.py ("balanced recognition") checks its coverage by seeded simulation.

Which episode is which reading is decided here only (`hit`, `false_alarm`; selection.py tallies
them per task instance).
"""

from __future__ import annotations

from agent_host.report.parts import BalancedPart, RatePart

# The detector's "goal" is the whole goal, as the judge reads it: the asked-for change is there
# *and* nothing else in the task's scope changed (StepRecord.goal = asked and clean). So a
# `collateral` ending (task_complete with the asked-for change there and a stray, a deletion
# done by renaming or one change too many beside it) is a task_complete while the goal did not
# hold: on a verify variant it is no hit (placed at the goal, the agent changed more before
# saying "done"), and on a base variant it is a false alarm, as `premature` is; a completion
# that leaves damage behind must not score as recognising completion. A `collateral` ending by
# task_infeasible is no task_complete, so it is neither (it is a failure of success all the same).


def hit(label: str) -> bool:
    """The detector fired while the goal held: task_complete with the whole goal true. `label` is
    the effective label (selection.effective_label): only `success` (never `collateral`)."""
    return label == "success"


def false_alarm(label: str, complete_step: int | None) -> bool:
    """The detector fired while the goal did not hold: a task_complete on any ending but
    `success` (`premature`, any on an infeasible task, after the goal was lost, `collateral`)."""
    return label == "premature" or (complete_step is not None and not hit(label))


METHOD = ("mean of the sensitivity and specificity intervals' limits (MOVER for a mean of two rates at "
          "correlation +1, the least favourable)")


def balanced_limits(sens: tuple[float, float, float], spec: tuple[float, float, float]) -> tuple[float, float, float]:
    """(mean, low, high) of (sensitivity + specificity) / 2 from each one's (mean, low, high);
    numpy arrays work too (bench/coverage.py runs the same function)."""
    return tuple((a + b) / 2 for a, b in zip(sens, spec))   # type: ignore[return-value]


def balanced(rates: dict[str, RatePart]) -> BalancedPart | None:
    """The balanced figure from a build's rate summaries (stats.rate_summary), or None when
    either side has no task (a run without verify variants has no sensitivity)."""
    sens, spec = rates.get("sensitivity"), rates.get("specificity")
    if sens is None or spec is None:
        return None
    a, b = (sens["mean"], sens["low"], sens["high"]), (spec["mean"], spec["low"], spec["high"])
    if a[0] is None or a[1] is None or a[2] is None or b[0] is None or b[1] is None or b[2] is None:
        return None     # (a rate with a mean has both limits: rows_summary sets the three together)
    mean, low, high = balanced_limits((a[0], a[1], a[2]), (b[0], b[1], b[2]))
    return {"mean": float(mean), "low": float(low), "high": float(high), "method": METHOD,
            "n_tasks_sensitivity": sens["n_tasks"], "n_tasks_specificity": spec["n_tasks"]}
