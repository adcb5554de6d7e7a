"""The sequential comparison of two builds: where the next repeats go, and when to stop.

Method: repeated confidence intervals (Jennison & Turnbull 1989) over a look schedule fixed
before the run. The run looks after its first pass and after every round (a fixed number of
task-repeats, each one more repeat of every instance of a task on both builds); at look j the
interval of the paired difference (B - A, success over tasks, MOVER of the builds'
Korn-Graubard limits, intervals.py) is taken at one nominal level alpha* for every look,
Pocock's constant boundary: alpha* is such that a Brownian motion observed at the schedule's
information fractions (episodes so far / the budget's) stays inside +-z_{alpha*/2} at every
look with probability 1 - alpha. Then every look's interval covers at once with probability
about 1 - alpha, so the interval at whatever time the run stops (decided, equivalent, budget
spent, a user who stops it by hand) keeps its level, and so does the decision read off it.
Information grows more slowly than episodes here (between-task variance does not shrink
with repeats), which makes successive looks more alike than the Brownian model has them,
so the boundary errs on the safe side; bench/sequential.py checks the whole rule, allocation
included, by seeded simulation.

Allocation (`allocate`): after the first pass each round's task-repeats go, one at a time,
to the task whose next repeat lowers the variance of the mean paired difference most:
(var_A + var_B) / m * (1/n - 1/(n + 1)) with each build's rate smoothed by half a success
((k + 0.5) / (n + 1)), so tasks where both builds always succeed or always fail get little
and tasks whose builds disagree, or whose rates are not yet pinned, get more.

Every function is vectorised over a leading batch axis (the bench's simulated runs) with
tasks on the last axis, so the bench and the run use the same code.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt
from scipy import stats as sst

from agent_host.config.manifest import RunManifest
from agent_host.config.records import EpisodeRecord
from agent_host.report import intervals, selection, stats

ALPHA = intervals.ALPHA
PENALTY = 1.0              # Korn-Graubard's own df exponent: every look has a design of its own
FIRST_REPEATS = 1          # first pass: every task instance, both builds
ROUND_SHARE = 1.0          # task-repeats per round, as a share of the tasks
BUDGET_REPEATS = 10        # default budget: as many episodes as this many repeats of everything
BOUNDARY_PATHS = 200_000
BOUNDARY_SEED = 20261220
METHOD = ("repeated confidence intervals (Jennison & Turnbull 1989), Pocock's constant level over the "
          "look schedule; each look's interval MOVER of the builds' Korn-Graubard limits (df exponent 1)")
REFERENCE = ("Jennison, C. & Turnbull, B. W. (1989). Interim analyses: the repeated confidence interval "
             "approach. JRSS B 51(3), 305-361; Pocock, S. J. (1977). Group sequential methods in the design "
             "and analysis of clinical trials. Biometrika 64(2), 191-199.")

OUTCOMES = ("worse", "better", "equivalent", "undecided")


@dataclass(frozen=True)
class Schedule:
    """The looks of a sequential run, in task-repeats (one repeat of every instance of one
    task, on both builds): the first pass, then rounds of `round_size` up to `budget`."""

    tasks: int
    first: int                 # repeats of every task in the first pass
    round_size: int            # task-repeats per round
    budget: int                # task-repeats in all (the last look)
    alpha: float = ALPHA

    @classmethod
    def make(cls, tasks: int, first: int = FIRST_REPEATS, budget_repeats: float = BUDGET_REPEATS,
             round_share: float = ROUND_SHARE, alpha: float = ALPHA) -> "Schedule":
        start = tasks * first
        budget = max(start, int(round(tasks * budget_repeats)))
        return cls(tasks, first, max(1, int(math.ceil(tasks * round_share))), budget, alpha)

    @property
    def looks(self) -> list[int]:
        """Task-repeats done at each look."""
        out = [self.tasks * self.first]
        while out[-1] < self.budget:
            out.append(min(self.budget, out[-1] + self.round_size))
        return out

    @property
    def nominal_alpha(self) -> float:
        return pocock_alpha(tuple(n / self.budget for n in self.looks), self.alpha)

    def at(self, done: int) -> int:
        """The index of the last look reached with `done` task-repeats."""
        return max(0, sum(1 for n in self.looks if n <= done) - 1)


@functools.lru_cache(maxsize=64)
def pocock_alpha(fractions: tuple[float, ...], alpha: float = ALPHA) -> float:
    """The nominal two-sided level alpha* with P(max_j |Z_j| > z_{1-alpha*/2}) = alpha for a
    standard Brownian motion seen at these information fractions (Z_j = W(t_j) / sqrt(t_j)),
    by seeded Monte Carlo (BOUNDARY_PATHS paths; deterministic)."""
    t = np.asarray(fractions, float)
    if len(t) == 1:
        return alpha
    rng = np.random.default_rng(BOUNDARY_SEED)
    inc = rng.standard_normal((BOUNDARY_PATHS, len(t))) * np.sqrt(np.diff(np.r_[0.0, t]))
    z = np.abs(np.cumsum(inc, axis=1) / np.sqrt(t)).max(1)
    c = float(np.quantile(z, 1 - alpha))
    return float(2 * sst.norm.sf(c))


def interval(ka: npt.ArrayLike, na: npt.ArrayLike, kb: npt.ArrayLike, nb: npt.ArrayLike,
             alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B - A, low, high) of the mean over tasks of the per-task success rates, paired by task
    (last axis), at level 1 - alpha."""
    ka, na, kb, nb = (np.asarray(x, float) for x in (ka, na, kb, nb))
    return intervals.mover_difference(ka / na, na, kb / nb, nb, alpha, penalty=PENALTY)


def decide(low: npt.ArrayLike, high: npt.ArrayLike, detect: float | None) -> np.ndarray:
    """Per run: 0 undecided, 1 worse (B below A: the interval is below 0), 2 better, 3
    equivalent (inside +-detect)."""
    low, high = np.asarray(low, float), np.asarray(high, float)
    out = np.zeros(np.broadcast(low, high).shape, int)
    if detect is not None:
        out = np.where((low > -detect) & (high < detect), 3, out)
    out = np.where(high < 0, 1, out)
    decided: np.ndarray = np.where(low > 0, 2, out)
    return decided


def gain(ka: npt.ArrayLike, na: npt.ArrayLike, kb: npt.ArrayLike, nb: npt.ArrayLike,
         per_repeat: npt.ArrayLike) -> np.ndarray:
    """How much one more repeat of each task lowers the variance of the mean difference
    (up to the common factor 1 / T^2): (var_A + var_B) / m * (1/r - 1/(r + 1)), r = repeats so
    far, m = episodes per repeat, each build's rate smoothed by half a success."""
    ka, na, kb, nb = (np.asarray(x, float) for x in (ka, na, kb, nb))
    per_repeat = np.asarray(per_repeat, float)
    pa, pb = (ka + 0.5) / (na + 1), (kb + 0.5) / (nb + 1)
    r = na / per_repeat
    g: np.ndarray = (pa * (1 - pa) + pb * (1 - pb)) / per_repeat * (1 / r - 1 / (r + 1))
    return g


def allocate(ka: npt.ArrayLike, na: npt.ArrayLike, kb: npt.ArrayLike, nb: npt.ArrayLike,
             per_repeat: npt.ArrayLike, size: int, cap: float | None = None) -> np.ndarray:
    """(…, T) extra repeats per task for one round of `size` task-repeats, given one at a time
    to the task of largest `gain`, its gain recomputed as if the repeat had the rates seen so
    far (ties: the first task). `cap`: most repeats per task (None: no cap)."""
    ka, na, kb, nb = (np.array(x, float) for x in (ka, na, kb, nb))
    per_repeat = np.broadcast_to(np.asarray(per_repeat, float), na.shape)
    add = np.zeros(na.shape, int)
    ra, rb = ka / na, kb / nb
    for _ in range(size):
        g = gain(ra * na, na, rb * nb, nb, per_repeat)
        if cap is not None:
            g = np.where(na / per_repeat >= cap, -np.inf, g)
        pick = np.argmax(g, axis=-1)
        hot = np.zeros_like(add)
        np.put_along_axis(hot, pick[..., None], 1, axis=-1)
        hot = np.where(np.isfinite(np.take_along_axis(g, pick[..., None], -1)), hot, 0)
        add += hot
        na = na + hot * per_repeat
        nb = nb + hot * per_repeat
    return add


# --------------------------------------------------------------------------- a run's records

@dataclass
class TaskState:
    task: str
    ka: int = 0
    na: int = 0
    kb: int = 0
    nb: int = 0
    repeats: int = 0            # repeats run so far (both builds)


def task_states(records: Sequence[EpisodeRecord], baseline: str, build: str,
                repeats: dict[str, int]) -> list[TaskState]:
    """Per task (selection.cluster_of, instances pooled), each build's successes over counted
    episodes of the rate the report's headline difference uses (stats.per_instance_counts of
    "success"), and the repeats run so far (`repeats`, the driver's count)."""
    out = {t: TaskState(t, repeats=r) for t, r in repeats.items()}
    for name, side in ((baseline, "a"), (build, "b")):
        sel = selection.select_latest(r for r in records if r.build == name)
        for inst in selection.instance_counts(sel.counted).values():
            kn = stats.per_instance_counts(inst, "success")
            if kn is None or inst.cluster not in out:
                continue
            s = out[inst.cluster]
            setattr(s, "k" + side, getattr(s, "k" + side) + kn[0])
            setattr(s, "n" + side, getattr(s, "n" + side) + kn[1])
    return [out[t] for t in sorted(out)]


@dataclass
class Decision:
    outcome: str                      # worse, better, equivalent, undecided
    final: bool                       # the run stops here
    look: int
    looks: int
    task_repeats: int
    budget: int
    nominal_alpha: float
    diff: float | None
    low: float | None
    high: float | None
    detect: float | None
    tasks: int
    why: str = ""
    allocation: dict[str, int] = field(default_factory=dict)   # next round's extra repeats per task

    # Any: asdict's JSON form of the decision
    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def evaluate(states: Sequence[TaskState], schedule: Schedule, detect: float | None,
             budget_left: bool = True) -> Decision:
    """The decision at the look the run has reached, and, when it goes on, the next round's
    allocation. `budget_left`: False when a duration budget ran out (the run ends here)."""
    usable = [s for s in states if s.na and s.nb]
    done = sum(s.repeats for s in states)
    look = schedule.at(done)
    a = schedule.nominal_alpha
    base: dict[str, Any] = dict(look=look + 1, looks=len(schedule.looks), task_repeats=done, budget=schedule.budget,
                nominal_alpha=a, detect=detect, tasks=len(usable))
    if len(usable) < 2:
        return Decision("undecided", True, diff=None, low=None, high=None,
                        why="fewer than two tasks with counted episodes on both builds", **base)
    ka, na, kb, nb = (np.array([getattr(s, f) for s in usable], float) for f in ("ka", "na", "kb", "nb"))
    d, lo, hi = (float(x) for x in interval(ka, na, kb, nb, a))
    code = int(decide(lo, hi, detect))
    outcome = OUTCOMES[[1, 2, 3, 0].index(code)] if code else "undecided"
    if code:
        return Decision(outcome, True, diff=d, low=lo, high=hi, why=_why(outcome, lo, hi, detect), **base)
    if done >= schedule.budget or not budget_left:
        return Decision("undecided", True, diff=d, low=lo, high=hi,
                        why="budget spent: " + needed(lo, hi, detect), **base)
    size = min(schedule.round_size, schedule.budget - done)
    # episodes per repeat of a task on one build: its counted instances
    m = np.array([max(1.0, max(s.na, s.nb) / max(s.repeats, 1)) for s in states], float)
    add = allocate([s.ka for s in states], [max(s.na, 1) for s in states], [s.kb for s in states],
                   [max(s.nb, 1) for s in states], m, size)
    return Decision("undecided", False, diff=d, low=lo, high=hi, why="not yet decided",
                    allocation={s.task: int(x) for s, x in zip(states, add) if x}, **base)


Judge = Callable[[Sequence[EpisodeRecord], dict[str, int], bool], dict[str, Any]]


# Any: the manifest's `sequential` block, JSON
def judge_for(state: dict[str, Any]) -> Judge:
    """The decision function a sequential run's driver calls (runs/sequential.py), from the
    manifest's `sequential` block: (records, repeats per task, budget_left) -> decision dict."""
    schedule = Schedule(**state["schedule"])

    # Any: the decision as JSON (Decision.as_dict)
    def judge(records: Sequence[EpisodeRecord], repeats: dict[str, int], budget_left: bool) -> dict[str, Any]:
        states = task_states(records, state["baseline"], state["build"], repeats)
        return evaluate(states, schedule, state.get("detect"), budget_left).as_dict()

    return judge


# Any: the manifest's `sequential` block, JSON
def configure(baseline: str, build: str, tasks: int, first: int, budget_repeats: float,
              detect: float | None, duration_s: float | None) -> dict[str, Any]:
    """The manifest's `sequential` block: everything a resume needs to decide the same way."""
    sch = Schedule.make(tasks, first, budget_repeats)
    return {"baseline": baseline, "build": build, "detect": detect, "duration_s": duration_s,
            "schedule": asdict(sch), "looks": sch.looks, "nominal_alpha": sch.nominal_alpha,
            "method": METHOD, "reference": REFERENCE, "rounds": []}


def _why(outcome: str, lo: float, hi: float, detect: float | None) -> str:
    span = f"[{100 * lo:+.1f}, {100 * hi:+.1f}] pp"
    if outcome == "worse":
        return f"the difference {span} is below 0"
    if outcome == "better":
        return f"the difference {span} is above 0"
    return f"the difference {span} lies within +-{100 * (detect or 0):.0f} pp"


def needed(lo: float, hi: float, detect: float | None) -> str:
    """What more would decide: the interval shrinks roughly as 1 / sqrt(episodes), so to
    exclude 0 (or fit in +-detect) it must narrow by a factor f, about f^2 times the episodes
    (fewer where between-task variance dominates; then more tasks, not repeats, are needed)."""
    half = (hi - lo) / 2
    mid = (hi + lo) / 2
    goals = [abs(mid) / half if mid else 0.0]
    if detect is not None:
        goals.append((detect - abs(mid)) / half if detect > abs(mid) else 0.0)
    f = max(goals)
    if f <= 0:
        return "no number of repeats decides a difference this close to 0 without --detect"
    return (f"the interval must narrow about {1 / f:.1f}-fold: roughly {1 / f ** 2:.1f} times the episodes "
            f"so far, or more tasks if repeats no longer narrow it")


# --------------------------------------------------------------------------- the report's section

POWER = intervals.POWER


# Any: the report's JSON figures (numbers, None, notes)
def fixed_design(states: Sequence[TaskState], target: float, alpha: float = ALPHA,
                 power: float = POWER) -> dict[str, Any]:
    """The fixed design (every task the same repeats, one analysis at 1 - alpha) that detects
    a difference of `target` with `power`, from this run's own figures: the SD of a per-task
    difference at R repeats is sqrt(tau^2 + s_w^2 / R), s_w^2 the mean within-task variance of
    one repeat's difference (each build's rate, binomially), tau^2 the between-task variance of
    the true differences (observed variance less the within part, at least 0); the normal
    approximation then needs SD / sqrt(T) <= target / (z_{1-alpha/2} + z_power)."""
    use = [s for s in states if s.na and s.nb and s.repeats]
    t = len(use)
    if t < 2 or not target:
        return {"repeats": None, "episodes": None, "target": target, "note": "too few tasks"}
    pa = np.array([s.ka / s.na for s in use])
    pb = np.array([s.kb / s.nb for s in use])
    m = np.array([max(s.na, s.nb) / s.repeats for s in use])
    r = np.array([s.repeats for s in use], float)
    # one repeat's difference, per task, each rate smoothed by half a success as in `gain`: at
    # 1 repeat every observed rate is 0 or 1, and unsmoothed all the spread would count as
    # between tasks (the e2e bench's first look then said no number of repeats would do)
    sa = (np.array([s.ka for s in use]) + 0.5) / (np.array([s.na for s in use]) + 1)
    sb = (np.array([s.kb for s in use]) + 0.5) / (np.array([s.nb for s in use]) + 1)
    within = (sa * (1 - sa) + sb * (1 - sb)) / m
    tau2 = max(0.0, float(np.var(pb - pa, ddof=1) - np.mean(within / r)))
    sw2 = float(np.mean(within))
    need = (abs(target) / (sst.norm.ppf(1 - alpha / 2) + sst.norm.ppf(power))) ** 2 * t
    if need <= tau2:
        return {"repeats": None, "episodes": None, "target": target,
                "note": f"no number of repeats: the tasks' own differences vary too much for {t} tasks"}
    reps = max(1, math.ceil(sw2 / (need - tau2))) if sw2 > 0 else 1
    return {"repeats": reps, "episodes": int(2 * reps * m.sum()), "target": target, "note": None}


# Any: the report's JSON section (numbers, lists, notes)
def section(manifest: RunManifest, records: Sequence[EpisodeRecord]) -> dict[str, Any] | None:
    """What the report says of a sequential run: how it ended, the episodes it used against the
    fixed design's at the same power, and where the repeats went; None for a fixed run."""
    st = manifest.sequential
    if not st or not st.get("rounds"):
        return None
    rounds = st["rounds"]
    looked = [r for r in rounds if r.get("decision")]
    last = looked[-1]["decision"] if looked else None
    repeats: dict[str, int] = {}
    for r in rounds:
        for k, v in r["add"].items():
            repeats[k] = repeats.get(k, 0) + int(v)
    states = task_states(records, st["baseline"], st["build"], repeats)
    ids = {e for r in rounds for e in r["order"]}
    done = {r.episode_id for r in records if r.episode_id in ids and r.outcome != "error"}
    # the fixed design to compare with: one that finds what this run found (the observed
    # difference, when decided), else one that settles the margin that matters (--detect)
    observed = abs(last["diff"]) if last and last.get("diff") else None
    decided = bool(last and last.get("outcome") in ("worse", "better"))
    target = (observed if decided else st.get("detect")) or observed
    fixed = fixed_design(states, target) if target else {"repeats": None, "episodes": None, "target": None,
                                                         "note": "no difference to plan for"}
    outcome = last["outcome"] if last and last.get("final") else "in progress"
    words = {"worse": f"decided: {st['build']} is worse than {st['baseline']}",
             "better": f"decided: {st['build']} is better than {st['baseline']}",
             "equivalent": f"equivalent: the difference lies within +-{100 * (st.get('detect') or 0):.0f} pp",
             "undecided": "undecided: the budget was spent",
             "in progress": "not finished: the run was stopped before its last look"}[outcome]
    return {
        "outcome": outcome, "summary": words, "why": (last or {}).get("why", ""),
        "baseline": st["baseline"], "build": st["build"], "detect": st.get("detect"),
        "diff": (last or {}).get("diff"), "low": (last or {}).get("low"), "high": (last or {}).get("high"),
        "look": (last or {}).get("look"), "looks": len(st.get("looks") or []),
        "nominal_alpha": st.get("nominal_alpha"), "method": st.get("method", METHOD),
        "reference": st.get("reference", REFERENCE), "episodes": len(done),
        # episodes per task-repeat as played (both builds, every instance)
        "budget_episodes": st.get("budget_episodes") or int(round(
            st["schedule"]["budget"] * len(ids) / max(1, sum(repeats.values())))),
        "fixed": fixed, "order_mode": st.get("order_mode"),
        "allocation": [{"task": s.task, "repeats": s.repeats, "baseline": f"{s.ka}/{s.na}",
                        "build": f"{s.kb}/{s.nb}"} for s in states],
        "rounds": [{"round": r["round"], "episodes": len(r["order"]), "added": sum(r["add"].values()),
                    "outcome": (r.get("decision") or {}).get("outcome"),
                    "low": (r.get("decision") or {}).get("low"), "high": (r.get("decision") or {}).get("high")}
                   for r in rounds],
    }
