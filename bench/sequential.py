"""The sequential comparison (`run --until-decided`) by seeded simulation, against the fixed design.

A simulated pair of builds: T tasks of m instances (bench/coverage.py's correlated instances:
each instance shares its task's Beta(mu, kappa) probability with chance `within`, else draws
its own), build B = A degraded by delta (B's probabilities A's times 1 - delta / mu, so the true
mean difference is -delta). The sequential rule of agent_host/report/sequential.py runs as
implemented: a first pass, then rounds allocated by `allocate`, a look after each, stopping
when the repeated confidence interval excludes 0, lies within +-detect, or the budget is spent.

Per cell: the probability of a wrong decision (a sign when delta = 0; the wrong sign, or
"equivalent" when |delta| >= detect, otherwise), the coverage of the interval reported at the
stopping time, the power (deciding "worse" when delta > 0), the expected episodes, and, at
delta = 10 pp, the episodes of the fixed design (every task the same repeats, the report's
MOVER interval at 95%) that reaches the same power, interpolated over its repeats.

Grid: tasks {5, 8, 20, 60} x ICC {0.1, 0.5} x mean {0.5, 0.9} x delta {0, 5, 10, 20} pp x
instances {1 alone, 4 with within 0.9}.

    python bench/sequential.py               # the grid, 2000 runs per cell
    python bench/sequential.py --sims 300    # quicker, noisier
    python bench/sequential.py --json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent_host.report import intervals as iv  # noqa: E402
from agent_host.report import sequential as sq  # noqa: E402

TASKS = (5, 8, 20, 60)
KAPPAS = (9.0, 1.0)
MEANS = (0.5, 0.9)
DELTAS = (0.0, 0.05, 0.10, 0.20)
INSTANCES = ((1, 1.0), (4, 0.9))
DETECT = 0.10
FIXED_MAX = 40              # the fixed design's repeats are scanned up to this


@dataclass
class SeqCell:
    tasks: int
    instances: int
    within: float
    kappa: float
    mu: float
    delta: float
    budget_repeats: float
    wrong: float              # P(wrong decision)
    coverage: float           # of the interval at the stopping time
    power: float              # P(decided worse)
    equivalent: float         # P(decided equivalent)
    undecided: float
    episodes: float           # expected episodes (both builds)
    budget_episodes: int
    fixed_repeats: float | None = None   # the fixed design's repeats at the same power (delta 10 pp)
    fixed_episodes: float | None = None
    ratio: float | None = None


def probabilities(rng, sims, tasks, instances, mu, kappa, within):
    a, b = mu * kappa, (1 - mu) * kappa
    own = rng.beta(a, b, size=(sims, tasks, 1))
    fresh = rng.beta(a, b, size=(sims, tasks, instances))
    return np.where(rng.random((sims, tasks, instances)) < within, own, fresh)


def draw(rng, sims, tasks, instances, within, mu, kappa, delta, repeats):
    """Cumulative successes (sims, tasks, repeats + 1) of A and B, each repeat all instances."""
    pa = probabilities(rng, sims, tasks, instances, mu, kappa, within)
    pb = pa * (1 - delta / mu)
    xa = rng.binomial(1, np.repeat(pa[..., None], repeats, -1)).sum(2)
    xb = rng.binomial(1, np.repeat(pb[..., None], repeats, -1)).sum(2)
    z = np.zeros((sims, tasks, 1), int)
    return np.concatenate([z, xa.cumsum(-1)], -1), np.concatenate([z, xb.cumsum(-1)], -1)


def run_sequential(ca, cb, instances: int, schedule: sq.Schedule, detect: float | None):
    """(decision code, low, high, task-repeats used) per simulated run, the rule as run."""
    sims, tasks, top = ca.shape[0], ca.shape[1], ca.shape[2] - 1
    n = np.full((sims, tasks), schedule.first)
    code = np.zeros(sims, int)
    lo = np.full(sims, np.nan)
    hi = np.full(sims, np.nan)
    used = np.zeros(sims, int)
    active = np.ones(sims, bool)
    a = schedule.nominal_alpha
    looks = schedule.looks
    for j, done in enumerate(looks):
        idx = np.nonzero(active)[0]
        if not len(idx):
            break
        nn = n[idx]
        ka = np.take_along_axis(ca[idx], nn[..., None], -1)[..., 0]
        kb = np.take_along_axis(cb[idx], nn[..., None], -1)[..., 0]
        na = nn * instances
        _, l, h = sq.interval(ka, na, kb, na, a)
        c = sq.decide(l, h, detect)
        last = j == len(looks) - 1
        stop = (c != 0) | last
        s = idx[stop]
        code[s], lo[s], hi[s], used[s] = c[stop], l[stop], h[stop], done
        active[s] = False
        go = idx[~stop]
        if len(go):
            size = looks[j + 1] - done
            add = sq.allocate(ka[~stop], na[~stop], kb[~stop], na[~stop], instances, size, cap=top)
            n[go] += add
    return code, lo, hi, used


def fixed_power(ca, cb, instances: int, repeats: int) -> float:
    """Power of the fixed design (every task `repeats`, the report's MOVER at 95%)."""
    ka, kb = ca[..., repeats], cb[..., repeats]
    na = np.full(ka.shape, float(repeats * instances))
    _, _, hi = iv.mover_difference(ka / na, na, kb / na, na)
    return float(np.mean(hi < 0))


def seq_cell(rng, sims, tasks, instances, within, mu, kappa, delta, budget_repeats, first, detect,
             compare_fixed: bool, round_share: float = sq.ROUND_SHARE) -> SeqCell:
    schedule = sq.Schedule.make(tasks, first, budget_repeats, round_share)
    top = int(budget_repeats * 4) + first
    ca, cb = draw(rng, sims, tasks, instances, within, mu, kappa, delta, max(top, FIXED_MAX if compare_fixed else 0))
    code, lo, hi, used = run_sequential(ca[..., :top + 1], cb[..., :top + 1], instances, schedule, detect)
    truth = -delta
    covered = (lo <= truth + 1e-12) & (truth - 1e-12 <= hi)
    if delta == 0:
        wrong = np.isin(code, (1, 2))
    else:
        wrong = (code == 2) | ((code == 3) & (detect is not None and delta >= detect - 1e-12))
    per = 2 * instances
    cell = SeqCell(tasks, instances, within, kappa, mu, delta, budget_repeats,
                   wrong=float(wrong.mean()), coverage=float(covered.mean()), power=float((code == 1).mean()),
                   equivalent=float((code == 3).mean()), undecided=float((code == 0).mean()),
                   episodes=float(used.mean() * per), budget_episodes=schedule.budget * per)
    if compare_fixed and cell.power >= 0.5:
        prev_r, prev_p = 0, 0.0
        for r in range(1, FIXED_MAX + 1):
            p = fixed_power(ca, cb, instances, r)
            if p >= cell.power:
                frac = (cell.power - prev_p) / (p - prev_p) if p > prev_p else 1.0
                cell.fixed_repeats = prev_r + frac * (r - prev_r)
                cell.fixed_episodes = cell.fixed_repeats * tasks * per
                cell.ratio = cell.episodes / cell.fixed_episodes
                break
            prev_r, prev_p = r, p
    return cell


def grid(sims: int, seed: int = 20261220, tasks=TASKS, kappas=KAPPAS, means=MEANS, deltas=DELTAS,
         instances=INSTANCES, budget_repeats: float = sq.BUDGET_REPEATS, first: int = sq.FIRST_REPEATS,
         detect: float | None = DETECT, compare_fixed: bool = True,
         round_share: float = sq.ROUND_SHARE) -> list[SeqCell]:
    rng = np.random.default_rng(seed)
    return [seq_cell(rng, sims, t, m, w, mu, k, d, budget_repeats, first, detect,
                     compare_fixed and abs(d - 0.10) < 1e-9, round_share)
            for (m, w), k, mu, t, d in itertools.product(instances, kappas, means, tasks, deltas)]


def summary(cells: list[SeqCell]) -> dict:
    nulls = [c for c in cells if c.delta == 0]
    ratios = [c for c in cells if c.ratio is not None]
    return {
        "cells": len(cells),
        "wrong_max_null": max(c.wrong for c in nulls),
        "wrong_max": max(c.wrong for c in cells),
        "coverage_min": min(c.coverage for c in cells),
        "coverage_below_93": [asdict(c) for c in cells if c.coverage < 0.93],
        "wrong_null_over_5": [asdict(c) for c in nulls if c.wrong > 0.05],
        "ratio_cells": len(ratios),
        "ratio_mean": float(np.mean([c.ratio for c in ratios])) if ratios else None,
        "ratio_max": max((c.ratio for c in ratios), default=None),
        "ratio_min": min((c.ratio for c in ratios), default=None),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sims", type=int, default=2000, help="simulated runs per cell (default 2000)")
    ap.add_argument("--seed", type=int, default=20261220)
    ap.add_argument("--budget", type=float, default=sq.BUDGET_REPEATS,
                    help=f"budget in repeats of every task (default {sq.BUDGET_REPEATS})")
    ap.add_argument("--first", type=int, default=sq.FIRST_REPEATS, help="first-pass repeats")
    ap.add_argument("--round", type=float, default=sq.ROUND_SHARE, help="task-repeats per round / tasks")
    ap.add_argument("--detect", type=float, default=DETECT, help="equivalence margin (0: none)")
    ap.add_argument("--tasks", default=",".join(map(str, TASKS)))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    cells = grid(args.sims, args.seed, tasks=tuple(int(x) for x in args.tasks.split(",")),
                 budget_repeats=args.budget, first=args.first, detect=args.detect or None,
                 round_share=args.round)
    s = summary(cells)
    s["seconds"] = time.monotonic() - t0
    if args.json:
        print(json.dumps({"summary": s, "cells": [asdict(c) for c in cells]}, indent=1))
    else:
        print("Sequential rule: % wrong decision / % coverage at stop / % worse / % equiv / % undecided /"
              " mean episodes of budget | fixed design at equal power (delta 10 pp)")
        print("   T  m within ICC  mean delta | wrong  cover  worse  equiv  undec | episodes/budget | fixed eps  ratio")
        for c in cells:
            fx = (f"{c.fixed_episodes:8.0f}  {c.ratio:5.2f}" if c.ratio is not None else "       -      -")
            print(f"  {c.tasks:3d} {c.instances:2d} {c.within:5.2f} {1 / (1 + c.kappa):4.2f} {c.mu:5.2f} {c.delta:5.2f} |"
                  f" {100 * c.wrong:5.1f} {100 * c.coverage:6.1f} {100 * c.power:6.1f} {100 * c.equivalent:6.1f}"
                  f" {100 * c.undecided:6.1f} | {c.episodes:7.0f}/{c.budget_episodes:<7d} | {fx}")
        print(f"\nWrong decisions, worst null cell: {100 * s['wrong_max_null']:.1f}% (target <= 5%);"
              f" worst cell: {100 * s['wrong_max']:.1f}%")
        print(f"Coverage at the stopping time, worst cell: {100 * s['coverage_min']:.1f}% (target >= 93%);"
              f" cells below 93%: {len(s['coverage_below_93'])} of {s['cells']}")
        if s["ratio_cells"]:
            print(f"Expected episodes at delta 10 pp / the fixed design's at the same power, over"
                  f" {s['ratio_cells']} cells with power >= 50%: mean {s['ratio_mean']:.2f},"
                  f" range {s['ratio_min']:.2f}-{s['ratio_max']:.2f} (target <= 0.60)")
        print(f"({s['seconds']:.0f} s)")
    return 1 if s["coverage_below_93"] or s["wrong_null_over_5"] else 0


if __name__ == "__main__":
    sys.exit(main())
