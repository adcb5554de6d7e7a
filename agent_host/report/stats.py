"""Statistics for run reports (docs/reports.md). Pure functions over records.

Counts are kept per task instance, variant included (`wifi-on` and `wifi-on@verify` are
separate rows). Success (and the comparisons, pass^k and power made from it) counts base
variants only; verify variants feed recognition. The statistical unit is the task: the
instances of one task (its parameter sets and its verify variant) are correlated, so they are
pooled into one cluster before any interval, test or power figure (`cluster_of`). Episodes whose latest attempt is an
`error`, or that a harness budget ended (`exhausted`: context window, reply token cap), are
excluded from every rate and counted apart. On an infeasible task the correct ending
`infeasible_claimed` counts as success, and a `task_complete` there counts as `premature`.
Which episodes count and their tallies: selection.py; power and planning: power.py; speed:
speed.py; intervals: intervals.py.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import stats as sst

from agent_host.config.records import EpisodeRecord
from agent_host.report import detector, intervals
from agent_host.report.parts import (BuildSummaryPart, ComparisonPart, ExhaustedEpisodePart, ExhaustedPart,
                                     InstanceRowPart, McNemarPart, PassKPart, RatePart, SignFlipPart, TInterval)
from agent_host.report.power import design_needed, min_detectable_effect
from agent_host.report.selection import (BAR_LABELS, HEADLINE_VARIANT, InstanceCounts, by_task, instance_counts,
                                         instance_of, is_success, select_latest)

ALPHA, POWER = intervals.ALPHA, intervals.POWER
EXACT_SIGN_FLIP_MAX = 20          # enumerate all 2^n sign patterns up to this many tasks
MONTE_CARLO_DRAWS = 200_000
MONTE_CARLO_SEED = 20240601

# success, navigation, recognition_base: base variants only (a verify variant starts at the goal,
# so calling task_complete at once passes it: counted in the headline, "done" at every turn scored
# a third of the shipped suite). recognition_base: did the model call task_complete once it had
# navigated to the goal. Recognition as a detector of "the goal holds" (detector.py): sensitivity,
# verify variants (placed at the goal, does it call task_complete); specificity, base variants (it
# never calls task_complete while the goal does not hold).
RATE_NAMES = ("success", "navigation", "recognition_base", "sensitivity", "specificity", "premature", "undone",
              "collateral", "unrecognised")


# --------------------------------------------------------------------------- intervals

def wilson_limits(k: int, n: int, confidence: float = 1 - ALPHA) -> tuple[float, float] | None:
    """intervals.wilson for one count (None when there is nothing to count)."""
    if n <= 0:
        return None
    lo, hi = intervals.wilson(k, n, 1 - confidence)
    return float(lo), float(hi)


def t_interval(values: Sequence[float], confidence: float = 1 - ALPHA,
               bounds: tuple[float, float] | None = None) -> TInterval:
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





def per_instance_counts(c: InstanceCounts, name: str) -> tuple[int, int] | None:
    """One task instance's (numerator, denominator) of a named rate, or None where the rate
    does not apply to that instance."""
    if c.n == 0:
        return None
    if name == "success":
        return (c.successes, c.n) if c.variant == HEADLINE_VARIANT else None
    if name == "navigation":
        return None if c.infeasible or c.variant != "base" or not c.feasible else (c.ever_true, c.feasible)
    if name == "recognition_base":
        if c.infeasible or c.variant != "base" or c.ever_true == 0:
            return None
        return c.success_given_true, c.ever_true
    if name == "sensitivity":        # placed at the goal: task_complete while it holds (detector.hit)
        return None if c.infeasible or c.variant != "verify" else (c.hits, c.n)
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


def rate_summary(instances: Sequence[InstanceCounts], name: str) -> RatePart:
    """Headline of a rate: mean over tasks of each task's rate (its instances pooled), with a
    Korn-Graubard interval over tasks (intervals.py); pooled counts beside it. With a single
    task, the Wilson interval of that task's episodes (method says which)."""
    rows, used = task_counts(instances, name)
    return rows_summary(rows, used)


def rows_summary(rows: Sequence[tuple[int, int]], instances: int | None = None) -> RatePart:
    """A rate from per-task (numerator, denominator) rows: the mean over tasks with its
    Korn-Graubard interval (Wilson for a single task), pooled counts beside it."""
    rows = [r for r in rows if r[1] > 0]
    k = sum(a for a, _ in rows)
    n = sum(b for _, b in rows)
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    if len(rows) >= 2:
        rates = np.array([a / b for a, b in rows])
        counts = np.array([b for _, b in rows], dtype=float)
        m, lo, hi = intervals.korn_graubard(rates, counts)
        mean, low, high, method = float(m), float(lo), float(hi), intervals.METHOD
    elif rows:
        w = wilson_limits(k, n)
        assert w is not None   # one task with counted episodes: n > 0
        mean, low, high, method = k / n, w[0], w[1], "wilson (one task)"
    else:
        method = "undefined (no task qualifies)"
    # replay.json writes this dict as it is: its keys keep this order
    return {"mean": mean, "low": low, "high": high, "n_tasks": len(rows),
            "n_instances": len(rows) if instances is None else instances, "k": k, "n": n, "method": method}


def pass_hat_k(instances: Sequence[InstanceCounts], k: int) -> PassKPart:
    """pass^k: per task, do all of the first k repeats (by repeat index) succeed; mean over
    tasks that have at least k counted repeats."""
    vals = [float(all(ok for _, ok in c.by_repeat[:k])) for c in instances if len(c.by_repeat) >= k]
    return {"k": k, "value": float(np.mean(vals)) if vals else None, "n_tasks": len(vals)}


def pass_at_k(instances: Sequence[InstanceCounts], k: int) -> PassKPart:
    """pass@k, unbiased estimator per task 1 - C(n-c, k)/C(n, k), mean over tasks with n >= k."""
    vals = []
    for c in instances:
        if c.n >= k:
            vals.append(1.0 - math.comb(c.n - c.successes, k) / math.comb(c.n, k))
    return {"k": k, "value": float(np.mean(vals)) if vals else None, "n_tasks": len(vals)}


# --------------------------------------------------------------------------- build summary

def build_summary(build: str, records: Sequence[EpisodeRecord], max_k: int | None = None) -> BuildSummaryPart:
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


def exhausted_summary(recs: Sequence[EpisodeRecord]) -> ExhaustedPart:
    """Episodes a harness budget ended: how many, of which kind, at which step and size."""
    rows: list[ExhaustedEpisodePart] = []
    for r in recs:
        e = r.exhausted
        rows.append({"episode_id": r.episode_id, "instance": instance_of(r), "kind": e.kind if e else "context",
                     "step": e.step if e else r.steps + 1, "tokens": e.tokens if e else None,
                     "limit": e.limit if e else None})
    kinds: dict[str, int] = {}
    for x in rows:
        kinds[x["kind"]] = kinds.get(x["kind"], 0) + 1
    return {"episodes": len(rows), "kinds": kinds, "list": rows}


def instance_row(c: InstanceCounts) -> InstanceRowPart:
    w = wilson_limits(c.successes, c.n)
    return {"task": c.task, "variant": c.variant, "infeasible": c.infeasible, "k": c.successes,
            "n": c.n, "rate": c.rate, "low": w[0] if w else None, "high": w[1] if w else None,
            "errors": c.errors}


# --------------------------------------------------------------------------- comparisons

def sign_flip_test(diffs: Sequence[float], seed: int = MONTE_CARLO_SEED) -> SignFlipPart:
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


def mcnemar_exact(base: Sequence[EpisodeRecord], other: Sequence[EpisodeRecord]) -> McNemarPart | None:
    """Exact McNemar over episodes that pair one to one (same task instance, repeat, seed);
    None when no episode pairs or a pairing key is not unique."""
    def keyed(recs: Sequence[EpisodeRecord]) -> dict[tuple[str, int, int], EpisodeRecord] | None:
        out: dict[tuple[str, int, int], EpisodeRecord] = {}
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




def compare(baseline: str, build: str, records: Sequence[EpisodeRecord],
            target: float = 0.10) -> ComparisonPart:
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
        "per_task": {inst: ib[inst].successes / ib[inst].n - ia[inst].successes / ia[inst].n for inst in common},
        "sign_flip": (sign_flip_test(diffs) if diffs else
                      {"p": None, "method": "no common task instances", "n_nonzero": 0, "patterns": 0}),
        "mcnemar": mcnemar_exact(sa.counted, sb.counted),
        "won": won, "lost": lost, "tied": len(diffs) - won - lost,
        "mde": mde,
        "needed": design_needed(ia, ib, common, t["sd"], target),
    }
