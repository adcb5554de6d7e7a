"""Power: the smallest difference in success a design detects (a paired t test over tasks, at
80% power), planned before any data (`plan`, `plan_needed`: the planning assumptions below) or
from a run's own spread (`design_needed`, `min_detectable_effect`)."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats as sst

from agent_host.report.intervals import ALPHA, POWER
from agent_host.report.parts import MdePart, NeededPart, PlanPart
from agent_host.report.selection import InstanceCounts, by_task

def min_detectable_effect(sd: float | None, n: int, alpha: float = ALPHA, power: float = POWER) -> MdePart:
    """Smallest true mean paired difference a two-sided paired t test over n tasks detects
    with the given power, taking the observed SD of the differences as the truth. Solved
    exactly with the noncentral t distribution."""
    method = (f"paired t test over tasks, alpha {alpha}, power {power}, observed SD of "
              "per-task differences, noncentral t")
    if n < 2 or sd is None or sd <= 0:
        why = "fewer than 2 tasks" if n < 2 else "per-task differences have no spread"
        return {"value": None, "method": method, "note": f"not estimable: {why}"}
    df = n - 1
    crit = sst.t.ppf(1 - alpha / 2, df)

    def pw(delta: float) -> float:
        ncp = delta * math.sqrt(n) / sd
        p = float(sst.nct.sf(crit, df, ncp) + sst.nct.cdf(-crit, df, ncp))
        return p if math.isfinite(p) else float(ncp > crit)   # nct can fail far in the tail

    from scipy.optimize import brentq
    approx = float((crit + sst.t.ppf(power, df)) * sd / math.sqrt(n))
    cannot: MdePart = {"value": None, "method": method, "approx": approx,
              "note": "over 100 pp: this design cannot detect any difference in success rate"}
    limit = 1.0          # a difference of success rates cannot exceed 100 pp
    if pw(limit) < power:
        return cannot
    delta = float(brentq(lambda x: pw(x) - power, 0.0, limit, xtol=1e-10))
    return {"value": delta, "method": method, "approx": approx, "note": None}


PLAN_RATE = 0.5          # the baseline success rate a plan assumes (the worst case for variance)


PLAN_ICC = 0.3           # how much of a task's outcome variance is the task, not the episode


PLAN_TAU = 0.10          # SD over tasks of the true per-task difference (builds differ unevenly)


def planned_sd(repeats: float, rate: float = PLAN_RATE, icc: float = PLAN_ICC, tau: float = PLAN_TAU) -> float:
    """SD of a per-task paired difference before any data: each build's per-task rate carries
    episode noise rate(1-rate)(1-icc)/repeats (the part of the Bernoulli variance left once the
    task is fixed, under a Beta task distribution with this ICC), and the true difference
    itself varies over tasks with SD tau. Pairing by task removes the shared task difficulty."""
    return math.sqrt(2 * rate * (1 - rate) * (1 - icc) / repeats + tau ** 2)


def plan(tasks: int, repeats: int, rate: float = PLAN_RATE, icc: float = PLAN_ICC,
         tau: float = PLAN_TAU, instances: float = 1.0) -> PlanPart:
    """The minimum detectable difference of a planned comparison (tasks x repeats per build;
    `instances`: task instances per task, parameter sets and variants, on average: each
    repeats, so a task's rate rests on instances x repeats episodes)."""
    sd = planned_sd(repeats * instances, rate, icc, tau)
    mde = min_detectable_effect(sd, tasks)
    return {"tasks": tasks, "repeats": repeats, "instances": instances,
            "assumed": {"rate": rate, "icc": icc, "tau": tau},
            "sd": sd, "mde": mde,
            "by_repeats": {r: min_detectable_effect(planned_sd(r * instances, rate, icc, tau), tasks)["value"]
                           for r in (1, 3, 5, 10)},
            "by_tasks": {t: min_detectable_effect(sd, t)["value"] for t in (8, 20, 60, 100)}}


def fewest(detects: Callable[[int], bool], top: int, start: int = 2) -> int | None:
    """The smallest n in start..top with detects(n), for a detects that only turns true as n
    grows (tasks start at 2, the fewest a paired t test takes; repeats at 1)."""
    if not detects(top):
        return None
    lo, hi = start - 1, top
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if detects(mid) else (mid, hi)
    return hi


def plan_needed(tasks: int, repeats: int, target: float, rate: float = PLAN_RATE, icc: float = PLAN_ICC,
                tau: float = PLAN_TAU, instances: float = 1.0) -> NeededPart:
    """Under the planning assumptions: tasks (at these repeats) and repeats (at these tasks)
    that detect a true difference of `target` with 80% power."""
    def ok(sd: float, n: int) -> bool:
        v = min_detectable_effect(sd, n)["value"]
        return v is not None and v <= target
    sd = planned_sd(repeats * instances, rate, icc, tau)
    return {"target": target,
            "tasks": fewest(lambda t: ok(sd, t), 10_000),
            "repeats": fewest(lambda r: ok(planned_sd(r * instances, rate, icc, tau), tasks), 100, start=1)
            if tasks >= 2 else None}


def paired_noise(ia: dict[str, InstanceCounts], ib: dict[str, InstanceCounts], common: Sequence[str]) -> float:
    """Within-task variance of one repeat's paired difference (build minus baseline success,
    episodes paired by repeat index), pooled over the tasks with at least two pairs; 0 when
    none has (one repeat: the noise cannot be told from the spread between tasks)."""
    num = dof = 0.0
    for inst in common:
        a, b = dict(ia[inst].by_repeat), dict(ib[inst].by_repeat)
        d = [float(b[r]) - float(a[r]) for r in sorted(set(a) & set(b))]
        if len(d) >= 2:
            num += float(np.var(d, ddof=1)) * (len(d) - 1)
            dof += len(d) - 1
    return num / dof if dof else 0.0


def design_needed(ia: dict[str, InstanceCounts], ib: dict[str, InstanceCounts], common: Sequence[str],
                  sd: float | None, target: float, max_repeats: int = 100, max_tasks: int = 10_000) -> NeededPart:
    """What would detect a true difference of `target` at 80% power: tasks at this run's
    repeats (observed SD of differences), and repeats at this run's tasks (the SD split into
    episode noise, which falls with repeats, and the spread of true differences over tasks,
    which does not). The noise is that of the paired difference: episodes pair by repeat
    index (same seed and setup on both builds), so it holds both builds' noise and whatever
    the pairing shares."""
    groups = by_task(ia, common)
    n = len(groups)
    out: NeededPart = {"target": target, "tasks": None, "repeats": None, "note": None}
    if n < 2 or sd is None or sd <= 0:
        out["note"] = "not estimable: fewer than 2 tasks or no spread in the differences"
        return out
    def detects(t: int) -> bool:
        v = min_detectable_effect(sd, t)["value"]
        return v is not None and v <= target
    out["tasks"] = fewest(detects, max_tasks)
    # episode pairs per task now, and per repeat (a task's instances each add one per repeat)
    pairs = float(np.mean([sum(min(ia[inst].n, ib[inst].n) for inst in names) for names in groups.values()]))
    per_repeat = float(np.mean([len(names) for names in groups.values()]))
    per_pair = paired_noise(ia, ib, common)
    between = max(sd ** 2 - per_pair / pairs, 0.0)
    for r in range(1, max_repeats + 1):
        sd_r = math.sqrt(between + per_pair / (r * per_repeat))
        if sd_r > 0 and (v := min_detectable_effect(sd_r, n)["value"]) is not None and v <= target:
            out["repeats"] = r
            break
    if out["repeats"] is None:
        out["note"] = (f"no number of repeats up to {max_repeats} reaches {100 * target:.0f} pp with {n} tasks: "
                       "the differences vary between tasks; add tasks")
    return out
