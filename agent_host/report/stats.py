"""Statistics for run reports (docs/reports.md). Pure functions over records.

Counts are kept per task instance, variant included (`wifi-on` and `wifi-on@verify` are
separate rows). Success (and the comparisons, pass^k and power made from it) counts base
variants only; verify variants feed recognition. The statistical unit is the task: the
instances of one task (its parameter sets and its verify variant) are correlated, so they are
pooled into one cluster before any interval, test or power figure (`cluster_of`). Episodes whose latest attempt is an
`error`, or that a harness budget ended (`exhausted`: context window, reply token cap), are
excluded from every rate and counted apart. On an infeasible task the correct ending
`infeasible_claimed` counts as success, and a `task_complete` there counts as `premature`.
Intervals: intervals.py.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from scipy import stats as sst

from agent_host.config.records import EpisodeRecord
from agent_host.report import detector, intervals

ALPHA, POWER = intervals.ALPHA, intervals.POWER
EXACT_SIGN_FLIP_MAX = 20          # enumerate all 2^n sign patterns up to this many tasks
MONTE_CARLO_DRAWS = 200_000
MONTE_CARLO_SEED = 20240601

# Effective labels: what the stacked bars show (they sum to 100% of counted episodes).
# "infeasible_claimed" here means a *wrong* claim (on a feasible task).
BAR_LABELS = ("success", "premature", "undone", "unrecognised", "infeasible_claimed", "nav_fail")
# success, navigation, recognition_base: base variants only (a verify variant starts at the goal,
# so calling task_complete at once passes it: counted in the headline, "done" at every turn scored
# a third of the shipped suite). recognition_base: did the model call task_complete once it had
# navigated to the goal. Recognition as a detector of "the goal holds" (detector.py): sensitivity,
# verify variants (placed at the goal, does it call task_complete); specificity, base variants (it
# never calls task_complete while the goal does not hold).
RATE_NAMES = ("success", "navigation", "recognition_base", "sensitivity", "specificity", "premature", "undone",
              "unrecognised")
# The variant the headline and everything derived from it (comparisons, pass^k, power) count.
HEADLINE_VARIANT = "base"
EXCLUDED = ("error", "exhausted")           # latest-attempt outcomes kept out of every rate


# --------------------------------------------------------------------------- episodes

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
        if rec.outcome == "infeasible_claimed":
            return "success"
        if rec.outcome == "success":        # task_complete on an infeasible task
            return "premature"
    return rec.outcome


def is_success(rec: EpisodeRecord) -> bool:
    return effective_label(rec) == "success"


def false_alarm(rec: EpisodeRecord) -> bool:
    """Called task_complete while the goal did not hold (on an infeasible task it never does)."""
    label = effective_label(rec)
    return label == "premature" or (rec.complete_step is not None and label != "success")


def goal_ever_true(rec: EpisodeRecord) -> bool:
    return bool(rec.goal_initial or rec.goal_first_step is not None or rec.goal_final
                or rec.outcome in ("success", "undone", "unrecognised") and not rec.infeasible)


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


# --------------------------------------------------------------------------- intervals

def wilson_limits(k: int, n: int, confidence: float = 1 - ALPHA) -> tuple[float, float] | None:
    """intervals.wilson for one count (None when there is nothing to count)."""
    if n <= 0:
        return None
    lo, hi = intervals.wilson(k, n, 1 - confidence)
    return float(lo), float(hi)


def t_interval(values: Sequence[float], confidence: float = 1 - ALPHA,
               bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    """Mean with a t-distribution interval over the values (tasks)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0, "sd": None}
    mean = float(x.mean())
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": 1, "sd": None}
    sd = float(x.std(ddof=1))
    half = float(sst.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds:
        low, high = max(bounds[0], low), min(bounds[1], high)
    return {"mean": mean, "low": low, "high": high, "n": n, "sd": sd}


# --------------------------------------------------------------------------- per task

@dataclass
class InstanceCounts:
    instance: str
    task: str
    variant: str
    infeasible: bool
    n: int = 0                                   # counted episodes
    successes: int = 0
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
        c.labels[effective_label(rec)] += 1
        c.false_alarms += false_alarm(rec)
        if not rec.infeasible and goal_ever_true(rec):
            c.ever_true += 1
            c.success_given_true += ok
        c.by_repeat.append((rec.repeat, ok))
    for rec in errored:
        get(rec).errors += 1
    for c in out.values():
        c.by_repeat.sort()
    return out


def per_instance_counts(c: InstanceCounts, name: str) -> tuple[int, int] | None:
    """One task instance's (numerator, denominator) of a named rate, or None where the rate
    does not apply to that instance."""
    if c.n == 0:
        return None
    if name == "success":
        return (c.successes, c.n) if c.variant == HEADLINE_VARIANT else None
    if name == "navigation":
        return None if c.infeasible or c.variant != "base" else (c.ever_true, c.n)
    if name == "recognition_base":
        if c.infeasible or c.variant != "base" or c.ever_true == 0:
            return None
        return c.success_given_true, c.ever_true
    if name == "sensitivity":        # placed at the goal: task_complete while it holds is a success
        return None if c.infeasible or c.variant != "verify" else (c.successes, c.n)
    if name == "specificity":
        return None if c.variant != "base" else (c.n - c.false_alarms, c.n)
    return c.labels[name], c.n


def task_counts(instances: Sequence[InstanceCounts], name: str) -> tuple[list[tuple[int, int]], int]:
    """Per task (cluster), the (numerator, denominator) of a named rate pooled over the task's
    instances it applies to; and how many instances that was."""
    pooled: dict[str, tuple[int, int]] = {}
    used = 0
    for c in instances:
        kn = per_instance_counts(c, name)
        if kn is None:
            continue
        used += 1
        k, n = pooled.get(c.cluster, (0, 0))
        pooled[c.cluster] = (k + kn[0], n + kn[1])
    return [pooled[t] for t in sorted(pooled)], used


def rate_summary(instances: Sequence[InstanceCounts], name: str) -> dict[str, Any]:
    """Headline of a rate: mean over tasks of each task's rate (its instances pooled), with a
    Korn-Graubard interval over tasks (intervals.py); pooled counts beside it. With a single
    task, the Wilson interval of that task's episodes (method says which)."""
    rows, used = task_counts(instances, name)
    return rows_summary(rows, used)


def rows_summary(rows: Sequence[tuple[int, int]], instances: int | None = None) -> dict[str, Any]:
    """A rate from per-task (numerator, denominator) rows: the mean over tasks with its
    Korn-Graubard interval (Wilson for a single task), pooled counts beside it."""
    rows = [r for r in rows if r[1] > 0]
    instances = len(rows) if instances is None else instances
    k = sum(a for a, _ in rows)
    n = sum(b for _, b in rows)
    out: dict[str, Any] = {"mean": None, "low": None, "high": None, "n_tasks": len(rows),
                           "n_instances": instances, "k": k, "n": n}
    if len(rows) >= 2:
        rates = np.array([a / b for a, b in rows])
        counts = np.array([b for _, b in rows], dtype=float)
        mean, lo, hi = intervals.korn_graubard(rates, counts)
        out.update(mean=float(mean), low=float(lo), high=float(hi), method=intervals.METHOD)
    elif rows:
        w = wilson_limits(k, n)
        out.update(mean=k / n, low=w[0], high=w[1], method="wilson (one task)")
    else:
        out["method"] = "undefined (no task qualifies)"
    return out


def pass_hat_k(instances: Sequence[InstanceCounts], k: int) -> dict[str, Any]:
    """pass^k: per task, do all of the first k repeats (by repeat index) succeed; mean over
    tasks that have at least k counted repeats."""
    vals = [float(all(ok for _, ok in c.by_repeat[:k])) for c in instances if len(c.by_repeat) >= k]
    return {"k": k, "value": float(np.mean(vals)) if vals else None, "n_tasks": len(vals)}


def pass_at_k(instances: Sequence[InstanceCounts], k: int) -> dict[str, Any]:
    """pass@k, unbiased estimator per task 1 - C(n-c, k)/C(n, k), mean over tasks with n >= k."""
    vals = []
    for c in instances:
        if c.n >= k:
            vals.append(1.0 - math.comb(c.n - c.successes, k) / math.comb(c.n, k))
    return {"k": k, "value": float(np.mean(vals)) if vals else None, "n_tasks": len(vals)}


# --------------------------------------------------------------------------- build summary

def build_summary(build: str, records: Sequence[EpisodeRecord], max_k: int | None = None) -> dict[str, Any]:
    """Everything the report says about one build's episodes (all attempts of this build).
    pass^k and pass@k are given for k = 1..max_k (default: this build's most repeats)."""
    sel = select_latest(r for r in records if r.build == build)
    by_instance = instance_counts(sel.counted, sel.errored)
    ilist = [by_instance[inst] for inst in sorted(by_instance)]
    headline_instances = [c for c in ilist if c.variant == HEADLINE_VARIANT]     # pass^k, pass@k: as success
    max_repeats = max((c.n for c in ilist), default=0)
    rates = {name: rate_summary(ilist, name) for name in RATE_NAMES}
    labels = {k: 0 for k in BAR_LABELS}
    for c in ilist:
        for k, v in c.labels.items():
            labels[k] += v
    total = sum(labels.values())
    return {
        "build": build,
        "tasks": len({c.cluster for c in ilist if c.n}),
        "instances": sum(1 for c in ilist if c.n),
        "episodes": len(sel.counted),
        "repeats_max": max_repeats,
        "repeats_min": min((c.n for c in ilist if c.n), default=0),
        "errors": {"episodes": len(sel.errored), "attempts": len(sel.error_attempts),
                   "retried_ok": len(sel.error_attempts) - len(sel.errored)},
        "exhausted": exhausted_summary(sel.exhausted),
        "rates": rates,
        "balanced": detector.balanced(rates),
        "pass_hat_k": [pass_hat_k(headline_instances, k) for k in range(1, (max_k or max_repeats) + 1)],
        "pass_at_k": [pass_at_k(headline_instances, k) for k in range(1, (max_k or max_repeats) + 1)],
        "outcomes": {k: {"count": v, "fraction": v / total if total else None} for k, v in labels.items()},
        "per_task": {c.instance: instance_row(c) for c in ilist},
    }


def exhausted_summary(recs: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """Episodes a harness budget ended: how many, of which kind, at which step and size."""
    rows = []
    for r in recs:
        e = r.exhausted
        rows.append({"episode_id": r.episode_id, "instance": instance_of(r), "kind": e.kind if e else "context",
                     "step": e.step if e else r.steps + 1, "tokens": e.tokens if e else None,
                     "limit": e.limit if e else None})
    kinds: dict[str, int] = {}
    for x in rows:
        kinds[x["kind"]] = kinds.get(x["kind"], 0) + 1
    return {"episodes": len(rows), "kinds": kinds, "list": rows}


def instance_row(c: InstanceCounts) -> dict[str, Any]:
    w = wilson_limits(c.successes, c.n)
    return {"task": c.task, "variant": c.variant, "infeasible": c.infeasible, "k": c.successes,
            "n": c.n, "rate": c.rate, "low": w[0] if w else None, "high": w[1] if w else None,
            "errors": c.errors}


# --------------------------------------------------------------------------- comparisons

def sign_flip_test(diffs: Sequence[float], seed: int = MONTE_CARLO_SEED) -> dict[str, Any]:
    """Two-sided paired permutation test: under H0 each task's difference is as likely to have
    the opposite sign. Statistic |mean|. Zero differences are dropped (they do not change
    |mean| under any flip, so the p value is unchanged). Exact enumeration of all 2^m sign
    patterns when m <= 20 non-zero differences, else Monte Carlo with a fixed seed."""
    d = np.asarray([x for x in diffs if abs(x) > 1e-12], dtype=float)
    m = len(d)
    if m == 0:
        return {"p": 1.0, "method": "exact (all differences zero)", "n_nonzero": 0, "patterns": 1}
    observed = abs(d.sum())
    tol = 1e-9
    if m <= EXACT_SIGN_FLIP_MAX:
        total = 1 << m
        hits = 0
        bits = np.arange(m, dtype=np.int64)
        chunk = 1 << 15
        for start in range(0, total, chunk):
            idx = np.arange(start, min(total, start + chunk), dtype=np.int64)
            signs = ((idx[:, None] >> bits) & 1) * 2 - 1
            hits += int((np.abs(signs @ d) >= observed - tol).sum())
        return {"p": hits / total, "method": f"exact ({total} sign patterns)", "n_nonzero": m,
                "patterns": total}
    rng = np.random.default_rng(seed)
    hits = 0
    left = MONTE_CARLO_DRAWS
    while left:
        n = min(left, 20_000)
        signs = rng.integers(0, 2, size=(n, m)) * 2 - 1
        hits += int((np.abs(signs @ d) >= observed - tol).sum())
        left -= n
    return {"p": (hits + 1) / (MONTE_CARLO_DRAWS + 1),
            "method": f"Monte Carlo ({MONTE_CARLO_DRAWS} draws, seed {seed})", "n_nonzero": m,
            "patterns": MONTE_CARLO_DRAWS}


def mcnemar_exact(base: Sequence[EpisodeRecord], other: Sequence[EpisodeRecord]) -> dict[str, Any] | None:
    """Exact McNemar over episodes that pair one to one (same task instance, repeat, seed);
    None when no episode pairs or a pairing key is not unique."""
    def keyed(recs: Sequence[EpisodeRecord]) -> dict[tuple, EpisodeRecord] | None:
        out: dict[tuple, EpisodeRecord] = {}
        for r in recs:
            key = (instance_of(r), r.repeat, r.seed)
            if key in out:
                return None
            out[key] = r
        return out
    a, b = keyed(base), keyed(other)
    if a is None or b is None:
        return None
    common = sorted(set(a) & set(b))
    if not common:
        return None
    n10 = sum(1 for k in common if is_success(a[k]) and not is_success(b[k]))   # baseline only
    n01 = sum(1 for k in common if not is_success(a[k]) and is_success(b[k]))   # build only
    n11 = sum(1 for k in common if is_success(a[k]) and is_success(b[k]))
    n00 = len(common) - n10 - n01 - n11
    disc = n10 + n01
    p = float(sst.binomtest(n01, disc, 0.5).pvalue) if disc else 1.0
    return {"p": p, "pairs": len(common), "baseline_only": n10, "build_only": n01,
            "both": n11, "neither": n00, "unpaired": len(a) + len(b) - 2 * len(common),
            "method": "exact binomial on discordant pairs"}


def min_detectable_effect(sd: float | None, n: int, alpha: float = ALPHA, power: float = POWER) -> dict[str, Any]:
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
    cannot = {"value": None, "method": method, "approx": approx,
              "note": "over 100 pp: this design cannot detect any difference in success rate"}
    limit = 1.0          # a difference of success rates cannot exceed 100 pp
    if pw(limit) < power:
        return cannot
    delta = float(brentq(lambda x: pw(x) - power, 0.0, limit, xtol=1e-10))
    return {"value": delta, "method": method, "approx": approx, "note": None}


def compare(baseline: str, build: str, records: Sequence[EpisodeRecord],
            target: float = 0.10) -> dict[str, Any]:
    """Build vs baseline in success over the tasks both have counted episodes for, base variants
    only (as the headline), each task's instances pooled (the instances both builds have), so the
    paired unit is the task (cluster_of).
    The interval of the mean difference is MOVER of the two builds' Korn-Graubard limits
    (intervals.py); the sign-flip test, won/lost/tied and the MDE are over tasks too;
    `per_task` keeps each instance's difference for the per-task table. `needed` says what
    design would detect a difference of `target`."""
    headline = [r for r in records if r.variant == HEADLINE_VARIANT]     # the success rate's episodes
    sa = select_latest(r for r in headline if r.build == baseline)
    sb = select_latest(r for r in headline if r.build == build)
    ia, ib = instance_counts(sa.counted), instance_counts(sb.counted)
    common = sorted(inst for inst in set(ia) & set(ib) if ia[inst].n and ib[inst].n)
    groups = by_task(ia, common)
    pooled = [(sum(ia[i].successes for i in names), sum(ia[i].n for i in names),
               sum(ib[i].successes for i in names), sum(ib[i].n for i in names)) for names in groups.values()]
    diffs = [kb / nb - ka / na for ka, na, kb, nb in pooled]
    t = t_interval(diffs)
    mean, low, high = t["mean"], None, None
    if len(pooled) >= 2:
        ka, na, kb, nb = (np.array(col, dtype=float) for col in zip(*pooled))
        d, lo, hi = intervals.mover_difference(ka / na, na, kb / nb, nb)
        mean, low, high = float(d), float(lo), float(hi)
    won = sum(1 for x in diffs if x > 1e-12)
    lost = sum(1 for x in diffs if x < -1e-12)
    mde = min_detectable_effect(t["sd"], len(pooled))
    return {
        "build": build, "baseline": baseline, "n_tasks": len(pooled), "n_instances": len(common),
        "only_baseline": sorted(set(ia) - set(ib)), "only_build": sorted(set(ib) - set(ia)),
        "mean_diff": mean, "low": low, "high": high, "sd": t["sd"], "method": intervals.DIFF_METHOD,
        "per_task": {inst: ib[inst].rate - ia[inst].rate for inst in common},
        "sign_flip": (sign_flip_test(diffs) if diffs else
                      {"p": None, "method": "no common task instances", "n_nonzero": 0, "patterns": 0}),
        "mcnemar": mcnemar_exact(sa.counted, sb.counted),
        "won": won, "lost": lost, "tied": len(diffs) - won - lost,
        "mde": mde,
        "needed": design_needed(ia, ib, common, t["sd"], target),
    }


def by_task(instances: dict[str, InstanceCounts], names: Sequence[str]) -> dict[str, list[str]]:
    """The instances `names` grouped by the task they belong to, in sorted task order."""
    out: dict[str, list[str]] = defaultdict(list)
    for inst in names:
        out[instances[inst].cluster].append(inst)
    return {t: out[t] for t in sorted(out)}


# --------------------------------------------------------------------------- power planning

PLAN_RATE = 0.5          # the baseline success rate a plan assumes (the worst case for variance)
PLAN_ICC = 0.3           # how much of a task's outcome variance is the task, not the episode
PLAN_TAU = 0.10          # SD over tasks of the true per-task difference (builds differ unevenly)


def planned_sd(repeats: int, rate: float = PLAN_RATE, icc: float = PLAN_ICC, tau: float = PLAN_TAU) -> float:
    """SD of a per-task paired difference before any data: each build's per-task rate carries
    episode noise rate(1-rate)(1-icc)/repeats (the part of the Bernoulli variance left once the
    task is fixed, under a Beta task distribution with this ICC), and the true difference
    itself varies over tasks with SD tau. Pairing by task removes the shared task difficulty."""
    return math.sqrt(2 * rate * (1 - rate) * (1 - icc) / repeats + tau ** 2)


def plan(tasks: int, repeats: int, rate: float = PLAN_RATE, icc: float = PLAN_ICC,
         tau: float = PLAN_TAU, instances: float = 1.0) -> dict[str, Any]:
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
                tau: float = PLAN_TAU, instances: float = 1.0) -> dict[str, Any]:
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
                  sd: float | None, target: float, max_repeats: int = 100, max_tasks: int = 10_000) -> dict[str, Any]:
    """What would detect a true difference of `target` at 80% power: tasks at this run's
    repeats (observed SD of differences), and repeats at this run's tasks (the SD split into
    episode noise, which falls with repeats, and the spread of true differences over tasks,
    which does not). The noise is that of the paired difference: episodes pair by repeat
    index (same seed and setup on both builds), so it holds both builds' noise and whatever
    the pairing shares."""
    groups = by_task(ia, common)
    n = len(groups)
    out: dict[str, Any] = {"target": target, "tasks": None, "repeats": None, "note": None}
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
