"""Which episodes count, and how they tally per task instance: the latest attempt of each
episode (errors and harness-budget endings kept apart), the label a rate counts (an infeasible
task's correct claim is its success), and the task an instance belongs to (the statistical unit,
`cluster_of`). Every rate, comparison and power figure of a report starts here."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from agent_host.config.outcome import solved
from agent_host.config.records import EpisodeRecord
from agent_host.report import detector

# Effective labels: what the stacked bars show (they sum to 100% of counted episodes).
# "infeasible_claimed" here means a *wrong* claim (on a feasible task).
BAR_LABELS = ("success", "premature", "undone", "collateral", "unrecognised", "infeasible_claimed", "nav_fail")


# The variant the headline and everything derived from it (comparisons, pass^k, power) count.
HEADLINE_VARIANT = "base"


EXCLUDED = ("error", "exhausted")           # latest-attempt outcomes kept out of every rate


_PARAM_INDEX = re.compile(r"\[\d+\]$")


def cluster_of(rec: EpisodeRecord) -> str:
    """The task an episode's instance comes from: the id in its task file, which its parameter
    sets and variants share. Instances of one task succeed or fail together far more than
    instances of different tasks (the same screens, the same skill), so treating them as
    independent would make intervals too narrow: with 10 tasks of 4 correlated instances the
    95% interval covered 71.5% (bench/coverage.py, correlated instances). Records written
    before `task_id` existed fall back to the instance id without its `[i]`."""
    return rec.task_id or _PARAM_INDEX.sub("", rec.task)


def instance_of(rec: EpisodeRecord) -> str:
    """The task instance a record belongs to: `task` for base, `task@variant` otherwise."""
    return rec.task if rec.variant == "base" else f"{rec.task}@{rec.variant}"


def effective_label(rec: EpisodeRecord) -> str:
    """The outcome as the rates count it (infeasible tasks: a correct claim is a success)."""
    if rec.infeasible:
        if solved(rec.outcome, True):
            return "success"
        if rec.outcome == "success":        # task_complete on an infeasible task
            return "premature"
    return rec.outcome


def is_success(rec: EpisodeRecord) -> bool:
    return effective_label(rec) == "success"


def false_alarm(rec: EpisodeRecord) -> bool:
    """Called task_complete while the goal did not hold (on an infeasible task it never does):
    detector.false_alarm, where `collateral` is decided too."""
    return detector.false_alarm(effective_label(rec), rec.complete_step)


# Outcomes whose rule needs the goal to have held at some step; records whose goal fields were
# never filled in (older logs) still count as navigated by them. `collateral` is not one: its
# asked-for change held but the whole goal (asked and clean) may never have, so a collateral
# episode navigated only if its goal held at some step (goal_first_step), like any other.
_GOAL_HELD = ("success", "undone", "unrecognised")


def goal_ever_true(rec: EpisodeRecord) -> bool:
    """Navigation: the goal (asked and clean) held at some step."""
    return bool(rec.goal_initial or rec.goal_first_step is not None or rec.goal_final
                or rec.outcome in _GOAL_HELD and not rec.infeasible)


@dataclass
class Selection:
    """The episodes that count: the latest attempt of each episode id."""
    counted: list[EpisodeRecord]                 # latest attempt, neither error nor exhausted
    errored: list[EpisodeRecord]                 # latest attempt is an error (excluded)
    error_attempts: list[EpisodeRecord]          # every error attempt, retried or not
    superseded: int                              # attempts replaced by a later one
    exhausted: list[EpisodeRecord] = field(default_factory=list)   # a harness budget ended it (excluded)


def select_latest(records: Iterable[EpisodeRecord]) -> Selection:
    latest: dict[str, EpisodeRecord] = {}
    order: list[str] = []
    errors: list[EpisodeRecord] = []
    total = 0
    for rec in records:
        total += 1
        if rec.outcome == "error":
            errors.append(rec)
        if rec.episode_id not in latest:
            order.append(rec.episode_id)
            latest[rec.episode_id] = rec
        elif rec.attempt >= latest[rec.episode_id].attempt:
            latest[rec.episode_id] = rec
    final = [latest[i] for i in order]
    return Selection(
        counted=[r for r in final if r.outcome not in EXCLUDED],
        errored=[r for r in final if r.outcome == "error"],
        error_attempts=errors,
        superseded=total - len(final),
        exhausted=[r for r in final if r.outcome == "exhausted"],
    )


@dataclass
class InstanceCounts:
    instance: str
    task: str
    variant: str
    infeasible: bool                             # on every counted episode's phone (`feasible` == 0)
    n: int = 0                                   # counted episodes
    feasible: int = 0                            # of them, on a phone where the task was feasible
    successes: int = 0
    hits: int = 0                                # task_complete while the goal held (detector.hit)
    ever_true: int = 0
    success_given_true: int = 0
    false_alarms: int = 0                        # task_complete while the goal did not hold
    labels: dict[str, int] = field(default_factory=lambda: {k: 0 for k in BAR_LABELS})
    errors: int = 0                              # episodes whose latest attempt errored
    by_repeat: list[tuple[int, bool]] = field(default_factory=list)   # (repeat, success)
    cluster: str = ""                            # the task it belongs to (cluster_of); default: `task`

    def __post_init__(self) -> None:
        self.cluster = self.cluster or self.task

    @property
    def rate(self) -> float | None:
        return self.successes / self.n if self.n else None


def instance_counts(counted: Sequence[EpisodeRecord],
                    errored: Sequence[EpisodeRecord] = ()) -> dict[str, InstanceCounts]:
    out: dict[str, InstanceCounts] = {}

    def get(rec: EpisodeRecord) -> InstanceCounts:
        inst = instance_of(rec)
        if inst not in out:
            out[inst] = InstanceCounts(inst, rec.task, rec.variant, rec.infeasible, cluster=cluster_of(rec))
        return out[inst]

    for rec in counted:
        c = get(rec)
        c.n += 1
        ok = is_success(rec)
        c.successes += ok
        c.hits += detector.hit(effective_label(rec))
        c.labels[effective_label(rec)] += 1
        c.false_alarms += false_alarm(rec)
        c.feasible += not rec.infeasible
        if not rec.infeasible and goal_ever_true(rec):
            c.ever_true += 1
            c.success_given_true += ok
        c.by_repeat.append((rec.repeat, ok))
    for rec in errored:
        get(rec).errors += 1
    for c in out.values():
        c.by_repeat.sort()
        if c.n:     # an infeasible task's `vary.feasible` phones make some of its episodes feasible
            c.infeasible = c.feasible == 0
    return out


def by_task(instances: dict[str, InstanceCounts], names: Sequence[str]) -> dict[str, list[str]]:
    """The instances `names` grouped by the task they belong to, in sorted task order."""
    out: dict[str, list[str]] = defaultdict(list)
    for inst in names:
        out[instances[inst].cluster].append(inst)
    return {t: out[t] for t in sorted(out)}
